"""What does an OpenAPI description cost toolplug: listing, parsing, and one call?

Run from the workspace root, after ``npm install --no-package-lock`` in tests/sources/openapi/node
(.ci/run does it): ``uv run python bench/openapi.py``.

* **``toolplug list``** (``python -m toolplug list`` as a subprocess) with GitHub's REST
  description (npm ``@octokit/openapi``, about 1,200 operations) configured as
  ``[openapi.github]``, its parsed description cached (a first run fills the cache), against
  the same command with a configuration that names no API; every installed workspace
  plugin is loaded both times. Twice: with the command line's output cache (what a user
  gets), and with ``TOOLPLUG_NO_CACHE=1`` (every run loads the registry). Goal: within 1.5x.
  Wall time, and the CPU time each command used (user and system, from ``getrusage``):
  on a machine other work shares, the CPU time says more than the wall clock.
* **first parse** of that description: read, parsed, every operation converted
  (``toolplug.sources.openapi`` with an empty cache, no registry). Goal: under 2 s. The first
  whole ``load()`` is shown beside it (it also checks every schema against the meta-schema
  once).
* **one call**: ``GET /notes/{id}`` of the FastAPI application of tests/helpers/openapi_app.py
  under uvicorn on 127.0.0.1, through the OpenAPI tool (``await registry.acall``) against
  the same request made with ``httpx.AsyncClient`` directly (one client held open), in
  batches interleaved round by round; median time per call. Goal: within 1.2x.

Nothing leaves the loopback interface; the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = (
    ROOT / "tests/sources/openapi/node/node_modules/@octokit/openapi/generated"
    / "api.github.com.json"
)
APP_DIR = ROOT / "tests" / "helpers"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _timed(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU time (user and system) of one ``toolplug list``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "toolplug", "list"], cwd=folder, env=env,
                   check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _list_runs(
    work: Path, runs: int, *, output_cache: bool
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU times of ``toolplug list`` with the API configured and without,
    interleaved: ``{"api": (wall, cpu), "none": (wall, cpu)}``."""
    with_api, without = work / "with", work / "without"
    for folder in (with_api, without):
        folder.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"
    (with_api / "toolplug.toml").write_text(
        f'cache_dir = "{cache}"\n[openapi.github]\nspec = "{SPEC}"\nprefix = ""\n'
    )
    (without / "toolplug.toml").write_text(f'cache_dir = "{cache}"\n')
    env = {**os.environ, "TOOLPLUG_CACHE_DIR": str(work / "cli-cache")}
    if not output_cache:
        env["TOOLPLUG_NO_CACHE"] = "1"
    times: dict[Path, tuple[list[float], list[float]]] = {with_api: ([], []), without: ([], [])}
    for folder in (with_api, without):  # fill the description's cache and the output cache
        for _ in range(2):
            _timed(folder, env)
    # The output cache does not trust an answer stored within 2 s of a change to a file it
    # watches (the description's cache was just written): store it again once that passed.
    time.sleep(2.5)
    for folder in (with_api, without):
        _timed(folder, env)
    for index in range(runs):
        order = (with_api, without) if index % 2 == 0 else (without, with_api)
        for folder in order:
            wall, cpu = _timed(folder, env)
            times[folder][0].append(wall)
            times[folder][1].append(cpu)
    return {"api": times[with_api], "none": times[without]}


def _first_parse(work: Path, runs: int) -> tuple[list[float], list[float]]:
    import toolplug
    from toolplug.sources.openapi._convert import convert
    from toolplug.sources.openapi._spec import parse_document

    parses: list[float] = []
    loads: list[float] = []
    for index in range(runs):
        started = time.perf_counter()
        convert(parse_document(SPEC.read_bytes(), str(SPEC)))
        parses.append(time.perf_counter() - started)
        if index == 0:  # a whole first load, once: it meta-checks every schema
            started = time.perf_counter()
            toolplug.load({"cache_dir": str(work / f"first-{index}"),
                           "openapi": {"github": {"spec": str(SPEC)}}})
            loads.append(time.perf_counter() - started)
    return parses, loads


