"""What toolplug believes about text and who may see it: the flow guard and the
``[policies]`` rules (``_guard``), definition scanning (``_scan``), and secret redaction in
results and logs (``_redaction``, ``_logs``).

Imports ``toolplug.utilities`` and ``toolplug.contract``.
"""
