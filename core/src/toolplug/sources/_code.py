"""Code mode: the ``run_code`` tool runs a model's Python program, whose tool calls are calls.

The program runs in the Monty sandbox (``pip install "toolplug[code]"``), a Python
interpreter in a worker process that stops at every call of a function it does not define
and at every access to the operating system, and lets the host answer. Here:

- a call of a tool's function (the stubs, ``toolplug.schema._python``) becomes
  ``registry.acall``: validation, approvals, time limits, retries, cache, rate limits, the
  output budget and telemetry apply to it as to any call. Calls start when the program
  waits for one, so calls made together (``asyncio.gather``) run at once, and one made
  but not awaited before the program ends never runs; a call that waits for approval
  holds the program until they answer; a failed or denied call raises inside the program;
- every operating-system access (files, environment, imports of modules the sandbox does
  not carry, the host's clock for sleeping beyond the limits) is refused with an error that
  says so;
- limits hold the rest: run time, memory, recursion depth and the number of tool calls.

What comes back: what the program printed and the value of its last expression, with the
content parts that value holds (``toolplug.sources._code_parts``: a program holds what each
part of its tools' results is, never its bytes); an error names the line.

Enabled by ``[code] enabled = true`` (``toolplug.load()`` registers the tool through the
``register_tools`` hook and, while it builds the registry, gives it the stubs of the tools
it may call, which its ``code`` parameter's description carries).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import json
import math
import os
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from toolplug.config._settings import CodeSettings
from toolplug.contract._call import ToolCall
from toolplug.contract._capabilities import Capability, Package
from toolplug.contract._errors import ConfigError
from toolplug.contract._hooks import hookimpl
from toolplug.contract._metadata import Annotations, Guidelines, ToolMetadata, Trust
from toolplug.contract._parts import PART_KINDS, PartKind
from toolplug.contract._tool import ErrorType, Tool, ToolContext, ToolResult
from toolplug.contract._version import toolplug_version
from toolplug.runtime._source import ToolSource
from toolplug.schema._python import (
    CODE_TOOL,
    Parameter,
    StubTool,
    parameter_names,
    python_identifier,
    python_stubs,
)
from toolplug.sources._code_parts import Held
from toolplug.trust._conversation import Conversation, current

if TYPE_CHECKING:
    from toolplug.config._config import Config
    from toolplug.contract._approval import Approver
    from toolplug.runtime._loaded import RegisteredTool
    from toolplug.runtime._registry import Registry

__all__ = ["CODE_PLUGIN_NAME", "CodeMode", "RunCode", "code_plugin", "code_settings"]

_INSTALL: Final = 'pip install "toolplug[code]"'
SANDBOX: Final = "code_sandbox"
"""The capability run_code requires: the Monty sandbox is installed."""
_MAX_WORKERS: Final = max(8, 2 * (os.cpu_count() or 1))
"""The most programs that compute at once in one process; more wait for a worker. A program
waiting for its tool calls holds no worker (see ``_Program.run``)."""
_HOLD_SECONDS: Final = 0.02
"""How long a program keeps its worker while its calls run; past that it is parked."""
_MAX_PRINTED: Final = 1_000_000
"""The most characters of a program's printed output kept (the output budget cuts further)."""


def code_settings(config: Config) -> CodeSettings:
    """The ``[code]`` table (typed when the configuration loaded), its toolset checked.

    Raises:
        ConfigError: ``toolset`` names no configured toolset.
    """
    settings = config.code
    if settings.toolset is not None and settings.toolset not in config.toolsets:
        prefix = "tool.toolplug." if config.path and config.path.name == "pyproject.toml" else ""
        known = ", ".join(sorted(config.toolsets)) or "none are configured"
        raise ConfigError(
            f"got {settings.toolset!r}", file=config.source, key=f"{prefix}code.toolset",
            expected=f"the name of a configured toolset (known: {known})",
        )
    return settings


# -- registration ----------------------------------------------------------------------


