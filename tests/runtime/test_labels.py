"""Trust labels in force (``Registry.labels``): the tool's own, the cautious default, and the
configuration's ``trust`` tables on top, read from real files."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import toolplug
from toolplug import (
    Annotations,
    ConfigError,
    ErrorSpec,
    Example,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    UsageError,
)
from toolplug.contract._settings import TrustOverlay


class Unlabelled(Tool):
    """A tool whose author declared no trust labels."""

    metadata = ToolMetadata(
        name="unlabelled",
        description="Send a note somewhere.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "Where"},
                "text": {"type": "string", "description": "What"},
            },
        },
        errors=(ErrorSpec(type="NotFoundError", when="never"),),
        examples=(Example(description="a note", input={"to": "a", "text": "b"}),),
        annotations=Annotations(read_only=False, open_world=True),
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult.success("sent")


def load(text: str, *, name: str = "toolplug.toml") -> toolplug.Registry:
    path = Path(name)
    path.write_text(text, encoding="utf-8")
    return toolplug.load(
        path,
        env={},
        plugins=[("unlabelled", SimpleNamespace(register_tools=toolplug.provides(Unlabelled)))],
    )


def test_without_configuration_the_tools_own_labels_are_in_force() -> None:
    registry = load("")
    assert registry.labels("url_fetch") == registry.get("url_fetch").metadata.trust
    assert registry.labelled("url_fetch")
    # unlabelled: the cautious default, and it says so
    assert registry.labels("unlabelled") == Trust(
        output="untrusted", private=True, sinks=("text", "to")
    )
    assert not registry.labelled("unlabelled")
    with pytest.raises(UsageError):
        registry.labels("no_such_tool")


def test_a_trust_table_sets_the_keys_it_names_and_keeps_the_others() -> None:
    registry = load(
        # this host's auth profiles reach private APIs
        "[tools.url_fetch]\ntrust = { private = true }\n"
        # the operator vouches for the note tool: it only posts to a team board
        "[tools.unlabelled]\n"
        'trust = { output = "trusted", private = false, sinks = ["text"] }\n'
        # an empty list: no parameter leaves the machine
        '[tools.static_links]\ntrust = { output = "untrusted", sinks = [] }\n'
    )
    assert registry.labels("url_fetch") == Trust(
        output="untrusted",
        private=True,
        sinks=("url", "headers", "body", "download_path"),
        destinations=("url",),
        url_sinks=("url",),
        path_sinks=("download_path",),
    )
    assert registry.labels("unlabelled") == Trust(output="trusted", sinks=("text",))
    assert registry.labelled("unlabelled")  # the configuration labelled it
    assert registry.labels("static_links") == Trust(output="untrusted", sinks=())
    # the tool's metadata is untouched: the overlay lives in the registry
    assert registry.get("url_fetch").metadata.trust == Trust(
        output="untrusted", sinks=("url", "headers", "body", "download_path"),
        destinations=("url",), url_sinks=("url",), path_sinks=("download_path",),
    )


def test_a_partial_table_over_an_unlabelled_tool_keeps_the_cautious_rest() -> None:
    registry = load('[tools.unlabelled]\ntrust = { output = "trusted" }\n')
    assert registry.labels("unlabelled") == Trust(
        output="trusted", private=True, sinks=("text", "to")
    )


def test_the_same_table_in_pyproject_toml() -> None:
    registry = load(
        '[tool.toolplug.tools.web_search]\ntrust = { output = "trusted" }\n',
        name="pyproject.toml",
    )
    assert registry.labels("web_search") == Trust(output="trusted", sinks=("query",))


@pytest.mark.parametrize(
    ("table", "key", "expected"),
    [
        # not a table
        ('trust = "untrusted"', "tools.url_fetch.trust", 'output = "trusted" or "untrusted"'),
        # an output that is neither
        ('trust = { output = "maybe" }', "tools.url_fetch.trust.output",
         '"trusted" or "untrusted"'),
        # private is a boolean, not text
        ('trust = { private = "yes" }', "tools.url_fetch.trust.private", "a boolean"),
        # sinks is a list, not one name
        ('trust = { sinks = "url" }', "tools.url_fetch.trust.sinks", "parameter names"),
        # a key the table does not have
        ("trust = { secret = true }", "tools.url_fetch.trust.secret",
         "one of address_sinks, destinations, output, path_sinks, private, refs, sinks, url_sinks"),
        # a sink that is no parameter of the tool: the parameters are listed
        ('trust = { sinks = ["url", "adress"] }', "tools.url_fetch.trust.sinks",
         "auth_profile, body, download_path, headers"),
    ],
)
def test_a_bad_trust_table_names_the_file_key_and_expectation(
    table: str, key: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(f"[tools.url_fetch]\n{table}\n")
    message = str(caught.value)
    assert message.startswith("toolplug.toml: " + key + ": ")
    assert expected in message
    assert caught.value.key == key


def test_a_bad_sink_says_which_names_are_not_parameters() -> None:
    with pytest.raises(ConfigError) as caught:
        load('[tools.unlabelled]\ntrust = { sinks = ["to", "cc"] }\n')
    assert "names 'cc', not a parameter of unlabelled" in str(caught.value)
    assert caught.value.expected == "a list of unlabelled's top-level parameters: text, to"


def test_a_trust_table_names_refs_among_the_sinks_in_force() -> None:
    # the note tool's recipient names a board the service holds: a ref, and still a sink
    registry = load('[tools.unlabelled]\ntrust = { refs = ["to"] }\n')
    assert registry.labels("unlabelled") == Trust(
        output="untrusted", private=True, sinks=("text", "to"), refs=("to",)
    )
    # refs alone keep the sinks the tool has (here the cautious default: every parameter)
    both = load('[tools.unlabelled]\ntrust = { sinks = ["to"], refs = ["to"] }\n')
    assert both.labels("unlabelled").refs == ("to",)


@pytest.mark.parametrize(
    ("table", "message", "expected"),
    [
        # a ref that is no parameter: the parameters are listed
        (
            'trust = { refs = ["board"] }',
            "names 'board', not a parameter of unlabelled",
            "a list of unlabelled's top-level parameters: text, to",
        ),
        # a ref the sinks in force do not name
        (
            'trust = { sinks = ["text"], refs = ["to"] }',
            "names 'to', not a sink of unlabelled (its sinks: text); a ref is a sink whose "
            "value names something the service holds",
            "a list of the tool's sinks (set trust.sinks to add one)",
        ),
        # refs is a list, not one name
        ('trust = { refs = "to" }', "", "sinks whose values name something the service holds"),
    ],
)
def test_a_bad_ref_names_the_key_and_what_is_expected(
    table: str, message: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load(f"[tools.unlabelled]\n{table}\n")
    assert caught.value.key == "tools.unlabelled.trust.refs"
    assert message in str(caught.value)
    assert expected in (caught.value.expected or "")


def test_a_table_that_drops_a_sink_drops_its_ref() -> None:
    # a ref is a sink: one the operator's sinks no longer name is no ref either
    own = Trust(output="trusted", sinks=("channel", "body"), refs=("channel",))
    assert TrustOverlay(sinks=("body",)).over(own) == Trust(output="trusted", sinks=("body",))
    assert TrustOverlay(output="untrusted").over(own) == own.model_copy(
        update={"output": "untrusted"}
    )
    # a later table's refs win, key by key
    assert TrustOverlay(refs=("channel",)).then(TrustOverlay(refs=())).refs == ()
    assert TrustOverlay(refs=("channel",)).then(TrustOverlay(private=True)).refs == ("channel",)


def test_a_trust_table_sets_destinations_among_the_sinks_in_force() -> None:
    registry = load('[tools.unlabelled]\ntrust = { destinations = ["to"] }\n')
    assert registry.labels("unlabelled") == Trust(
        output="untrusted", private=True, sinks=("text", "to"), destinations=("to",)
    )
    with pytest.raises(ConfigError) as caught:
        load('[tools.unlabelled]\ntrust = { sinks = ["text"], destinations = ["to"] }\n')
    assert caught.value.key == "tools.unlabelled.trust.destinations"
    assert (
        "names 'to', not a sink of unlabelled (its sinks: text); a destination is a sink "
        "whose value says where the call goes" in str(caught.value)
    )
    with pytest.raises(ConfigError) as caught:
        load('[tools.unlabelled]\ntrust = { destinations = ["cc"] }\n')
    assert caught.value.key == "tools.unlabelled.trust.destinations"
    assert "names 'cc', not a parameter of unlabelled" in str(caught.value)
    # a table that drops a sink drops its destination; a later table wins key by key
    own = Trust(output="trusted", sinks=("to", "text"), destinations=("to",))
    assert TrustOverlay(sinks=("text",)).over(own) == Trust(output="trusted", sinks=("text",))
    assert TrustOverlay(destinations=("to",)).then(TrustOverlay(destinations=())).destinations == ()
    assert TrustOverlay(destinations=("to",)).then(TrustOverlay(private=True)).destinations == (
        "to",
    )
