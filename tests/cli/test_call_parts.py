"""A tool that returns a picture and a PDF at the command line: ``call`` writes files, never
bytes, and ``info`` says which parts the tool declares."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from tests.helpers.cli import Run, Site, run_cli
from tests.helpers.media import pdf, png

_PLUGIN = '''
from pathlib import Path

import toolplug


class Snapshot(toolplug.Tool):
    metadata = toolplug.ToolMetadata(
        name="snapshot",
        description="Return the picture and the report at the paths given.",
        category="utility",
        parameters={
            "type": "object",
            "properties": {
                "png": {"type": "string"}, "pdf": {"type": "string"},
                "name": {"type": "string"},
            },
            "required": ["png", "pdf", "name"],
        },
        parts=("image", "text", "file"),
    )

    def run(self, arguments, context):
        picture = toolplug.Image.from_file(arguments["png"])
        report = toolplug.File(
            Path(arguments["pdf"]).read_bytes(), "application/pdf", name=arguments["name"]
        )
        return toolplug.ToolResult.success(
            "The chart and its report.", parts=[picture, toolplug.Text("then"), report]
        )


class Plain(toolplug.Tool):
    metadata = toolplug.ToolMetadata(
        name="plain", description="Say hello in text alone.", category="utility",
    )

    def run(self, arguments, context):
        return toolplug.ToolResult.success("hello")


register_tools = toolplug.provides(Snapshot, Plain)
'''


@pytest.fixture
def media(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "chart.png").write_bytes(png(3, 2))
    (folder / "report.pdf").write_bytes(pdf("March"))
    return {"png": folder / "chart.png", "pdf": folder / "report.pdf"}


def _call(tmp_path: Path, media: dict[str, Path], *extra: str, name: str = "report.pdf") -> Run:
    site = Site(tmp_path / "site")
    if not site.path.exists():
        site.add("snapshot-plugin", entry_points={"snapshot": "snapshot_plugin"},
                 modules={"snapshot_plugin": _PLUGIN})
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = site.env(TOOLPLUG_PLUGINS="snapshot-plugin", TOOLPLUG_NO_CACHE="1",
                   TMPDIR=str(tmp_path / "tmp"))
    return run_cli("call", "snapshot", f"png={media['png']}", f"pdf={media['pdf']}",
                   f"name={name}", *extra, env=env, cwd=tmp_path)


def _info(tmp_path: Path, *args: str) -> Run:
    site = Site(tmp_path / "site")
    site.add("snapshot-plugin", entry_points={"snapshot": "snapshot_plugin"},
             modules={"snapshot_plugin": _PLUGIN})
    env = site.env(TOOLPLUG_PLUGINS="snapshot-plugin", TOOLPLUG_NO_CACHE="1")
    return run_cli("info", *args, env=env, cwd=tmp_path)


def test_info_shows_the_parts_a_tool_declares(tmp_path: Path) -> None:
    done = _info(tmp_path, "snapshot")
    assert done.code == 0, done.err
    assert "\n  parts         image, text, file\n" in done.out
    record = json.loads(_info(tmp_path / "j", "snapshot", "--json").out)
    assert record["metadata"]["parts"] == ["image", "text", "file"]


def test_info_of_a_tool_without_parts_has_no_parts_line(tmp_path: Path) -> None:
    done = _info(tmp_path, "plain")
    assert done.code == 0, done.err
    assert "  parts " not in done.out
    assert json.loads(_info(tmp_path / "j", "plain", "--json").out)["metadata"][
        "parts"] == []


def _saved(out: str) -> list[Path]:
    return [Path(p) for p in re.findall(r" saved to (.+)$", out, flags=re.MULTILINE)]


def test_parts_are_written_to_the_directory_chosen_and_their_paths_printed(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    done = _call(tmp_path, media, "--parts-dir", str(tmp_path / "out"))
    assert done.code == 0, done.err
    chart, report = _saved(done.out)
    assert chart == (tmp_path / "out" / "part-1.png").resolve()
    assert report == (tmp_path / "out" / "report.pdf").resolve()
    assert chart.read_bytes() == media["png"].read_bytes()  # the very bytes, not a copy of
    assert report.read_bytes() == media["pdf"].read_bytes()  # their description
    size = len(media["png"].read_bytes())
    assert done.out.splitlines()[:5] == [
        "The chart and its report.", "", f"[image: image/png, {size} B] saved to {chart}",
        "", "then",  # a text part in its place
    ]
    assert "PNG" not in done.out
    assert "%PDF" not in done.out
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing left in the temporary dir


def test_by_default_a_new_temporary_directory_holds_them(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    done = _call(tmp_path, media)
    assert done.code == 0, done.err
    chart, report = _saved(done.out)
    (folder,) = (tmp_path / "tmp").iterdir()
    assert folder.name.startswith("toolplug-parts-")
    assert chart.parent == report.parent == folder.resolve()
    assert chart.read_bytes() == media["png"].read_bytes()
    assert report.read_bytes() == media["pdf"].read_bytes()
    written = {p for p in tmp_path.rglob("*") if p.suffix in (".png", ".pdf")}
    assert written == {media["png"], media["pdf"], chart, report}  # nothing in the cwd


def test_an_existing_file_is_never_overwritten_nor_a_path_escaped(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "evil.pdf").write_bytes(b"mine")
    done = _call(tmp_path, media, "--parts-dir", str(out), name="../../evil.pdf")
    assert done.code == 0, done.err
    _chart, report = _saved(done.out)
    assert report == (out / "evil-2.pdf").resolve()  # beside it, inside the directory
    assert (out / "evil.pdf").read_bytes() == b"mine"
    assert report.read_bytes() == media["pdf"].read_bytes()


def test_json_carries_the_parts_in_base64_and_writes_no_file(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    done = _call(tmp_path, media, "--result", "json")
    assert done.code == 0, done.err
    parts = json.loads(done.out)["parts"]
    assert [p["kind"] for p in parts] == ["image", "text", "file"]
    assert base64.b64decode(parts[0]["data"]) == media["png"].read_bytes()
    assert base64.b64decode(parts[2]["data"]) == media["pdf"].read_bytes()
    assert parts[2]["name"] == "report.pdf"
    assert "path" not in parts[2]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_json_with_a_parts_dir_writes_them_too_and_names_each_file(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    done = _call(tmp_path, media, "--result", "json", "--parts-dir", str(tmp_path / "out"))
    assert done.code == 0, done.err
    parts = json.loads(done.out)["parts"]
    assert Path(parts[0]["path"]).read_bytes() == media["png"].read_bytes()
    assert Path(parts[2]["path"]).read_bytes() == media["pdf"].read_bytes()
    assert "path" not in parts[1]  # text stays in the JSON


def test_a_directory_that_cannot_be_made_is_a_usage_error(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = _call(tmp_path, media, "--parts-dir", str(blocker / "out"))
    assert done.code == 2
    assert f"cannot write the result's parts to {blocker / 'out'}" in done.err
    assert "--parts-dir DIR" in done.err


def test_a_part_a_program_returns_reaches_a_file_too(
    tmp_path: Path, media: dict[str, Path]
) -> None:
    pytest.importorskip("pydantic_monty")
    (tmp_path / "toolplug.toml").write_text("[code]\nenabled = true\n", encoding="utf-8")
    site = Site(tmp_path / "site")
    site.add("snapshot-plugin", entry_points={"snapshot": "snapshot_plugin"},
             modules={"snapshot_plugin": _PLUGIN})
    env = site.env(TOOLPLUG_PLUGINS="snapshot-plugin", TOOLPLUG_NO_CACHE="1")
    program = (
        f"r = await snapshot(png={str(media['png'])!r}, pdf={str(media['pdf'])!r}, name='r.pdf')\n"
        "[p for p in r.parts if p.kind != 'text']\n"
    )
    done = run_cli("call", "run_code", f"code={program}", "--parts-dir", str(tmp_path / "out"),
                   env=env, cwd=tmp_path)
    assert done.code == 0, done.err
    chart, report = _saved(done.out)
    assert chart.read_bytes() == media["png"].read_bytes()
    assert report == (tmp_path / "out" / "r.pdf").resolve()
    assert report.read_bytes() == media["pdf"].read_bytes()
