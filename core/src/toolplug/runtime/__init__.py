"""What is installed and usable: discovery, capabilities, selection, the registry and the
``ToolSource`` base it gathers.

Imports ``toolplug.state``, ``toolplug.config``, ``toolplug.trust``, ``toolplug.search``
and ``toolplug.contract``. With the contract and the configuration, the minimal core.
"""
