"""Running calls: the call engine and its policy, plans, and ``load()`` which binds them.

Imports ``toolplug.runtime``, ``toolplug.contract`` and ``toolplug.schema``.
"""
