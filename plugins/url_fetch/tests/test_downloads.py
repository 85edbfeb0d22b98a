"""download_path: saved inside <cache_dir>/downloads only; metadata instead of the body."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

import toolplug

Fetch = Callable[..., toolplug.ToolResult]


def error_of(result: toolplug.ToolResult) -> toolplug.ToolError:
    assert result.error is not None, result.output
    return result.error


def test_download_saves_the_file_and_returns_metadata(
    server: HTTPServer, fetch: Fetch, downloads: Path
) -> None:
    body = os.urandom(3000)
    server.expect_request("/file.bin").respond_with_data(
        body, content_type="application/octet-stream"
    )
    result = fetch(url=server.url_for("/file.bin"), download_path="deep/er/file.bin")
    assert result.ok, result.error
    saved = downloads / "deep" / "er" / "file.bin"
    assert saved.read_bytes() == body
    assert result.data["download"] == {
        "path": "downloads/deep/er/file.bin",  # the alias: the host's path is not the model's
        "bytes": 3000,
        "content_type": "application/octet-stream",
        "truncated": False,
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    assert result.data["text"] is None
    assert f"Saved 3000 bytes (application/octet-stream) from {server.url_for('/file.bin')}" in (
        result.output
    )
    assert not list(saved.parent.glob(".part-*"))  # no temporary file left behind


def test_download_of_text_does_not_return_the_body(
    server: HTTPServer, fetch: Fetch, downloads: Path
) -> None:
    server.expect_request("/notes.txt").respond_with_data("secret plans", content_type="text/plain")
    result = fetch(url=server.url_for("/notes.txt"), download_path="notes.txt")
    assert "secret plans" not in result.output
    assert (downloads / "notes.txt").read_text() == "secret plans"


def test_download_overwrites(server: HTTPServer, fetch: Fetch, downloads: Path) -> None:
    server.expect_request("/v").respond_with_data("two")
    (downloads).mkdir(parents=True)
    (downloads / "v.txt").write_text("one")
    fetch(url=server.url_for("/v"), download_path="v.txt")
    assert (downloads / "v.txt").read_text() == "two"


def test_download_is_capped_and_flagged(server: HTTPServer, fetch: Fetch, downloads: Path) -> None:
    server.expect_request("/big").respond_with_data(b"z" * 5000)
    result = fetch(
        url=server.url_for("/big"),
        download_path="big.bin",
        config={"max_download_bytes": 1000, "max_bytes": 10},
    )
    assert result.data["download"]["bytes"] == 1000  # max_download_bytes, not max_bytes
    assert result.data["download"]["truncated"] is True
    assert (downloads / "big.bin").stat().st_size == 1000
    assert "the download was truncated at max_bytes" in result.warnings
    smaller = fetch(url=server.url_for("/big"), download_path="small.bin", max_bytes=10)
    assert smaller.data["download"]["bytes"] == 10


def test_download_of_a_missing_file_saves_nothing(
    server: HTTPServer, fetch: Fetch, downloads: Path
) -> None:
    server.expect_request("/nope").respond_with_data("no", status=404)
    error = error_of(fetch(url=server.url_for("/nope"), download_path="nope.txt"))
    assert error.type == "NotFoundError"
    assert "nothing was saved" in error.message
    assert not (downloads / "nope.txt").exists()


def test_download_server_error_is_retryable(server: HTTPServer, fetch: Fetch) -> None:
    server.expect_request("/err").respond_with_data("down", status=503)
    error = error_of(fetch(url=server.url_for("/err"), download_path="e.txt"))
    assert error.type == "ExecutionError"
    assert error.retry_possible


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("../x", "PermissionError"),  # climbs out
        ("a/../../x", "PermissionError"),  # climbs out after a detour
        ("a/..", "PermissionError"),  # '..' anywhere is refused
        ("/etc/x", "PermissionError"),  # absolute
        ("~/x", "PermissionError"),  # a home directory is absolute too
        ("C:\\x", "PermissionError"),  # absolute on Windows
        ("..\\x", "PermissionError"),  # Windows separators climb too
        ("", "ValidationError"),  # nothing
        ("dir/", "ValidationError"),  # a directory
        (".", "ValidationError"),  # the downloads directory itself
    ],
)
def test_download_path_outside_is_refused(
    server: HTTPServer, fetch: Fetch, tmp_path: Path, path: str, kind: str
) -> None:
    error = error_of(fetch(url=server.url_for("/x"), download_path=path))
    assert error.type == kind, error.message
    assert len(server.log) == 0  # refused before any request
    assert not (tmp_path / "x").exists()


def test_symlinked_directory_leading_out_is_refused(
    server: HTTPServer, fetch: Fetch, downloads: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    downloads.mkdir(parents=True)
    (downloads / "link").symlink_to(outside, target_is_directory=True)
    for path in ("link/x.bin", "link/new/dir/x.bin"):
        error = error_of(fetch(url=server.url_for("/x"), download_path=path))
        assert error.type == "PermissionError"
        assert "outside the downloads directory" in error.message
    assert list(outside.iterdir()) == []  # not even a directory was created there
    assert len(server.log) == 0


def test_symlinked_file_leading_out_is_refused(
    server: HTTPServer, fetch: Fetch, downloads: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    downloads.mkdir(parents=True)
    (downloads / "trap.txt").symlink_to(victim)
    error = error_of(fetch(url=server.url_for("/x"), download_path="trap.txt"))
    assert error.type == "PermissionError"
    assert victim.read_text() == "keep me"


def test_symlink_inside_is_replaced_not_followed(
    server: HTTPServer, fetch: Fetch, downloads: Path
) -> None:
    server.expect_request("/x").respond_with_data("new")
    downloads.mkdir(parents=True)
    (downloads / "real.txt").write_text("old")
    (downloads / "alias.txt").symlink_to(downloads / "real.txt")
    result = fetch(url=server.url_for("/x"), download_path="alias.txt")
    assert result.ok, result.error
    assert (downloads / "alias.txt").read_text() == "new"
    assert not (downloads / "alias.txt").is_symlink()
    assert (downloads / "real.txt").read_text() == "old"


def test_a_download_names_no_host_path_to_the_model(
    server: HTTPServer, fetch: Fetch, cache_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What the model (and its provider) reads names the downloads directory by its alias;
    the absolute path, with the host's home and user name in it, is the operator's."""
    server.expect_request("/r.pdf").respond_with_data(b"%PDF", content_type="application/pdf")
    with caplog.at_level("INFO", logger="toolplug.url_fetch"):
        result = fetch(url=server.url_for("/r.pdf"), download_path="rfc/r.pdf")
    assert result.ok, result.error
    shown = result.output + repr(result.data) + repr(result.warnings)
    assert str(cache_dir.resolve()) not in shown
    assert str(cache_dir) not in shown
    assert result.data["download"]["path"] == "downloads/rfc/r.pdf"
    assert "to downloads/rfc/r.pdf." in result.output
    assert str(cache_dir.resolve()) in caplog.text  # the operator learns where it is
