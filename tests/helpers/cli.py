"""The command line in a fresh interpreter, and distributions installed by hand for it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.measured import measured


@dataclass
class Site:
    """A directory of installed distributions, made by hand, to put on ``PYTHONPATH``."""

    path: Path

    def add(
        self,
        name: str,
        *,
        entry_points: Mapping[str, str],
        modules: Mapping[str, str] | None = None,
        version: str = "1.0",
    ) -> None:
        """Install a distribution: metadata, ``toolplug`` entry points and module files."""
        dist_info = self.path / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir(parents=True)
        (dist_info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
        )
        lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
        (dist_info / "entry_points.txt").write_text(f"[toolplug]\n{lines}", encoding="utf-8")
        for module, source in (modules or {}).items():
            target = self.path / f"{module.replace('.', '/')}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(source), encoding="utf-8")

    def env(self, **extra: str) -> dict[str, str]:
        """An environment with this site first on ``PYTHONPATH``.

        It loads every installed plugin, as a user's environment does: the suite's selection
        of the catalog (``TOOLPLUG_PLUGINS``, set by the root conftest.py) is left out, since
        it would leave out this site too, unless ``extra`` names a selection of its own.
        """
        env = dict(os.environ)
        env.pop("TOOLPLUG_PLUGINS", None)
        env["PYTHONPATH"] = os.pathsep.join([str(self.path), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        env.update(extra)
        return env


@dataclass
class Run:
    """The outcome of one ``toolplug`` command line run in a subprocess."""

    code: int
    out: str
    err: str


def run_cli(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Run:
    """Run ``python -m toolplug ARGS`` in a fresh interpreter, measured when the run is."""
    done = subprocess.run(
        [sys.executable, "-m", "toolplug", *args],
        capture_output=True,
        text=True,
        env=measured(env if env is not None else os.environ),
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)