def _base_metadata(
    settings: CodeSettings, stubs: str = "", parts: tuple[PartKind, ...] = ()
) -> ToolMetadata:
    guide = (
        "A Python program. Call the tools below as async functions with await (keyword "
        "arguments; required ones may be positional); run independent calls at once with "
        "await asyncio.gather(...). Only what you print and the value of the last "
        "expression come back, so filter, join and sum inside the program. A failed call "
        "raises an exception you may catch (PermissionError when a person denied it). No "
        "files, network, environment variables or imports beyond modules such as asyncio, "
        f"json, re, math and datetime. Limits: {settings.timeout_seconds:g} s of computing, "
        f"{settings.max_memory_mb} MB, {settings.max_calls} tool calls."
    )
    if parts:
        guide += (
            " A tool that returns pictures, files or other parts returns a Result whose "
            "parts say what each is (never its bytes); return a part to hand it back."
        )
    if stubs:
        guide += "\n\n```python\n" + stubs + "```"
    return ToolMetadata(
        name=CODE_TOOL,
        title="Run code",
        description="Run a short Python program that calls the other tools as functions and "
        "returns only what it prints, in one step instead of many.",
        category="utility",
        optionality="optional",
        usage_hint="Use when a task needs several tool calls chained, repeated, filtered or "
        "combined: write one program instead of calling the tools one by one.",
        guidelines=Guidelines(
            do=(
                "A task takes several calls whose results feed each other",
                "Many results must be filtered, aggregated or compared before you need them",
            ),
            do_not=("One call of one tool answers the question: call that tool directly",),
        ),
        parameters={
            "type": "object",
            "properties": {"code": {"type": "string", "minLength": 1, "description": guide}},
            "required": ["code"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "printed": {"type": "string", "description": "What the program printed"},
                "value": {"description": "The value of the program's last expression"},
                "calls": {"type": "integer", "description": "How many tool calls it made"},
            },
            "required": ["printed", "value", "calls"],
        },
        annotations=Annotations(
            read_only=False, destructive=False, idempotent=False, open_world=False
        ),
        # What a program prints carries what the tools it called returned: outside text and
        # the user's data alike. The code itself reaches nothing (the sandbox refuses files
        # and network); each call it makes is checked with that tool's own labels.
        trust=Trust(output="untrusted", private=True),
        parts=parts,
        requires_capabilities=(SANDBOX,),
        required_packages=("pydantic-monty",),
        timeout_seconds=settings.wall_seconds,
    )


