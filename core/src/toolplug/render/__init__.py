"""What an agent or a person reads: the prompt section, ranking, provider exports, docs.

Imports ``toolplug.contract`` and ``toolplug.schema``; the registry only as a type.
"""
