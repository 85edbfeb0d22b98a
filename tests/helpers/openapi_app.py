"""A real FastAPI application for the OpenAPI tests: notes with path, query, header and
body parameters, file uploads, pagination (a ``Link`` header), authentication, a model that
refers to itself, error responses (404, 422, 429 with ``Retry-After``, 500), and answers
that are not text: a PNG, a WAV, a PDF and ``application/octet-stream`` bytes (real ones,
written here as their formats say).

Run by ``tests.helpers.openapi.fastapi_server`` under uvicorn on 127.0.0.1; FastAPI serves
its own description at ``/openapi.json``.
"""

from __future__ import annotations

import hashlib
import io
import struct
import wave
import zlib
from typing import Annotated, Any

from fastapi import FastAPI, File, Form, Header, HTTPException, Query, Response, UploadFile
from pydantic import BaseModel, Field

app = FastAPI(title="Notes", version="1.2.0")

_NOTES: dict[int, dict[str, Any]] = {
    i: {"id": i, "title": f"note {i}", "body": f"text of note {i}", "tags": ["demo"]}
    for i in range(1, 6)
}


class NewNote(BaseModel):
    """A note to add."""

    title: str = Field(min_length=1, description="the note's title")
    body: str = Field(default="", description="the note's text")
    tags: list[str] = Field(default_factory=list, description="labels for the note")


class Note(NewNote):
    """A stored note."""

    id: int


class Tree(BaseModel):
    """An outline: a label and the outlines under it (a schema that refers to itself)."""

    label: str
    children: list[Tree] = Field(default_factory=list)


@app.get("/notes", operation_id="listNotes", tags=["notes"], summary="List notes")
def list_notes(
    response: Response,
    tag: Annotated[str | None, Query(description="only notes with this tag")] = None,
    page: Annotated[int, Query(ge=1, description="the page to return")] = 1,
    per_page: Annotated[int, Query(ge=1, le=50, description="notes per page")] = 2,
) -> list[Note]:
    """Lists the notes, a page at a time."""
    notes = [n for n in _NOTES.values() if tag is None or tag in n["tags"]]
    start = (page - 1) * per_page
    if start + per_page < len(notes):
        response.headers["Link"] = f'</notes?page={page + 1}&per_page={per_page}>; rel="next"'
    return [Note(**n) for n in notes[start : start + per_page]]


@app.get("/notes/{note_id}", operation_id="getNote", tags=["notes"], summary="Get a note")
def get_note(
    note_id: int,
    x_trace: Annotated[str | None, Header(description="a trace id, echoed back")] = None,
    response: Response = None,  # type: ignore[assignment]
) -> Note:
    """Returns one note by its id."""
    if note_id not in _NOTES:
        raise HTTPException(404, f"no note {note_id}")
    if x_trace is not None:
        response.headers["X-Trace"] = x_trace
        return Note(**{**_NOTES[note_id], "body": f"{_NOTES[note_id]['body']} (trace {x_trace})"})
    return Note(**_NOTES[note_id])


@app.post(
    "/notes", operation_id="createNote", tags=["notes"], summary="Create a note", status_code=201
)
def create_note(note: NewNote) -> Note:
    """Stores a new note and returns it with its id."""
    number = max(_NOTES, default=0) + 1
    _NOTES[number] = {"id": number, **note.model_dump()}
    return Note(**_NOTES[number])


@app.delete(
    "/notes/{note_id}", operation_id="deleteNote", tags=["notes"], summary="Delete a note",
    status_code=204,
)
def delete_note(note_id: int) -> Response:
    """Deletes a note."""
    if _NOTES.pop(note_id, None) is None:
        raise HTTPException(404, f"no note {note_id}")
    return Response(status_code=204)


@app.post("/files", operation_id="uploadFile", tags=["files"], summary="Upload a file")
async def upload_file(
    upload: Annotated[UploadFile, File(description="the file to store")],
    label: Annotated[str, Form(description="a label for the file")] = "",
) -> dict[str, Any]:
    """Stores a file and says what arrived."""
    data = await upload.read()
    return {
        "filename": upload.filename,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "label": label,
        "content_type": upload.content_type,
    }


