"""OpenAPI descriptions as tools, against a real FastAPI application on 127.0.0.1
(tests/helpers/openapi_app.py): its own /openapi.json read through the network guard, and
every call a real HTTP request to it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import struct
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.openapi import fastapi_server
from tests.helpers.openapi_app import png
from toolplug import Audio, ConfigError, File, Image
from toolplug.sources.openapi import described, report


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fastapi_server(tmp_path_factory.mktemp("fastapi")) as url:
        yield url


def _config(url: str, tmp_path: Path, **api: Any) -> dict[str, Any]:
    return {
        "network": {"allow": ["127.0.0.1"]},
        "cache_dir": str(tmp_path / "cache"),
        "openapi": {"notes": {"spec": f"{url}/openapi.json", **api}},
    }


@pytest.fixture
def registry(api_url: str, tmp_path: Path) -> Iterator[toolplug.Registry]:
    loaded = toolplug.load(_config(api_url, tmp_path))
    yield loaded
    loaded.close()


def _notes(registry: toolplug.Registry) -> list[str]:
    return [n for n in registry.tools if n.startswith("notes_")]


def test_each_operation_becomes_a_tool_named_from_its_operation_id(
    registry: toolplug.Registry,
) -> None:
    assert _notes(registry) == [
        "notes_big_list", "notes_blob", "notes_broken", "notes_chime", "notes_count_tree",
        "notes_create_note", "notes_delete_note", "notes_get_note", "notes_limited",
        "notes_list_notes", "notes_note_pdf", "notes_note_picture", "notes_upload_file",
        "notes_who_am_i",
    ]
    assert all(registry.availability(n).available for n in _notes(registry))
    meta = registry.get("notes_get_note").metadata
    assert meta.description == "Get a note: Returns one note by its id."
    assert meta.title == "GET /notes/{note_id}"
    # path, header: one object; the path parameter required
    assert set(meta.parameters["properties"]) == {"note_id", "x_trace"}
    assert meta.parameters["required"] == ["note_id"]
    assert meta.returns is not None
    assert set(meta.returns["properties"]) >= {"id", "title"}
    # the JSON body's fields are arguments too, its required ones required
    create = registry.get("notes_create_note").metadata.parameters
    assert set(create["properties"]) == {"title", "body", "tags"}
    assert create["required"] == ["title"]


def test_reads_run_and_writes_are_asked(registry: toolplug.Registry) -> None:
    # GET is read-only; POST changes the world; DELETE destroys
    assert registry.needs_approval("notes_list_notes", {}) is None
    assert registry.get("notes_list_notes").metadata.annotations.read_only
    assert "not read-only" in (registry.needs_approval("notes_create_note", {}) or "")
    assert "destructive" in (registry.needs_approval("notes_delete_note", {"note_id": 1}) or "")
    result = registry.call("notes_create_note", {"title": "unasked"})
    assert result.error is not None
    assert result.error.type == "ApprovalRequiredError"


def test_trust_labels_output_untrusted_query_and_body_are_sinks(
    registry: toolplug.Registry,
) -> None:
    listing = registry.labels("notes_list_notes")
    assert listing.untrusted
    assert listing.sinks == ("page", "per_page", "tag")
    assert registry.labels("notes_create_note").sinks == ("body", "tags", "title")
    # a path parameter and a header are not sinks by default
    assert registry.labels("notes_get_note").sinks == ()


def test_path_query_header_and_body_reach_the_api(registry: toolplug.Registry) -> None:
    got = registry.call("notes_get_note", {"note_id": 2, "x_trace": "t-42"})
    assert got.ok, got.error
    assert got.data["body"] == "text of note 2 (trace t-42)"
    made = registry.call(
        "notes_create_note", {"title": "from a test", "tags": ["a", "b"]}, approved=True
    )
    assert made.ok
    assert made.data["title"] == "from a test"
    assert made.data["tags"] == ["a", "b"]
    listed = registry.call("notes_list_notes", {"tag": "a", "per_page": 10})
    assert [n["title"] for n in listed.data] == ["from a test"]
    gone = registry.call("notes_delete_note", {"note_id": made.data["id"]}, approved=True)
    assert gone.ok
    assert gone.output == "HTTP 204"


def test_pagination_says_how_to_ask_for_the_next_page(registry: toolplug.Registry) -> None:
    first = registry.call("notes_list_notes", {"per_page": 2})
    assert [n["id"] for n in first.data] == [1, 2]
    assert "more results: call again with page=2, per_page=2" in first.warnings
    second = registry.call("notes_list_notes", {"per_page": 2, "page": 2})
    assert [n["id"] for n in second.data] == [3, 4]


def test_file_uploads_as_text_or_base64(registry: toolplug.Registry) -> None:
    text = registry.call(
        "notes_upload_file",
        {"upload": {"filename": "a.txt", "content": "hello"}, "label": "greeting"},
        approved=True,
    )
    assert text.ok, text.error
    assert text.data == {
        "filename": "a.txt", "size": 5, "sha256": hashlib.sha256(b"hello").hexdigest(),
        "label": "greeting", "content_type": "application/octet-stream",
    }
    raw = bytes(range(256))
    binary = registry.call(
        "notes_upload_file",
        {"upload": {"filename": "b.bin", "content": base64.b64encode(raw).decode(),
                    "encoding": "base64", "content_type": "application/x-test"}},
        approved=True,
    )
    assert binary.data["sha256"] == hashlib.sha256(raw).hexdigest()
    assert binary.data["content_type"] == "application/x-test"


def test_a_schema_that_refers_to_itself_is_kept_under_defs(registry: toolplug.Registry) -> None:
    schema = registry.get("notes_count_tree").metadata.parameters
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    tree = {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}
    counted = registry.call("notes_count_tree", tree, approved=True)
    assert counted.ok
    assert counted.data == {"labels": 3}
    # the nested levels are validated before the request is made
    bad = registry.call("notes_count_tree", {"label": "a", "children": [{}]})
    assert bad.error is not None
    assert bad.error.type == "ValidationError"


@pytest.mark.parametrize(
    ("tool", "arguments", "kind", "retry", "after"),
    [
        # a missing thing: retrying will not help
        ("notes_get_note", {"note_id": 999}, "NotFoundError", False, None),
        # 429 with Retry-After: 7
        ("notes_limited", {}, "RateLimitError", True, 7),
        # a server error may pass
        ("notes_broken", {}, "ExecutionError", True, None),
    ],
)
def test_error_answers_are_structured(  # noqa: PLR0917 - the table's columns
    registry: toolplug.Registry,
    tool: str,
    arguments: dict[str, Any],
    kind: str,
    retry: bool,
    after: int | None,
) -> None:
    result = registry.call(tool, arguments)
    assert result.error is not None
    assert (result.error.type, result.error.retry_possible) == (kind, retry)
    assert result.error.details.get("retry_after_seconds") == after
    assert "answered HTTP" in result.error.message
    if after is not None:
        assert result.to_dict()["retry_after_seconds"] == after


def test_a_long_response_is_spilled_like_any_other(api_url: str, tmp_path: Path) -> None:
    config = _config(api_url, tmp_path, tools={"bigList": {"max_output_chars": 1000}})
    registry = toolplug.load(config)
    result = registry.call("notes_big_list", {"count": 500})
    assert result.ok
    assert result.spill is not None
    assert len(result.output) <= 1000
    page = registry.read(result.spill)
    assert page is not None
    tail = registry.read(result.spill, offset=page.total - 200)
    assert tail is not None
    assert "item number 499" in tail.text


def test_bearer_credentials_come_from_the_environment_and_are_redacted(
    api_url: str, tmp_path: Path
) -> None:
    config = _config(api_url, tmp_path, auth={"type": "bearer", "token": {"env": "NOTES_TOKEN"}})
    unset = toolplug.load(config, env={})
    why = unset.availability("notes_who_am_i").reasons
    assert list(why) == [
        "capability 'openapi_notes' is missing: [openapi.notes] auth.token in configuration: "
        "the environment variable NOTES_TOKEN is not set"
    ]
    registry = toolplug.load(config, env={"NOTES_TOKEN": "s3cret-token"})
    assert registry.call("notes_who_am_i", {}).data == {"user": "ada"}
    assert "s3cret-token" not in json.dumps(registry.redactor.redact("Bearer s3cret-token"))


@pytest.mark.parametrize(
    "auth",
    [
        {"type": "bearer", "token": "written-in-the-file"},  # a secret must be indirect
        {"type": "header", "value": {"env": "X"}},  # header needs a name
        {"type": "basic", "username": "ada"},  # basic needs a password
    ],
)
def test_bad_auth_tables_are_config_errors(auth: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        toolplug.load(_config("http://127.0.0.1:1", tmp_path, auth=auth))
    assert "openapi.notes.auth" in str(caught.value)


def test_the_guard_refuses_a_loopback_base_url_without_allow(
    api_url: str, tmp_path: Path
) -> None:
    spec = tmp_path / "notes.json"
    import urllib.request

    with urllib.request.urlopen(f"{api_url}/openapi.json") as answer:
        spec.write_bytes(answer.read())
    registry = toolplug.load(
        {"cache_dir": str(tmp_path / "cache"),
         "openapi": {"notes": {"spec": str(spec), "base_url": api_url}}}
    )
    (reason,) = registry.availability("notes_list_notes").reasons
    assert "the network guard refuses its base URL" in reason
    assert "[network] allow" in reason


def test_an_unreadable_description_makes_the_api_unavailable_with_its_reason(
    tmp_path: Path,
) -> None:
    swagger = tmp_path / "old.json"
    swagger.write_text('{"swagger": "2.0", "paths": {}}')
    registry = toolplug.load(
        {"cache_dir": str(tmp_path / "cache"), "openapi": {
            "missing": {"spec": "nowhere.yaml"}, "old": {"spec": str(swagger)}}}
    )
    states = {c.name: c for c in registry.capability_states()}
    assert not states["openapi_missing"].present
    assert "cannot read" in (states["openapi_missing"].reason or "")
    assert "Swagger 2.0" in (states["openapi_old"].reason or "")
    assert "swagger2openapi" in (states["openapi_old"].reason or "")
    assert "readable OpenAPI 3.0 or 3.1" in (states["openapi_old"].setup or "")


def test_yaml_file_include_exclude_and_prefix(api_url: str, tmp_path: Path) -> None:
    import urllib.request

    import yaml

    with urllib.request.urlopen(f"{api_url}/openapi.json") as answer:
        document = json.loads(answer.read())
    spec = tmp_path / "notes.yaml"
    spec.write_text(yaml.safe_dump(document))
    base = {"network": {"allow": ["127.0.0.1"]}, "cache_dir": str(tmp_path / "cache")}
    cases = [
        # by tag, then one operation left out by its operationId
        ({"include": ["tag:notes"], "exclude": ["deleteNote"]},
         ["n_create_note", "n_get_note", "n_list_notes"]),
        # by method
        ({"include": ["method:POST"]}, ["n_count_tree", "n_create_note", "n_upload_file"]),
        # by path glob
        ({"include": ["path:/notes/*"]}, ["n_delete_note", "n_get_note"]),
    ]
    for selection, expected in cases:
        api = {"spec": str(spec), "base_url": api_url, "prefix": "n_", **selection}
        registry = toolplug.load({**base, "openapi": {"notes": api}})
        assert [n for n in registry.tools if n.startswith("n_")] == expected, selection
    registry = toolplug.load({**base, "openapi": {"notes": {
        "spec": str(spec), "base_url": api_url, "prefix": "", "include": ["getNote"]}}})
    assert registry.call("get_note", {"note_id": 3}).data["id"] == 3


def test_overlays_category_guidance_approval_and_labels(api_url: str, tmp_path: Path) -> None:
    config = _config(
        api_url, tmp_path, category="reference", approval="always",
        trust={"output": "trusted", "private": False},
        tools={"getNote": {
            "usage_hint": "Read one note when its id is known.",
            "guidelines": {"do": ["use the id from list_notes"]},
            "approval": "never",
            "trust": {"sinks": ["note_id"]},
        }},
    )
    registry = toolplug.load(config)
    meta = registry.get("notes_get_note").metadata
    assert meta.category == "reference"
    assert meta.usage_hint.startswith("Read one note")
    assert meta.guidelines.do == ("use the id from list_notes",)
    assert registry.needs_approval("notes_get_note", {"note_id": 1}) is None
    always = '[tools.notes_list_notes] approval = "always"'
    assert registry.needs_approval("notes_list_notes", {}) == always
    assert registry.labels("notes_get_note").sinks == ("note_id",)
    assert registry.labels("notes_list_notes").output == "trusted"
    assert registry.labels("notes_get_note").output == "trusted"  # the API's, kept


def test_scopes_of_an_api_and_of_one_operation(api_url: str, tmp_path: Path) -> None:
    config = _config(
        api_url, tmp_path, scopes=["notes:read"],
        tools={"getNote": {"scopes": ["notes:one"]}},
    )
    registry = toolplug.load(config)
    assert registry.config.tool_settings("notes_list_notes").scopes == ["notes:read"]
    assert registry.config.tool_settings("notes_get_note").scopes == ["notes:one"]


def test_the_parsed_description_is_cached_and_used_when_the_api_is_down(
    tmp_path: Path,
) -> None:
    config: dict[str, Any]
    with fastapi_server(tmp_path) as url:
        config = _config(url, tmp_path)
        first = toolplug.load(config)
        api = described(first)
        assert api is not None
        assert not api.apis["notes"].from_cache
        assert len(_notes(first)) == 14
    # the server is gone: listing still works from the cache, within spec_ttl_seconds
    again = toolplug.load(config)
    api = described(again)
    assert api is not None
    assert api.apis["notes"].from_cache
    assert len(_notes(again)) == 14
    # refresh (what doctor does) reads it again: the last known tools stay, with the reason
    refreshed = toolplug.load(config, refresh=True)
    (reason,) = refreshed.availability("notes_get_note").reasons
    assert "its description cannot be read: cannot fetch" in reason
    lines = report(described(refreshed))  # type: ignore[arg-type]
    assert lines[0].startswith("  notes (http://127.0.0.1:")
    assert "DOWN" in lines[0]


def test_list_all_and_doctor_show_the_api(
    api_url: str, tmp_path: Path, cli: Any
) -> None:
    work = tmp_path / "work"
    (work / "toolplug.toml").write_text(
        f'cache_dir = "{tmp_path / "cache"}"\n'
        '[network]\nallow = ["127.0.0.1"]\n'
        f'[openapi.notes]\nspec = "{api_url}/openapi.json"\ninclude = ["tag:notes"]\n'
        '[openapi.down]\nspec = "missing.json"\n'
        f'[openapi.keyed]\nspec = "{api_url}/openapi.json"\ninclude = ["whoAmI"]\n'
        'auth = { type = "bearer", token = { env = "KEYED_TOKEN" } }\n'
    )
    listed = cli("list", "--all", cwd=work)
    assert listed.code == 0, listed.err
    assert "notes_list_notes" in listed.out
    (keyed,) = [line for line in listed.out.splitlines() if line.startswith("keyed_who_am_i")]
    assert "no: capability 'openapi_keyed' is missing: [openapi.keyed] auth.token" in keyed
    assert "KEYED_TOKEN is not set" in keyed
    # a description never read has no tool to list as unavailable: it is named after them
    assert "Not listed, their tools unknown:" in listed.out
    assert "[openapi.down] (missing.json): no tools, its description cannot be read: " \
        "cannot read" in listed.out
    assert "[openapi.notes]" not in listed.out
    as_json = cli("list", "--all", "--json", cwd=work)
    assert "[openapi.down] (missing.json): no tools" in as_json.err
    assert "openapi.down" not in as_json.out
    doctor = cli("doctor", cwd=work)
    assert "OpenAPI descriptions:" in doctor.out
    assert "notes (" in doctor.out
    assert "4 offered" in doctor.out
    assert "openapi_down: missing (its description cannot be read: cannot read" in doctor.out


def test_checked_schemas_are_vouched_for_and_a_changed_one_is_checked_again(
    api_url: str, tmp_path: Path
) -> None:
    from toolplug.sources.openapi._catalog import read_parsed, write_parsed

    cache = tmp_path / "cache"
    toolplug.load(_config(api_url, tmp_path, include=["getNote"]))
    stored = read_parsed(cache, "notes")
    assert stored is not None
    assert stored.checked_ids == ["getNote"]
    config = _config(api_url, tmp_path)
    toolplug.load(config)  # the operations offered now are recorded too
    stored = read_parsed(cache, "notes")
    assert stored is not None
    assert len(stored.checked_ids) == 14
    assert len(stored.checked) >= 10  # the parameters and returns that passed
    # a definition edited in the cache (not by the converter) is not vouched for
    for op in stored.operations:
        if op["operation_id"] == "getNote":
            op["parameters"]["properties"]["note_id"] = {"type": "not-a-type"}
    write_parsed(cache, "notes", stored)
    registry = toolplug.load(config)
    assert "notes_get_note" not in registry.tools
    (problem,) = [p.describe() for p in registry.problems if p.tool == "notes_get_note"]
    assert "not a valid JSON Schema 2020-12" in problem


def test_a_cached_load_checks_nothing_the_cache_vouches_for_and_builds_the_same_tools(
    api_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load from the cache copies each vouched operation's metadata from one checked
    template: no meta-schema check, no model validation, and the very metadata a first
    (checked) load made; a table of the configuration still has its operation checked."""
    from jsonschema import Draft202012Validator

    from toolplug.contract._metadata import ToolMetadata

    config = _config(api_url, tmp_path)
    first = toolplug.load(config)
    checked: list[Any] = []
    validated: list[Any] = []
    check = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]
    validate = ToolMetadata.model_validate.__func__  # type: ignore[attr-defined]

    def check_schema(cls: Any, schema: Any, *args: Any, **kwargs: Any) -> Any:
        checked.append(schema)
        return check(cls, schema, *args, **kwargs)

    def model_validate(cls: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:
        validated.append(obj)
        return validate(cls, obj, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(check_schema))
    monkeypatch.setattr(ToolMetadata, "model_validate", classmethod(model_validate))
    again = toolplug.load(config)
    names = _notes(again)
    assert len(names) == 14
    mine = {id(again.get(n).metadata.parameters) for n in names}
    assert not [s for s in checked if id(s) in mine]
    assert not [v for v in validated if isinstance(v, dict) and v.get("name") in names]
    for name in names:
        made, expected = again.get(name).metadata, first.get(name).metadata
        assert made == expected
        assert made.model_fields_set == expected.model_fields_set
    # and its tools call the API as the first load's did
    result = again.call("notes_get_note", {"note_id": 1})
    assert result.ok, result.error
    assert result.data == first.call("notes_get_note", {"note_id": 1}).data
    # an operation the configuration adds to is checked again, field by field
    config["openapi"]["notes"]["tools"] = {"getNote": {"description": "two\nlines"}}
    edited = toolplug.load(config)
    assert "notes_get_note" not in edited.tools
    notes = described(edited).apis["notes"].notes  # type: ignore[union-attr]
    assert any("'getNote' cannot be offered" in n and "one line" in n for n in notes), notes


def test_async_calls_share_one_client_per_loop_and_close_it(
    registry: toolplug.Registry,
) -> None:
    import asyncio
    import gc

    api = described(registry)
    assert api is not None
    pool = api.apis["notes"].pool

    async def main() -> set[int]:
        results = await asyncio.gather(
            *(registry.acall("notes_get_note", {"note_id": i % 5 + 1}) for i in range(20))
        )
        assert all(r.ok for r in results), [r.error for r in results if not r.ok]
        return {id(pool.client()) for _ in range(3)}

    for _ in range(2):  # two loops, each closing its client when asyncio.run ends
        assert len(asyncio.run(main())) == 1
        gc.collect()
    assert len(pool._clients) == 0


def test_an_apis_refs_and_destinations_apply_where_the_argument_is_a_sink(
    api_url: str, tmp_path: Path
) -> None:
    # tags name what the API holds; a note's title is where nothing goes: not a destination
    # here, but the table's names apply only to operations whose sinks hold them
    config = _config(
        api_url, tmp_path,
        trust={"refs": ["tag", "tags"], "destinations": ["title", "note_id"]},
        tools={"getNote": {"trust": {"sinks": ["note_id"], "destinations": ["note_id"]}}},
    )
    registry = toolplug.load(config)
    listing = registry.labels("notes_list_notes")
    assert (listing.sinks, listing.refs, listing.destinations) == (
        ("page", "per_page", "tag"), ("tag",), (),
    )
    made = registry.labels("notes_create_note")
    assert (made.refs, made.destinations) == (("tags",), ("title",))
    # note_id is no sink by default (a path parameter): the API's table gives it nothing;
    # the operation's own table makes it a sink and a destination
    got = registry.labels("notes_get_note")
    assert (got.sinks, got.refs, got.destinations) == (("note_id",), (), ("note_id",))
    with pytest.raises(toolplug.ConfigError) as caught:
        toolplug.load(_config(api_url, tmp_path, trust={"refs": "tag"}))
    assert "trust.refs" in str(caught.value)


def test_operations_that_answer_images_audio_or_files_declare_their_parts(
    registry: toolplug.Registry,
) -> None:
    declared = {n: registry.get(n).metadata.parts for n in _notes(registry)}
    assert declared["notes_note_picture"] == ("image",)
    assert declared["notes_chime"] == ("audio",)
    assert declared["notes_note_pdf"] == ("file",)
    assert declared["notes_blob"] == ("file",)
    # JSON answers are text and data, no parts
    assert declared["notes_get_note"] == ()


def test_an_image_answer_is_an_image_part_and_a_line_saying_so(
    registry: toolplug.Registry,
) -> None:
    result = registry.call("notes_note_picture", {"note_id": 1, "width": 5})
    assert result.ok, result.error
    assert result.output == (
        f"GET /pictures/{{note_id}} answered HTTP 200 with an image "
        f"(image/png, {len(png(5, 3))} bytes)"
    )
    assert "\ufffd" not in result.for_model()  # no bytes read as text
    [part] = result.parts
    assert isinstance(part, Image)
    assert part.mime_type == "image/png"
    assert part.data == png(5, 3)
    assert struct.unpack(">II", part.data[16:24]) == (5, 3)  # IHDR's width and height
    assert result.data is None
    assert result.to_dict()["parts"][0]["data"] == base64.b64encode(part.data).decode()


def test_audio_and_pdf_answers_are_parts_named_from_content_disposition(
    registry: toolplug.Registry,
) -> None:
    sound = registry.call("notes_chime", {})
    assert sound.ok, sound.error
    [audio] = sound.parts
    assert isinstance(audio, Audio)
    assert audio.mime_type == "audio/wav"
    with wave.open(io.BytesIO(audio.data)) as reader:
        assert reader.getnframes() == 800
    document = registry.call("notes_note_pdf", {"note_id": 2})
    assert document.ok, document.error
    [pdf] = document.parts
    assert isinstance(pdf, File)
    assert (pdf.name, pdf.mime_type) == ("note-2.pdf", "application/pdf")
    assert pdf.data.startswith(b"%PDF-1.4")
    assert pdf.data.rstrip().endswith(b"%%EOF")
    assert b"(note 2) Tj" in pdf.data
    assert document.output.startswith("GET /documents/{note_id} answered HTTP 200 with a file "
                                      "note-2.pdf (application/pdf, ")


def test_octet_stream_is_a_file_unless_its_bytes_say_what_they_are(
    registry: toolplug.Registry,
) -> None:
    raw = registry.call("notes_blob", {"size": 300})
    assert raw.ok, raw.error
    [blob] = raw.parts
    assert isinstance(blob, File)
    # filename* (RFC 5987) decoded
    assert (blob.name, blob.mime_type) == ("caf\u00e9 data.bin", "application/octet-stream")
    assert blob.data == bytes(i % 256 for i in range(300))
    assert raw.output.endswith("(application/octet-stream, 300 bytes)")
    # a PNG sent as octet-stream is shown as the picture it is
    picture = registry.call("notes_blob", {"picture": True})
    assert picture.ok, picture.error
    assert [type(p) for p in picture.parts] == [Image]
    assert picture.parts[0] == Image(png(2, 2), "image/png")


def test_a_binary_answer_over_max_bytes_is_an_error_not_a_cut_file(
    api_url: str, tmp_path: Path
) -> None:
    config = _config(api_url, tmp_path)
    config["network"]["max_bytes"] = 200
    registry = toolplug.load(config)
    try:
        small = registry.call("notes_blob", {"size": 200})
        assert small.ok, small.error
        assert [p.size for p in small.parts] == [200]
        big = registry.call("notes_blob", {"size": 201})
        assert big.error is not None
        assert big.error.type == "ExecutionError"
        assert "longer than [network] max_bytes" in big.error.message
        assert "raise [network] max_bytes" in big.error.message
        assert big.parts == ()
    finally:
        registry.close()
