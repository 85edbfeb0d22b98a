"""The parser is built from commands.toml: every command declared there runs a function, every
function runs a declared command, and the declaration ships as a resource of the package."""

from __future__ import annotations

import argparse
import tomllib
from importlib import resources

import pytest

from toolplug.cli import _commands, _parser
from toolplug.render._export import FORMATS


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_the_spec_is_a_resource_of_the_installed_package() -> None:
    spec = resources.files("toolplug.cli").joinpath(_parser.SPEC)
    assert spec.is_file()
    assert tomllib.loads(spec.read_text(encoding="utf-8")) == _parser.read_spec()


def test_every_command_runs_a_function_and_every_function_a_command() -> None:
    declared = [command["name"] for command in _parser.read_spec()["command"]]
    assert len(declared) == len(set(declared)), "a command is declared twice"
    assert sorted(declared) == sorted(_commands._HANDLERS)


def test_the_parser_has_the_declared_commands_in_order_with_their_functions() -> None:
    spec = _parser.read_spec()
    commands = _subcommands(_commands.build_parser())
    assert list(commands) == [command["name"] for command in spec["command"]]
    for name, sub in commands.items():
        assert sub.get_default("handler") is _commands._HANDLERS[name], name


def test_every_declared_argument_is_on_its_command() -> None:
    spec = _parser.read_spec()
    commands = _subcommands(_commands.build_parser())
    for command in spec["command"]:
        strings = {s for a in commands[command["name"]]._actions for s in a.option_strings}
        dests = {a.dest for a in commands[command["name"]]._actions}
        common = command.get("common", spec["toolplug"]["common"])
        for argument in [*({"use": flag} for flag in common), *command.get("argument", [])]:
            name = argument.get("use", argument.get("name"))
            assert name in strings or name in dests, (command["name"], name)


def test_every_shared_option_is_declared_and_used() -> None:
    spec = _parser.read_spec()
    places = [spec["toolplug"], *spec["command"]]
    used = {a["use"] for place in places for a in place.get("argument", []) if "use" in a}
    used |= {flag for place in places for flag in place.get("common", [])}
    assert used == set(spec["option"])


def test_the_converters_and_actions_named_exist() -> None:
    spec = _parser.read_spec()
    arguments = [*spec["option"].values()]
    arguments += [a for place in [spec["toolplug"], *spec["command"]]
                  for a in place.get("argument", [])]
    for argument in arguments:
        if "type" in argument:
            assert argument["type"] in _parser.TYPES, argument
        action = argument.get("action")
        assert action is None or action in _parser.ACTIONS or action in {"store_true", "append"}


def test_schema_offers_every_export_format() -> None:
    # the spec writes the names out so that parsing imports no exporter
    schema = _subcommands(_commands.build_parser())["schema"]
    (fmt,) = [a for a in schema._actions if "--format" in a.option_strings]
    assert tuple(fmt.choices or ()) == FORMATS


def test_strict_help_names_the_variable_that_also_turns_it_on() -> None:
    (strict,) = [a for a in _commands.build_parser()._actions if "--strict" in a.option_strings]
    assert f"{_commands.STRICT_ENV}=1" in (strict.help or "")


def test_a_command_without_a_function_is_named() -> None:
    handlers = dict(_commands._HANDLERS)
    del handlers["read"]
    with pytest.raises(LookupError, match=r"'read'.*@_runs\('read'\)"):
        _parser.build_parser(handlers)