@app.post("/trees", operation_id="countTree", tags=["trees"], summary="Count an outline")
def count_tree(tree: Tree) -> dict[str, int]:
    """Counts the labels of an outline."""

    def count(node: Tree) -> int:
        return 1 + sum(count(c) for c in node.children)

    return {"labels": count(tree)}


@app.get("/whoami", operation_id="whoAmI", tags=["auth"], summary="Who the token belongs to")
def whoami(authorization: Annotated[str | None, Header()] = None) -> dict[str, str]:
    """Says who the bearer token belongs to."""
    if authorization != "Bearer s3cret-token":
        raise HTTPException(401, "a bearer token is required")
    return {"user": "ada"}


@app.get("/limited", operation_id="limited", tags=["errors"], summary="Always rate limited")
def limited() -> Response:
    """Answers 429 with Retry-After."""
    return Response('{"detail":"slow down"}', 429, {"Retry-After": "7"}, "application/json")


@app.get("/broken", operation_id="broken", tags=["errors"], summary="Always fails")
def broken() -> Response:
    """Answers 500."""
    return Response('{"detail":"it broke"}', 500, media_type="application/json")


@app.get("/big", operation_id="bigList", tags=["errors"], summary="A long list")
def big(count: int = 2000) -> list[dict[str, Any]]:
    """Returns ``count`` items (a long output)."""
    return [{"index": i, "text": f"item number {i} of the long list"} for i in range(count)]


def png(width: int, height: int) -> bytes:
    """A real PNG of ``width`` x ``height`` blue pixels."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x20\x40\xc0" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def wav(frames: int) -> bytes:
    """A real WAV: ``frames`` samples of 16-bit mono silence at 8 kHz."""
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x00\x00" * frames)
    return out.getvalue()


def pdf(text: str) -> bytes:
    """A real one-page PDF showing ``text`` (its cross-reference table counted here)."""
    stream = f"BT /F1 12 Tf 20 20 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 60] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    body = b"%PDF-1.4\n"
    offsets = []
    for number, content in enumerate(objects, start=1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % number + content + b"\nendobj\n"
    start = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, start)
    return body


def _media(kind: str) -> dict[int | str, dict[str, Any]]:
    return {200: {"description": f"the {kind}", "content": {kind: {}}}}


@app.get(
    "/pictures/{note_id}", operation_id="notePicture", tags=["media"],
    summary="A note's picture", response_class=Response, responses=_media("image/png"),
)
def note_picture(note_id: int, width: int = 4) -> Response:
    """A PNG ``width`` pixels wide and three high."""
    return Response(png(width, 3), media_type="image/png")


@app.get(
    "/documents/{note_id}", operation_id="notePdf", tags=["media"],
    summary="A note as a PDF", response_class=Response, responses=_media("application/pdf"),
)
def note_pdf(note_id: int) -> Response:
    """The note as a one-page PDF, named in Content-Disposition."""
    return Response(
        pdf(f"note {note_id}"), media_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="note-{note_id}.pdf"'},
    )


@app.get(
    "/chime", operation_id="chime", tags=["media"], summary="A short sound",
    response_class=Response, responses=_media("audio/wav"),
)
def chime() -> Response:
    """A tenth of a second of WAV."""
    return Response(wav(800), media_type="audio/wav")


@app.get(
    "/blob", operation_id="blob", tags=["media"], summary="Some bytes",
    response_class=Response, responses=_media("application/octet-stream"),
)
def blob(size: int = 64, picture: bool = False) -> Response:
    """``size`` bytes of octet-stream, or a PNG sent as octet-stream (``picture``), named
    in Content-Disposition's ``filename*``."""
    data = png(2, 2) if picture else bytes(i % 256 for i in range(size))
    return Response(
        data, media_type="application/octet-stream",
        headers={"Content-Disposition": "attachment; filename*=UTF-8''caf%C3%A9%20data.bin"},
    )
