"""``toolplug.toml`` read once into typed settings: the configuration (``_config``), the
tables of ``[calls]``, ``[code]``, ``[serve]``, ``[guard]`` and ``[policies]``
(``_settings``), mounted servers (``_servers``), OpenAPI sources (``_openapi``), what both
kinds of gathered tool share (``_gathered``) and tool transforms (``_transforms``).

Imports ``toolplug.trust``, ``toolplug.utilities`` and ``toolplug.contract``.
"""
