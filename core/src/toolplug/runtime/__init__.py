"""What is installed and usable: discovery, configuration, capabilities, the registry.

Imports only ``toolplug.contract``. With the contract this is the minimal core.
"""
