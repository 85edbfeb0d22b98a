"""Call results in each provider's own form (render/_results.py), checked three ways.

Against the providers' own SDK types (TypedDicts for OpenAI and Anthropic, the pydantic
models of google-genai, which forbid unknown fields); through the providers' own clients,
which send the item to a service on 127.0.0.1 that records what arrives; and against the
exact list of losses each format reports for a result holding every kind of part.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import ToolResultBlockParam
from google import genai
from google.genai import types as gemini_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionToolMessageParam
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import toolplug
from tests.helpers.media import wav
from tests.helpers.parts import png
from toolplug import (
    Audio,
    EmbeddedResource,
    File,
    Image,
    ResourceLink,
    ResultLoss,
    Text,
    ToolResult,
)
from toolplug.contract._parts import PartKind
from toolplug.render._formats import BY_NAME, TABLE, Format, dumps
from toolplug.render._results import RESULT_FORMATS

CHAT_MESSAGE: TypeAdapter[Any] = TypeAdapter(ChatCompletionToolMessageParam)
RESPONSES_OUTPUT: TypeAdapter[Any] = TypeAdapter(FunctionCallOutput)
ANTHROPIC_RESULT: TypeAdapter[Any] = TypeAdapter(ToolResultBlockParam)


def pdf() -> bytes:
    """A real one-page PDF, its cross-reference table pointing at each object."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, table,
    )
    return bytes(out)


def full_result() -> ToolResult:
    """Every kind of part, in an order a tool could return them."""
    return ToolResult.success(
        "The March report.",
        parts=[
            Image(png(), "image/png"),  # 0
            Audio(wav(), "audio/wav"),  # 1
            File(pdf(), "application/pdf", name="march.pdf"),  # 2
            ResourceLink(  # 3
                "https://reports.example/march.csv", "march.csv", "text/csv", size_bytes=1200
            ),
            EmbeddedResource("file:///notes/summary.txt", text="Sales rose by 4%."),  # 4
            EmbeddedResource("file:///charts/april.png", data=png(), mime_type="image/png"),  # 5
            Text("That is all for March."),  # 6
        ],
        warnings=["two rows were cut"],
    )


FAILED = ToolResult.failure("not_found", "No report for March.", retry_possible=True)
ERROR_JSON = (
    '{"error": true, "error_type": "not_found", "error_message": "No report for March.", '
    '"retry_possible": true}'
)

AUDIO = "[audio: audio/wav, 1.6 KB]"
LINK = "[resource: march.csv at https://reports.example/march.csv, text/csv, 1.2 KB]"
EMBEDDED_PNG = "[resource: file:///charts/april.png, image/png, 69 B]"
RESPONSES = (
    "a function_call_output carries text, PNG, JPEG, GIF and WebP images, PDF and text files"
)
ANTHROPIC = (
    "a tool_result carries text, JPEG, PNG, GIF and WebP images, PDF and plain-text documents"
)
GEMINI = "a functionResponse carries text, PNG, JPEG and WebP images, PDF and plain text"
CHAT = "a Chat Completions tool message carries text only"

SUMMARY_URI = "file:///notes/summary.txt"
APRIL_URI = "file:///charts/april.png"


def described(index: int, kind: PartKind, why: str, text: str) -> ResultLoss:
    return ResultLoss(f"/parts/{index}", kind, "described", f"{why}: sent as the text {text!r}")


def unlinked(index: int, sent_as: str, uri: str) -> ResultLoss:
    detail = f"sent as {sent_as}; its URI {uri} is not"
    return ResultLoss(f"/parts/{index}", "resource", "rewritten", detail)


# The losses of full_result(), exactly, per format.
LOSSES: dict[str, list[ResultLoss]] = {
    # text only: every part but the text part is its description in the text
    "openai": [
        described(0, "image", CHAT, "[image: image/png, 69 B]"),
        described(1, "audio", CHAT, AUDIO),
        described(2, "file", CHAT, "[file: march.pdf, application/pdf, 327 B]"),
        described(3, "resource_link", CHAT, LINK),
        ResultLoss(
            "/parts/4", "resource", "described",
            f"{CHAT}: sent as its text, without its URI {SUMMARY_URI}",
        ),
        described(5, "resource", CHAT, EMBEDDED_PNG),
    ],
    # no audio item; links are text; the embedded resources lose their URIs
    "openai-responses": [
        described(1, "audio", RESPONSES, AUDIO),
        described(3, "resource_link", RESPONSES, LINK),
        unlinked(4, "input_text", SUMMARY_URI),
        unlinked(5, "an input_image", APRIL_URI),
    ],
    # a text resource is a document titled with its URI: nothing lost
    "anthropic": [
        described(1, "audio", ANTHROPIC, AUDIO),
        described(3, "resource_link", ANTHROPIC, LINK),
        unlinked(5, "an image block", APRIL_URI),
    ],
    # the output text describes each inline part, URI included
    "gemini": [
        described(1, "audio", GEMINI, AUDIO),
        described(3, "resource_link", GEMINI, LINK),
        unlinked(4, "text in response.output", SUMMARY_URI),
    ],
}
LOSSES["gemini-openapi"] = LOSSES["gemini"]


