"""``toolplug serve`` over stdin and stdout: checked input, and an orderly end on a signal.

The SDK's ``stdio_server`` speaks the protocol on a private copy of descriptor 1 and points
descriptor 1 itself at stderr while it serves, so a C extension writing to it, or a child
process inheriting it, writes to stderr. Python's ``print`` goes through ``sys.stdout``,
whose buffer could hold text until after the stream is restored; it is sent to stderr
directly. Input is read here from a private copy of descriptor 0 (descriptor 0 itself
reads the null device, so children cannot take protocol input), and each line's envelope is
checked (``_envelope.malformed_reply``) before the SDK sees it.

Input is read on the event loop, not in a thread, where the platform allows it (pipes,
sockets and terminals on POSIX): a read that waits for a host which keeps stdin open can
then be stopped, and SIGINT or SIGTERM end the server within the grace period (see
``_shutdown``) whether or not stdin is ever closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import selectors
import signal
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from toolplug.serve._envelope import INVALID_REQUEST, MAX_BODY_BYTES, leading_id, malformed_reply
from toolplug.serve._envelope import _reply as reply

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from toolplug.serve._shutdown import Drain

__all__ = ["serve_stdio"]

log = logging.getLogger("toolplug")

_CHUNK: Final = 64 * 1024
_HEAD: Final = 64 * 1024
"""How much of a line over the limit is kept, to find the request's id in."""


async def serve_stdio(server: Server[Any], drain: Drain) -> int | None:
    """Serve until stdin closes (None) or a signal has ended serving (its number)."""
    source, restore = _claim_stdin()
    reader = await _LineReader.open(source)
    received: list[int] = []
    try:
        checked = _CheckedLines(reader, drain)
        drain.watch_answers()
        async with stdio_server(stdin=checked) as (read, write):  # type: ignore[arg-type]
            checked.replies = write
            with contextlib.redirect_stdout(sys.stderr):
                async with anyio.create_task_group() as group:
                    group.start_soon(_stop_on_signal, drain, checked, received)
                    options = server.create_initialization_options()
                    await server.run(read, _AnsweredWrites(write, drain, checked), options)
                    group.cancel_scope.cancel()
    finally:
        restore()
        reader.close()
    return received[0] if received else None


async def _stop_on_signal(drain: Drain, checked: _CheckedLines, received: list[int]) -> None:
    """On the first SIGINT or SIGTERM, drain and then end the input; a second one cuts the
    grace period short."""
    with contextlib.ExitStack() as stack:
        try:
            signals = anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
            receiver = stack.enter_context(signals)
        except (NotImplementedError, RuntimeError, ValueError):  # no loop signal handlers here
            return
        async with anyio.create_task_group() as group:
            async for number in receiver:
                if received:
                    drain.hurry()
                    continue
                received.append(number)
                log.info("received %s: finishing the calls in flight", signal.Signals(number).name)

                async def end() -> None:
                    await drain.drain()
                    checked.end()

                group.start_soon(end)


def _claim_stdin() -> tuple[int | None, Callable[[], None]]:
    """Protocol input from a private duplicate of descriptor 0, which reads nothing.

    None when there is no standard input at all: the input has ended. Python starts with
    ``sys.stdin`` None when descriptor 0 was closed; the number 0 may since belong to
    anything the process opened (the event loop's own epoll descriptor, for one), so it is
    left alone.
    """
    if sys.stdin is None:
        return None, _nothing
    try:
        private = os.dup(0)
    except OSError:  # descriptor 0 is closed
        return None, _nothing
    try:
        quiet = os.open(os.devnull, os.O_RDONLY)
        os.dup2(quiet, 0)
        os.close(quiet)
    except OSError:  # no null device to put in its place: read standard input where it is
        os.close(private)
        return 0, _nothing

    def restore() -> None:
        with contextlib.suppress(OSError):
            os.set_blocking(private, True)  # the loop's reader made it non-blocking
            os.dup2(private, 0)

    return private, restore


def _nothing() -> None:
    return None


