"""Reading and writing inside the sandbox, through the descriptors the sandbox holds.

Writes are atomic and take turns: under the lock of the target's directory, the new content
goes to a temporary file beside the target, is fsynced, gets the old file's permissions (or
the umask's for a new file), and replaces the target in one rename
(``toolplug_files._atomic``). A failure at any step leaves the old file as it was and removes
the temporary file. An append copies the old content and the new into the temporary file, so
it is atomic too, at the price of rewriting the file, and no concurrent append is lost.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import stat
from pathlib import Path
from typing import Any, Final

from toolplug import ErrorType, File, Part, ToolContext, ToolFailure, ToolResult, part_for
from toolplug_files import _PAGE_CHARS, _atomic
from toolplug_files._sandbox import Sandbox, Target, log, os_failure

__all__ = ["read_file", "write_file"]

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_SNIFF: Final = 8192
"""Bytes looked at for NUL bytes, which mark a file as binary."""
_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or a format built on ZIP)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"SQLite format 3\x00", "SQLite database"),
)


def read_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Read a page of a text file inside the sandbox (of its first ``max_bytes``)."""
    try:
        offset = _whole(arguments.get("offset", 0), "offset", least=0)
        limit = _whole(arguments.get("max_chars", _PAGE_CHARS), "max_chars", least=1)
        sandbox = Sandbox.from_context(context)
        with sandbox.open(arguments.get("path"), writing=False) as target:
            return _read(target, int(context.config.get("max_bytes", 200_000)), offset, limit)
    except ToolFailure as failure:
        return failure.to_result()


