"""Configuration: where it is found, what it may contain, secrets and their redaction.

Sources, first found wins: ``--config PATH`` (or ``TOOLPLUG_CONFIG``), ``toolplug.toml`` in
the working directory, ``[tool.toolplug]`` in ``pyproject.toml`` in the working directory.
No file at all is a valid, empty configuration.

Every mistake is a ``ConfigError`` naming the file, the key and what is expected.
"""

from __future__ import annotations

import fnmatch
import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import platformdirs
from jsonschema import Draft202012Validator

from toolplug.config._approvals import APPROVALS_KEYS, ApprovalsSettings, parse_approvals
from toolplug.config._oauth import TOKEN_KEYS, TokenSettings, parse_tokens
from toolplug.config._openapi import ApiSettings, parse_openapi
from toolplug.config._record import RECORD_KEYS, RecordSettings, parse_record
from toolplug.config._servers import ServerSettings, parse_mcp_servers
from toolplug.config._settings import (
    CALLS_KEYS,
    CODE_KEYS,
    GUARD_KEYS,
    SERVE_KEYS,
    CallsSettings,
    CodeSettings,
    ServeSettings,
    parse_calls,
    parse_code,
    parse_guard,
    parse_policies,
    parse_serve,
    parse_tool_settings,
)
from toolplug.config._transforms import Transform, parse_transforms
from toolplug.contract._errors import ConfigError
from toolplug.contract._network import NetworkPolicy
from toolplug.contract._settings import POLICY_KEYS, SINK_KINDS, ToolSettings
from toolplug.trust._redaction import Redactor
from toolplug.trust._settings import GuardSettings, PolicyRule

if TYPE_CHECKING:
    from collections.abc import Callable

    from toolplug.contract._metadata import ConfigField, ToolMetadata
    from toolplug.contract._settings import TrustOverlay

__all__ = ["Config", "Toolset", "how_to_set", "load_config", "resolve_tool_config"]

CONFIG_ENV: Final = "TOOLPLUG_CONFIG"
_TOP_KEYS: Final = {
    "offline": "a boolean: true turns off the built-in network capability",
    "cache_dir": "a directory path for caches and downloads",
    "state_dir": "a directory path for durable tool state",
    "network": "a table: allow, max_redirects, timeout_seconds, max_bytes, user_agent",
    "capabilities": "a table: grant = [...], deny = [...]",
    "tools": "a table of per-tool tables: [tools.<name>]",
    "toolsets": "a table of named toolsets: [toolsets.<name>]",
    "calls": "a table: " + ", ".join(CALLS_KEYS),
    "code": "a table: " + ", ".join(CODE_KEYS),
    "guard": "a table: " + ", ".join(GUARD_KEYS),
    "policies": "a table of rule lists: [[policies.<tool>]] with action, argument, schema, "
    "reason",
    "mcp_servers": "a table of MCP servers to mount: [mcp_servers.<name>]",
    "serve": "a table: " + ", ".join(SERVE_KEYS),
    "openapi": "a table of HTTP APIs described by OpenAPI: [openapi.<name>]",
    "transforms": "a table of transformed tools: [transforms.<new name>]",
    "approvals": "a table: " + ", ".join(APPROVALS_KEYS),
    "record": "a table: " + ", ".join(RECORD_KEYS),
    "oauth": "a table: " + ", ".join(TOKEN_KEYS),
}
@dataclass(frozen=True)
class Toolset:
    """A named selection of tools: include, then exclude, by name, glob or ``category:NAME``."""

    name: str
    include: tuple[str, ...] = ()
    """Empty means every tool."""
    exclude: tuple[str, ...] = ()
    description: str = ""

    def matches(self, tool: str, category: str) -> bool:
        """True when the tool belongs to this toolset."""

        def hit(patterns: Iterable[str]) -> bool:
            for pattern in patterns:
                if pattern.startswith("category:"):
                    if fnmatch.fnmatchcase(category, pattern.removeprefix("category:")):
                        return True
                elif fnmatch.fnmatchcase(tool, pattern):
                    return True
            return False

        return (not self.include or hit(self.include)) and not hit(self.exclude)


def _default_calls() -> CallsSettings:
    return CallsSettings()


