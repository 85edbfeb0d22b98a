"""How fast does `toolplug list` answer, against a bare interpreter and `llm tools list`?

Run from the workspace root: ``uv run python bench/cli_startup.py [--runs N]``.

The three commands run interleaved, round after round, in one process, so that a noisy
machine slows all of them alike; the report gives medians and the ratios the goals are
stated in. ``llm`` is installed by this script into a throwaway virtual environment
(bench/.venvs/llm) so it never mixes with the workspace.

* ``python -c pass``: the workspace interpreter starting and stopping (the floor).
* ``toolplug list`` (cached): the console script with every workspace plugin installed,
  answered from the CLI output cache, as every run after the first is.
* ``toolplug list`` (uncached): the same with ``TOOLPLUG_NO_CACHE=1``: discovery, metadata
  validation and capability checks in full.
* ``llm tools list``: the anchor, from a fresh install of the ``llm`` package.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / "bench" / ".venvs"


def ensure_llm() -> Path:
    """The ``llm`` executable of a throwaway environment, installed on first use."""
    venv = VENVS / "llm"
    exe = venv / ("Scripts" if os.name == "nt" else "bin") / "llm"
    if not exe.exists():
        uv = shutil.which("uv") or sys.exit("uv is needed to build the llm environment")
        subprocess.run([uv, "venv", "--quiet", str(venv)], check=True)
        python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
        subprocess.run(
            [uv, "pip", "install", "--quiet", "--python", str(python), "llm"], check=True
        )
    return exe


def timed(command: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="rounds (default 30)")
    options = parser.parse_args()

    bindir = Path(sys.executable).parent
    toolplug = str(bindir / "toolplug")
    llm = str(ensure_llm())
    work = tempfile.mkdtemp(prefix="toolplug-bench-")
    cache = tempfile.mkdtemp(prefix="toolplug-bench-cache-")
    base = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPLUG_")}
    env = {**base, "TOOLPLUG_CACHE_DIR": cache}
    uncached_env = {**env, "TOOLPLUG_NO_CACHE": "1"}
    llm_env = {**base, "LLM_USER_PATH": tempfile.mkdtemp(prefix="llm-bench-")}
    commands = {
        "python -c pass": ([sys.executable, "-c", "pass"], env),
        "toolplug list (cached)": ([toolplug, "list"], env),
        "toolplug list (uncached)": ([toolplug, "list"], uncached_env),
        "llm tools list": ([llm, "tools", "list"], llm_env),
    }
    for command, command_env in commands.values():  # warm up: file cache, .pyc, our cache
        for _ in range(2):
            timed(command, command_env, work)
    time.sleep(2.5)  # let the stored answer age past the cache's "just modified" window
    timed([toolplug, "list"], env, work)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(options.runs):
        for name, (command, command_env) in commands.items():
            samples[name].append(timed(command, command_env, work))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians["python -c pass"]
    anchor = medians["llm tools list"]
    version = sys.version.split()[0]
    print(f"{options.runs} interleaved rounds on {os.cpu_count()} cores, Python {version}")
    print()
    print("| command | median ms | x bare interpreter | x `llm tools list` |")
    print("|---|---:|---:|---:|")
    for name, median in medians.items():
        print(f"| {name} | {median * 1000:.1f} | {median / floor:.2f} | {median / anchor:.3f} |")
    cached = medians["toolplug list (cached)"]
    print()
    verdict = {True: "met", False: "MISSED"}
    print(f"goal: cached toolplug list <= 3x bare: {verdict[cached <= 3 * floor]}")
    print(f"goal: cached toolplug list <= 0.15x llm: {verdict[cached <= 0.15 * anchor]}")


if __name__ == "__main__":
    main()
