"""The conversion of an OpenAPI document into tool definitions: pure, so checked with
Hypothesis for names and table-driven for OpenAPI 3.0's own spellings."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from toolplug.sources.openapi._convert import convert, snake_name
from toolplug.sources.openapi._spec import SpecError, parse_document

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _document(paths: dict[str, Any], **components: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths,
            "components": {"schemas": components}}


@given(st.lists(st.text(min_size=0, max_size=120), min_size=1, max_size=30))
def test_any_operation_ids_give_valid_unique_names(ids: list[str]) -> None:
    paths = {
        f"/p{i}": {"get": {"operationId": op, "responses": {"200": {"description": "ok"}}}}
        for i, op in enumerate(ids)
    }
    names = [op["name"] for op in convert(_document(paths))["operations"]]
    assert len(set(names)) == len(names)
    # room for a prefix of up to 16 characters
    assert all(NAME.fullmatch(n) and len(n) <= 48 for n in names), names
    # the same document, the same names
    assert names == [op["name"] for op in convert(_document(paths))["operations"]]


def test_snake_names() -> None:
    cases = {
        "listPets": "list_pets",  # camelCase
        "repos/get-content": "repos_get_content",  # GitHub's spelling
        "HTTPGet2": "httpget2",  # capitals in a row stay together
        "2fa-enable": "op_2fa_enable",  # a letter first
        "": "operation",
    }
    assert {k: snake_name(k) for k in cases} == cases


def test_openapi_3_0_nullable_and_boolean_bounds_become_json_schema() -> None:
    document = _document(
        {"/items": {"post": {
            "operationId": "addItem",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Item"}}}},
            "responses": {"201": {"description": "made"}},
        }}},
        Item={"type": "object", "required": ["price"], "properties": {
            "price": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            "note": {"type": "string", "nullable": True, "example": "x"},
            "parent": {"$ref": "#/components/schemas/Item"},
        }},
    )
    (op,) = convert(document)["operations"]
    schema = op["parameters"]
    Draft202012Validator.check_schema(schema)
    props = schema["properties"]
    assert props["price"]["exclusiveMinimum"] == 0
    assert "minimum" not in props["price"]
    assert props["note"]["type"] == ["string", "null"]
    assert "example" not in props["note"]
    # the self-reference is kept once, under the root's $defs
    assert props["parent"] == {"$ref": "#/$defs/Item", "description": "the body field parent"}
    assert schema["$defs"]["Item"]["properties"]["parent"] == {"$ref": "#/$defs/Item"}
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"price": 1, "parent": {"price": 2, "parent": {"price": 3}}})
    assert not validator.is_valid({"price": 1, "parent": {"price": "no"}})


def test_shared_path_parameters_and_ignored_headers() -> None:
    document = _document({"/users/{id}": {
        "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
        ],
        "get": {
            "operationId": "getUser",
            "parameters": [
                {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
                {"name": "id", "in": "query", "schema": {"type": "string"}},
            ],
            "responses": {"200": {"description": "ok"}},
        },
    }})
    (op,) = convert(document)["operations"]
    assert op["args"] == {
        "id": ["path", "id", "simple", "0"],
        "x_request_id": ["header", "X-Request-Id", "simple", "0"],
        "query_id": ["query", "id", "form", "1"],
    }
    assert op["parameters"]["required"] == ["id"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # Swagger 2.0: no well-kept converter, the message says how to convert it
        (b'{"swagger": "2.0", "paths": {}}', "swagger2openapi"),
        (b'{"openapi": "2.5", "paths": {}}', "not an OpenAPI 3.0 or 3.1 description"),
        (b"openapi: 3.1.0\ninfo: {title: t}\n", "has no paths object"),
        (b"[1, 2]", "its top level is no object"),
        (b"a: [unclosed", "neither JSON nor valid YAML"),
        (b"{not json", "not valid JSON"),
    ],
)
def test_other_documents_are_refused_with_the_reason(raw: bytes, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_document(raw, "spec")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://api.github.com", False),  # a host name: judged when a call resolves it
        ("https://api.github.com./v3", False),
        ("http://127.0.0.1:8000/api", True),
        ("http://localhost/api", True),
        ("http://2130706433/", True),  # 127.0.0.1 spelt as one number
        ("http://0x7f.1/", True),
        ("http://127.1/", True),
        ("http://[::1]:9/", True),
        ("http://api.example.org:99999/", True),  # no such port
        ("http://user@127.0.0.1/", True),
    ],
)
def test_a_base_url_the_guard_refuses_is_found_when_the_api_loads(url: str, refused: bool) -> None:
    """Every spelling of a loopback address is checked when the API loads (a plain host
    name needs no import of the guard, and waits for a call's look-up)."""
    from toolplug.contract._network import NetworkPolicy
    from toolplug.sources.openapi._api import _refused

    assert (_refused(url, NetworkPolicy()) is not None) is refused


def _bomb(levels: int) -> str:
    """A description whose parameter schema is a "billion laughs": each level an alias
    list of ten of the one before, so ``levels`` of them name 10**levels strings."""
    lines = ['a0: &a0 "lol"']
    lines += [
        f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, levels + 1)
    ]
    anchors = "\n".join("  " + line for line in lines)
    return (
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nx-anchors:\n" + anchors + "\n"
        "paths:\n  /x:\n    get:\n      operationId: bomb\n      parameters:\n"
        f"        - {{name: q, in: query, schema: {{type: string, enum: *a{levels}}}}}\n"
        "      responses: {'200': {description: ok}}\n"
    )


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    """Under 1 KB of nested aliases once took 84 s and 1.5 GB to load; now none is read."""
    import toolplug

    text = _bomb(8)
    assert len(text) < 1024
    (tmp_path / "bomb.yaml").write_text(text)
    started = time.monotonic()
    bomb = {"spec": str(tmp_path / "bomb.yaml")}
    registry = toolplug.load({"cache_dir": str(tmp_path / "cache"), "openapi": {"bomb": bomb}})
    elapsed = time.monotonic() - started
    state = registry.checker.state("openapi_bomb")
    assert not state.present
    assert "uses a YAML alias (*a0, line 5)" in (state.reason or "")
    assert "use a $ref" in (state.reason or "")
    assert elapsed < 0.5, elapsed