@dataclass(frozen=True)
class Config:
    """A loaded configuration."""

    path: Path | None = None
    """The file it came from, or None."""
    offline: bool = False
    cache_dir: Path = field(default_factory=lambda: _default_dir("cache"))
    state_dir: Path = field(default_factory=lambda: _default_dir("state"))
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    grants: frozenset[str] = frozenset()
    denials: frozenset[str] = frozenset()
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Raw per-tool tables, read only inside runtime (``resolve_tool_config``); every other
    layer reads ``settings`` and the registry's resolved ``tool_config``."""
    toolsets: Mapping[str, Toolset] = field(default_factory=dict)
    calls: CallsSettings = field(default_factory=_default_calls)
    """The ``[calls]`` table, checked and typed."""
    code: CodeSettings = field(default_factory=CodeSettings)
    """The ``[code]`` table (code mode), checked and typed."""
    guard: GuardSettings = field(default_factory=GuardSettings)
    """The ``[guard]`` table (the flow guard), checked and typed."""
    policies: Mapping[str, tuple[PolicyRule, ...]] = field(default_factory=dict)
    """The ``[[policies.TOOL]]`` rules per tool, checked (their schemas too) and typed."""
    mcp_servers: Mapping[str, ServerSettings] = field(default_factory=dict)
    """The ``[mcp_servers.NAME]`` tables (``toolplug.sources.mcp``), checked and typed."""
    serve: ServeSettings = field(default_factory=ServeSettings)
    """The ``[serve]`` table (``toolplug serve``: approvals, hosts, authentication), checked
    and typed."""
    openapi: Mapping[str, ApiSettings] = field(default_factory=dict)
    """The ``[openapi.NAME]`` tables (``toolplug.sources.openapi``), checked and typed."""
    transforms: Mapping[str, Transform] = field(default_factory=dict)
    """The ``[transforms.NAME]`` tables, checked and typed (applied by the registry)."""
    settings: Mapping[str, ToolSettings] = field(default_factory=dict)
    """Each configured tool's call settings, checked and typed (``tool_settings``)."""
    approvals: ApprovalsSettings = field(default_factory=ApprovalsSettings)
    """The ``[approvals]`` table (the inbox, its store, its webhook), checked and typed."""
    record: RecordSettings = field(default_factory=RecordSettings)
    """The ``[record]`` table (the record of calls and decisions), checked and typed."""
    oauth: TokenSettings = field(default_factory=TokenSettings)
    """The ``[oauth]`` table (where sign-in tokens are kept), checked and typed."""

    @property
    def source(self) -> str:
        """The file name for messages."""
        return str(self.path) if self.path else "configuration"

    def tool_settings(self, tool: str) -> ToolSettings:
        """The call settings of ``[tools.<tool>]`` (the defaults when it has no table)."""
        return self.settings.get(tool) or _DEFAULT_SETTINGS

    def enabled(self, tool: str) -> bool:
        """False when ``[tools.<tool>] enabled = false``."""
        return self.tool_settings(tool).enabled


_DEFAULT_SETTINGS: Final = ToolSettings()


def _default_dir(kind: str) -> Path:
    if kind == "cache":
        return Path(platformdirs.user_cache_dir("toolplug"))
    return Path(platformdirs.user_state_dir("toolplug"))


