"""Operations packaged in a plugin: what ``toolplug new NAME --from-openapi SPEC`` writes,
and the tools a generated plugin registers from it.

``package(spec, name, include=...)`` reads a description and keeps the operations
``include`` selects (the patterns of ``[openapi.NAME] include``), converted, in one JSON
document; the generated plugin ships it as ``operations.json`` and calls
``operation_tools(path)`` from its ``register_tools`` hook. Its tools read their base URL
and credential from their settings: the ``NAME_BASE_URL`` and ``NAME_TOKEN`` environment
variables, or ``[tools.TOOL] base_url`` and ``token``.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator

from toolplug.config._openapi import ApiSettings, ApiTrust
from toolplug.contract._metadata import ConfigField, Example, Guidelines, ToolMetadata
from toolplug.contract._network import NetworkPolicy
from toolplug.contract._tool import ErrorType, Tool, ToolContext, ToolResult
from toolplug.sources.openapi import _convert, _request, _spec
from toolplug.sources.openapi._api import _annotations, _trust

__all__ = ["operation_tools", "package"]

PACKAGE_VERSION: Final = 1
_AUTH_TYPES: Final = ("bearer", "header", "query", "basic")


def package(
    spec: str,
    name: str,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    auth: str | None = None,
    auth_name: str | None = None,
    base: Path | None = None,
) -> dict[str, Any]:
    """The curated operations of a description, as a generated plugin ships them.

    Raises:
        SpecError: the description cannot be read or understood.
        ValueError: ``include`` keeps no operation, or ``auth`` is unknown.
    """
    if auth is not None and auth not in _AUTH_TYPES:
        raise ValueError(f"--auth {auth!r}: use one of {', '.join(_AUTH_TYPES)}")
    raw, where = _spec.read_source(
        spec, base=base or Path.cwd(), policy=NetworkPolicy(), timeout=30
    )
    description = _convert.convert(_spec.parse_document(raw, where))
    selection = ApiSettings(
        name=name[:32], spec=spec, include=list(include or []), exclude=list(exclude or [])
    )
    operations = [
        op for op in description["operations"]
        if selection.selects(
            op["operation_id"], method=op["method"], path=op["path"], tags=tuple(op["tags"])
        )
    ]
    if not operations:
        raise ValueError(
            f"no operation of {where} matches --include {include or []} / --exclude "
            f"{exclude or []}; use operationIds or globs, tag:NAME, path:/GLOB or method:GET"
        )
    servers = description.get("servers") or []
    base_url = next((s for s in servers if s.startswith(("http://", "https://"))), None)
    title = description.get("title") or name
    for op in operations:
        op["tool"] = f"{name}_{op['name']}"[:64]
        what = op["description"].rstrip(".")
        op["usage_hint"] = f"Use to {what[:1].lower()}{what[1:]} ({title})."
        op["guidelines"] = {
            "do": [f"use it when the task needs {op['method']} {op['path']} of {title}"],
            "do_not": ["use it to reach another API or an address the user did not mean"],
        }
    return {
        "version": PACKAGE_VERSION,
        "name": name,
        "title": description.get("title") or name,
        "api_version": description.get("api_version"),
        "base_url": base_url,
        "auth": None if auth is None else {"type": auth, "name": auth_name},
        "operations": operations,
    }


def _sample(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:  # noqa: PLR0911 - one exit per schema type, each a plain value
    """A value that fits a (simple) schema: its default, enum, or a plain value of its type."""
    if not isinstance(schema, dict) or depth > 4:
        return "example"
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _sample(defs.get(ref.removeprefix("#/$defs/")), defs, depth + 1)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _sample(schema[key][0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return max(int(schema.get("minimum", 1)), 1)
    if kind == "number":
        return max(schema.get("minimum", 1), 1)
    if kind == "boolean":
        return True
    if kind == "array":
        return [_sample(schema.get("items"), defs, depth + 1)] * max(schema.get("minItems", 0), 0)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {
            k: _sample(properties.get(k), defs, depth + 1) for k in schema.get("required") or []
        }
    text = "example"
    return text.ljust(int(schema.get("minLength", 0)), "x")


def _examples(op: dict[str, Any]) -> tuple[Example, ...]:
    """One example of the operation's required arguments, when one can be made that fits."""
    parameters = op["parameters"]
    arguments = _sample(parameters, parameters.get("$defs") or {})
    if not isinstance(arguments, dict) or not Draft202012Validator(parameters).is_valid(arguments):
        return ()
    return (Example(description=f"{op['method']} {op['path']}", input=arguments),)


def _fields(document: dict[str, Any]) -> tuple[ConfigField, ...]:
    name = document["name"].upper()
    fields = [
        ConfigField(
            name="base_url", type="string", env_var=f"{name}_BASE_URL",
            description="the URL requests go to", default=document.get("base_url"),
            required=True,
        )
    ]
    if document.get("auth"):
        what = "user:password" if document["auth"]["type"] == "basic" else "the credential"
        fields.append(
            ConfigField(
                name="token", type="string", env_var=f"{name}_TOKEN", secret=True,
                required=True, description=f"{what} every request sends",
            )
        )
    return tuple(fields)


def _credentials(auth: dict[str, Any] | None, token: str | None) -> _request.Credentials:
    if not auth or not token:
        return _request.Credentials()
    kind, header = auth["type"], auth.get("name") or "X-Api-Key"
    if kind == "bearer":
        return _request.Credentials(headers={"Authorization": f"Bearer {token}"})
    if kind == "header":
        return _request.Credentials(headers={header: token})
    if kind == "query":
        return _request.Credentials(query={auth.get("name") or "api_key": token})
    encoded = base64.b64encode(token.encode()).decode("ascii")
    return _request.Credentials(headers={"Authorization": f"Basic {encoded}"})


def operation_tools(path: str | os.PathLike[str]) -> list[type[Tool]]:
    """The ``Tool`` classes of a packaged ``operations.json``, sorted by name."""
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    fields = _fields(document)
    auth = document.get("auth")
    made: list[type[Tool]] = []
    for op in sorted(document["operations"], key=lambda o: o["tool"]):
        metadata = ToolMetadata(
            name=op["tool"],
            description=op["description"],
            title=f"{op['method']} {op['path']}",
            category="utility",
            requires_capabilities=("network",),
            parameters=op["parameters"],
            returns=op.get("returns"),
            parts=tuple(op.get("parts") or ()),
            annotations=_annotations(op["method"]),
            trust=_trust(ApiTrust(), op, None),
            config_fields=fields,
            usage_hint=op.get("usage_hint") or "",
            guidelines=Guidelines(**{k: tuple(v) for k, v in (op.get("guidelines") or {}).items()}),
            errors=_request.ERRORS,
            examples=_examples(op),
        )
        operation = _request.Operation.of(op, metadata.timeout_seconds)

        def bind(operation: _request.Operation = operation) -> Any:
            async def run(
                self: Tool, arguments: dict[str, Any], context: ToolContext
            ) -> ToolResult:
                base_url = context.config.get("base_url")
                if not base_url:
                    return ToolResult.failure(ErrorType.UNAVAILABLE, "no base_url is set")
                return await _request.send(
                    operation, arguments, context, base_url=str(base_url),
                    credentials=_credentials(auth, context.config.get("token")),
                )

            return run

        made.append(type(
            f"OpenAPI_{op['tool']}", (Tool,),
            {"metadata": metadata, "run": bind(), "__module__": __name__,
             "__doc__": metadata.description},
        ))
    return made