def _pollable(fd: int) -> bool:
    """True when the event loop can wait on ``fd``. asyncio's pipe transport accepts any
    character device, but epoll refuses some of them (``/dev/null``) with EPERM, and only
    once the loop registers the descriptor, where the error is out of reach: ask a selector
    of our own first. Regular files are never pollable (and the transport refuses them)."""
    try:
        if not (stat.S_ISFIFO(mode := os.fstat(fd).st_mode) or stat.S_ISSOCK(mode)
                or stat.S_ISCHR(mode)):
            return False
        with selectors.DefaultSelector() as probe:
            probe.register(fd, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    return True


class _LineReader:
    """Lines of bytes from a descriptor, each at most ``limit`` bytes held in memory.

    A pipe, socket or terminal is read by the event loop; anything else (a regular file,
    or a platform without pipe transports) by a worker thread, where a read never waits
    for long.
    """

    def __init__(self, read: Callable[[int], Awaitable[bytes]], close: Callable[[], None]) -> None:
        self._read, self.close = read, close
        self._buffer = bytearray()
        self._scanned = 0

    @classmethod
    async def open(cls, fd: int | None) -> _LineReader:
        if fd is None:  # no standard input at all: an input that has ended

            async def ended(size: int) -> bytes:
                return b""

            return cls(ended, _nothing)
        loop = asyncio.get_running_loop()
        source = os.fdopen(fd, "rb", buffering=0, closefd=False)
        if _pollable(fd):
            reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
            with contextlib.suppress(ValueError, OSError, NotImplementedError):
                transport, _ = await loop.connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(reader, loop=loop), source
                )
                return cls(reader.read, transport.close)

        async def read_in_thread(size: int) -> bytes:
            return await anyio.to_thread.run_sync(source.read, size) or b""

        return cls(read_in_thread, source.close)

    async def line(self, limit: int) -> tuple[bytes, int] | None:
        """The next line without its newline and its length in bytes, or None at the end.

        A line longer than ``limit`` is read to its end and dropped on the way: only its
        first bytes come back, with its full length.
        """
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end > limit or (end < 0 and len(self._buffer) > limit):
                return await self._skip_long(end)
            if end >= 0:
                found = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                return found, end
            self._scanned = len(self._buffer)
            chunk = await self._read(_CHUNK)
            if not chunk:
                if not self._buffer:
                    return None
                found, self._buffer, self._scanned = bytes(self._buffer), bytearray(), 0
                return found, len(found)
            self._buffer += chunk

    async def _skip_long(self, end: int) -> tuple[bytes, int]:
        head = bytes(self._buffer[:_HEAD])
        if end >= 0:
            del self._buffer[: end + 1]
            self._scanned = 0
            return head, end
        size = len(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        while True:
            chunk = await self._read(_CHUNK)
            if not chunk:
                return head, size
            end = chunk.find(b"\n")
            if end >= 0:
                self._buffer += chunk[end + 1 :]
                return head, size + end
            size += len(chunk)


class _CheckedLines:
    """Protocol input lines; what the SDK would drop is answered here instead."""

    def __init__(self, reader: _LineReader, drain: Drain) -> None:
        self._reader, self._drain = reader, drain
        self.replies: Any = None  # the server's write stream, set once serving
        self.unanswered: set[str | int] = set()
        """The ids of requests passed to the SDK whose answer is not out yet."""
        self._ended = False
        self._reading: anyio.CancelScope | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    def end(self) -> None:
        """Read no more: the SDK sees the end of its input."""
        self._ended = True
        if self._reading is not None:
            self._reading.cancel()

    async def _lines(self) -> AsyncIterator[str]:
        while not self._ended:
            with anyio.CancelScope() as self._reading:
                got = await self._reader.line(MAX_BODY_BYTES)
            if self._reading.cancelled_caught:
                return
            if got is None:
                # The input has ended (a host that closed it, a file read to its end, the
                # null device): what was asked is still answered, within the grace period.
                if self.unanswered:
                    await self._drain.drain(idle=lambda: not self.unanswered)
                return
            data, size = got
            if size > MAX_BODY_BYTES:
                request_id = leading_id(data.decode("utf-8", "ignore"))
                log.info("dropped a message line of %s bytes (the limit is %s)",
                         f"{size:,}", f"{MAX_BODY_BYTES:,}")
                await self._answer(reply(
                    request_id, INVALID_REQUEST, f"the message is over {MAX_BODY_BYTES:,} bytes "
                    "(the limit); it was not read"
                ))
                continue
            line = data.decode("utf-8", "replace")
            if not line.strip():
                continue
            answer = malformed_reply(line)
            if answer is None:
                request_id = _request_id(line)
                if request_id is not None:
                    self.unanswered.add(request_id)
                yield line
            elif answer:
                await self._answer(answer)

    async def _answer(self, answer: dict[str, Any]) -> None:
        if self.replies is not None:
            message = types.jsonrpc_message_adapter.validate_python(answer)
            with contextlib.suppress(Exception):  # the client has gone: nothing to answer
                await self.replies.send(SessionMessage(message))


def _request_id(line: str) -> str | int | None:
    """The id of a request (a message with a method and an id) the SDK will take, else None."""
    with contextlib.suppress(ValueError, RecursionError):
        message = json.loads(line)
        if isinstance(message, dict) and "method" in message:
            found = message.get("id")
            if isinstance(found, str | int) and not isinstance(found, bool):
                return found
    return None


class _AnsweredWrites:
    """The server's write stream, telling the drain (and the input, which waits for them at
    its end) which requests have their answer out."""

    def __init__(self, inner: Any, drain: Drain, checked: _CheckedLines) -> None:
        self._inner, self._drain, self._checked = inner, drain, checked

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        message = getattr(item, "message", None)
        if message is not None and not hasattr(message, "method"):  # a response or error
            answered = getattr(message, "id", None)
            self._drain.answered(("stdio", answered))
            self._checked.unanswered.discard(answered)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweredWrites:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