class RunCode(Tool):
    """The ``run_code`` tool; ``CodeMode.complete`` binds a subclass to one registry."""

    metadata: ClassVar[ToolMetadata] = _base_metadata(CodeSettings())
    _registry_ref: ClassVar[weakref.ref[Registry] | None] = None
    _settings: ClassVar[CodeSettings] = CodeSettings()
    _functions: ClassVar[Mapping[str, tuple[str, tuple[Parameter, ...]]]] = {}
    _owners: ClassVar[_Owners]

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run the program in ``arguments["code"]``."""
        ref = self._registry_ref
        registry = ref() if ref is not None else None
        if registry is None:
            return ToolResult.failure(
                ErrorType.UNAVAILABLE,
                "run_code is not bound to a registry; load the tools with toolplug.load() "
                "and [code] enabled = true",
            )
        try:
            import pydantic_monty
        except ImportError:
            return ToolResult.failure(
                ErrorType.UNAVAILABLE,
                f"run_code needs the Monty sandbox: {_INSTALL}",
            )
        owner, whose = _owner(context.host)
        settings = self._settings
        if not self._owners.enter(owner):
            return ToolResult.failure(
                ErrorType.RATE_LIMIT,
                f"{settings.max_programs_per_owner} programs {whose} are running "
                "([code] max_programs_per_owner); wait for one to end and run this again",
                retry_possible=True,
            )
        try:
            program = _Program(
                monty=pydantic_monty, registry=registry, settings=settings,
                functions=self._functions, host=context.host,
                caller=_CALLER.get() or _Caller(),
            )
            # The program's calls are recorded and guarded in a conversation of its own,
            # inside the current one: what one call returned is remembered at the next.
            outer = current()
            with outer.child() if outer is not None else Conversation(exact=True):
                return await program.run(arguments["code"])
        finally:
            self._owners.leave(owner)


_ANONYMOUS: Final = "\x00anonymous MCP clients"
"""The one count of MCP clients without an owner (no principal, no session): nothing tells
them apart, and a count for each request would bound nothing."""


def _owner(host: Mapping[str, Any]) -> tuple[str, str]:
    """Whose count a program joins, and how a refusal names it: the call's ``owner`` or
    ``client`` (over MCP the verified principal, else the session), else, over MCP, the
    clients toolplug cannot tell apart, else this process."""
    owner = host.get("owner") or host.get("client")
    if owner:
        return str(owner), "of this client"
    if host.get("transport") == "mcp":
        return _ANONYMOUS, (
            "of clients toolplug cannot tell apart (stateless MCP clients with neither a "
            "verified token nor a session share one count; a session, or a token of "
            "[serve.auth], gives a client a count of its own)"
        )
    return "", "of this process (the calls' context names no client)"


class _Owners:
    """How many programs each owner runs now, against ``[code] max_programs_per_owner``.

    The workers are this process's, so the count is too; it is touched only from the
    event loop that runs the programs and from no thread, so it needs no lock.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.running: dict[str, int] = {}

    def enter(self, owner: str) -> bool:
        count = self.running.get(owner, 0)
        if count >= self.cap:
            return False
        self.running[owner] = count + 1
        return True

    def leave(self, owner: str) -> None:
        count = self.running.pop(owner, 1) - 1
        if count:
            self.running[owner] = count


class _CodePlugin:
    """The built-in code-mode plugin: registers ``run_code`` and the sandbox it needs."""

    @hookimpl
    def register_tools(self, register: Callable[[type[Tool]], None]) -> None:
        register(RunCode)

    @hookimpl(wrapper=True)
    def tool_call(self, call: ToolCall) -> Generator[None, ToolResult, ToolResult]:
        """Hand the run_code call's approver and passthrough on to its program's calls
        (they travel on the call, which a tool's ``run`` does not see)."""
        if call.tool != CODE_TOOL:
            return (yield)
        token = _CALLER.set(_Caller(call.approver, call.passthrough))
        try:
            return (yield)
        finally:
            _CALLER.reset(token)

    @hookimpl
    def register_capabilities(self, register: Callable[[Capability], None]) -> None:
        register(
            Capability(
                name=SANDBOX,
                description="The Monty sandbox that runs code-mode programs.",
                detectors=(Package("pydantic_monty", "pydantic-monty"),),
                setup=_INSTALL,
            )
        )


CODE_PLUGIN_NAME: Final = "toolplug-code"


def code_plugin() -> tuple[str, object]:
    """The ``(name, plugin)`` pair that registers ``run_code`` and its sandbox."""
    return CODE_PLUGIN_NAME, _CodePlugin()


