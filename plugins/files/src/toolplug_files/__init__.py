"""toolplug-files: read_file and write_file, sandboxed to configured directories.

Both tools work in two roots, named in paths by their aliases: ``file_cache_dir/<path>`` (the
default for relative paths) and ``file_state_dir/<path>``. read_file may also read under
extra ``read_roots``; writes never leave the two roots. Configuration is per tool, so the
shared settings are declared by both tools; give them the same values::

    [tools.read_file]
    cache_dir = "~/agent/cache"
    state_dir = "~/agent/state"
    deny_paths = [".env", "*.pem", "file_state_dir/secrets"]
    read_roots = ["~/notes"]

    [tools.write_file]
    cache_dir = "~/agent/cache"
    state_dir = "~/agent/state"
    deny_paths = [".env", "*.pem", "file_state_dir/secrets"]

This module imports only toolplug and the standard library; the work is done in
``toolplug_files._sandbox`` and ``toolplug_files._files``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolplug import (
    Annotations,
    ConfigField,
    ErrorSpec,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolMetadata,
    ToolResult,
    Trust,
    provides,
)

__all__ = ["ReadFileTool", "WriteFileTool", "register_tools"]

_STRINGS: Final[dict[str, Any]] = {"type": "array", "items": {"type": "string", "minLength": 1}}

_SHARED_FIELDS: Final = (
    ConfigField(
        name="cache_dir",
        type="string",
        description=(
            "Root aliased file_cache_dir; relative paths land here. Default: a 'files' "
            "directory beside the tool's cache directory, shared by read_file and write_file"
        ),
    ),
    ConfigField(
        name="state_dir",
        type="string",
        description=(
            "Root aliased file_state_dir, for files that should last. Default: a 'files' "
            "directory beside the tool's state directory, shared by read_file and write_file"
        ),
    ),
    ConfigField(
        name="deny_paths",
        type="array",
        description=(
            "Paths or globs never to touch, matched against the resolved path: a name or "
            "pattern without '/' (.env, *.pem) matches any part of the path; an absolute, "
            "~ or alias path matches that file or directory and everything inside it"
        ),
        default=[],
        json_schema=_STRINGS,
    ),
)

_PAGE_CHARS: Final = 20_000
"""Characters read_file returns when max_chars is not given: a page that, with its copy in
``data`` (JSON escapes and all), fits the default output budget of a call (50,000
characters), so it comes back whole and its next_offset is exactly where to read on."""

_PATH_HELP: Final = (
    "File path: file_cache_dir/<path>, file_state_dir/<path>, or a path relative to file_cache_dir"
)


class ReadFileTool(Tool):
    """Reads a UTF-8 text file inside the sandbox, a page at a time."""

    metadata = ToolMetadata(
        name="read_file",
        title="Read a file",
        description=(
            "Read a text file from the agent's cache or state directory; an image, a "
            "recording or another binary file comes back as itself."
        ),
        category="utility",
        optionality="optional",
        usage_hint=(
            "Use to read back a file you or an earlier step saved (under file_cache_dir or "
            "file_state_dir), or a configured reference directory."
        ),
        guidelines=Guidelines(
            do=(
                "You saved notes, drafts or downloads earlier and need them again",
                "The task refers to a file in file_state_dir, such as a contacts or TODO file",
                "You must check a file's current content before changing it with write_file",
                "A file is too long for one reply: read it page by page with offset",
            ),
            do_not=(
                "The content is already in the conversation",
                "The file is outside the sandbox (home directory, /etc): the tool refuses it",
                "You need a web page: fetch it with a network tool instead",
            ),
            common_mistakes=(
                "Passing file_cache_dir alone instead of file_cache_dir/<file>",
                "Using ../ to climb out of the root; it is refused, not resolved",
                "Taking one page for the whole file: when next_offset is set, call again "
                "with offset set to it",
                "Taking a truncated read for the whole file; check truncated and warnings",
                "Retrying a PermissionError with another spelling of the same path",
            ),
        ),
        produces=("file_content",),
        parts=("image", "audio", "file"),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": _PATH_HELP},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": (
                        "Where to start, in characters into the file's text (0: the "
                        "beginning). To read on, pass the next_offset of the last reply; "
                        "after a reply cut by toolplug, the last offset plus the characters "
                        "received"
                    ),
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": 1,
                    "default": _PAGE_CHARS,
                    "description": "The most characters to return from offset on",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The path as the model names it: file_cache_dir/..., "
                    "file_state_dir/..., or below a read root as configured; never the "
                    "host's resolved path (that goes to the operator's log)",
                },
                "size_bytes": {"type": "integer"},
                "bytes_read": {"type": "integer"},
                "truncated": {"type": "boolean", "description": "The file is over max_bytes"},
                "binary": {
                    "type": "boolean",
                    "description": "Not UTF-8 text: attached as a part (an image, audio or "
                    "a file) unless truncated",
                },
                "content": {
                    "type": ["string", "null"],
                    "description": "The text from offset on, at most max_chars characters",
                },
                "offset": {"type": "integer", "description": "The first character returned"},
                "chars": {"type": "integer", "description": "Characters in content"},
                "total_chars": {
                    "type": ["integer", "null"],
                    "description": "Characters in the text read (all of it unless truncated); "
                    "null for a binary file",
                },
                "next_offset": {
                    "type": ["integer", "null"],
                    "description": "The offset of the rest; null when content reaches the end",
                },
            },
            "required": [
                "path",
                "size_bytes",
                "truncated",
                "binary",
                "content",
                "offset",
                "chars",
                "total_chars",
                "next_offset",
            ],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="the path is empty, contains a NUL byte, is a bare alias, a URL, a "
                "Windows-style path or too long; offset is past the end of the text",
            ),
            ErrorSpec(
                type="PermissionError",
                when="the path leads outside the sandbox roots (also through a symlink), "
                "matches deny_paths, or the operating system refuses access",
            ),
            ErrorSpec(type="NotFoundError", when="there is no file there, or it is a directory"),
            ErrorSpec(type="ExecutionError", when="the file could not be read for another reason"),
        ),
        examples=(
            Example(
                description="Read notes saved earlier in the cache directory",
                input={"path": "file_cache_dir/research/notes.md"},
            ),
            Example(
                description="Read the active contacts from the state directory",
                input={"path": "file_state_dir/contacts/ACTIVE.md"},
            ),
            Example(
                description="Read on in a long log, from the next_offset of the last reply",
                input={"path": "file_state_dir/log.md", "offset": 20000},
                output={
                    "path": "file_state_dir/log.md",
                    "size_bytes": 91250,
                    "bytes_read": 91250,
                    "truncated": False,
                    "binary": False,
                    "content": "- 2025-02-11: sent the February issue\n...",
                    "offset": 20000,
                    "chars": 20000,
                    "total_chars": 90812,
                    "next_offset": 40000,
                },
            ),
        ),
        config_fields=(
            *_SHARED_FIELDS,
            ConfigField(
                name="read_roots",
                type="array",
                description="Extra directories read_file may read (never write)",
                default=[],
                json_schema=_STRINGS,
            ),
            ConfigField(
                name="max_bytes",
                type="integer",
                description="Most bytes read; a longer file is cut there and flagged",
                default=200_000,
                json_schema={"type": "integer", "minimum": 1},
            ),
        ),
        # The user's own files, which may hold what a page said (downloads, notes copied from
        # the web): untrusted and private. Reading sends nothing anywhere.
        trust=Trust(output="untrusted", private=True),
        annotations=Annotations(read_only=True, idempotent=True, open_world=False),
        timeout_seconds=10,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Read the file named by ``path``."""
        from toolplug_files._files import read_file

        return read_file(arguments, context)