async def _calls(url: str, work: Path, rounds: int, batch: int) -> tuple[list[float], list[float]]:
    import httpx

    import toolplug

    registry = toolplug.load({
        "network": {"allow": ["127.0.0.1"]}, "cache_dir": str(work / "calls"),
        "openapi": {"notes": {"spec": f"{url}/openapi.json", "include": ["getNote"]}},
    })
    tool: list[float] = []
    direct: list[float] = []
    async with httpx.AsyncClient() as client:

        async def via_tool() -> float:
            started = time.perf_counter()
            for _ in range(batch):
                result = await registry.acall("notes_get_note", {"note_id": 1})
                assert result.ok, result.error
            return (time.perf_counter() - started) / batch

        async def via_httpx() -> float:
            started = time.perf_counter()
            for _ in range(batch):
                answer = await client.get(f"{url}/notes/1", headers={"Accept": "application/json"})
                answer.raise_for_status()
                answer.json()
            return (time.perf_counter() - started) / batch

        await via_tool()
        await via_httpx()
        for index in range(rounds):
            if index % 2 == 0:
                tool.append(await via_tool())
                direct.append(await via_httpx())
            else:
                direct.append(await via_httpx())
                tool.append(await via_tool())
    registry.close()
    return tool, direct


def _row(way: str, values: list[float], anchor: list[float] | None, unit: float, goal: str) -> str:
    median = statistics.median(values) * unit
    spread = f"{min(values) * unit:.1f}-{max(values) * unit:.1f}"
    if anchor is None:
        return f"| {way} | {median:.1f} | {spread} | (anchor) | |"
    ratio = statistics.median(values) / statistics.median(anchor)
    return f"| {way} | {median:.1f} | {spread} | {ratio:.2f}x | {goal} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="runs of each command")
    parser.add_argument("--rounds", type=int, default=15, help="rounds of call batches")
    parser.add_argument("--batch", type=int, default=100, help="calls per batch")
    options = parser.parse_args()
    if not SPEC.exists():
        sys.exit(
            f"{SPEC} is missing: run `npm install --no-package-lock` in tests/sources/openapi/node"
        )
    work = Path(tempfile.mkdtemp(prefix="toolplug-bench-openapi-"))
    try:
        print("## toolplug list, GitHub's description configured (cached) vs none\n")
        print("| way | median ms | min-max ms | ratio | goal |\n|---|---:|---:|---:|---|")
        for cached in (True, False):
            times = _list_runs(work / f"list-{cached}", options.runs, output_cache=cached)
            label = "output cache on" if cached else "TOOLPLUG_NO_CACHE=1"
            for index, clock in enumerate(("wall", "CPU")):
                none, api = times["none"][index], times["api"][index]
                print(_row(f"no API ({label}), {clock}", none, None, 1000, ""))
                print(_row(f"GitHub, 1,223 operations ({label}), {clock}", api, none, 1000,
                           "<= 1.5x"))
        print("\n## first parse of GitHub's description\n")
        parses, loads = _first_parse(work, 5)
        print(f"read, parse and convert: median {statistics.median(parses):.2f} s "
              f"(min {min(parses):.2f}, max {max(parses):.2f}); goal < 2 s")
        print(f"the whole first load() (meta-checks every schema once): {loads[0]:.1f} s\n")
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "openapi_app:app", "--app-dir", str(APP_DIR),
             "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit("uvicorn did not start")
                    time.sleep(0.1)
            url = f"http://127.0.0.1:{port}"
            tool, direct = asyncio.run(_calls(url, work, options.rounds, options.batch))
        finally:
            server.terminate()
            server.wait(15)
        print("## one call, GET /notes/{id} on 127.0.0.1\n")
        print("| way | median us | min-max us | ratio | goal |\n|---|---:|---:|---:|---|")
        print(_row("httpx.AsyncClient, held open", direct, None, 1e6, ""))
        print(_row("OpenAPI tool, await registry.acall", tool, direct, 1e6, "<= 1.2x"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()


