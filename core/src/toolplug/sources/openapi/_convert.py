"""An OpenAPI document's operations as tool definitions: plain JSON, cached on disk.

Each operation becomes one definition: a name from its ``operationId`` (valid for every
provider, unique, the same for the same description), a one-line description, the path,
query, header and cookie parameters and the request body as one JSON Schema object
(``$ref``s resolved inline; a schema that refers to itself is kept once under ``$defs``),
where each argument goes, and the schema of the success response. Nothing here imports
the rest of toolplug: the result is what ``_catalog`` stores and ``_api`` turns into tools.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

from toolplug.contract._parts import PART_KINDS
from toolplug.sources._gathered import unique_name
from toolplug.sources.openapi._request import part_kind

__all__ = ["CONVERTER_VERSION", "convert", "snake_name"]

CONVERTER_VERSION: Final = 7
"""Bumped when the definitions change shape, so cached ones are made again."""

METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_DROPPED: Final = frozenset(
    {"example", "discriminator", "xml", "externalDocs", "nullable", "x-nullable"}
)
_RETURNS_DEPTH: Final = 1
"""How many ``$ref``s deep a success response's schema is spelled out (the rest: its type)."""
_DESCRIPTION_CHARS: Final = 300
_IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})


def snake_name(text: str) -> str:
    """``listPets``, ``repos/get-content`` -> ``list_pets``, ``repos_get_content``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    text = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if not text:
        return "operation"
    return text if text[0].isalpha() else f"op_{text}"


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return match.group(1) if match else text


class _Resolver:
    """Resolves ``$ref``s of one document; a schema reached again on its own path (a cycle)
    is referred to under ``$defs`` instead of spelled out forever."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._done: dict[str, Any] = {}  # ref -> its schema, spelled out (no cycle inside)

    def lookup(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise KeyError(f"{ref!r} points outside the description (only #/... is read)")
        node: Any = self.document
        for raw in ref[2:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            node = node[part] if isinstance(node, dict) else node[int(part)]
        return node

    def follow(self, node: Any, depth: int = 0) -> Any:
        """A parameter, body or response object with its own ``$ref`` followed."""
        while isinstance(node, dict) and "$ref" in node and depth < 32:
            node = self.lookup(node["$ref"])
            depth += 1
        return node

    def schema(self, node: Any) -> dict[str, Any]:
        """A schema with every ``$ref`` resolved; cycles go to a ``$defs`` table at its top."""
        defs: dict[str, Any] = {}
        names: dict[str, str] = {}
        result, _ = self._walk(node, (), defs, names)
        pending = [r for r in names if r not in defs]
        while pending:
            for ref in pending:
                defs[ref] = None
                defs[ref], _ = self._walk(self.lookup(ref), (ref,), defs, names, root=True)
            pending = [r for r in names if r not in defs]
        if names:
            result = dict(result) if isinstance(result, dict) else {"allOf": [result]}
            result["$defs"] = {names[r]: defs[r] for r in sorted(names)}
        return dict(result) if isinstance(result, dict) else {}  # callers add keys

    def _walk(  # noqa: C901 - one branch per JSON Schema keyword OpenAPI rewrites
        self,
        node: Any,
        path: tuple[str, ...],
        defs: dict[str, Any],
        names: dict[str, str],
        *,
        root: bool = False,
    ) -> tuple[Any, bool]:
        """The node resolved, and whether a cycle was met inside it."""
        if isinstance(node, list):
            items = [self._walk(n, path, defs, names) for n in node]
            return [i for i, _ in items], any(c for _, c in items)
        if not isinstance(node, dict):
            return node, False
        ref = node.get("$ref")
        if isinstance(ref, str) and not root:
            if ref in path:  # a cycle: refer to it under $defs
                name = names.get(ref)
                if name is None:
                    base = re.sub(r"[^A-Za-z0-9_.-]", "_", ref.rsplit("/", 1)[-1]) or "schema"
                    name = base if base not in names.values() else f"{base}_{len(names)}"
                    names[ref] = name
                return {"$ref": f"#/$defs/{name}"}, True
            if ref in self._done:
                return self._done[ref], False
            try:
                target = self.lookup(ref)
            except (KeyError, IndexError, ValueError, TypeError):
                return {"description": f"(unresolved reference {ref})"}, False
            resolved, cyclic = self._walk(target, (*path, ref), defs, names)
            if not cyclic:
                self._done[ref] = resolved
            return resolved, cyclic
        out: dict[str, Any] = {}
        cyclic = False
        for key, value in node.items():
            if key in _DROPPED or key.startswith("x-") or key == "$ref":
                continue
            if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(
                value, dict
            ):
                walked = {k: self._walk(v, path, defs, names) for k, v in value.items()}
                out[key] = {k: w for k, (w, _) in walked.items()}
                cyclic |= any(c for _, c in walked.values())
            else:
                out[key], inner = self._walk(value, path, defs, names)
                cyclic |= inner
        if node.get("nullable") is True:  # OpenAPI 3.0's nullable, as JSON Schema says it
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        for bound in ("Minimum", "Maximum"):  # 3.0's boolean exclusive bounds
            flag = out.get(f"exclusive{bound}")
            if isinstance(flag, bool):
                value = out.get(bound.lower())
                if flag and value is not None:
                    out[f"exclusive{bound}"] = out.pop(bound.lower())
                else:
                    del out[f"exclusive{bound}"]
        return out, cyclic

    def shallow(self, node: Any, depth: int = 0) -> Any:
        """A schema spelled out ``_RETURNS_DEPTH`` references deep; deeper, only its type."""
        if isinstance(node, list):
            return [self.shallow(n, depth) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                target = self.lookup(ref)
            except (KeyError, IndexError, ValueError, TypeError):
                return {}
            if depth >= _RETURNS_DEPTH:
                kept = {k: target[k] for k in ("type", "title") if k in target}
                return kept or {}
            return self.shallow(target, depth + 1)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED or key.startswith("x-") or key in ("description", "examples"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: self.shallow(v, depth) for k, v in value.items()}
            else:
                out[key] = self.shallow(value, depth)
        return out


def _argument_name(name: str, location: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if location == "header":
        text = text.lower()
    if not text or not (text[0].isalpha() or text[0] == "_"):
        text = f"p_{text}"
    return text[:64]


def _is_file(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "string" and schema.get("format") == "binary":
        return True
    return "contentMediaType" in schema and schema.get("type", "string") == "string"


_FILE_SCHEMA: Final = {
    "type": "object",
    "description": "a file to upload: its content as text, or base64 with encoding = base64",
    "properties": {
        "filename": {"type": "string", "description": "the file's name"},
        "content": {"type": "string", "description": "the file's content"},
        "encoding": {"type": "string", "enum": ["text", "base64"], "default": "text"},
        "content_type": {"type": "string", "description": "its media type"},
    },
    "required": ["content"],
    "additionalProperties": False,
}


def _body_kind(content: dict[str, Any]) -> tuple[str, str] | None:
    """The media type to send and how: ``json``, ``multipart``, ``form`` or ``raw``."""
    types = list(content)
    for media in types:
        base = media.split(";")[0].strip().lower()
        if base == "application/json" or base.endswith("+json"):
            return "json", media
    for media, kind in (("multipart/form-data", "multipart"),
                        ("application/x-www-form-urlencoded", "form")):
        if media in types:
            return kind, media
    return ("raw", types[0]) if types else None


def _success(responses: dict[str, Any]) -> tuple[str | None, Any]:
    codes = sorted(c for c in responses if str(c).startswith("2"))
    for code in [*codes, "2XX", "default"]:
        if code in responses:
            return str(code), responses[code]
    return None, None


def _parts(resolver: _Resolver, responses: dict[str, Any]) -> list[str]:
    """The kinds of part the successful answers' media types make (``part_kind``), in the
    order of ``PART_KINDS``; ``default`` counts when no 2xx answer is described."""
    kinds: set[str] = set()
    codes = [c for c in responses if str(c).startswith("2")] or ["default"]
    for code in codes:
        response = resolver.follow(responses.get(code))
        content = response.get("content") if isinstance(response, dict) else None
        if isinstance(content, dict):
            kinds.update(k for k in map(part_kind, content) if k is not None)
    return [k for k in PART_KINDS if k in kinds]


def _operation(  # noqa: C901, PLR0912, PLR0915 - one branch per parameter location and body form
    resolver: _Resolver,
    path: str,
    method: str,
    operation: dict[str, Any],
    shared: list[Any],
    *,
    security: Any = None,
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    args: dict[str, list[str]] = {}
    defs: dict[str, Any] = {}

    def hoisted(schema: dict[str, Any]) -> dict[str, Any]:
        """``#/$defs/...`` refers to the root of the parameters schema: keep them there."""
        found = schema.pop("$defs", None)
        if isinstance(found, dict):
            defs.update(found)
        return schema
    own = [resolver.follow(p) for p in operation.get("parameters") or []]
    seen = {(p.get("in"), p.get("name")) for p in own if isinstance(p, dict)}
    inherited = [resolver.follow(p) for p in shared]
    params = [
        p for p in inherited
        if isinstance(p, dict) and (p.get("in"), p.get("name")) not in seen
    ]
    for param in [*params, *own]:
        if not isinstance(param, dict):
            continue
        location, original = str(param.get("in", "")), str(param.get("name", ""))
        if location not in ("path", "query", "header", "cookie") or not original:
            continue
        if location == "header" and original.lower() in _IGNORED_HEADERS:
            continue
        schema = param.get("schema")
        if schema is None and isinstance(param.get("content"), dict) and param["content"]:
            schema = next(iter(param["content"].values())).get("schema")
        prop = hoisted(resolver.schema(schema or {}))
        description = _one_line(param.get("description")) or f"the {location} parameter {original}"
        if "description" not in prop:
            prop["description"] = description[:_DESCRIPTION_CHARS]
        if param.get("deprecated"):
            prop["deprecated"] = True
        name = _argument_name(original, location)
        if name in properties:
            name = _argument_name(f"{location}_{original}", location)
        properties[name] = prop
        style = param.get("style") or ("form" if location in ("query", "cookie") else "simple")
        explode = param.get("explode", style == "form")
        args[name] = [location, original, str(style), "1" if explode else "0"]
        if param.get("required") or location == "path":
            required.append(name)
    body: dict[str, Any] | None = None
    request = resolver.follow(operation.get("requestBody"))
    if isinstance(request, dict) and isinstance(request.get("content"), dict):
        chosen = _body_kind(request["content"])
        if chosen is not None:
            kind, media = chosen
            schema = hoisted(
                resolver.schema((request["content"][media] or {}).get("schema") or {})
            )
            body_required = bool(request.get("required"))
            body = {"kind": kind, "media": media, "whole": None}
            props = schema.get("properties")
            flat = (
                kind in ("json", "multipart", "form")
                and isinstance(props, dict)
                and props
                and not any(k in schema for k in ("allOf", "anyOf", "oneOf"))
            )
            if flat:
                assert isinstance(props, dict)
                inner_required = set(schema.get("required") or [])
                for prop_name, given in props.items():
                    prop = given
                    if isinstance(prop, dict) and prop.get("readOnly"):
                        continue
                    name = _argument_name(prop_name, "body")
                    if name in properties:
                        name = _argument_name(f"body_{prop_name}", "body")
                    if kind == "multipart" and _is_file(prop):
                        prop = dict(_FILE_SCHEMA)
                    elif kind == "multipart" and isinstance(prop, dict) and _is_file(
                        prop.get("items")
                    ):
                        prop = {**prop, "items": dict(_FILE_SCHEMA)}
                    if isinstance(prop, dict) and "description" not in prop:
                        prop = {**prop, "description": f"the body field {prop_name}"}
                    properties[name] = prop
                    args[name] = ["body", prop_name, "", ""]
                    if body_required and prop_name in inner_required:
                        required.append(name)
            else:
                name = "body" if "body" not in properties else "request_body"
                if kind == "raw":
                    schema = {"type": "string", "description": f"the request body ({media})"}
                description = _one_line(request.get("description"))
                if description and "description" not in schema:
                    schema["description"] = description[:_DESCRIPTION_CHARS]
                properties[name] = schema
                body["whole"] = name
                if body_required:
                    required.append(name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = sorted(set(required))
    if defs:
        parameters["$defs"] = dict(sorted(defs.items()))
    code, response = _success(operation.get("responses") or {})
    returns = None
    response = resolver.follow(response)
    if isinstance(response, dict) and isinstance(response.get("content"), dict):
        chosen = _body_kind(response["content"])
        if chosen is not None and chosen[0] == "json":
            found = (response["content"][chosen[1]] or {}).get("schema")
            if found is not None:
                returns = resolver.shallow(found)
    summary = _one_line(operation.get("summary"))
    long = _one_line(operation.get("description"))
    description = summary or _first_sentence(long) or f"{method.upper()} {path}"
    if summary and long and not long.startswith(summary):
        more = _first_sentence(long)
        if len(description) + len(more) < _DESCRIPTION_CHARS:
            description = f"{description.rstrip('.')}: {more}"
    tags = [str(t) for t in operation.get("tags") or []]
    return {
        "operation_id": str(operation.get("operationId") or f"{method}_{path}"),
        "method": method.upper(),
        "path": path,
        "tags": tags,
        "description": description[:_DESCRIPTION_CHARS],
        "deprecated": bool(operation.get("deprecated")),
        "parameters": parameters,
        "args": args,
        "body": body,
        "success": code,
        "returns": returns if isinstance(returns, dict) else None,
        "parts": _parts(resolver, operation.get("responses") or {}),
        "security": _requirements(operation.get("security", security)),
        "scopes": _scopes(operation.get("security", security)),
        "anonymous": operation.get("security") == [],
    }


def _scopes(given: Any) -> dict[str, list[str]]:
    """The scopes an operation's ``security`` names, by scheme (those of every
    alternative: a sign-in for the scheme asks for them)."""
    found: dict[str, set[str]] = {}
    for requirement in given if isinstance(given, list) else ():
        for name, scopes in (requirement.items() if isinstance(requirement, dict) else ()):
            if isinstance(scopes, list):
                found.setdefault(str(name), set()).update(
                    str(s) for s in scopes if isinstance(s, str) and s and " " not in s
                )
    return {name: sorted(scopes) for name, scopes in found.items() if scopes}


def _requirements(given: Any) -> list[list[str]] | None:
    """An operation's ``security`` (its own, else the document's) as the scheme names of
    each alternative (``[]``: the anonymous ``{}``); None: it asks for none."""
    if not isinstance(given, list) or not given:
        return None
    found = [
        sorted(str(name) for name in requirement)
        for requirement in given if isinstance(requirement, dict)
    ]
    return found or None


_FLOWS: Final = ("clientCredentials", "authorizationCode", "implicit", "password")


def _schemes(resolver: _Resolver, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``components.securitySchemes``, what toolplug needs of each: its type, where an
    API key goes, the HTTP scheme, the OAuth flows' URLs and scopes, the discovery URL."""
    given = (document.get("components") or {}).get("securitySchemes")
    schemes: dict[str, dict[str, Any]] = {}
    for name, node in (given.items() if isinstance(given, dict) else ()):
        try:
            scheme = resolver.follow(node)
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not isinstance(scheme, dict) or not isinstance(scheme.get("type"), str):
            continue
        kept: dict[str, Any] = {"type": scheme["type"]}
        for key in ("in", "name", "openIdConnectUrl"):
            if isinstance(scheme.get(key), str):
                kept[key] = scheme[key]
        if isinstance(scheme.get("scheme"), str):
            kept["scheme"] = scheme["scheme"].lower()
        flows = scheme.get("flows")
        if isinstance(flows, dict):
            kept["flows"] = {}
            for flow in _FLOWS:
                given_flow = flows.get(flow)
                if not isinstance(given_flow, dict):
                    continue
                scopes = given_flow.get("scopes")
                kept["flows"][flow] = {
                    key: str(value) for key, value in given_flow.items()
                    if key in ("tokenUrl", "authorizationUrl", "refreshUrl")
                } | {"scopes": sorted(map(str, scopes)) if isinstance(scopes, dict) else []}
        schemes[str(name)] = kept
    return schemes


def _unique_names(operations: list[dict[str, Any]]) -> None:
    """Give each operation a base name: unique, deterministic, at most 64 characters with
    room for a prefix (a longer one ends in a digest of its ``operationId``)."""
    taken: set[str] = set()
    for op in sorted(operations, key=lambda o: (o["operation_id"], o["path"], o["method"])):
        name = snake_name(op["operation_id"])
        if len(name) > 48:
            digest = hashlib.sha256(op["operation_id"].encode()).hexdigest()[:6]
            name = f"{name[:41].rstrip('_')}_{digest}"
        op["name"] = unique_name(name, taken)


def convert(document: dict[str, Any]) -> dict[str, Any]:
    """The operations of a checked OpenAPI document as tool definitions (JSON), sorted."""
    resolver = _Resolver(document)
    operations: list[dict[str, Any]] = []
    problems: list[str] = []
    for path, given in sorted((document.get("paths") or {}).items()):
        item = resolver.follow(given)
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            try:
                operations.append(_operation(
                    resolver, str(path), method, operation, shared,
                    security=document.get("security"),
                ))
            except (KeyError, IndexError, TypeError, ValueError, RecursionError) as exc:
                problems.append(f"{method.upper()} {path}: cannot be read ({exc})")
    _unique_names(operations)
    info = document.get("info") or {}
    servers = [
        str(s.get("url")) for s in document.get("servers") or [] if isinstance(s, dict)
    ]
    return {
        "version": CONVERTER_VERSION,
        "openapi": str(document.get("openapi")),
        "title": _one_line(info.get("title")),
        "api_version": _one_line(info.get("version")),
        "servers": servers,
        "operations": operations,
        "security_schemes": _schemes(resolver, document),
        "problems": problems,
    }
