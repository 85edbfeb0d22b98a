"""Scaffolding: ``toolplug new NAME`` writes a complete, working plugin package.

The package holds one small offline tool (it measures a text) with complete metadata, an
entry point in the ``toolplug`` group, and tests that run the contract kit, find the tool
through discovery and call it through the registry. It passes its own tests as generated;
the author then edits the metadata and ``run``.

The templates are plain strings below. ``__NAME__``-style markers are replaced, nothing
else: the files contain braces and dollars of their own.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from toolplug.contract._errors import UsageError
from toolplug.contract._hooks import CONTRACT_VERSION
from toolplug.contract._metadata import TOOL_NAME_PATTERN
from toolplug.contract._version import toolplug_version

__all__ = [
    "PYPROJECT",
    "check_name",
    "distribution_name",
    "fill",
    "new_plugin",
    "next_steps",
    "refuse_existing",
    "write_package",
]

PYPROJECT: Final = """\
[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "__DIST__"
version = "0.1.0"
description = "__DESCRIPTION__"
readme = "README.md"
requires-python = ">=3.11"
classifiers = ["Programming Language :: Python :: 3", "Typing :: Typed"]
dependencies = ["__REQUIREMENT__"]

[project.optional-dependencies]
test = ["pytest>=8"]

# How toolplug finds the plugin: the group is "toolplug", the value is the module that
# holds the @hookimpl functions.
[project.entry-points.toolplug]
__NAME__ = "__MODULE__"

[tool.hatch.build.targets.wheel]
packages = ["src/__MODULE__"]

[tool.pytest.ini_options]
addopts = ["-ra", "--strict-markers"]
testpaths = ["tests"]
filterwarnings = ["error"]
"""

_README: Final = """\
# __DIST__

A toolplug plugin that provides the tool
`__NAME__`: it counts the words, lines and characters of a text and lists its most
frequent words, so that an agent can check a length limit instead of guessing.

(This is the example tool `toolplug new` writes. Replace it with your own: edit the
metadata and `run` in `src/__MODULE__/__init__.py`, then this README.)

## Install

```console
pip install __DIST__
toolplug list            # __NAME__ appears
toolplug info __NAME__   # its metadata, and whether it is available
```

## Use

```console
$ toolplug call __NAME__ --json '{"text": "the cat and the hat", "top": 1}'
```

The result's `data`:

```json
{"words": 5, "lines": 1, "characters": 19, "top_words": [{"word": "the", "count": 2}]}
```

## Parameters

| Parameter | Type | Required | Default | Description |
|---|---|---|---|---|
| `text` | string | yes | | The text to measure |
| `top` | integer | no | `5` | How many of the most frequent words to list (0 to 50) |

## Configuration

The tool has no settings of its own. Like every tool it can be turned off:

```toml
[tools.__NAME__]
enabled = false
```

## Errors

| Error type | When | Retry possible |
|---|---|---|
| `ValidationError` | the text is empty or only white space | no |

## Develop

```console
pip install -e '.[test]'
python -m pytest
```

The tests run the contract kit (`toolplug.testing.check_plugin`), check that the entry
point is discovered, and call the tool through `toolplug.load().call(...)`.
"""

_MODULE: Final = '''\
"""__DIST__: __TITLE__, a toolplug tool.

Keep this module light: it is imported whenever tools are listed. Import only
``toolplug`` and the standard library here; import heavy dependencies inside ``run``.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Callable
from typing import Any

from toolplug import (
    Annotations,
    Category,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    hookimpl,
)

__all__ = ["TOOLPLUG_CONTRACT", "__CLASS__", "register_tools"]

TOOLPLUG_CONTRACT = "__CONTRACT__"
"""The toolplug contract this plugin was written for; toolplug warns when it differs."""

_WORD_EDGES = string.punctuation + "\\u201c\\u201d\\u2018\\u2019"


class __CLASS__(Tool):
    """Counts the words, lines and characters of a text and its most frequent words."""

    metadata = ToolMetadata(
        name="__NAME__",
        title="__TITLE__",
        description="Count the words, lines and characters of a text and list its most "
        "frequent words.",
        category="utility",
        optionality="optional",
        usage_hint=(
            "Use when a task sets a length limit or asks how long a text is: count "
            "exactly instead of estimating."
        ),
        guidelines=Guidelines(
            do=(
                "The user gives a word or character limit and the draft must meet it",
                "The user asks how long a text is, or which words it repeats most",
            ),
            do_not=(
                "A rough idea of the length is enough",
                "The text is not in the conversation yet (read or fetch it first)",
            ),
            common_mistakes=(
                "Passing a file path or a URL instead of the text itself",
                "Measuring an earlier draft instead of the final one",
            ),
        ),
        produces=("text_statistics",),
        parameters={
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": "The text to measure",
                },
                "top": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 50,
                    "default": 5,
                    "description": "How many of the most frequent words to list (0 for none)",
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "words": {"type": "integer", "description": "Words, split at white space"},
                "lines": {"type": "integer", "description": "Lines of text"},
                "characters": {"type": "integer", "description": "Characters, spaces included"},
                "top_words": {
                    "type": "array",
                    "description": "The most frequent words, most frequent first",
                    "items": {
                        "type": "object",
                        "properties": {
                            "word": {"type": "string"},
                            "count": {"type": "integer"},
                        },
                        "required": ["word", "count"],
                    },
                },
            },
            "required": ["words", "lines", "characters", "top_words"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="the text is empty or only white space",
                retry_possible=False,
            ),
        ),
        examples=(
            Example(
                description="Check a short sentence and its most repeated word",
                input={"text": "the cat and the hat", "top": 1},
                output={
                    "words": 5,
                    "lines": 1,
                    "characters": 19,
                    "top_words": [{"word": "the", "count": 2}],
                },
            ),
            Example(
                description="Count a two-line draft without listing words",
                input={"text": "Hello, world.\\nHello again!", "top": 0},
                output={"words": 4, "lines": 2, "characters": 26, "top_words": []},
            ),
        ),
        annotations=Annotations(
            read_only=True, destructive=False, idempotent=True, open_world=False
        ),
        # Trust labels, for the flow guard: output "untrusted" when anyone outside could
        # have written what the tool returns (pages, mail, issues), private=True when it
        # returns the user's own data, and as sinks the parameters whose values leave the
        # machine or change the world. This tool counts here what it is given: its
        # counts are its own words, and nothing goes anywhere.
        trust=Trust(output="trusted", private=False, sinks=()),
        timeout_seconds=5,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Measure the text."""
        text = str(arguments.get("text", ""))
        top = int(arguments.get("top", 5))
        if not text.strip():
            return ToolResult.failure(
                "ValidationError", "text is empty; pass the text to measure itself"
            )
        words = text.split()
        counts = Counter(w.strip(_WORD_EDGES).lower() for w in words)
        counts.pop("", None)
        # Ties are broken alphabetically, so the same text always gives the same list.
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
        data = {
            "words": len(words),
            "lines": len(text.splitlines()),
            "characters": len(text),
            "top_words": [{"word": w, "count": c} for w, c in ranked],
        }
        summary = f"{data['words']} words, {data['lines']} lines, {data['characters']} characters"
        if ranked:
            summary += "; most frequent: " + ", ".join(f"{w} ({c})" for w, c in ranked)
        return ToolResult.success(summary, data)


@hookimpl
def register_tools(register: Callable[[type[Tool] | Category], None]) -> None:
    """Register ``__NAME__``."""
    register(__CLASS__)
'''

_TESTS: Final = '''\
"""__DIST__: the contract kit, discovery through the entry point, and behaviour."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import toolplug
from toolplug.testing import check_plugin
from __MODULE__ import __CLASS__