def find_config_file(explicit: str | os.PathLike[str] | None = None) -> tuple[Path, bool] | None:
    """The configuration file to read and whether it is a ``pyproject.toml``, or None."""
    chosen = explicit or os.environ.get(CONFIG_ENV) or None
    if chosen:
        path = Path(chosen)
        if not path.is_file():
            origin = "--config" if explicit else CONFIG_ENV
            raise ConfigError(
                "configuration file not found",
                file=str(path),
                key=origin,
                expected="the path of an existing TOML file",
            )
        return path, path.name == "pyproject.toml"
    cwd = Path.cwd()
    if (cwd / "toolplug.toml").is_file():
        return cwd / "toolplug.toml", False
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        return pyproject, True
    return None


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Find, read and check the configuration (without the per-tool field checks)."""
    found = find_config_file(path)
    if found is None:
        return Config()
    file, is_pyproject = found
    try:
        raw = file.read_bytes()
        document = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not valid TOML: {exc}", file=str(file)) from None
    except RecursionError:  # tomllib recurses once per level of nesting
        raise ConfigError(
            "nested too deeply to read",
            file=str(file),
            expected="tables and arrays a few levels deep, as a configuration has",
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror}", file=str(file)) from None
    if is_pyproject:
        table = document.get("tool", {}).get("toolplug")
        if table is None:
            return Config()
        prefix = "tool.toolplug."
    else:
        table = document
        prefix = ""
    return parse_config(table, file=file, prefix=prefix)


def parse_config(
    table: Mapping[str, Any], *, file: Path | None = None, prefix: str = ""
) -> Config:
    """Check a configuration table (already parsed from TOML) and build a ``Config``."""
    try:
        return _parse_config(table, file=file, prefix=prefix)
    except RecursionError:
        raise ConfigError(
            "nested too deeply to check",
            file=str(file) if file else "configuration",
            expected="tables and arrays a few levels deep, as a configuration has",
        ) from None


def _parse_config(table: Mapping[str, Any], *, file: Path | None, prefix: str) -> Config:  # noqa: C901, PLR0912 - one branch per top-level table of toolplug.toml
    where = str(file) if file else "configuration"
    base = file.parent if file else Path.cwd()

    def err(key: str, message: str, expected: str | None = None) -> ConfigError:
        return ConfigError(message, file=where, key=prefix + key, expected=expected)

    if not isinstance(table, Mapping):
        raise err("", "must be a table", "a TOML table")
    for key in table:
        if key not in _TOP_KEYS:
            raise err(key, "unknown key", "one of " + ", ".join(sorted(_TOP_KEYS)))
    offline = table.get("offline", False)
    if not isinstance(offline, bool):
        raise err("offline", f"got {offline!r}", _TOP_KEYS["offline"])
    dirs: dict[str, Path] = {}
    for key in ("cache_dir", "state_dir"):
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value:
                raise err(key, f"got {value!r}", _TOP_KEYS[key])
            dirs[key] = (base / Path(value).expanduser()).resolve()
    network_table = table.get("network", {})
    if not isinstance(network_table, Mapping):
        raise err("network", "must be a table", _TOP_KEYS["network"])
    try:
        network = NetworkPolicy.from_mapping(network_table)
    except ValueError as exc:
        raise err("network", str(exc)) from None
    caps = table.get("capabilities", {})
    if not isinstance(caps, Mapping):
        raise err("capabilities", "must be a table", _TOP_KEYS["capabilities"])
    for key in caps:
        if key not in ("grant", "deny"):
            raise err(f"capabilities.{key}", "unknown key", "grant or deny")
    grants = _names(
        caps.get("grant", []), lambda m: err("capabilities.grant", m, "a list of names")
    )
    denials = _names(caps.get("deny", []), lambda m: err("capabilities.deny", m, "a list of names"))
    tools = table.get("tools", {})
    if not isinstance(tools, Mapping):
        raise err("tools", "must be a table", _TOP_KEYS["tools"])
    settings: dict[str, ToolSettings] = {}
    for name, tool_table in tools.items():
        if not isinstance(tool_table, Mapping):
            raise err(
                f"tools.{name}", "must be a table", f"[tools.{name}] with the tool's settings"
            )
        settings[name] = parse_tool_settings(name, tool_table, file=where, prefix=prefix)
    toolsets: dict[str, Toolset] = {}
    raw_sets = table.get("toolsets", {})
    if not isinstance(raw_sets, Mapping):
        raise err("toolsets", "must be a table", _TOP_KEYS["toolsets"])
    for name, spec in sorted(raw_sets.items()):
        key = f"toolsets.{name}"
        if not isinstance(spec, Mapping):
            raise err(key, "must be a table", "include = [...], exclude = [...]")
        for sub in spec:
            if sub not in ("include", "exclude", "description"):
                raise err(f"{key}.{sub}", "unknown key", "include, exclude or description")
        description = spec.get("description", "")
        if not isinstance(description, str):
            raise err(f"{key}.description", f"got {description!r}", "a string")
        patterns = {
            part: tuple(
                sorted(
                    _names(
                        spec.get(part, []),
                        lambda m, k=f"{key}.{part}": err(
                            k, m, "a list of tool names, globs or category:NAME"
                        ),
                    )
                )
            )
            for part in ("include", "exclude")
        }
        toolsets[name] = Toolset(name=name, description=description, **patterns)
    calls, code, serve = table.get("calls", {}), table.get("code", {}), table.get("serve", {})
    for key, raw in (("calls", calls), ("code", code), ("serve", serve)):
        if not isinstance(raw, Mapping):
            raise err(key, "must be a table", _TOP_KEYS[key])
    return Config(
        path=file,
        offline=offline,
        network=network,
        grants=grants,
        denials=denials,
        tools={k: dict(v) for k, v in tools.items()},
        toolsets=toolsets,
        calls=parse_calls(calls, file=where, prefix=prefix),
        code=parse_code(code, file=where, prefix=prefix),
        guard=parse_guard(_table(table, "guard", err), file=where, prefix=prefix),
        policies=parse_policies(table.get("policies", {}), file=where, prefix=prefix),
        mcp_servers=parse_mcp_servers(table.get("mcp_servers", {}), file=where, prefix=prefix),
        serve=parse_serve(serve, file=where, prefix=prefix),
        openapi=parse_openapi(table.get("openapi", {}), file=where, prefix=prefix),
        transforms=parse_transforms(table.get("transforms", {}), file=where, prefix=prefix),
        settings=settings,
        approvals=parse_approvals(_table(table, "approvals", err), file=where, prefix=prefix),
        record=parse_record(_table(table, "record", err), file=where, prefix=prefix),
        oauth=parse_tokens(_table(table, "oauth", err), file=where, prefix=prefix),
        **dirs,
    )


def _table(table: Mapping[str, Any], key: str, err: Any) -> Mapping[str, Any]:
    raw = table.get(key, {})
    if not isinstance(raw, Mapping):
        raise err(key, "must be a table", _TOP_KEYS[key])
    return raw


def _names(value: Any, fail: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise fail(f"got {value!r}")
    return frozenset(value)


_JSON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def resolve_tool_config(
    config: Config,
    metadata: ToolMetadata,
    *,
    env: Mapping[str, str],
    redactor: Redactor,
    files_read: list[str] | None = None,
    inherit: str | None = None,
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Check ``[tools.<name>]`` against the tool's config fields; fill defaults and secrets.

    Values come from the table, then from the field's environment variable, then from its
    default. ``{ env = "VAR" }`` and ``{ file = "PATH" }`` indirect any value; a secret must
    use them (or its environment variable). Secrets are handed to ``redactor``. An
    ``{ env = "VAR" }`` whose variable is unset counts as no value. ``inherit`` names the
    tool a transformed one was made from: its ``[tools.ORIGINAL]`` values apply, and the
    transformed tool's own table overrides them key by key.

    Returns:
        The resolved values, and the required fields that have no value (which make the tool
        unavailable rather than the configuration invalid): their keys, and how to set them.

    Raises:
        ConfigError: naming the file, the key and what is expected.
    """
    table = config.tools.get(metadata.name, {})
    if inherit is not None:  # a transformed tool: the original's table, its own on top
        table = {**config.tools.get(inherit, {}), **table}
    fields = {f.name: f for f in metadata.config_fields}
    key_prefix = "tool.toolplug." if config.path and config.path.name == "pyproject.toml" else ""
    key_prefix += f"tools.{metadata.name}."

    def err(key: str, message: str, expected: str | None = None) -> ConfigError:
        return ConfigError(message, file=config.source, key=key_prefix + key, expected=expected)

    for key in table:
        if key not in fields and key not in POLICY_KEYS:
            known = sorted(fields) + sorted(POLICY_KEYS)
            raise err(key, "unknown key", "one of " + ", ".join(known))
    overlay = config.tool_settings(metadata.name).trust
    if overlay is not None:
        _check_overlay(overlay, metadata, err)
    resolved: dict[str, Any] = {}
    missing: list[tuple[str, str]] = []
    for name, spec in sorted(fields.items()):
        value: Any = None
        if name in table:
            value = _indirect(table[name], spec, config, env, err, files_read)
        if value is None and spec.env_var and env.get(spec.env_var):
            value = _from_env_text(env[spec.env_var], spec)
        if value is None:
            value = spec.default
        if value is None:
            if spec.required:
                missing.append((f"{key_prefix}{name}", how_to_set(config, metadata.name, spec)))
            continue
        _check_type(value, spec, err)
        if spec.secret and isinstance(value, str):
            redactor.add(value)
        resolved[name] = value
    return resolved, missing