def ids(fmt: str) -> dict[str, str]:
    return {"name": "monthly_report"} if BY_NAME[fmt].result_needs == ("name",) else {
        "call_id": "call_7"
    }


def materialized(value: Any) -> Any:
    """A validated TypedDict with its lazily checked iterables run through (which raises
    on a bad item) and turned into lists, to compare with what was validated."""
    if isinstance(value, dict):
        return {key: materialized(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return [materialized(item) for item in value]
    return value


def check(fmt: str, item: dict[str, Any]) -> None:
    """``item`` is what the provider's own types accept, and they keep all of it."""
    if fmt == "openai":
        assert materialized(CHAT_MESSAGE.validate_python(item)) == item
    elif fmt == "openai-responses":
        assert materialized(RESPONSES_OUTPUT.validate_python(item)) == item
    elif fmt == "anthropic":
        assert materialized(ANTHROPIC_RESULT.validate_python(item)) == item
    else:
        part = gemini_types.Part.model_validate(item)  # extra="forbid" throughout
        dumped = part.model_dump(by_alias=True, exclude_none=True, mode="json")
        # the SDK writes bytes back in base64's URL-safe alphabet; the bytes are the same
        for blob in dumped["functionResponse"].get("parts", []):
            blob["inlineData"]["data"] = standard_base64(blob["inlineData"]["data"])
        assert dumped == item


def standard_base64(text: str) -> str:
    return base64.b64encode(base64.urlsafe_b64decode(text)).decode("ascii")


# -- the table ----------------------------------------------------------------------


@pytest.mark.parametrize("row", [r for r in TABLE if r.result], ids=lambda r: r.name)
def test_every_row_with_a_result_writer_names_one_that_writes(row: Format) -> None:
    item = toolplug.export_result(ToolResult.success("ok"), row.name, **ids(row.name))
    check(row.name, item)
    assert set(row.result_needs) <= {"call_id", "name"}


def test_the_result_formats_follow_the_table() -> None:
    assert tuple(r.name for r in TABLE if r.result) == RESULT_FORMATS
    assert "mcp" not in RESULT_FORMATS  # toolplug serve writes MCP results


# -- a result with every kind of part ------------------------------------------------


@pytest.mark.parametrize("fmt", RESULT_FORMATS)
def test_every_part_is_sent_or_its_loss_named(fmt: str) -> None:
    result = full_result()
    item = toolplug.export_result(result, fmt, **ids(fmt))
    check(fmt, item)
    assert toolplug.explain_result(result, fmt) == LOSSES[fmt]


def _decoded_data_url(url: str) -> tuple[str, bytes]:
    head, _, data = url.partition(",")
    match = re.fullmatch(r"data:([a-z0-9/.+-]+);base64", head)
    assert match, url
    return match.group(1), base64.b64decode(data, validate=True)


def test_openai_responses_sends_the_image_and_the_pdf_as_their_bytes() -> None:
    item = toolplug.export_result(full_result(), "openai-responses", call_id="call_7")
    assert item["type"] == "function_call_output"
    assert item["call_id"] == "call_7"
    kinds = [entry["type"] for entry in item["output"]]
    assert kinds == [
        "input_text",  # the output
        "input_image",  # the PNG
        "input_text",  # the audio, described
        "input_file",  # the PDF
        "input_text",  # the link
        "input_text",  # the text resource
        "input_image",  # the embedded PNG
        "input_text",  # the text part
        "input_text",  # the warning
    ]
    assert _decoded_data_url(item["output"][1]["image_url"]) == ("image/png", png())
    assert _decoded_data_url(item["output"][3]["file_data"]) == ("application/pdf", pdf())
    assert item["output"][3]["filename"] == "march.pdf"
    assert item["output"][-1] == {"type": "input_text", "text": "Warning: two rows were cut"}


def test_anthropic_sends_images_and_documents_in_base64_and_text() -> None:
    block = toolplug.export_result(full_result(), "anthropic", call_id="toolu_7")
    assert block["tool_use_id"] == "toolu_7"
    assert "is_error" not in block
    content = block["content"]
    assert [c["type"] for c in content] == [
        "text", "image", "text", "document", "text", "document", "image", "text", "text",
    ]
    assert base64.b64decode(content[1]["source"]["data"]) == png()
    assert content[3]["source"]["media_type"] == "application/pdf"
    assert base64.b64decode(content[3]["source"]["data"]) == pdf()
    assert content[3]["title"] == "march.pdf"
    assert content[5] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "Sales rose by 4%."},
        "title": "file:///notes/summary.txt",
    }