def test_an_alias_is_refused_an_anchor_alone_is_not() -> None:
    with pytest.raises(SpecError, match="uses a YAML alias"):
        parse_document(_bomb(1).encode(), "spec")
    plain = b"openapi: 3.1.0\ninfo: &i {title: t}\npaths: {}\n"  # an anchor nobody uses
    assert parse_document(plain, "spec")["info"] == {"title": "t"}


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        # two operations, one allowed: the key to raise is named
        ({"max_operations": 1}, "has 2 operations, more than 1; raise [openapi.api] "
         "max_operations"),
        ({"max_bytes": 100}, "is larger than 100 bytes; raise [openapi.api] max_bytes"),
        ({"max_operations": 2, "max_bytes": 100_000}, None),
    ],
)
def test_a_descriptions_size_and_operations_are_bounded(
    tmp_path: Path, limits: dict[str, int], reason: str | None
) -> None:
    import json

    import toolplug

    ok = {"responses": {"200": {"description": "ok"}}}
    (tmp_path / "api.json").write_text(json.dumps({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.org"}],
        "paths": {"/a": {"get": ok, "post": ok}},
    }))
    registry = toolplug.load({"cache_dir": str(tmp_path / "cache"), "openapi": {
        "api": {"spec": str(tmp_path / "api.json"), **limits}}})
    state = registry.checker.state("openapi_api")
    if reason is None:
        assert state.present, state.reason
    else:
        assert reason in (state.reason or "")


@pytest.mark.parametrize("key", ["max_bytes", "max_operations"])
def test_limits_are_positive_numbers(tmp_path: Path, key: str) -> None:
    import toolplug
    from toolplug import ConfigError

    with pytest.raises(ConfigError, match=key):
        toolplug.load({"openapi": {"api": {"spec": "api.json", key: 0}}})


def test_a_description_file_broken_after_it_was_read_keeps_its_operations_listed(
    tmp_path: Path,
) -> None:
    """As for a URL: the last known operations stay, unavailable, with the reason."""
    import json

    import toolplug

    spec = tmp_path / "api.json"
    spec.write_text(json.dumps({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.org"}],
        "paths": {"/a": {"get": {"operationId": "getA",
                                 "responses": {"200": {"description": "ok"}}}}},
    }))
    config = {"cache_dir": str(tmp_path / "cache"), "openapi": {"api": {"spec": str(spec)}}}
    assert toolplug.load(config).availability("api_get_a").available
    spec.write_text("{broken")
    broken = toolplug.load(config)
    assert "api_get_a" in broken.tools
    (reason,) = broken.availability("api_get_a").reasons
    assert "its description cannot be read" in reason
    assert "not valid JSON" in reason


def test_apis_from_one_description_do_not_shadow_each_other(tmp_path: Path) -> None:
    """Two APIs configured from one description on purpose share every title (GET /quota);
    doctor names no shadowing between them, and still names it against another
    description's tool of that title."""
    import json

    import toolplug
    from toolplug.sources.mcp._screen import findings

    def write(name: str, operation: str) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({
            "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "servers": [{"url": "https://api.example.org"}],
            "paths": {"/quota": {"get": {"operationId": operation, "summary": "The quota",
                                         "responses": {"200": {"description": "ok"}}}}},
        }))
        return str(path)

    shared = write("shared.json", "getQuota")
    apis = {"eu": {"spec": shared}, "us": {"spec": shared}}
    registry = toolplug.load({"cache_dir": str(tmp_path / "cache"), "openapi": apis})
    assert not [r for r in findings(registry, None) if r.finding.rule == "shadowing"]
    apis["other"] = {"spec": write("other.json", "readQuota")}
    registry = toolplug.load({"cache_dir": str(tmp_path / "cache"), "openapi": apis})
    shadowed = {r.finding.tool for r in findings(registry, None) if r.finding.rule == "shadowing"}
    assert shadowed == {"eu_get_quota", "us_get_quota", "other_read_quota"}
