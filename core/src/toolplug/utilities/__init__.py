"""What every room above stands on: running work across threads and event loops
(``_bridge``), the size bounds of arguments and outputs (``_limits``), and compiled JSON
Schemas with the argument checks built on them (``_validation``).

Imports only ``toolplug.contract`` and ``toolplug.schema``.
"""