def test_gemini_sends_the_text_in_response_and_the_media_inline() -> None:
    result = full_result()
    item = toolplug.export_result(result, "gemini", name="monthly_report", call_id="fc_1")
    response = item["functionResponse"]
    assert response["name"] == "monthly_report"
    assert response["id"] == "fc_1"
    assert response["response"] == {"output": result.for_model()}
    part = gemini_types.Part.model_validate(item)
    assert part.function_response is not None
    blobs = [p.inline_data for p in part.function_response.parts or []]
    assert [(b.mime_type, b.data) for b in blobs if b] == [
        ("image/png", png()), ("application/pdf", pdf()), ("image/png", png()),
    ]


def test_openai_chat_sends_what_a_text_only_model_reads() -> None:
    result = full_result()
    message = toolplug.export_result(result, "openai", call_id="call_7")
    assert message == {"role": "tool", "tool_call_id": "call_7", "content": result.for_model()}


@pytest.mark.parametrize("fmt", RESULT_FORMATS)
def test_the_same_result_gives_the_same_bytes(fmt: str) -> None:
    first = dumps(toolplug.export_result(full_result(), fmt, **ids(fmt)))
    again = dumps(toolplug.export_result(full_result(), fmt, **ids(fmt)))
    assert first == again
    assert toolplug.explain_result(full_result(), fmt) == toolplug.explain_result(
        full_result(), fmt
    )


# -- results without parts, errors, odd parts ---------------------------------------


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("openai", {"role": "tool", "tool_call_id": "c", "content": ERROR_JSON}),
        (
            "openai-responses",
            {"type": "function_call_output", "call_id": "c", "output": ERROR_JSON},
        ),
        (
            "anthropic",
            {"type": "tool_result", "tool_use_id": "c", "content": ERROR_JSON, "is_error": True},
        ),
        (
            "gemini",
            {"functionResponse": {
                "name": "f", "id": "c", "response": {"error": json.loads(ERROR_JSON)}
            }},
        ),
    ],
)
def test_an_error_is_the_error_json_of_for_model(fmt: str, expected: dict[str, Any]) -> None:
    assert FAILED.for_model() == ERROR_JSON
    item = toolplug.export_result(FAILED, fmt, call_id="c", name="f")
    assert item == expected
    check(fmt, item)
    assert toolplug.explain_result(FAILED, fmt) == []


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("openai", {"role": "tool", "tool_call_id": "c", "content": "Done."}),
        ("openai-responses", {"type": "function_call_output", "call_id": "c", "output": "Done."}),
        ("anthropic", {"type": "tool_result", "tool_use_id": "c", "content": "Done."}),
        ("gemini", {"functionResponse": {"name": "f", "id": "c", "response": {"output": "Done."}}}),
    ],
)  # fmt: skip
def test_a_result_without_parts_is_its_text(fmt: str, expected: dict[str, Any]) -> None:
    result = ToolResult.success("Done.", data={"rows": 3})
    assert toolplug.export_result(result, fmt, call_id="c", name="f") == expected
    assert toolplug.explain_result(result, fmt) == []


def test_an_empty_result_has_no_empty_text_block_for_anthropic() -> None:
    """The Messages API refuses an empty text block: the content is left out instead."""
    empty = toolplug.export_result(ToolResult.success(""), "anthropic", call_id="c")
    assert empty == {"type": "tool_result", "tool_use_id": "c"}
    check("anthropic", empty)
    only_image = toolplug.export_result(
        ToolResult.success("", parts=[Image(png())]), "anthropic", call_id="c"
    )
    assert [c["type"] for c in only_image["content"]] == ["image"]