DISTRIBUTION = "__DIST__"


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    """Only this plugin, with an empty configuration."""
    loaded = toolplug.load({}, env={"TOOLPLUG_PLUGINS": DISTRIBUTION})
    yield loaded
    loaded.close()


def test_passes_the_contract_kit() -> None:
    check_plugin(DISTRIBUTION)


def test_entry_point_is_discovered(registry: toolplug.Registry) -> None:
    assert registry.problems == []
    tool = registry.tools["__NAME__"]
    assert tool.cls is __CLASS__
    assert (tool.distribution or "").replace("_", "-").lower() == DISTRIBUTION
    assert registry.availability("__NAME__").available


def test_call_through_the_registry(registry: toolplug.Registry) -> None:
    result = registry.call("__NAME__", {"text": "b a b\\nc b a", "top": 2})
    assert result.ok, result.error
    assert result.data == {
        "words": 6,
        "lines": 2,
        "characters": 11,
        "top_words": [{"word": "b", "count": 3}, {"word": "a", "count": 2}],
    }
    assert result.output.startswith("6 words, 2 lines, 11 characters")


def test_examples_show_what_the_tool_returns(registry: toolplug.Registry) -> None:
    for example in __CLASS__.metadata.examples:
        result = registry.call("__NAME__", example.input)
        assert result.data == example.output, example.description


def test_empty_text_is_a_validation_error(registry: toolplug.Registry) -> None:
    result = registry.call("__NAME__", {"text": "  \\n "})
    assert result.error is not None
    assert result.error.type == "ValidationError"
    assert not result.error.retry_possible


def test_bad_arguments_are_rejected_before_the_tool_runs(registry: toolplug.Registry) -> None:
    result = registry.call("__NAME__", {"text": "x", "top": 99})
    assert result.error is not None
    assert result.error.type == "ValidationError"
