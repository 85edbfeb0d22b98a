"""A real PostgreSQL server on 127.0.0.1 for the record's shared store: Debian's
``postgresql`` (``initdb`` and ``pg_ctl``), a throwaway cluster, run as a user that is not
root (``postgres`` when the tests run as root: PostgreSQL refuses to run as root). Skipped,
saying why, where PostgreSQL or psycopg is not installed.

The cluster lives in a folder of its own under the system's temporary directory, not in
pytest's ``tmp_path``: that one is inside ``/tmp/pytest-of-root``, which only root may
enter, so the ``postgres`` user could not reach its data directory.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.docs import skip_reason
from tests.helpers.redis import free_port


def binaries() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``; skips the test where there is none."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "pg_ctl").exists() and (candidate / "initdb").exists():
            return candidate
    pytest.skip(skip_reason(
        "PostgreSQL is not installed (apt-get install -y postgresql)",
        "tests/state/test_record_pg.py",
    ))


class Postgres:
    """One running cluster: ``address`` is its ``postgresql://`` address (database
    ``record``, no password: trust on loopback); ``restart`` and ``stop`` it."""

    def __init__(self, folder: Path, bin_dir: Path, owner: str, as_root: bool) -> None:
        self.folder, self.bin, self.owner, self.as_root = folder, bin_dir, owner, as_root
        self.data = folder / "data"
        self.port = free_port()
        self.address = f"postgresql://{owner}@127.0.0.1:{self.port}/record"

    def _run(self, tool: str, *args: str, timeout: float = 90) -> None:
        argv = [str(self.bin / tool), *args]
        if self.as_root:
            argv = ["runuser", "-u", self.owner, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            log = self.folder / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {done.stderr}\n{tail}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", self.owner,
                  "--no-sync", "-E", "UTF8", timeout=180)

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} "
            "-c max_connections=40 -c shared_buffers=16MB"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-w", "-t", "60",
                  "-l", str(self.folder / "log"), "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop it: ``fast`` (clients cut off, a clean shutdown) or ``immediate`` (as a
        crash: the next start recovers from the write-ahead log)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def createdb(self, name: str) -> None:
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.owner, name)


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A running PostgreSQL with a database ``record``, stopped and deleted afterwards."""
    pytest.importorskip("psycopg", reason="the postgres extra: pip install 'toolplug[postgres]'")
    bin_dir = binaries()
    as_root = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="toolplug-pg-"))  # /tmp: any user may pass
    if as_root:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
        owner = "postgres"
    else:
        owner = pwd.getpwuid(os.geteuid()).pw_name
    server = Postgres(folder, bin_dir, owner, as_root)
    try:
        server.init()
        server.start()
        try:
            server.createdb("record")
            yield server
        finally:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                server.stop("immediate")  # unless stopped already
    finally:
        shutil.rmtree(folder, ignore_errors=True)
