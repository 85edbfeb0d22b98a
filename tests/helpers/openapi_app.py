"""A real FastAPI application for the OpenAPI tests: notes with path, query, header and
body parameters, file uploads, pagination (a ``Link`` header), authentication, a model that
refers to itself, and error responses (404, 422, 429 with ``Retry-After``, 500).

Run by ``tests.helpers.openapi.fastapi_server`` under uvicorn on 127.0.0.1; FastAPI serves
its own description at ``/openapi.json``.
"""

from __future__ import annotations

import hashlib
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
