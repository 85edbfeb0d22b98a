"""The contract kit: checks every tool and plugin must pass, and pytest fixtures.

Use it from a plugin's tests::

    from toolplug.testing import check_plugin


    def test_contract():
        check_plugin("toolplug-my-tool")

``check_tool`` and ``check_plugin`` raise ``ContractError`` listing every broken rule. The
module is also a pytest plugin (entry point ``pytest11``), which provides the fixtures
``toolplug_config`` and ``toolplug_registry``.
"""

from toolplug.testing._kit import (
    ContractError,
    check_plugin,
    check_tool,
    fake_context,
    toolplug_config,
    toolplug_registry,
)

__all__ = [
    "ContractError",
    "check_plugin",
    "check_tool",
    "fake_context",
    "toolplug_config",
    "toolplug_registry",
]