class CodeMode(ToolSource):
    """Code mode as a source, gathered last: its ``run_code`` describes the tools it may
    call, which exist only once every other source has registered its own."""

    name = CODE_PLUGIN_NAME
    title = ""

    def __init__(self, settings: CodeSettings) -> None:
        self.settings = settings
        self._plugin = code_plugin()

    def plugins(self) -> Sequence[tuple[str, object]]:
        return [self._plugin]

    def complete(self, registry: Registry) -> Mapping[str, RegisteredTool]:
        """The registered ``run_code`` bound to its registry, with the stubs of the tools
        it calls; nothing when another plugin's ``run_code`` won (a duplicate)."""
        entry = registry.tools.get(CODE_TOOL)
        if entry is None or entry.cls is not RunCode:
            return {}
        settings = self.settings
        tools = _callable_tools(registry, settings)
        stubs = python_stubs([
            StubTool(m.name, m.description, m.parameters, m.returns, m.usage_hint, m.parts)
            for m in tools
        ])
        functions = {
            python_identifier(m.name): (m.name, tuple(parameter_names(m.parameters)))
            for m in tools
        }
        # a program returns what its tools returned: any of their kinds of part
        kinds = tuple(k for k in PART_KINDS if any(k in m.parts for m in tools))
        metadata = _base_metadata(settings, stubs, kinds)
        bound: type[RunCode] = type(
            "RunCode",
            (RunCode,),
            {
                "metadata": metadata,
                "_registry_ref": weakref.ref(registry),
                "_settings": settings,
                "_functions": functions,
                "_owners": _Owners(settings.max_programs_per_owner),
                "__module__": __name__,
            },
        )
        return {
            CODE_TOOL: dataclasses.replace(
                entry, cls=bound, metadata=metadata, distribution="toolplug",
                version=toolplug_version(),
            )
        }


def _callable_tools(registry: Registry, settings: CodeSettings) -> list[ToolMetadata]:
    """The tools a program may call: the toolset's available tools, without run_code.

    Not ``registry.select``: the selections read the entries, and run_code's is replaced
    once this returns (the registry forgets what it worked out before).
    """
    members = registry.members(settings.toolset) if settings.toolset is not None else None
    return [
        tool.metadata
        for name, tool in registry.tools.items()
        if name != CODE_TOOL
        and (members is None or name in members)
        and registry.availability(name).available
    ]




@dataclass(frozen=True)
class _Caller:
    """What the run_code call itself was given, handed on to the calls its program makes:
    who approves (each call is still asked about on its own; a host's approval of run_code
    is no approval of what the program calls) and which exceptions pass through."""

    approver: Approver | None = None
    passthrough: tuple[type[BaseException], ...] = ()


_CALLER: Final[contextvars.ContextVar[_Caller | None]] = contextvars.ContextVar(
    "toolplug_code_caller", default=None
)


# -- the sandbox -----------------------------------------------------------------------


class _Pool:
    """One pool of Monty workers for the process, started on first use, kept warm."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: concurrent.futures.Future[Any] | None = None

    async def get(self, monty: Any) -> Any:
        with self._lock:
            ready = self._ready
            first = ready is None
            if ready is None:
                ready = self._ready = concurrent.futures.Future()
        if first:
            try:
                # A program waiting for a person's approval holds its worker: allow more
                # workers than cores, started only when programs run at once.
                pool = monty.AsyncMonty(min_processes=1, max_processes=_MAX_WORKERS)
                await pool.__aenter__()
            except BaseException as exc:
                with self._lock:
                    self._ready = None
                ready.set_exception(exc)
                raise
            ready.set_result(pool)
            atexit.register(self._close, pool)
        return await asyncio.wrap_future(ready)

    @staticmethod
    def _close(pool: Any) -> None:
        with contextlib.suppress(Exception):  # exiting: the workers end with this process
            asyncio.run(pool.__aexit__(None, None, None))

    def started(self) -> bool:
        """Whether this process started the sandbox's workers."""
        ready = self._ready
        return ready is not None and ready.done() and ready.exception() is None

    def close(self) -> None:
        """Stop the workers now (a process about to exit)."""
        ready = self._ready
        if ready is not None and ready.done() and ready.exception() is None:
            atexit.unregister(self._close)
            self._close(ready.result())


_POOL: Final = _Pool()


def exit_without_finalizing(code: int) -> None:
    """End a command-line process that ran programs: stop the sandbox, flush, and exit
    without the interpreter's finalization, during which the sandbox's native threads were
    seen to abort the process (SIGABRT or SIGBUS after the answer was written, about one run
    in 25). Returns, doing nothing, when no program ran in this process."""
    if not _POOL.started():
        return
    _POOL.close()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)

