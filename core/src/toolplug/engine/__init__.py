"""Running calls: the chain a call passes through (``_pipeline``), the engine that builds
it for a registry (``_engine``), dispatch to the tool (``_dispatch``), plans (``_plan``),
concurrency slots and telemetry.

Imports ``toolplug.runtime`` and the rooms below it.
"""