def _whole(value: Any, name: str, *, least: int) -> int:
    """``value`` as a whole number of at least ``least``; schema-checked already for calls
    through a registry, checked again for a hand-made call of ``run``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ToolFailure(
            ErrorType.VALIDATION, f"{name}: expected a whole number >= {least}, got {value!r}"
        )
    return value


def write_file(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    """Write (or append) text to a file inside the sandbox, atomically."""
    try:
        mode = arguments.get("mode", "overwrite")
        if mode not in ("overwrite", "append"):
            raise ToolFailure(
                ErrorType.VALIDATION, f"mode: expected 'overwrite' or 'append', got {mode!r}"
            )
        content = arguments.get("content")
        if not isinstance(content, str):
            raise ToolFailure(ErrorType.VALIDATION, "content: expected a string of text")
        raw = arguments.get("path")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolFailure(
                ErrorType.VALIDATION, "content: contains a lone surrogate, which is not text"
            ) from None
        cap = int(context.config.get("max_bytes", 1_000_000))
        if len(data) > cap:
            raise ToolFailure(
                ErrorType.VALIDATION,
                f"content is {len(data)} bytes; write_file accepts at most {cap} bytes "
                "(max_bytes): write less, or split it over several appends",
            )
        with Sandbox.from_context(context).open(raw, writing=True) as target:
            if isinstance(raw, str) and raw.endswith("/"):
                raise ToolFailure(
                    ErrorType.VALIDATION,
                    f"path: {raw!r} ends with '/', which names a directory; add a file name",
                )
            return _write(target, data, append=mode == "append")
    except ToolFailure as failure:
        return failure.to_result()


# --- reading --------------------------------------------------------------------------------


def _read(target: Target, cap: int, offset: int, limit: int) -> ToolResult:  # noqa: C901 - each refusal of a read its own branch
    shown = target.shown
    if target.name is None:
        raise ToolFailure(
            ErrorType.NOT_FOUND, f"{shown} is a directory, not a file; name a file inside it"
        )
    if len(target.place.rest) > 1:  # a directory on the way does not exist
        raise ToolFailure(
            ErrorType.NOT_FOUND, f"there is no file at {shown}; check the path or write it first"
        )
    try:
        fd = os.open(
            target.name,
            os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC,
            dir_fd=target.directory,
        )
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(
            ErrorType.NOT_FOUND, f"there is no file at {shown}; check the path or write it first"
        ) from None
    except PermissionError:
        raise ToolFailure(
            ErrorType.PERMISSION, f"{shown} cannot be read: the operating system denied access"
        ) from None
    except OSError as exc:  # ELOOP: it became a symlink since the walk looked at it
        raise os_failure(exc, f"{shown} cannot be read") from None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolFailure(
                ErrorType.NOT_FOUND, f"{shown} is a directory, not a file; name a file inside it"
            )
        raise ToolFailure(ErrorType.NOT_FOUND, f"{shown} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(cap + 1)
        except OSError as exc:
            raise os_failure(exc, f"{shown} cannot be read") from None
    size = max(info.st_size, len(data))
    truncated = len(data) > cap
    data = data[:cap]
    text = _decode(data, truncated)
    log.debug("read_file: %s is %s (%d bytes read)", shown, target.real, len(data))
    result: dict[str, Any] = {
        "path": shown,
        "size_bytes": size,
        "bytes_read": len(data),
        "truncated": truncated,
        "binary": text is None,
        "content": text,
        "offset": offset,
        "chars": 0,
        "total_chars": None,
        "next_offset": None,
    }
    if text is None:
        kind = _kind(target.real, data)
        if truncated:
            output = (
                f"{shown} is a binary file ({size} bytes, {kind}), over read_file max_bytes "
                f"({cap}); its bytes are not shown: a cut file is no file"
            )
            return ToolResult.success(output, result)
        part = _part(data, target.name)
        what = {"image": "an image", "audio": "audio"}.get(part.kind, "a file")
        output = f"{shown} is a binary file ({size} bytes, {kind}), attached as {what}."
        return ToolResult.success(output, result, parts=[part])
    total = len(text)
    if offset > total:
        within = f" (the first {len(data)} bytes: read_file max_bytes)" if truncated else ""
        raise ToolFailure(
            ErrorType.VALIDATION,
            f"offset {offset} is past the end of {shown}, whose text{within} is {total} "
            f"characters long; give an offset from 0 to {total}",
        )
    page = text[offset : offset + limit]
    end = offset + len(page)
    more = end < total
    result.update(
        content=page, chars=len(page), total_chars=total, next_offset=end if more else None
    )
    warnings = []
    if more:
        warnings.append(
            f"{shown}: characters {offset} to {end} of {total} were returned; call read_file "
            f"again with offset {end} for the rest"
        )
    if truncated:
        warnings.append(
            f"{shown} is {size} bytes; only the first {len(data)} were read (read_file max_bytes)"
        )
    if page:
        output = page  # exactly the text: a cut reply's offset arithmetic holds
    elif total:
        output = f"(no more text: {shown} has {total} characters and offset {offset} is the end)"
    else:
        output = f"({shown} is empty)"
    return ToolResult.success(output, result, warnings=warnings)


def _decode(data: bytes, truncated: bool) -> str | None:
    """The bytes as UTF-8 text, or None when they are binary."""
    if b"\x00" in data[:_SNIFF]:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The cap may cut a multi-byte character in half; drop the half.
        if truncated and exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8")
        return None


def _part(data: bytes, name: str) -> Part:
    """A binary file's bytes as a part: an Image or Audio when its first bytes (or, for
    formats they do not tell, its name) say so and the bytes agree, else a File."""
    part = part_for(data, name=name)
    if isinstance(part, File) and part.mime_type == "application/octet-stream":
        guessed, _ = mimetypes.guess_type(name)
        if guessed is not None:
            part = part_for(data, guessed, name=name)
    return part if part.problem() is None else File(data, name=name)


def _kind(path: Path, data: bytes) -> str:
    for signature, kind in _SIGNATURES:
        if data.startswith(signature):
            return kind
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "not UTF-8 text"


# --- writing --------------------------------------------------------------------------------


def _write(target: Target, data: bytes, *, append: bool) -> ToolResult:
    shown = target.shown
    if target.name is None:
        raise ToolFailure(
            ErrorType.VALIDATION, f"{shown} is a directory; give the path of a file inside it"
        )
    directory, name = target.parent(), target.name
    try:
        with _atomic.locked(directory):
            _atomic.remove_orphans(directory)
            before = _lstat(directory, name, shown)
            if before is not None and stat.S_ISDIR(before.st_mode):
                raise ToolFailure(
                    ErrorType.VALIDATION,
                    f"{shown} is a directory; give the path of a file inside it",
                )
            if before is not None and stat.S_ISLNK(before.st_mode):  # planted since the walk
                raise ToolFailure(
                    ErrorType.PERMISSION,
                    f"{shown} is refused: it was replaced by a symlink while being written",
                )
            if before is not None and not stat.S_ISREG(before.st_mode):
                raise ToolFailure(ErrorType.VALIDATION, f"{shown} exists and is not a regular file")
            permissions = stat.S_IMODE(before.st_mode) if before is not None else 0o666 & ~_umask()
            try:
                size = _atomic.replace(
                    directory, name, data, permissions, keep=append and before is not None
                )
            except OSError as exc:
                raise os_failure(
                    exc, f"writing {shown} failed; the file was left as it was"
                ) from None
    except _atomic.LockTimeout:
        raise ToolFailure(
            ErrorType.EXECUTION,
            f"writing {shown} failed: other writes to its directory held it for more than "
            f"{_atomic.LOCK_SECONDS:g} s; nothing was written, try again",
            retry_possible=True,
        ) from None
    if append:
        summary = f"Appended {len(data)} bytes to {shown}; it now holds {size} bytes."
    elif before is None:
        summary = f"Created {shown} ({len(data)} bytes)."
    else:
        summary = f"Replaced the content of {shown} ({len(data)} bytes)."
    log.info("write_file: %s is %s; %s", shown, target.real, summary)
    result = {
        "path": shown,
        "mode": "append" if append else "overwrite",
        "bytes_written": len(data),
        "size_bytes": size,
        "created": before is None,
    }
    return ToolResult.success(summary, result)


def _lstat(directory: int, name: str, shown: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_failure(exc, f"cannot write {shown}") from None


def _umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: set and restore, the only portable way
    os.umask(mask)
    return mask
