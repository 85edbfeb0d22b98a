"""The argument parser of the ``toolplug`` command line, built from ``commands.toml``.

The commands, their help and their arguments are declared in that file; this module turns
the declaration into an ``argparse`` parser. The converters that ``type`` names, the two
actions argparse does not know by name, and the parser's way out on a usage error live here.
"""

from __future__ import annotations

import argparse
import platform
import tomllib
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any, Final, NoReturn

from toolplug.contract._version import toolplug_version

__all__ = [
    "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "SPEC", "Handler", "build_parser", "read_spec",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

SPEC: Final = "commands.toml"
"""The declaration of the commands: a resource of this package."""

Handler = Callable[[argparse.Namespace], int]
"""What runs a command: the parsed arguments in, the exit code out."""


class _Exit(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Exit(EXIT_USAGE, f"{message} (see '{self.prog} --help')")


class _Version(argparse.Action):
    """``--version``/``-V``: print the installed toolplug's version and stop, exit 0.

    argparse's own ``version`` action leaves through ``SystemExit``; this one leaves the way
    every other command does, so ``main`` returns the code to a host that calls it.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(f"toolplug {toolplug_version()} "
              f"(Python {platform.python_version()})")
        raise _Exit(EXIT_OK)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"expected 0 to 3600 seconds, got {text}")
    return value


def _whole_number(least: int) -> Callable[[str], int]:
    """An argument type: a whole number, ``least`` or more."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected {least} or more, got {value}")
        return value

    return parse


_AGO: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}


def _moment(text: str) -> float:
    """A time, as seconds since the epoch: ``15m``, ``2h``, ``7d`` ago, or an ISO 8601 date
    or time (UTC unless it gives its offset)."""
    import datetime
    import time

    spoken = text.strip().lower()
    if spoken[:-1].replace(".", "", 1).isdigit() and spoken[-1:] in _AGO:
        return time.time() - float(spoken[:-1]) * _AGO[spoken[-1]]
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a time ago (15m, 2h, 7d) or an ISO 8601 date or time, got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


TYPES: Final[Mapping[str, Callable[[str], Any]]] = {
    "seconds": _seconds,
    "positive_int": _whole_number(1),
    "non_negative_int": _whole_number(0),
    "moment": _moment,
}
"""The converters an argument's ``type`` names."""

def _formats() -> tuple[str, ...]:
    # The one table of schema formats; a module of the standard library alone, so reading
    # it costs a start nothing (the exporters load when a schema is written).
    from toolplug.render._formats import FORMATS

    return FORMATS


CHOICES: Final[Mapping[str, Callable[[], Sequence[str]]]] = {"formats": _formats}
"""The lists an argument's ``choices_from`` names, read from where they are declared."""

ACTIONS: Final[Mapping[str, type[argparse.Action]]] = {
    "version": _Version,
    "boolean_optional": argparse.BooleanOptionalAction,
}
"""The actions an argument's ``action`` names beyond argparse's own (``store_true``, ...)."""


def read_spec() -> dict[str, Any]:
    """The declaration of the commands, as ``commands.toml`` holds it."""
    text = resources.files(__package__).joinpath(SPEC).read_text(encoding="utf-8")
    return tomllib.loads(text)


def build_parser(handlers: Mapping[str, Handler]) -> argparse.ArgumentParser:
    """The parser ``commands.toml`` declares; ``handlers`` runs each command, by its name."""
    spec = read_spec()
    top, shared = spec["toolplug"], spec["option"]
    parser = _Parser(prog=top["prog"], description=top["description"], epilog=top["epilog"])
    _add_arguments(parser, top, top["common"], shared)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in spec["command"]:
        name = command["name"]
        if name not in handlers:
            raise LookupError(
                f"{SPEC} declares the command {name!r} but nothing runs it: register its "
                f"function with @_runs({name!r}) in toolplug.cli._commands"
            )
        p = sub.add_parser(name, help=command["summary"], description=command["description"])
        p.set_defaults(handler=handlers[name])
        _add_arguments(p, command, command.get("common", top["common"]), shared)
    return parser


def _add_arguments(
    parser: argparse.ArgumentParser,
    declared: Mapping[str, Any],
    common: Sequence[str],
    shared: Mapping[str, Mapping[str, Any]],
) -> None:
    """The ``common`` options, then the ``argument`` tables of ``declared``, in order."""
    for argument in [*({"use": flag} for flag in common), *declared.get("argument", [])]:
        options = dict(argument)
        if "use" in options:
            flag = options.pop("use")
            options = {"name": flag, **shared[flag], **options}
        names = options.pop("name")
        if "type" in options:
            options["type"] = TYPES[options["type"]]
        if "choices_from" in options:
            options["choices"] = CHOICES[options.pop("choices_from")]()
        if options.get("action") in ACTIONS:
            options["action"] = ACTIONS[options["action"]]
        if options.pop("unset", False):
            options["default"] = argparse.SUPPRESS
        parser.add_argument(*([names] if isinstance(names, str) else names), **options)