@pytest.mark.parametrize(
    ("part", "fmt", "expected"),
    [
        # a BMP is no image type OpenAI or Anthropic reads: described
        (Image(b"BM" + b"\x00" * 60, "image/bmp"), "openai-responses", "described"),
        (Image(b"BM" + b"\x00" * 60, "image/bmp"), "anthropic", "described"),
        # a GIF: Anthropic and OpenAI read it, Gemini does not
        (Image(b"GIF89a" + b"\x00" * 20, "image/gif"), "anthropic", None),
        (Image(b"GIF89a" + b"\x00" * 20, "image/gif"), "gemini", "described"),
        # a text file: a plain-text document for Anthropic, an input_file for OpenAI
        (File(b"a,b\n1,2\n", "text/csv", name="t.csv"), "anthropic", None),
        (File(b"a,b\n1,2\n", "text/csv", name="t.csv"), "openai-responses", None),
        (File(b"a,b\n1,2\n", "text/csv", name="t.csv"), "gemini", "described"),
        # a text file that is not UTF-8 cannot be a plain-text document
        (File(b"\xff\xfe\x00", "text/plain"), "anthropic", "described"),
        # an archive: no provider reads one
        (File(b"PK\x03\x04" + b"\x00" * 20, "application/zip"), "openai-responses", "described"),
        (File(b"PK\x03\x04" + b"\x00" * 20, "application/zip"), "anthropic", "described"),
        (File(b"PK\x03\x04" + b"\x00" * 20, "application/zip"), "gemini", "described"),
    ],
)
def test_each_provider_takes_the_types_it_reads(
    part: Image | File, fmt: str, expected: str | None
) -> None:
    result = ToolResult.success("Here.", parts=[part])
    item = toolplug.export_result(result, fmt, call_id="c", name="f")
    check(fmt, item)
    assert [loss.action for loss in toolplug.explain_result(result, fmt)] == (
        [expected] if expected else []
    )


def test_a_nameless_file_gets_a_name_openai_needs() -> None:
    result = ToolResult.success("", parts=[Text("see"), File(pdf(), "application/pdf")])
    item = toolplug.export_result(result, "openai-responses", call_id="c")
    assert item["output"][1]["filename"] == "part-1.pdf"


PARTS = st.sampled_from([
    Image(png(), "image/png"),
    Image(b"GIF89a" + b"\x00" * 20, "image/gif"),
    Image(b"BM" + b"\x00" * 60, "image/bmp"),
    Audio(wav(), "audio/wav"),
    File(pdf(), "application/pdf"),
    File(b"a,b\n", "text/csv", name="t.csv"),
    File(b"PK\x03\x04" + b"\x00" * 20, "application/zip", name="a.zip"),
    ResourceLink("https://reports.example/a", "a"),
    EmbeddedResource("file:///a.txt", text="alpha"),
    EmbeddedResource("file:///b.pdf", data=pdf(), mime_type="application/pdf"),
    Text("more"),
    Text(""),
])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(output=st.sampled_from(["", "Here."]), parts=st.lists(PARTS, max_size=6),
       warnings=st.lists(st.sampled_from(["cut"]), max_size=1))
def test_any_result_is_a_valid_item_and_only_real_parts_are_lost(
    output: str, parts: list[Any], warnings: list[str]
) -> None:
    result = ToolResult.success(output, parts=parts, warnings=warnings)
    not_text = [f"/parts/{i}" for i, part in enumerate(parts) if not isinstance(part, Text)]
    for fmt in RESULT_FORMATS:
        item = toolplug.export_result(result, fmt, call_id="c", name="f")
        check(fmt, item)
        assert dumps(item) == dumps(toolplug.export_result(result, fmt, call_id="c", name="f"))
        losses = toolplug.explain_result(result, fmt)
        paths = [loss.path for loss in losses]
        # each part lost at most once, in order, and a text part never
        assert paths == sorted(set(paths), key=lambda path: int(path.rsplit("/", 1)[1]))
        assert set(paths) <= set(not_text)
        if fmt == "openai":
            assert paths == not_text  # text only: every other part is described
        if fmt == "anthropic" and item.get("content") not in (None, ""):
            # never an empty text block, which the Messages API refuses
            blocks = item["content"] if isinstance(item["content"], list) else []
            assert all(b["text"] for b in blocks if b["type"] == "text")


