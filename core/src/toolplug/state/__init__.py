"""What outlives a call: the backend protocol and its stores (``_backend``), the result
cache (``_store``), spilled outputs (``_spill``), tasks (``_tasks``) and kept
conversations (``_conversations``).

Imports ``toolplug.config``, ``toolplug.trust``, ``toolplug.utilities`` and
``toolplug.contract``.
"""