def how_to_set(config: Config, tool: str, spec: ConfigField) -> str:
    """Every way to give a tool's setting a value: the key, its indirections, its variable."""
    table = ("tool.toolplug." if config.path and config.path.name == "pyproject.toml" else "")
    where = f"[{table}tools.{tool}] {spec.name}"
    if spec.type != "string":  # a file holds text; JSON in a variable is no way to suggest
        text = f"set {where}"
    elif spec.secret:
        text = f'set {where} = {{ env = "VAR" }} or {{ file = "PATH" }}'
    else:
        text = f'set {where} (a value, {{ env = "VAR" }} or {{ file = "PATH" }})'
    return text + (f", or the environment variable {spec.env_var}" if spec.env_var else "")


def _check_overlay(
    overlay: TrustOverlay, metadata: ToolMetadata, err: Callable[..., ConfigError]
) -> None:
    """A ``trust`` table's sinks, refs and destinations name the tool's parameters; its refs
    and destinations are sinks."""
    parameters = sorted((metadata.parameters.get("properties") or {}).keys())
    name = metadata.name
    wrong = overlay.misnamed(parameters, metadata.labels.sinks)
    if wrong is None:
        return
    key, names, kind = wrong
    listed = ", ".join(map(repr, names))
    if kind == "parameter":
        raise err(
            f"trust.{key}",
            f"names {listed}, not a parameter of {name}",
            f"a list of {name}'s top-level parameters: "
            + (", ".join(parameters) or "it has none, so []"),
        )
    sinks = overlay.sinks if overlay.sinks is not None else metadata.labels.sinks
    raise err(
        f"trust.{key}",
        f"names {listed}, not a sink of {name} (its sinks: {', '.join(sinks) or 'none'}); "
        f"{SINK_KINDS[key].meaning}",
        "a list of the tool's sinks (set trust.sinks to add one)",
    )