# -- misuse ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "kwargs", "message"),
    [
        ("cohere", {"call_id": "c"}, "unknown result format 'cohere'; use one of: openai, "),
        ("mcp", {"call_id": "c"}, "toolplug serve sends MCP results itself"),
        ("anthropic", {}, "'anthropic' tool results need call_id=: the id of the tool call"),
        ("openai-responses", {"name": "f"}, "need call_id="),
        ("gemini", {"call_id": "c"}, "'gemini' tool results need name=: the name of the function"),
    ],
)
def test_misuse_names_what_is_wrong(fmt: str, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        toolplug.export_result(full_result(), fmt, **kwargs)


def test_explain_result_needs_no_ids() -> None:
    assert toolplug.explain_result(full_result(), "gemini") == LOSSES["gemini"]
    with pytest.raises(ValueError, match="toolplug serve sends MCP results itself"):
        toolplug.explain_result(full_result(), "mcp")


def test_a_loss_reads_as_one_line() -> None:
    loss = LOSSES["anthropic"][0]
    assert loss.line() == f"/parts/1  audio  described: {ANTHROPIC}: sent as the text '{AUDIO}'"


# -- through the providers' own clients, to a service on 127.0.0.1 --------------------


@pytest.fixture
def recorder(httpserver: HTTPServer) -> list[dict[str, Any]]:
    """Every request body the clients send; each is refused, as a service would refuse a
    request it cannot serve, so no client goes on to parse a made-up answer."""
    bodies: list[dict[str, Any]] = []

    def handler(request: Request) -> Response:
        bodies.append(json.loads(request.get_data()))
        error = {"error": {"message": "recorded", "type": "invalid_request_error", "code": 400}}
        return Response(json.dumps(error), status=400, content_type="application/json")

    httpserver.expect_request(re.compile(".*")).respond_with_handler(handler)
    return bodies


def test_the_openai_client_sends_the_responses_item_as_written(
    httpserver: HTTPServer, recorder: list[dict[str, Any]]
) -> None:
    item = toolplug.export_result(full_result(), "openai-responses", call_id="call_7")
    client = openai.OpenAI(base_url=httpserver.url_for("/v1"), api_key="test", max_retries=0)
    call = {"type": "function_call", "call_id": "call_7", "name": "monthly_report",
            "arguments": "{}"}
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="test-model", input=[call, item])  # type: ignore[list-item]
    assert recorder[0]["input"][1] == item


def test_the_openai_client_sends_the_chat_message_as_written(
    httpserver: HTTPServer, recorder: list[dict[str, Any]]
) -> None:
    message = toolplug.export_result(full_result(), "openai", call_id="call_7")
    client = openai.OpenAI(base_url=httpserver.url_for("/v1"), api_key="test", max_retries=0)
    asked: Any = {"role": "assistant", "tool_calls": [{
        "id": "call_7", "type": "function",
        "function": {"name": "monthly_report", "arguments": "{}"},
    }]}
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="test-model",
            messages=[{"role": "user", "content": "March?"}, asked, message],  # type: ignore[list-item]
        )
    assert recorder[0]["messages"][2] == message


def test_the_anthropic_client_sends_the_tool_result_as_written(
    httpserver: HTTPServer, recorder: list[dict[str, Any]]
) -> None:
    block = toolplug.export_result(full_result(), "anthropic", call_id="toolu_7")
    client = anthropic.Anthropic(base_url=httpserver.url_for(""), api_key="test", max_retries=0)
    use = {"type": "tool_use", "id": "toolu_7", "name": "monthly_report", "input": {}}
    # the items are plain dicts, as a host holds them: typed as the SDK's params by its check
    messages: Any = [
        {"role": "user", "content": "March?"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [block]},
    ]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model="test-model", max_tokens=64, messages=messages)
    assert recorder[0]["messages"][2]["content"][0] == block


def test_the_gemini_client_sends_the_function_response_with_its_bytes(
    httpserver: HTTPServer, recorder: list[dict[str, Any]]
) -> None:
    item = toolplug.export_result(full_result(), "gemini", name="monthly_report")
    client = genai.Client(
        api_key="test", http_options=gemini_types.HttpOptions(base_url=httpserver.url_for(""))
    )
    contents = [
        gemini_types.Content(role="user", parts=[gemini_types.Part(text="March?")]),
        gemini_types.Content(role="model", parts=[gemini_types.Part(
            function_call=gemini_types.FunctionCall(name="monthly_report", args={})
        )]),
        gemini_types.Content(role="user", parts=[gemini_types.Part.model_validate(item)]),
    ]
    with pytest.raises(genai.errors.ClientError):
        client.models.generate_content(model="test-model", contents=contents)
    sent = recorder[0]["contents"][2]["parts"][0]["functionResponse"]
    assert sent["name"] == "monthly_report"
    assert sent["response"] == item["functionResponse"]["response"]
    # the client writes the snake_case names and base64's URL-safe alphabet, both of
    # which the API reads: the bytes are what count
    assert [
        (p["inline_data"]["mime_type"], base64.urlsafe_b64decode(p["inline_data"]["data"]))
        for p in sent["parts"]
    ] == [("image/png", png()), ("application/pdf", pdf()), ("image/png", png())]
