"""The contract kit: checks every tool and plugin must pass, and pytest fixtures.

Use it from a plugin's tests::

    from toolplug.testing import check_plugin


    def test_contract():
        check_plugin("toolplug-my-tool")

``check_tool`` and ``check_plugin`` raise ``ContractError`` listing every broken rule. The
module is also a pytest plugin (entry point ``pytest11``), which provides the fixtures
``toolplug_config``, ``toolplug_registry`` and ``toolplug_service`` (a real HTTP server on
127.0.0.1 that the network guard lets tools reach; it needs ``toolplug[testing]``).
"""

from toolplug.testing._kit import (
    ContractError,
    LoopbackService,
    check_plugin,
    check_tool,
    concurrent_calls,
    fake_context,
    toolplug_config,
    toolplug_registry,
    toolplug_service,
)

__all__ = [
    "ContractError",
    "LoopbackService",
    "check_plugin",
    "check_tool",
    "concurrent_calls",
    "fake_context",
    "toolplug_config",
    "toolplug_registry",
    "toolplug_service",
]
