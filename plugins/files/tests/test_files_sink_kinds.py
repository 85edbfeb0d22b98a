"""write_file declares its ``path`` a path sink: the flow guard and ``[policies]`` read it
resolved (``..``, ``.``, ``//``), as the tool will write it, and read it as a path only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import toolplug


def test_write_file_declares_its_path_a_path(load: Callable[..., toolplug.Registry]) -> None:
    registry = load()
    try:
        labels = registry.labels("write_file")
    finally:
        registry.close()
    assert labels.path_sinks == ("path",)
    assert "content" not in labels.path_sinks + labels.url_sinks + labels.address_sinks


def test_a_policy_on_the_path_reads_it_resolved(roots: dict[str, Path]) -> None:
    shared = {"cache_dir": str(roots["cache"]), "state_dir": str(roots["state"])}
    registry = toolplug.load(
        config={
            "tools": {"write_file": shared, "read_file": shared},
            "policies": {"write_file": [{
                "argument": "path", "action": "deny",
                "schema": {"type": "string", "pattern": "^file_state_dir/private/"},
            }]},
        },
        env={},
    )
    try:
        result = registry.call(
            "write_file",
            {"path": "file_state_dir/notes/../private/key.txt", "content": "x"},
            approver=lambda request: True,
        )
    finally:
        registry.close()
    assert result.error is not None
    assert result.error.details["denied"] is True
    assert not (roots["state"] / "private" / "key.txt").exists()
