"""``toolplug call`` names where a cut output is kept, and ``toolplug read`` reads it from a
later command: with a real Redis as the shared store; in-process, nothing is promised."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.helpers.cli import Run
from tests.helpers.redis import redis_server

_READ_HERE = '[tools.read_file]\nread_roots = ["."]\n'
TEXT = "".join(f"row {i:05d}\n" for i in range(1_000))  # 10,000 characters


def test_a_later_command_reads_what_the_budget_cut(
    tmp_path: Path, cli: Callable[..., Run]
) -> None:
    (Path.cwd() / "notes.txt").write_text(TEXT, encoding="utf-8")
    with redis_server(tmp_path) as url:
        Path("toolplug.toml").write_text(
            f'[calls]\nstore = "{url}"\nmax_output_chars = 2000\n' + _READ_HERE,
            encoding="utf-8",
        )
        called = cli("call", "read_file", f"path={Path.cwd() / 'notes.txt'}")
        assert called.code == 0, called.err
        line = next(x for x in called.err.splitlines() if "toolplug read" in x)
        uri = line.rsplit(" ", 1)[1]
        assert uri.startswith("toolplug://results/")
        assert f"kept at {uri}" in called.out
        whole = cli("read", uri)
        assert whole.code == 0, whole.err
        assert whole.out == TEXT
        page = cli("read", uri, "--offset", "10", "--length", "10")
        assert page.out == "row 00001\n"
        assert "--offset 20" in page.err
    gone = cli("read", "toolplug://results/0123456789abcdef0123456789abcdef")
    assert gone.code == 1
    assert "is not kept" in gone.err


def test_in_process_the_notice_says_how_to_see_the_rest(cli: Callable[..., Run]) -> None:
    (Path.cwd() / "notes.txt").write_text(TEXT, encoding="utf-8")
    Path("toolplug.toml").write_text(
        "[calls]\nmax_output_chars = 2000\n" + _READ_HERE, encoding="utf-8"
    )
    called = cli("call", "read_file", f"path={Path.cwd() / 'notes.txt'}")
    assert called.code == 0, called.err
    assert "toolplug://results/" not in called.out + called.err
    assert "output cut by toolplug" in called.out
