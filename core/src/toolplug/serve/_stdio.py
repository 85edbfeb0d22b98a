"""``toolplug serve`` over stdin and stdout: screened input, and an orderly end on a signal.

The SDK's ``stdio_server`` speaks the protocol on a private copy of descriptor 1 and points
descriptor 1 itself at stderr while it serves, so a C extension writing to it, or a child
process inheriting it, writes to stderr. Python's ``print`` goes through ``sys.stdout``,
whose buffer could hold text until after the stream is restored; it is sent to stderr
directly. Input is read here from a private copy of descriptor 0 (descriptor 0 itself
reads the null device, so children cannot take protocol input), and each line is screened
(``_screen.screen``) before the SDK sees it.

Input is read on the event loop, not in a thread, where the platform allows it (pipes,
sockets and terminals on POSIX): a read that waits for a host which keeps stdin open can
then be stopped, and SIGINT or SIGTERM end the server within the grace period (see
``_shutdown``) whether or not stdin is ever closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio

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
    from mcp.server.stdio import stdio_server

    source, restore = _claim_stdin()
    reader = await _LineReader.open(source)
    received: list[int] = []
    try:
        screened = _ScreenedLines(reader, drain)
        drain.watch_answers()
        async with stdio_server(stdin=screened) as (read, write):  # type: ignore[arg-type]
            screened.replies = write
            with contextlib.redirect_stdout(sys.stderr):
                async with anyio.create_task_group() as group:
                    group.start_soon(_stop_on_signal, drain, screened, received)
                    options = server.create_initialization_options()
                    await server.run(read, _AnsweredWrites(write, drain), options)
                    group.cancel_scope.cancel()
    finally:
        restore()
        reader.close()
    return received[0] if received else None


async def _stop_on_signal(drain: Drain, screened: _ScreenedLines, received: list[int]) -> None:
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
                    screened.end()

                group.start_soon(end)


def _claim_stdin() -> tuple[int, Callable[[], None]]:
    """Protocol input from a private duplicate of descriptor 0, which reads nothing."""
    try:
        private = os.dup(0)
        quiet = os.open(os.devnull, os.O_RDONLY)
        os.dup2(quiet, 0)
        os.close(quiet)
    except OSError:  # no descriptors to move: read standard input where it is
        return sys.stdin.fileno(), _nothing

    def restore() -> None:
        with contextlib.suppress(OSError):
            os.set_blocking(private, True)  # the loop's reader made it non-blocking
            os.dup2(private, 0)

    return private, restore


def _nothing() -> None:
    return None


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
    async def open(cls, fd: int) -> _LineReader:
        loop = asyncio.get_running_loop()
        source = os.fdopen(fd, "rb", buffering=0, closefd=False)
        reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop), source
            )
        except (ValueError, OSError, NotImplementedError):

            async def read_in_thread(size: int) -> bytes:
                return await anyio.to_thread.run_sync(source.read, size) or b""

            return cls(read_in_thread, source.close)
        return cls(reader.read, transport.close)

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


class _ScreenedLines:
    """Protocol input lines; what the SDK would drop is answered here instead."""

    def __init__(self, reader: _LineReader, drain: Drain) -> None:
        self._reader, self._drain = reader, drain
        self.replies: Any = None  # the server's write stream, set once serving
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
        from toolplug.serve._screen import INVALID_REQUEST, MAX_BODY_BYTES, leading_id, screen
        from toolplug.serve._screen import _reply as reply

        while not self._ended:
            with anyio.CancelScope() as self._reading:
                got = await self._reader.line(MAX_BODY_BYTES)
            if got is None or self._reading.cancelled_caught:
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
            answer = screen(line)
            if answer is None:
                yield line
            elif answer:
                await self._answer(answer)

    async def _answer(self, answer: dict[str, Any]) -> None:
        from mcp import types
        from mcp.shared.message import SessionMessage

        if self.replies is not None:
            message = types.jsonrpc_message_adapter.validate_python(answer)
            with contextlib.suppress(Exception):  # the client has gone: nothing to answer
                await self.replies.send(SessionMessage(message))


class _AnsweredWrites:
    """The server's write stream, telling the drain which requests have their answer out."""

    def __init__(self, inner: Any, drain: Drain) -> None:
        self._inner, self._drain = inner, drain

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        message = getattr(item, "message", None)
        if message is not None and not hasattr(message, "method"):  # a response or error
            self._drain.answered(("stdio", getattr(message, "id", None)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweredWrites:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
