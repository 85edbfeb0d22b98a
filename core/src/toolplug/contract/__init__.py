"""The contract: what a tool is. Metadata, the tool class, results and errors, hook specs.

The bottom layer: it imports nothing else of toolplug. Every other layer, and every plugin
(through the public names of ``toolplug``), builds on it.
"""
