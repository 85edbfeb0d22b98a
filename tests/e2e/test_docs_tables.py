"""The docs' lists cannot drift from what they list: the ``[serve.auth]`` keys of
docs/configuration.md, the commands the README names, and the integrations every page that
lists them names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from toolplug.cli._commands import build_parser
from toolplug.config._settings import AuthSettings, StaticToken

ROOT = Path(__file__).resolve().parents[2]
_ROW = re.compile(
    r"^\| `(?P<key>[^`]+)` \| (?P<value>.*?) \| (?P<default>.*?) \| (?P<effect>.*) \|$"
)


def _section(page: str, heading: str) -> str:
    """The text of ``page`` from the heading that starts with ``heading`` to the next one
    of its level."""
    text = (ROOT / page).read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = next(
        (m.start() for m in re.finditer(rf"^{re.escape(heading)}", text, re.MULTILINE)), None
    )
    assert start is not None, f"{page} has no heading {heading!r}"
    end = re.compile(rf"^{level} ", re.MULTILINE).search(text, start + len(heading))
    return text[start : end.start() if end else len(text)]


def _rows(section: str) -> dict[str, str]:
    """``{key: default}`` of the four-column table of a section."""
    return {m["key"]: m["default"] for line in section.splitlines() if (m := _ROW.match(line))}


def _toml(value: Any) -> str:
    """A default as the configuration writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _keys(model: type[BaseModel], prefix: str = "") -> dict[str, str | None]:
    """``{key: its default as written, "required", or None when the default is no value}``."""
    keys: dict[str, str | None] = {}
    for name, field in model.model_fields.items():
        if field.is_required():
            keys[prefix + name] = "required"
            continue
        default = field.get_default(call_default_factory=True)
        keys[prefix + name] = None if default is None else f"`{_toml(default)}`"
    return keys


SERVE_AUTH = {**_keys(AuthSettings), **_keys(StaticToken, "tokens.NAME.")}


def test_the_serve_auth_table_has_every_key_of_the_settings_model() -> None:
    rows = _rows(_section("docs/configuration.md", "## `[serve.auth]`"))
    missing = sorted(set(SERVE_AUTH) - set(rows))
    assert not missing, f"docs/configuration.md's [serve.auth] table lacks {missing}"
    unknown = sorted(set(rows) - set(SERVE_AUTH))
    assert not unknown, f"docs/configuration.md's [serve.auth] table has no such keys: {unknown}"


@pytest.mark.parametrize("key", sorted(k for k, default in SERVE_AUTH.items() if default))
def test_the_serve_auth_table_shows_each_default(key: str) -> None:
    shown = _rows(_section("docs/configuration.md", "## `[serve.auth]`")).get(key)
    expected = SERVE_AUTH[key]
    assert shown is not None, f"no row for {key}"
    assert expected is not None
    if expected == "required":
        assert shown == "required", f"{key} is required; the table says {shown!r}"
    else:
        assert expected in shown, f"{key} defaults to {expected}; the table says {shown!r}"


def test_the_readme_names_every_command() -> None:
    tour = _section("README.md", "## A tour")
    commands = [
        name
        for action in build_parser()._actions
        if hasattr(action, "choices") and isinstance(action.choices, dict)
        for name in action.choices
    ]
    assert len(commands) >= 16
    missing = [name for name in commands if not re.search(rf"`{name}[` ]", tour)]
    assert not missing, f"README.md's tour and command list do not name {missing}"


_INTEGRATIONS = sorted(
    path.stem
    for path in (ROOT / "core/src/toolplug/integrations").glob("*.py")
    if not path.stem.startswith("_")
)


@pytest.mark.parametrize(
    ("page", "prefix"),
    [
        ("README.md", "docs/integrations/"),
        ("docs/architecture.md", "integrations/"),
        ("docs/reference/index.md", "../integrations/"),
        ("docs/reference/integrations.md", "../integrations/"),
    ],
)
def test_every_integration_is_listed(page: str, prefix: str) -> None:
    assert len(_INTEGRATIONS) >= 4
    text = (ROOT / page).read_text(encoding="utf-8")
    for module in _INTEGRATIONS:
        target = f"{prefix}{module.replace('_', '-')}.md"
        assert (ROOT / page).parent.joinpath(target).resolve().is_file(), target
        assert f"]({target})" in text, f"{page} does not link the {module} integration ({target})"


def test_the_architecture_drawing_names_every_source() -> None:
    """docs/architecture.md draws the tree: each module and subpackage of ``sources/`` (the
    installed plugins, the mounts, OpenAPI, code mode, ...) is in its box."""
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    drawing = text.split("```", 2)[1]
    box = re.search(r"│ sources/(.*?)├", drawing, re.DOTALL)
    assert box is not None, "docs/architecture.md draws no sources/ box"
    words = set(re.findall(r"[\w/]+", box[1]))
    rooms = ROOT / "core/src/toolplug/sources"
    children = sorted(
        f"{path.name}/" if path.is_dir() else path.stem
        for path in rooms.iterdir()
        if (path.is_dir() and (path / "__init__.py").is_file())
        or (path.suffix == ".py" and path.stem != "__init__")
    )
    assert {"_plugins", "mcp/", "openapi/", "_code", "_load"} <= set(children)
    missing = [name for name in children if name not in words]
    assert not missing, f"docs/architecture.md's sources/ box does not name {missing}"
