"""``toolplug call`` names where a cut output is kept, and ``toolplug read`` reads it from a
later command: with a real Redis as the shared store; in-process, nothing is promised."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.helpers.cli import Run
from tests.helpers.redis import redis_server

# static_links does not page, so its whole output is kept when the budget cuts it.
LINKS = "[tools.static_links]\nlinks = [\n" + "".join(
    f'  {{ name = "link{i:03d}", url = "https://example.org/{i:03d}", '
    f'description = "Page {i}" }},\n'
    for i in range(100)
) + "]\n"
BUDGET = "[calls]\nmax_output_chars = 2000\n"


def test_a_later_command_reads_what_the_budget_cut(
    tmp_path: Path, cli: Callable[..., Run]
) -> None:
    with redis_server(tmp_path) as url:
        Path("toolplug.toml").write_text(
            BUDGET + f'store = "{url}"\n' + LINKS, encoding="utf-8"
        )
        called = cli("call", "static_links")
        assert called.code == 0, called.err
        line = next(x for x in called.err.splitlines() if "toolplug read" in x)
        uri = line.rsplit(" ", 1)[1]
        assert uri.startswith("toolplug://results/")
        assert f"kept at {uri}" in called.out
        shown = called.out.split("\n[output cut by toolplug")[0]
        whole = cli("read", uri)
        assert whole.code == 0, whole.err
        assert whole.out.startswith(shown)
        assert "link099" in whole.out
        assert "link099" not in called.out
        page = cli("read", uri, "--offset", "3", "--length", "5")
        assert page.out == whole.out[3:8]
        assert "--offset 8" in page.err
        data = json.loads(cli("read", uri + "/data").out)
        assert len(data["links"]) == 100
    gone = cli("read", "toolplug://results/0123456789abcdef0123456789abcdef")
    assert gone.code == 1
    assert "is not kept" in gone.err


def test_in_process_the_notice_says_how_to_see_the_rest(cli: Callable[..., Run]) -> None:
    Path("toolplug.toml").write_text(BUDGET + LINKS, encoding="utf-8")
    called = cli("call", "static_links")
    assert called.code == 0, called.err
    assert "toolplug://results/" not in called.out + called.err
    assert "output cut by toolplug" in called.out


CHART = json.dumps({
    "kind": "bar", "labels": ["Q1", "Q2", "Q3", "Q4"],
    "series": [{"name": "2025", "values": [12, 15, 9, 20]}],
})


def test_a_cut_picture_is_read_back_into_a_file(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """A part over the byte budget is kept whole in the shared store; ``toolplug read`` of
    its ``/parts/N`` writes the very bytes to a file and prints the path, never the bytes."""
    with redis_server(tmp_path) as url:
        Path("toolplug.toml").write_text(
            f'[calls]\nmax_result_bytes = 100\nstore = "{url}"\n', encoding="utf-8"
        )
        called = cli("call", "chart", "--json", CHART, "--result", "json")
        assert called.code == 0, called.err
        body = json.loads(called.out)
        assert "parts" not in body or not body["parts"]  # cut: over 100 bytes
        kept = next(w for w in body["warnings"] if "/parts/" in w)
        uri = kept.split("kept whole at ", 1)[1].split("/parts/", 1)[0] + "/parts/0"
        folder = tmp_path / "parts"
        read = cli("read", uri, "--parts-dir", str(folder))
        assert read.code == 0, read.err
        assert read.out.startswith("[image: image/png, ")
        path = Path(read.out.rsplit(" saved to ", 1)[1].strip())
        assert path.parent == folder.resolve()
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert b"\x89PNG" not in read.out.encode() + read.err.encode()
        head = cli("read", uri, "--length", "8", "--parts-dir", str(folder))
        assert head.code == 0, head.err
        written = Path(head.out.rsplit(" saved to ", 1)[1].strip())
        assert written.read_bytes() == data[:8]
        assert f"{len(data) - 8:,} more bytes: --offset 8" in head.err
