"""Run benchmarks of two checkouts side by side, interleaved, in one run: a change against
the main it came from.

    uv run python bench/versus.py --base main~5 --repeat 3 -- bench/call_overhead.py --rounds 10

``--base`` is checked out into a temporary worktree (its own venv, made by ``uv run`` on
first use); every repeat runs the benchmark in the base tree, then in this one, so both
see the same machine at nearly the same moment, after a first run in each that is not
counted (the base's venv made, both trees' bytecode written). Each number the benchmark
prints (markdown table cells, ``label: number`` lines, ``label   number`` lines) becomes
a figure; the table printed at the end gives each figure's median in both trees and their
ratio (this tree over the base: below 1.00 is faster here, for times).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
_NUMBER = re.compile(r"^[-+]?\d[\d,]*(?:\.\d+)?")
_LABELLED = re.compile(r"^\s*([^|:]+?):\s+([-+]?\d[\d,]*(?:\.\d+)?)\s*([a-zA-Zµ%]*)")
_SPACED = re.compile(r"^\s+(\S.*?\S)\s{2,}([-+]?\d[\d,]*(?:\.\d+)?)\s*$")


def figures(text: str) -> dict[str, float]:
    """Every number of one benchmark's output, named by its row and column or label."""
    found: dict[str, float] = {}
    header: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            numeric = [bool(_NUMBER.match(c)) for c in cells[1:]]
            if not any(numeric):
                header = cells
                continue
            for index, cell in enumerate(cells[1:], start=1):
                match = _NUMBER.match(cell)
                if match:
                    column = header[index] if index < len(header) else str(index)
                    found[f"{cells[0]} [{column}]"] = float(match.group().replace(",", ""))
            continue
        match = _LABELLED.match(line) or _SPACED.match(line)
        if match:
            found[match.group(1).strip()] = float(match.group(2).replace(",", ""))
    return found


def run(tree: Path, command: list[str]) -> str:
    """The benchmark's output in one tree (its stdout; stderr passes through). Python may
    write its bytecode (a tree without it imports everything from source, every run)."""
    script, *rest = command
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        ["uv", "run", "--quiet", "--all-groups", "python", str(tree / script), *rest],
        cwd=tree, capture_output=True, text=True, check=False, env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} failed in {tree}:\n{done.stderr[-2000:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare against")
    parser.add_argument("--repeat", type=int, default=3, help="runs in each tree (default 3)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...]")
    options = parser.parse_args()
    command = [c for c in options.command if c != "--"]
    if not command:
        parser.error("name a benchmark script after --")
    folder = Path(tempfile.mkdtemp(prefix="toolplug-versus-"))
    base = folder / "base"
    subprocess.run(
        ["git", "-C", str(HERE), "worktree", "add", "--detach", "--quiet", str(base),
         options.base],
        check=True,
    )
    samples: dict[str, dict[str, list[float]]] = {"base": defaultdict(list),
                                                   "here": defaultdict(list)}
    try:
        for tree in (base, HERE):  # a first run, not counted: venv made, bytecode written
            run(tree, command)
        for repeat in range(options.repeat):
            for side, tree in (("base", base), ("here", HERE)):
                for name, value in figures(run(tree, command)).items():
                    samples[side][name].append(value)
            print(f"repeat {repeat + 1} of {options.repeat}: done", file=sys.stderr)
    finally:
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "remove", "--force", str(base)], check=False
        )
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{' '.join(command)}: {options.base} (base) against this tree, "
          f"{options.repeat} interleaved runs each, medians\n")
    print("| figure | base | here | here / base |")
    print("|---|---:|---:|---:|")
    for name, values in samples["here"].items():
        before = samples["base"].get(name)
        if not before:
            continue
        old, new = statistics.median(before), statistics.median(values)
        ratio = f"{new / old:.2f}" if old else "-"
        print(f"| {name} | {old:g} | {new:g} | {ratio} |")


if __name__ == "__main__":
    main()
