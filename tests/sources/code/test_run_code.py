"""run_code: programs call tools through the registry, inside limits, and cannot escape."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import Approval, ApprovalRequest, ConfigError

Load = Callable[..., toolplug.Registry]


def test_a_program_chains_calls_and_returns_what_it_printed_and_its_value(
    load_code: Load,
) -> None:
    registry = load_code()
    code = (
        "words = []\n"
        "for w in ['a', 'b', 'c']:\n"
        "    r = await echo(text=w * 2)\n"
        "    words.append(r['text'])\n"
        "print('-'.join(words))\n"
        "len(words)\n"
    )
    result = registry.call("run_code", {"code": code})
    assert result.error is None, result.for_model()
    assert result.output == "aa-bb-cc\n3"
    assert result.data == {"printed": "aa-bb-cc\n", "value": 3, "calls": 3}


def test_the_description_carries_the_stubs_of_the_callable_tools(load_code: Load) -> None:
    meta = load_code().tools["run_code"].metadata
    described = meta.parameters["properties"]["code"]["description"]
    assert "async def echo(text: str) -> EchoResult:" in described
    assert "async def erase(record: int)" in described
    assert "async def run_code" not in described  # a program cannot start a program
    exported = toolplug.export_tools(load_code(), "anthropic")
    (run_code,) = [t for t in exported if t["name"] == "run_code"]
    assert "async def wait(label: str)" in run_code["input_schema"]["properties"]["code"][
        "description"
    ]



@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # imports of anything the sandbox does not carry
        ("import subprocess\nsubprocess.run(['id'])", "import of 'subprocess' is not allowed"),
        ("import socket", "import of 'socket' is not allowed"),
        # the file system, whichever way it is reached
        ("open('/etc/passwd').read()", "open is not allowed in run_code"),
        ("from pathlib import Path\nPath('x.txt').write_text('y')", "Path.write_text is not"),
        ("import os\nos.listdir('/')", "is not allowed in run_code"),
        # the environment
        ("import os\nos.environ['HOME']", "os.environ is not allowed"),
        ("import os\nos.getenv('PATH')", "os.getenv is not allowed"),
        # dunder walks to the interpreter's internals
        ("().__class__.__base__.__subclasses__()", "AttributeError"),
        ("(lambda: 0).__globals__['__builtins__']", "AttributeError"),
        ("type(print).__module__", "AttributeError"),
        # eval and exec run inside the same sandbox, under the same refusals
        ("eval(\"__import__('os').getenv('HOME')\")", "name '__import__' is not defined"),
        ("exec(\"open('/etc/passwd')\")", "open is not allowed"),
        # resource bombs
        ("while True:\n    pass", "computed longer than 0.5 s"),
        ("x = 'a'\nwhile True:\n    x = x + x", "more than 8 MB"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "nested deeper than 50"),
        ("for i in range(1000000):\n    await echo(text='x')", "more than 20 tool calls"),
        ("for i in range(1000000):\n    echo(text='x')", "more than 20 tool calls"),
        ("import asyncio\nawait asyncio.gather(*[echo(text='x') for i in range(10**6)])",
         "more than 20 tool calls"),
        ("import time\ntime.sleep(3600)", "line 2 (time.sleep(3600)): PermissionError"),
        # not Python at all
        ("def (", "the program is not valid Python"),
    ],
)
def test_escape_attempts_end_with_a_clear_error(
    load_code: Load, tmp_path: Path, code: str, expected: str
) -> None:
    registry = load_code(timeout_seconds=0.5, max_memory_mb=8, max_recursion=50, max_calls=20)
    result = registry.call("run_code", {"code": code})
    assert result.error is not None, result.output
    assert expected in result.error.message, result.error.message
    # the host is unharmed: nothing written, and the next program runs as usual
    assert not Path("x.txt").exists()
    after = registry.call("run_code", {"code": "await echo(text='still here')"})
    assert after.error is None, after.for_model()
    assert after.data["value"] == {"text": "still here"}


def test_an_error_names_the_line_and_keeps_what_was_printed(load_code: Load) -> None:
    result = load_code().call(
        "run_code", {"code": "print('step 1')\nx = {}\nx['missing']\n"}
    )
    assert result.error is not None
    assert result.error.message.startswith("the program failed at line 3 (x['missing']): KeyError")
    assert "Printed before it ended:\nstep 1" in result.error.message
    assert result.error.details["printed"] == "step 1\n"


def test_a_failed_call_raises_inside_the_program_which_may_catch_it(load_code: Load) -> None:
    code = (
        "try:\n"
        "    await echo(text='')\n"
        "except ValueError as e:\n"
        "    print('caught:', e)\n"
        "try:\n"
        "    await echo('a', 'b')\n"
        "except TypeError as e:\n"
        "    print('caught:', e)\n"
        "await echo(txt='a')\n"
    )
    result = load_code().call("run_code", {"code": code})
    assert result.error is not None
    assert "caught: invalid arguments for echo: text: expected minLength 1" in (
        result.error.message
    )
    assert "caught: echo() takes 1 positional argument(s) but 2 were given" in (
        result.error.message
    )
    assert "line 9" in result.error.message
    assert "unexpected keyword argument 'txt'" in result.error.message


def test_an_unknown_function_is_a_name_error_listing_the_tools(load_code: Load) -> None:
    result = load_code().call("run_code", {"code": "await web_search(query='x')"})
    assert result.error is not None
    message = result.error.message
    assert "NameError: name 'web_search' is not defined" in message
    assert "(the tool functions: echo, erase, wait)" in message


def test_gathered_calls_run_at_once(load_code: Load, journal: Any) -> None:
    registry = load_code()

    async def main() -> toolplug.ToolResult:
        journal.all_started = asyncio.Event()
        journal.expected = 3
        code = (
            "import asyncio\n"
            "rs = await asyncio.gather(wait(label='a'), wait(label='b'), wait(label='c'))\n"
            "[r['label'] for r in rs]\n"
        )
        return await registry.acall("run_code", {"code": code})

    # Each call waits until all three have started: run one by one, the first would time out.
    result = asyncio.run(main())
    assert result.error is None, result.for_model()
    assert result.data["value"] == ["a", "b", "c"]
    assert sorted(journal.finished) == ["a", "b", "c"]


def test_cancelling_run_code_stops_the_program_and_its_calls_in_flight(
    load_code: Load, journal: Any
) -> None:
    registry = load_code(timeout_seconds=30)

    async def main() -> None:
        journal.gate = asyncio.Event()  # never set: the calls wait until cancelled
        code = (
            "import asyncio\n"
            "await asyncio.gather(wait(label='a'), wait(label='b'))\n"
            "await echo(text='never')\n"
        )
        task = asyncio.ensure_future(registry.acall("run_code", {"code": code}))
        while len(journal.started) < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sorted(journal.cancelled) == ["a", "b"]
        assert "never" not in journal.started
        # a program spinning in the sandbox stops too, and the sandbox serves the next one
        spinning = asyncio.ensure_future(
            registry.acall("run_code", {"code": "while True:\n    pass"})
        )
        await asyncio.sleep(0.2)
        spinning.cancel()
        with pytest.raises(asyncio.CancelledError):
            await spinning
        after = await registry.acall("run_code", {"code": "1 + 1"})
        assert after.data["value"] == 2

    asyncio.run(main())


# -- approvals inside a program -------------------------------------------------------------


def test_an_approved_call_runs(load_code: Load) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    registry = load_code(approver=approver)
    result = registry.call("run_code", {"code": "(await erase(record=7))['erased']"})
    assert result.error is None, result.for_model()
    assert result.data["value"] == 7
    assert [(r.tool, dict(r.arguments)) for r in asked] == [("erase", {"record": 7})]


def test_a_denied_call_is_an_exception_the_program_may_catch(load_code: Load, journal: Any) -> None:
    code = (
        "try:\n"
        "    await erase(record=1)\n"
        "except PermissionError as e:\n"
        "    print('not erased:', e)\n"
        "(await echo(text='went on'))['text']\n"
    )
    registry = load_code()
    result = registry.call(
        "run_code", {"code": code}, approver=lambda r: Approval.deny("keep it")
    )
    assert result.error is None, result.for_model()
    assert "not erased: the call of erase was denied by the person approving it: keep it" in (
        result.output
    )
    assert result.data["value"] == "went on"
    assert journal.finished == []


def test_with_nobody_to_ask_the_call_fails_inside_the_program(load_code: Load) -> None:
    result = load_code().call("run_code", {"code": "x = 1\nawait erase(record=2)"})
    assert result.error is not None
    assert "line 2" in result.error.message
    assert "PermissionError" in result.error.message
    assert "erase needs a person's approval, and nobody here could give it" in (
        result.error.message
    )


def test_a_call_waiting_for_approval_pauses_the_program(load_code: Load, journal: Any) -> None:
    async def main() -> None:
        decide = asyncio.Event()
        waiting = asyncio.Event()

        async def approver(request: ApprovalRequest) -> bool:
            waiting.set()
            await decide.wait()
            return True

        registry = load_code()
        code = "await erase(record=3)\nawait echo(text='after')\n"
        task = asyncio.ensure_future(registry.acall("run_code", {"code": code}, approver=approver))
        await asyncio.wait_for(waiting.wait(), 10)
        await asyncio.sleep(0.1)
        assert journal.started == []  # the program waits at the approval
        assert journal.finished == []
        decide.set()
        result = await asyncio.wait_for(task, 10)
        assert result.error is None, result.for_model()
        assert journal.finished == ["erased 3"]
        assert journal.started == ["after"]

    asyncio.run(main())


# -- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"enabled": "yes"}, "code.enabled"),
        ({"enabled": True, "max_calls": 0}, "code.max_calls"),
        ({"enabled": True, "timeout_seconds": -1}, "code.timeout_seconds"),
        ({"enabled": True, "toolset": "nope"}, "code.toolset"),
        ({"enabled": True, "limit": 3}, "code.limit"),
    ],
)
def test_a_bad_code_table_names_the_key(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        toolplug.load({"code": table}, env={"TOOLPLUG_PLUGINS": ""})
    assert key in str(caught.value)


def test_the_code_toolset_limits_what_a_program_may_call(load_code: Load) -> None:
    registry = load_code(toolset="safe", config={"toolsets": {"safe": {"include": ["echo"]}}})
    described = registry.tools["run_code"].metadata.parameters["properties"]["code"]["description"]
    assert "async def echo(" in described
    assert "async def erase(" not in described
    result = registry.call("run_code", {"code": "await erase(record=1)"})
    assert result.error is not None
    assert "name 'erase' is not defined (the tool functions: echo)" in result.error.message


def test_without_code_mode_there_is_no_run_code() -> None:
    registry = toolplug.load(env={"TOOLPLUG_PLUGINS": ""})
    assert "run_code" not in registry.tools
    result = registry.call("run_code", {"code": "1"})
    assert result.error is not None
    assert result.error.type == "NotFoundError"


def test_the_results_value_is_json(load_code: Load) -> None:
    result = load_code().call("run_code", {"code": "{'a': (1, 2), 'b': {3}, 'c': 1.5}"})
    assert result.error is None, result.for_model()
    assert json.loads(result.output) == {"a": [1, 2], "b": [3], "c": 1.5}
    assert os.environ.get("TOOLPLUG_CONFIG") is None


def test_without_the_sandbox_run_code_is_unavailable_and_says_how_to_install() -> None:
    registry = toolplug.load(
        {"code": {"enabled": True}}, env={"TOOLPLUG_PLUGINS": ""}, deny=["code_sandbox"]
    )
    availability = registry.availability("run_code")
    assert not availability.available
    assert availability.setup == ('pip install "toolplug[code]"',)
    result = registry.call("run_code", {"code": "1"})
    assert result.error is not None
    assert result.error.type == "UnavailableError"


def test_printed_output_is_kept_within_bounds(load_code: Load) -> None:
    code = "for i in range(200000):\n    print('x' * 50)\n"
    result = load_code().call("run_code", {"code": code})
    assert result.error is None, result.for_model()
    # ten million characters printed; the reply keeps within the output budget
    assert len(result.for_model()) <= 50_000
    assert result.warnings or "cut" in result.for_model()


def test_a_call_never_awaited_never_runs(load_code: Load, journal: Any) -> None:
    code = "await echo(text='awaited')\necho(text='forgotten')\n"
    result = load_code().call("run_code", {"code": code})
    assert result.error is None, result.for_model()
    assert journal.started == ["awaited"]


def test_programs_waiting_for_approval_do_not_hold_up_other_programs(
    load_code: Load, journal: Any
) -> None:
    async def main() -> None:
        decide = asyncio.Event()

        async def approver(request: ApprovalRequest) -> bool:
            await decide.wait()
            return True

        registry = load_code(approver=approver)
        waiting = [
            asyncio.ensure_future(registry.acall("run_code", {"code": f"await erase(record={i})"}))
            for i in range(4)  # more than this machine's cores
        ]
        await asyncio.sleep(0.3)  # all four programs wait at their approval now
        assert not any(t.done() for t in waiting)
        other = await asyncio.wait_for(
            registry.acall("run_code", {"code": "(await echo(text='meanwhile'))['text']"}), 10
        )
        assert other.data["value"] == "meanwhile"
        decide.set()
        results = await asyncio.wait_for(asyncio.gather(*waiting), 10)
        assert all(r.error is None for r in results)
        assert sorted(journal.finished) == [f"erased {i}" for i in range(4)]

    asyncio.run(main())


class Pause(Exception):
    """A framework pausing its run to ask a person (LangGraph's interrupt, say)."""


def test_a_framework_pause_inside_a_program_leaves_run_code_unchanged(
    load_code: Load, journal: Any
) -> None:
    def approver(request: ApprovalRequest) -> bool:
        raise Pause(request.tool)

    registry = load_code()
    with pytest.raises(Pause, match="erase"):
        registry.call(
            "run_code", {"code": "await erase(record=5)"}, approver=approver,
            passthrough=(Pause,),
        )
    assert journal.finished == []
    # without passthrough the approver's exception is an error of that call, in the program
    result = registry.call("run_code", {"code": "await erase(record=5)"}, approver=approver)
    assert result.error is not None
    assert "the approver of erase failed: Pause: erase" in result.error.message


# -- starvation: waiting programs hold no worker; caps per client ---------------------------


def test_a_quick_program_starts_while_eight_wait_for_their_tools(
    load_code: Load, journal: Any
) -> None:
    # Eight programs (as many as the sandbox has workers here) each wait for a tool that
    # does not answer; before parking, each held a worker and the ninth waited for them.
    registry = load_code(max_programs_per_owner=4)

    async def main() -> None:
        journal.gate = asyncio.Event()
        waiting = [
            asyncio.ensure_future(
                registry.acall(
                    "run_code",
                    {"code": f"(await wait(label='w{i}'))['label']"},
                    context={"client": f"client-{i % 2}"},
                )
            )
            for i in range(8)
        ]
        while len(journal.started) < 8:
            await asyncio.sleep(0.01)
        quick = await asyncio.wait_for(registry.acall("run_code", {"code": "1 + 1"}), 15)
        assert quick.data["value"] == 2
        assert not any(t.done() for t in waiting)
        journal.gate.set()
        results = await asyncio.wait_for(asyncio.gather(*waiting), 15)
        assert [r.data["value"] for r in results] == [f"w{i}" for i in range(8)]

    asyncio.run(main())


def test_a_program_parked_while_waiting_resumes_with_its_state_and_printed_output(
    load_code: Load, journal: Any
) -> None:
    registry = load_code()

    async def main() -> toolplug.ToolResult:
        journal.gate = asyncio.Event()
        code = (
            "n = 41\n"
            "print('before')\n"
            "r = await wait(label='slow')\n"
            "print('after', r['label'])\n"
            "n + 1\n"
        )
        task = asyncio.ensure_future(registry.acall("run_code", {"code": code}))
        while not journal.started:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # parked by now: its worker is back in the pool
        journal.gate.set()
        return await task

    result = asyncio.run(main())
    assert result.error is None, result.for_model()
    assert result.data["value"] == 42
    assert result.data["printed"] == "before\nafter slow\n"


def test_one_client_may_run_only_so_many_programs_at_once(load_code: Load, journal: Any) -> None:
    registry = load_code(max_programs_per_owner=2)

    async def main() -> None:
        journal.gate = asyncio.Event()
        mine = {"client": "alice"}
        held = [
            asyncio.ensure_future(
                registry.acall("run_code", {"code": f"await wait(label='{i}')"}, context=mine)
            )
            for i in range(2)
        ]
        while len(journal.started) < 2:
            await asyncio.sleep(0.01)
        third = await registry.acall("run_code", {"code": "1 + 1"}, context=mine)
        assert third.error is not None
        assert third.error.type == "RateLimitError"
        assert "[code] max_programs_per_owner" in third.error.message
        assert third.error.retry_possible
        other = await registry.acall("run_code", {"code": "1 + 1"}, context={"client": "bob"})
        assert other.data["value"] == 2
        journal.gate.set()
        await asyncio.gather(*held)
        again = await registry.acall("run_code", {"code": "1 + 1"}, context=mine)
        assert again.data["value"] == 2

    asyncio.run(main())


def test_the_wall_clock_ends_a_program_that_waits_too_long(load_code: Load, journal: Any) -> None:
    registry = load_code(wall_seconds=0.5)

    async def main() -> toolplug.ToolResult:
        journal.gate = asyncio.Event()  # never set
        return await registry.acall("run_code", {"code": "await wait(label='forever')"})

    result = asyncio.run(main())
    assert result.error is not None
    assert result.error.type == "TimeoutError"
    assert journal.cancelled == ["forever"]