_MODES: Final[Mapping[Any, Annotations]] = {
    "overwrite": Annotations(read_only=False, destructive=True, idempotent=True, open_world=False),
    "append": Annotations(read_only=False, destructive=False, idempotent=False, open_world=False),
}
"""The annotations of a write_file call by its mode (``WriteFileTool.annotations_for``)."""


class WriteFileTool(Tool):
    """Writes (or appends) UTF-8 text to a file inside the sandbox, atomically."""

    metadata = ToolMetadata(
        name="write_file",
        title="Write a file",
        description="Write or append text to a file in the agent's cache or state directory.",
        category="utility",
        optionality="optional",
        usage_hint=(
            "Use to save drafts, notes or intermediate results for a later step "
            "(file_cache_dir), or to update lasting records (file_state_dir)."
        ),
        guidelines=Guidelines(
            do=(
                "A result is long or will be needed again by a later step or run",
                "The user asks you to save, record or update a file",
                "You keep a running log: use mode append",
            ),
            do_not=(
                "The user only wants the text in the reply",
                "The target is outside file_cache_dir and file_state_dir: it is refused",
                "You have not read a file you mean to change; read it first, then overwrite",
            ),
            common_mistakes=(
                "Overwriting a file when you meant to add to it (use mode append)",
                "Expecting append to add a newline; it adds the content exactly",
                "Writing lasting records to file_cache_dir, which may be cleared",
                "Sending binary data or content over max_bytes; write text, in parts if long",
            ),
        ),
        produces=("files",),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": _PATH_HELP + "; missing directories are created",
                },
                "content": {"type": "string", "description": "The text to write (UTF-8)"},
                "mode": {
                    "type": "string",
                    "enum": ["overwrite", "append"],
                    "default": "overwrite",
                    "description": "overwrite replaces the file; append adds to its end",
                },
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The path written, in alias form (file_cache_dir/...); "
                    "the host's resolved path goes to the operator's log, not here",
                },
                "mode": {"type": "string", "enum": ["overwrite", "append"]},
                "bytes_written": {"type": "integer"},
                "size_bytes": {"type": "integer", "description": "The file's size afterwards"},
                "created": {"type": "boolean"},
            },
            "required": ["path", "mode", "bytes_written", "size_bytes", "created"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="the path is empty, a bare alias, a directory, a URL, Windows-style, too "
                "long or contains a NUL byte; the content is over max_bytes; the mode is unknown",
            ),
            ErrorSpec(
                type="PermissionError",
                when="the path leads outside file_cache_dir and file_state_dir (also through "
                "a symlink), matches deny_paths, or the operating system refuses access",
            ),
            ErrorSpec(
                type="ExecutionError",
                when="the write failed (disk full, ...); the old file is left unchanged",
            ),
            ErrorSpec(
                type="ExecutionError",
                when="other writes held the directory's lock for more than 8 seconds; "
                "nothing was written",
                retry_possible=True,
            ),
        ),
        examples=(
            Example(
                description="Save a draft for a later step",
                input={"path": "drafts/newsletter.md", "content": "# March issue\n"},
            ),
            Example(
                description="Add a line to a running log in the state directory",
                input={
                    "path": "file_state_dir/log.md",
                    "content": "- 2025-03-01: sent the March issue\n",
                    "mode": "append",
                },
            ),
        ),
        config_fields=(
            *_SHARED_FIELDS,
            ConfigField(
                name="max_bytes",
                type="integer",
                description="Largest content accepted in one call, in bytes (UTF-8)",
                default=1_000_000,
                json_schema={"type": "integer", "minimum": 1},
            ),
        ),
        # The result only reports the path and size this tool wrote. The path and content
        # change the world: a file appears or is overwritten.
        trust=Trust(output="trusted", sinks=("path", "content"), path_sinks=("path",)),
        # What a call may do: an overwrite replaces a file (annotations_for: per call).
        annotations=Annotations(
            read_only=False, destructive=True, idempotent=False, open_world=False
        ),
        timeout_seconds=10,
    )

    @classmethod
    def annotations_for(cls, arguments: Mapping[str, Any]) -> Annotations:
        """What this call does, by its mode: an append only adds to the end of the file
        (not destructive); an overwrite replaces the file at ``path`` when one is there
        (destructive; idempotent); another mode gets the declared annotations.

        Decided from the arguments alone, without looking at the disk (where a path lands
        depends on the configuration, and the file may appear before the write): every
        overwrite counts as one that destroys, even one that ends up creating the file.
        Neither mode reaches beyond the sandbox (closed-world), so by default an append
        runs unasked and an overwrite waits for a person's approval.
        """
        return _MODES.get(arguments.get("mode", "overwrite"), cls.metadata.annotations)

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Write ``content`` to ``path``."""
        from toolplug_files._files import write_file

        return write_file(arguments, context)


register_tools = provides(ReadFileTool, WriteFileTool)
