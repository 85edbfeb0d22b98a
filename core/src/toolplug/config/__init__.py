"""``toolplug.toml`` read once into typed settings: the configuration (``_config``), the
tables of ``[calls]``, ``[code]``, ``[serve]``, ``[guard]`` and ``[policies]``
(``_settings``), mounted servers (``_servers``), OpenAPI sources (``_openapi``) and tool
transforms (``_transforms``).

Imports ``toolplug.trust``, ``toolplug.utilities`` and ``toolplug.contract``.
"""