_EXCEPTIONS: Final[dict[str, type[Exception]]] = {
    ErrorType.PERMISSION: PermissionError,
    ErrorType.APPROVAL_REQUIRED: PermissionError,
    ErrorType.TIMEOUT: TimeoutError,
    ErrorType.VALIDATION: ValueError,
    ErrorType.NOT_FOUND: LookupError,
}
"""The exception a failed call raises inside the program, by error type (else RuntimeError)."""


class _Stop(Exception):
    """The program must end now, with this result."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.error.message if result.error else "")
        self.result = result


class _Program:
    """One run of one program: drives the sandbox and answers its calls."""

    def __init__(  # noqa: PLR0917 - private; its one caller passes each by name
        self,
        monty: Any,
        registry: Registry,
        settings: CodeSettings,
        functions: Mapping[str, tuple[str, tuple[Parameter, ...]]],
        host: Mapping[str, Any],
        caller: _Caller,
    ) -> None:
        self.monty = monty
        self.registry = registry
        self.settings = settings
        self.functions = functions
        self.host = host
        self.caller = caller
        self.printed: list[str] = []
        self.printed_chars = 0
        self.calls = 0
        self.pending: dict[int, asyncio.Task[ToolResult]] = {}
        self.unstarted: dict[int, Callable[[], Coroutine[Any, Any, ToolResult]]] = {}
        """Calls made but not yet waited for; they start when the program next waits."""
        self.code = ""
        self.held = Held(monty)
        """The parts the program's calls returned, which it holds by id."""

    async def run(self, code: str) -> ToolResult:
        self.code = code
        monty = self.monty
        settings = self.settings
        pool = await _POOL.get(monty)
        limits = {
            "max_feed_duration_secs": settings.timeout_seconds,
            "max_memory": settings.max_memory_mb * 1024 * 1024,
            "max_recursion_depth": settings.max_recursion,
            # every call suspends twice at most (the call, its future); the rest is slack
            "max_suspensions": 2 * settings.max_calls + 50,
            "max_total_sleep_secs": settings.timeout_seconds,
        }
        policy = {"sleep": "system", "sleep_system_max": settings.timeout_seconds}
        parked: bytes | None = None
        try:
            # A program computes on a worker checked out of the pool. When it waits for
            # tool calls that do not answer at once (a slow tool, a person approving), its
            # state is dumped and the worker goes back to the pool: waiting programs hold
            # none, so quick ones never queue behind them. It resumes on any worker.
            while True:
                async with pool.checkout(
                    script_name="program.py", limits=limits, os_policy=policy
                ) as session:
                    if parked is None:
                        snapshot = await session.feed_start(code, print_callback=self._print)
                    else:
                        snapshot = await session.load_snapshot(
                            parked, print_callback=self._print
                        )
                        parked = None
                    while not isinstance(snapshot, monty.MontyComplete):
                        if isinstance(snapshot, monty.AsyncFutureSnapshot):
                            waiting = self._awaited(snapshot)
                            if waiting and not await _settled(waiting, _HOLD_SECONDS):
                                parked = snapshot.dump()
                                break
                        snapshot = await self._answer(snapshot)
                if parked is None:
                    value = snapshot.output
                    break
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except _Stop as stop:
            return stop.result
        except monty.MontySyntaxError as exc:
            return self._failure(
                ErrorType.VALIDATION, "the program is not valid Python: " + _first_line(exc)
            )
        except monty.MontyRuntimeError as exc:
            return self._runtime_error(exc)
        except monty.MontyError as exc:
            return self._failure(
                ErrorType.EXECUTION, f"the sandbox stopped: {type(exc).__name__}: {exc}"
            )
        finally:
            await self._cancel_pending()
        return self._success(value)

    # -- answering the sandbox ---------------------------------------------------------

    async def _answer(self, snapshot: Any) -> Any:
        monty = self.monty
        if isinstance(snapshot, monty.AsyncFunctionSnapshot):
            if snapshot.is_os_function:
                return await snapshot.resume({"exception": _refusal(snapshot)})
            return await self._call(snapshot)
        if isinstance(snapshot, monty.AsyncFutureSnapshot):
            return await self._settle(snapshot)
        # a name the program reads but never defined
        return await snapshot.resume()

    async def _call(self, snapshot: Any) -> Any:
        name = str(snapshot.function_name)
        found = self.functions.get(name)
        if found is None:
            known = ", ".join(sorted(self.functions)) or "none"
            error = NameError(f"name {name!r} is not defined (the tool functions: {known})")
            return await snapshot.resume({"exception": error})
        tool, parameters = found
        arguments = _arguments(name, parameters, snapshot.args, snapshot.kwargs)
        if isinstance(arguments, Exception):
            return await snapshot.resume({"exception": arguments})
        arguments = self.held.argument(arguments)
        self.calls += 1
        if self.calls > self.settings.max_calls:
            raise _Stop(
                self._failure(
                    ErrorType.EXECUTION,
                    f"the program made more than {self.settings.max_calls} tool calls "
                    f"([code] max_calls), at line {self._line(snapshot)}; make fewer calls "
                    "(one call with a list where the tool takes one) or raise the limit",
                )
            )
        context = dict(self.host)
        if "call_id" in context:
            context["call_id"] = f"{context['call_id']}.{self.calls}"
        registry, caller = self.registry, self.caller
        self.unstarted[snapshot.call_id] = lambda: registry.acall(
            tool, arguments, context=context, approver=caller.approver,
            passthrough=caller.passthrough,
        )
        return await snapshot.resume({"future": ...})

    def _awaited(self, snapshot: Any) -> list[asyncio.Task[ToolResult]]:
        """Start the calls the program now waits for; the ones still running."""
        for call_id in snapshot.pending_call_ids:  # awaited now: they all run at once
            start = self.unstarted.pop(call_id, None)
            if start is not None:
                self.pending[call_id] = asyncio.ensure_future(start())
        return [self.pending[i] for i in snapshot.pending_call_ids if i in self.pending]

    async def _settle(self, snapshot: Any) -> Any:
        waiting = self._awaited(snapshot)
        if waiting:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        answers: dict[int, Any] = {}
        for call_id in snapshot.pending_call_ids:
            task = self.pending.get(call_id)
            if task is None:
                answers[call_id] = {"exception": RuntimeError("this call was not made")}
            elif task.done():
                del self.pending[call_id]
                answers[call_id] = _answer_of(task.result(), self.held)
        return await snapshot.resume(answers)

    async def _cancel_pending(self) -> None:
        self.unstarted.clear()
        tasks = list(self.pending.values())
        self.pending.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _print(self, stream: str, text: str) -> None:
        left = _MAX_PRINTED - self.printed_chars
        if left <= 0:
            return
        if len(text) > left:
            text = text[:left] + f"\n[printed output cut at {_MAX_PRINTED:,} characters]\n"
        self.printed_chars += len(text)
        self.printed.append(text)

    # -- results -----------------------------------------------------------------------

    def _line(self, snapshot: Any) -> int:
        start = getattr(snapshot.position, "start", 0)
        return self.code.count("\n", 0, start) + 1

    def _success(self, value: Any) -> ToolResult:
        printed = "".join(self.printed)
        value, parts = self.held.returned(value)
        shown = _jsonable(value)
        output = printed
        if shown is not None:
            text = json.dumps(shown, ensure_ascii=False)
            output = f"{printed.rstrip()}\n{text}" if printed.strip() else text
        return ToolResult.success(
            output or "(the program printed nothing and returned None)",
            {"printed": printed, "value": shown, "calls": self.calls},
            parts=parts,
        )

    def _failure(self, kind: ErrorType, message: str) -> ToolResult:
        printed = "".join(self.printed)
        if printed.strip():
            message += "\nPrinted before it ended:\n" + printed.rstrip()
        return ToolResult.failure(
            kind, message, details={"printed": printed, "calls": self.calls}
        )

    def _runtime_error(self, exc: Any) -> ToolResult:
        inner = exc.exception()
        kind = type(inner).__name__
        frames = exc.traceback()
        where = ""
        if frames:
            last = frames[-1]
            source = (last.source_line or "").strip().splitlines()
            where = f"line {last.line}" + (f" ({source[0]})" if source else "") + ": "
        text = f"{kind}: {inner}"
        settings = self.settings
        if isinstance(inner, TimeoutError) and "time limit" in str(inner):
            text = (
                f"the program computed longer than {settings.timeout_seconds:g} s "
                "([code] timeout_seconds); look for a loop that never ends"
            )
        elif isinstance(inner, MemoryError):
            text = f"MemoryError: the program used more than {settings.max_memory_mb} MB " \
                "([code] max_memory_mb)"
        elif isinstance(inner, RecursionError):
            text = f"RecursionError: calls nested deeper than {settings.max_recursion} " \
                "([code] max_recursion)"
        elif "suspension limit" in str(inner):
            text = (
                f"the program made more than {settings.max_calls} tool calls or waits "
                "([code] max_calls)"
            )
        return self._failure(ErrorType.EXECUTION, f"the program failed at {where}{text}"
                             if where else f"the program failed: {text}")