'''


def distribution_name(name: str) -> str:
    """The distribution a plugin named ``name`` is published as: ``toolplug-<name>``."""
    return "toolplug-" + name.replace("_", "-")


def check_name(name: str) -> None:
    """Refuse a name that cannot be a tool's (``UsageError`` saying what would do)."""
    if not re.fullmatch(TOOL_NAME_PATTERN, name):
        raise UsageError(
            f"invalid plugin name {name!r}: use a lower-case letter, then up to 63 lower-case "
            "letters, digits or underscores (it becomes the tool name, so it must match "
            f"{TOOL_NAME_PATTERN}); for example 'word_count'"
        )
    if name == "toolplug" or name.startswith("toolplug_"):
        raise UsageError(
            f"invalid plugin name {name!r}: leave out the 'toolplug' prefix; "
            f"'toolplug new {name.removeprefix('toolplug_') or 'word_count'}' makes "
            "toolplug-<name> for you"
        )


def _files(name: str) -> dict[str, str]:
    module = f"toolplug_{name}"
    current = toolplug_version()
    # a source tree never installed (no version) asks for any release
    requirement = "toolplug>=" + ".".join(current.split(".")[:2]) if current else "toolplug"
    replacements = {
        "__DESCRIPTION__": "__TITLE__: a toolplug tool for LLM agents",  # first: it has a marker
        "__DIST__": distribution_name(name),
        "__MODULE__": module,
        "__CLASS__": "".join(part.capitalize() for part in name.split("_") if part) + "Tool",
        "__TITLE__": name.replace("_", " ").strip().capitalize(),
        "__REQUIREMENT__": requirement,
        "__CONTRACT__": CONTRACT_VERSION,
        "__NAME__": name,
    }
    return {
        "pyproject.toml": fill(PYPROJECT, replacements),
        "README.md": fill(_README, replacements),
        f"src/{module}/__init__.py": fill(_MODULE, replacements),
        f"src/{module}/py.typed": "",
        f"tests/test_{name}.py": fill(_TESTS, replacements),
    }


def fill(template: str, replacements: Mapping[str, str]) -> str:
    """The template with each marker replaced, in order (a value may hold a later marker)."""
    for marker, value in replacements.items():
        template = template.replace(marker, value)
    return template


def new_plugin(name: str, directory: str | os.PathLike[str] = ".") -> Path:
    """Create the plugin package ``toolplug-<name>`` in ``directory``; return its path.

    The package directory is ``<directory>/toolplug-<name with dashes>``; it holds
    ``pyproject.toml`` (hatchling, the ``toolplug`` entry point), ``README.md``,
    ``src/toolplug_<name>/__init__.py`` with a working example tool named ``name``,
    ``py.typed``, and ``tests/test_<name>.py`` using the contract kit. ``directory`` is
    created if needed. Nothing is left behind if writing fails.

    Raises:
        UsageError: the name is not a valid tool name, or the package directory exists.
    """
    check_name(name)
    target = Path(directory) / distribution_name(name)
    refuse_existing(target)
    return write_package(target, _files(name))


def refuse_existing(target: Path) -> None:
    """Refuse to write a package where a file or directory (or a link) already is."""
    if target.exists() or target.is_symlink():
        raise UsageError(f"{target} already exists; choose another name or --dir, or remove it")


def write_package(target: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path: text) as the directory ``target``; return it.

    Written beside the target and renamed into place, so a failure leaves nothing behind.

    Raises:
        UsageError: ``target`` was created by someone else meanwhile.
    """
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".{target.name}-{secrets.token_hex(4)}.tmp"
    staging.mkdir()
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        if target.exists():  # created by someone else meanwhile
            raise UsageError(f"{target} already exists; choose another name or --dir")
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def next_steps(name: str, path: str | os.PathLike[str]) -> str:
    """What to tell the user after ``new_plugin``: where it is and what to do next."""
    where = Path(path)
    shown = str(where)
    if not where.is_absolute() and not shown.startswith("."):
        shown = f".{os.sep}{shown}"
    module = f"toolplug_{name}"
    return "\n".join(
        [
            f"Created {distribution_name(name)} in {shown}",
            "",
            "Next steps:",
            f"  cd {shown}",
            "  python -m venv .venv && . .venv/bin/activate   (or: uv venv)",
            "  pip install -e '.[test]'",
            "    (toolplug from a clone: add --find-links CLONE/wheels, see docs/install.md)",
            "  python -m pytest                  # contract kit, discovery, a real call",
            f"  toolplug info {name}",
            f'  toolplug call {name} --json \'{{"text": "hello world"}}\'',
            "",
            f"Then make the tool yours: edit the metadata and run() in src/{module}/__init__.py.",
        ]
    )
