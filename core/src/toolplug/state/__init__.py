"""What outlives a call: the backend protocol (``_backend``) and its implementations
(``_memory``, ``_redis``, and ``_shared`` with ``open_backend``), the result cache and rate
limits (``_store``), spilled outputs (``_spill``), tasks (``_tasks``) and kept
conversations (``_conversations``).

Imports ``toolplug.config``, ``toolplug.trust``, ``toolplug.utilities`` and
``toolplug.contract``.
"""