async def _settled(tasks: list[asyncio.Task[ToolResult]], seconds: float) -> bool:
    """Whether one of ``tasks`` ends within ``seconds``."""
    if any(task.done() for task in tasks):
        return True
    done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    return bool(done)


def _first_line(exc: Any) -> str:
    try:
        return str(exc.display("type-msg")).strip()
    except Exception:  # an older display signature: the plain text is as good
        return str(exc).strip()


def _refusal(snapshot: Any) -> Exception:
    """The error an OS access raises inside the program: every one is refused."""
    what = str(snapshot.function_name)
    if what == "import":
        module = snapshot.args[0] if snapshot.args else "?"
        return ImportError(
            f"import of {module!r} is not allowed in run_code; only the modules built into "
            "the sandbox (asyncio, json, re, math, datetime ...) can be imported"
        )
    return PermissionError(
        f"{what} is not allowed in run_code: programs have no files, network, environment "
        "or host clock; call a tool instead"
    )


def _arguments(
    name: str, parameters: tuple[Parameter, ...], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any] | Exception:
    """The tool's arguments from a call written against its stub."""
    positional = [p for p in parameters if p.required]
    if len(args) > len(positional):
        return TypeError(
            f"{name}() takes {len(positional)} positional argument(s) but {len(args)} were "
            "given; pass the others by keyword"
        )
    by_name = {p.python: p.property for p in parameters}
    arguments: dict[str, Any] = {}
    for parameter, value in zip(positional, args, strict=False):
        arguments[parameter.property] = value
    for key, value in kwargs.items():
        prop = by_name.get(key)
        if prop is None:
            known = ", ".join(p.python for p in parameters) or "none"
            return TypeError(f"{name}() got an unexpected keyword argument {key!r} ({known})")
        if prop in arguments:
            return TypeError(f"{name}() got multiple values for argument {key!r}")
        if value is not None:  # None is "not given", as the stub's defaults say
            arguments[prop] = value
    return arguments


def _answer_of(result: ToolResult, held: Held) -> dict[str, Any]:
    """A call's result as the sandbox's answer: its value (``Held.answer``), or the
    exception it raises."""
    if result.error is None:
        return {"return_value": held.answer(result)}
    kind = _EXCEPTIONS.get(result.error.type, RuntimeError)
    text = result.error.message
    if kind is RuntimeError:
        text = f"{result.error.type}: {text}"
    return {"exception": kind(text)}


def _jsonable(value: Any, depth: int = 0) -> Any:
    """The program's value as JSON data (repr for what JSON cannot hold)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth > 50:
        return repr(value)
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_jsonable(v, depth + 1) for v in items]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    return repr(value)