def _indirect(  # noqa: PLR0917 - private helper; every caller passes all six
    value: Any,
    spec: ConfigField,
    config: Config,
    env: Mapping[str, str],
    err: Any,
    files_read: list[str] | None,
) -> Any:
    if isinstance(value, Mapping) and set(value) in ({"env"}, {"file"}) and spec.type != "object":
        if "env" in value:
            name = value["env"]
            if not isinstance(name, str) or not name:
                raise err(spec.name, f"got {value!r}", '{ env = "VAR" }')
            found = env.get(name)
            return _from_env_text(found, spec) if found else None
        raw_path = value["file"]
        if not isinstance(raw_path, str):
            raise err(spec.name, f"got {value!r}", '{ file = "PATH" }')
        base = config.path.parent if config.path else Path.cwd()
        path = base / Path(raw_path).expanduser()
        if files_read is not None:
            files_read.append(str(path))
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise err(spec.name, f"cannot read {path}: {exc.strerror}", "a readable file") from None
    if spec.secret:
        raise err(
            spec.name,
            "secrets may not be written into the configuration file",
            '{ env = "VAR" } or { file = "PATH" }'
            + (f", or the environment variable {spec.env_var}" if spec.env_var else ""),
        )
    return value


def _from_env_text(text: str, spec: ConfigField) -> Any:
    """An environment value for a field: text, or JSON for numbers, booleans, lists, tables."""
    if spec.type == "string":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # the type check names the field and what it expects


def _describe(spec: ConfigField) -> str:
    return f"{spec.type}: {spec.description}"


def _check_type(value: Any, spec: ConfigField, err: Any) -> None:
    allowed = _JSON_TYPES[spec.type]
    bad_bool = isinstance(value, bool) and spec.type in ("integer", "number")
    shown = "a value that is not shown (secret)" if spec.secret else repr(value)
    if not isinstance(value, allowed) or bad_bool:
        raise err(spec.name, f"got {shown} ({type(value).__name__})", _describe(spec))
    if spec.json_schema is not None:
        problems = list(Draft202012Validator(spec.json_schema).iter_errors(value))
        if problems:
            first = min(problems, key=lambda e: list(map(str, e.absolute_path)))
            where = "".join(f"[{p}]" for p in first.absolute_path)
            message = f"does not match its {first.validator} rule" if spec.secret else first.message
            raise err(spec.name + where, message, _describe(spec))
