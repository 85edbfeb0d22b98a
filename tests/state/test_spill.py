"""Spilled outputs: the whole of a result the output budget cut, kept and read in ranges,
in the process and in a real Redis shared by two registries (two replicas)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import toolplug
from tests.helpers.redis import redis_server
from toolplug import Tool, ToolMetadata, ToolResult, hookimpl
from toolplug.engine import _engine
from toolplug.utilities import _bridge, _limits

TEXT = "".join(f"line {i:05d}\n" for i in range(2_000))  # 22,000 characters
ROWS = list(range(3_000))


class Big(Tool):
    metadata = ToolMetadata(name="big", description="Return a long text.", category="utility")

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        size = arguments.get("lines", 2_000)
        text = TEXT if size == 2_000 else "".join(f"line {i:07d}\n" for i in range(size))
        return ToolResult.success(text, {"rows": ROWS} if arguments.get("rows") else None)


ROWS_MANY = [{"id": n, "name": f"row {n}"} for n in range(20_000)]
"""Long by its values (``off_loop``), not its text: measured, cut and kept off the loop."""


class Many(Tool):
    metadata = ToolMetadata(name="many", description="Return many rows.", category="utility")

    async def run(self, arguments: dict[str, Any], context: Any) -> ToolResult:
        return ToolResult.success(f"{len(ROWS_MANY)} rows", {"rows": ROWS_MANY})


class _Plugin:
    @hookimpl
    def register_tools(self, register: Any) -> None:
        register(Big)
        register(Many)


def _load(**calls: Any) -> toolplug.Registry:
    return toolplug.load(
        {"calls": {"max_output_chars": 2_000, **calls}}, plugins=[("big", _Plugin())]
    )


@pytest.fixture
def registry() -> Iterator[toolplug.Registry]:
    made = _load()
    yield made
    made.close()


def test_a_cut_output_is_kept_whole_and_read_in_ranges(registry: toolplug.Registry) -> None:
    result = registry.call("big", {"rows": True})
    assert result.ok
    assert result.spill is not None
    assert result.spill.startswith("toolplug://results/")
    assert len(result.for_model()) <= 2_000
    shown = result.output.split("\n[output cut by toolplug")[0]
    assert f"the whole output is kept at {result.spill}: read it from offset {len(shown)}" in (
        result.output
    )
    rest = registry.read(result.spill, offset=len(shown))
    assert rest is not None
    assert shown + rest.text == TEXT
    page = registry.read(result.spill, offset=11, length=11)
    assert page is not None
    assert (page.text, page.total, page.next_offset) == ("line 00001\n", len(TEXT), 22)
    data = registry.read(result.spill + "/data")
    assert data is not None
    assert json.loads(data.text) == {"rows": ROWS}
    assert any(f"read all of it at {result.spill}/data" in w for w in result.warnings)
    assert result.to_dict()["spill"] == result.spill


def test_a_spill_belongs_to_its_client(registry: toolplug.Registry) -> None:
    async def scenario() -> None:
        mine = await registry.acall("big", {}, context={"client": "alice"})
        assert mine.spill is not None
        assert await registry.aread(mine.spill, owner="bob") is None
        assert await registry.aread(mine.spill) is None
        page = await registry.aread(mine.spill, owner="alice", length=5)
        assert page is not None
        assert page.text == "line "
        assert [e.id for e in await registry.aspills(owner="alice")] == [
            mine.spill.rsplit("/", 1)[1]
        ]
        assert await registry.aspills(owner="bob") == []

    asyncio.run(scenario())


def test_bad_uris_and_ranges_read_nothing(registry: toolplug.Registry) -> None:
    result = registry.call("big", {})
    assert result.spill is not None
    for uri in ("toolplug://results/", "toolplug://results/../x", "file:///etc/passwd",
                result.spill + "/secrets", result.spill.replace("results/", "results/0")):
        assert registry.read(uri) is None, uri
    assert registry.read(result.spill, offset=-1) is None
    past = registry.read(result.spill, offset=10**9)
    assert past is not None
    assert (past.text, past.next_offset) == ("", None)


def test_the_oldest_spills_go_first_and_ttl_zero_keeps_none() -> None:
    bounded = _load(spill_max_count=2)
    try:
        uris = [bounded.call("big", {}).spill for _ in range(3)]
        assert all(uris)
        assert bounded.read(uris[0]) is None  # type: ignore[arg-type]
        assert bounded.read(uris[2]) is not None  # type: ignore[arg-type]
    finally:
        bounded.close()
    small = _load(spill_max_mb=0.01)  # 10,000 characters: this output is larger
    try:
        result = small.call("big", {})
        assert result.spill is None
        assert "ask for less" in result.output
    finally:
        small.close()
    off = _load(spill_ttl_seconds=0)
    try:
        assert off.call("big", {}).spill is None
    finally:
        off.close()


def test_two_replicas_share_spills_through_redis(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        first, second = _load(store=url), _load(store=url)
        try:
            result = first.call("big", {"lines": 300_000}, context={"client": "c1"})  # 3.6 MB
            assert result.spill is not None
            assert not any("this process only" in w for w in result.warnings)
            whole = second.read(result.spill, owner="c1")
            assert whole is not None
            assert whole.total == 300_000 * 13
            assert whole.text.startswith("line 0000000\n")
            assert whole.text.endswith("line 0299999\n")
            middle = second.read(result.spill, owner="c1", offset=13 * 150_000, length=13)
            assert middle is not None
            assert middle.text == "line 0150000\n"
            assert second.read(result.spill, owner="c2") is None
            listed = asyncio.run(second.aspills(owner="c1"))
            assert [e.sizes for e in listed] == [{"output": 300_000 * 13}]
        finally:
            first.close()
            second.close()


def test_many_calls_at_once_each_keep_their_own_output() -> None:
    registry = _load(spill_max_count=10_000)
    try:

        async def awaited() -> list[ToolResult]:
            return list(await asyncio.gather(*(registry.acall("big", {}) for _ in range(200))))

        with ThreadPoolExecutor(8) as pool:  # the sync call, from threads, meanwhile
            threaded = [pool.submit(registry.call, "big", {}) for _ in range(200)]
            results = asyncio.run(awaited()) + [f.result() for f in threaded]
        uris = {r.spill for r in results}
        assert len(uris) == 400
        assert None not in uris
        for uri in list(uris)[:20]:
            page = registry.read(uri)  # type: ignore[arg-type]
            assert page is not None
            assert page.text == TEXT
        assert len(asyncio.run(registry.aspills())) == 400
    finally:
        registry.close()


def test_with_redis_gone_the_output_is_kept_here_and_the_result_says_so(
    tmp_path: Path,
) -> None:
    with redis_server(tmp_path) as url:
        registry = _load(store=url)
    try:  # the server has stopped: the store falls back to this process
        result = registry.call("big", {})
        assert result.spill is not None
        assert any("kept in this process only" in w for w in result.warnings)
        page = registry.read(result.spill, length=11)
        assert page is not None
        assert page.text == "line 00000\n"
    finally:
        registry.close()


def test_large_data_is_measured_cut_and_kept_off_the_loop(
    registry: toolplug.Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # measuring 20,000 rows as JSON, cutting them and writing them for the spill would hold
    # the event loop: they are done in toolplug's worker thread, with the same result
    where: list[tuple[str, str]] = []
    measured, cut = _engine._measured, _limits.bounded

    def measuring(*arguments: Any) -> Any:
        where.append(("measured", threading.current_thread().name))
        return measured(*arguments)

    def cutting(*arguments: Any, **options: Any) -> Any:
        where.append(("cut", threading.current_thread().name))
        return cut(*arguments, **options)

    monkeypatch.setattr(_engine, "_measured", measuring)
    monkeypatch.setattr(_engine, "bounded", cutting)
    result = asyncio.run(registry.acall("many"))
    assert [step for step, _ in where] == ["measured", "cut"]
    assert all(thread.startswith("toolplug-offload") for _, thread in where), where
    assert result.ok
    assert result.spill is not None
    assert len(result.for_model()) <= 2_000
    assert any(w.startswith("the structured data was cut to fit") for w in result.warnings)
    kept = registry.read(result.spill + "/data")
    assert kept is not None
    assert json.loads(kept.text) == {"rows": ROWS_MANY}  # the whole data, written off the loop
    # the same cut as made inline
    whole = ToolResult.success(f"{len(ROWS_MANY)} rows", {"rows": ROWS_MANY})
    inline = cut(whole, {}, 2_000, kept_at=result.spill)
    assert (result.output, result.data, result.warnings) == (
        inline.output, inline.data, inline.warnings,
    )
    # a call stepped through with no loop at all (the bridge's fast path for sync tools):
    # inline, the same cut
    where.clear()
    engine: Any = registry._engine
    stepped = _bridge._stepped(engine._bounded(engine.prepare("many", {}, None, None), whole))
    assert where == [("cut", threading.current_thread().name)]
    assert stepped.data == result.data


def _parts_registry(store: str = "memory") -> toolplug.Registry:
    from tests.helpers.parts import ReturnsPlugin

    return toolplug.load(
        {"calls": {"store": store, "max_result_bytes": 1_000, "max_output_chars": 2_000}},
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )


def test_two_replicas_share_cut_parts_through_redis(tmp_path: Path) -> None:
    from tests.helpers.parts import Returns, png, wav

    clip, image, text = toolplug.Audio(wav(100_000)), toolplug.Image(png(2)), "t" * 9_000
    Returns.RESULT = ToolResult.success(
        "o",
        parts=[image, clip, toolplug.Text(text), toolplug.ResourceLink("https://a.example/", "a")],
    )
    with redis_server(tmp_path) as url:
        first, second = _parts_registry(url), _parts_registry(url)
        try:
            result = first.call("returns", {}, context={"client": "c1"})
            assert result.spill is not None
            assert [p.kind for p in result.parts] == ["image", "text", "resource_link"]
            audio = second.read(f"{result.spill}/parts/1", owner="c1")
            assert audio is not None
            assert audio.data == clip.data
            assert audio.mime_type == "audio/wav"
            tail = second.read(f"{result.spill}/parts/1", owner="c1", offset=clip.size - 5)
            assert tail is not None
            assert tail.data == clip.data[-5:]
            assert tail.next_offset is None
            whole = second.read(f"{result.spill}/parts/2", owner="c1", offset=8_990)
            assert whole is not None
            assert whole.text == "t" * 10
            assert second.read(f"{result.spill}/parts/1", owner="c2") is None
            assert second.read(f"{result.spill}/parts/3", owner="c1") is None  # not cut
            assert second.read(f"{result.spill}/parts/01", owner="c1") is None
            [entry] = asyncio.run(second.aspills(owner="c1"))
            assert entry.types == {"parts/1": "audio/wav", "parts/2": "text/plain"}
            assert entry.sizes["parts/1"] == clip.size
        finally:
            first.close()
            second.close()


def test_parts_too_large_to_keep_are_left_out_and_say_to_ask_for_less() -> None:
    from tests.helpers.parts import Returns, ReturnsPlugin, wav

    clip = toolplug.Audio(wav(100_000))
    Returns.RESULT = ToolResult.success("o", parts=[clip])
    registry = toolplug.load(
        {"calls": {"max_result_bytes": 1_000, "spill_max_mb": 0.1}},  # 100,000: too small
        env={"TOOLPLUG_PLUGINS": ""}, plugins=[("returns", ReturnsPlugin())],
    )
    try:
        result = registry.call("returns", {})
        assert result.parts == ()
        assert result.spill is None
        assert any(
            "left out parts[0] (audio/wav, 0.2 MB)" in w and "ask for less" in w
            for w in result.warnings
        )
    finally:
        registry.close()
