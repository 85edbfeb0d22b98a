"""The token store with the OS keyring (``[oauth] store``): the secrets of each entry in a
real keyring backend, keyrings.alt's file-based one, pointed at a temporary directory
through keyring's own configuration (``PYTHON_KEYRING_BACKEND``, ``XDG_DATA_HOME``); the
rest, and the locks, in the 0600 file. ``auto`` passes keyring's fail backend by."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.core
import pytest

import toolplug
from tests.helpers.keyrings import PLAIN, file_keyring
from toolplug.sources.mcp import mounted
from toolplug.state._tokens import KeyringUnusable, TokenStore

KEY = "https://a.example/mcp"


@pytest.fixture
def real_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with file_keyring(tmp_path, monkeypatch) as file:
        yield file


def _signed_in(store: TokenStore, key: str = KEY) -> None:
    store.update(
        key, tokens={"access_token": "at-secret-1", "refresh_token": "rt-secret-1"},
        client={"client_id": "c1", "client_secret": "cs-secret-1"},
        server_metadata={"issuer": "https://as.example"}, expires_at=1234.5,
    )


def test_the_secrets_are_in_the_keyring_and_the_rest_in_the_file(
    tmp_path: Path, real_keyring: Path
) -> None:
    store = TokenStore(tmp_path / "oauth", "keyring")
    _signed_in(store)
    on_disk = store.path.read_text(encoding="utf-8")
    for secret in ("at-secret-1", "rt-secret-1", "cs-secret-1"):
        assert secret not in on_disk
    assert json.loads(on_disk) == {
        KEY: {"server_metadata": {"issuer": "https://as.example"}, "expires_at": 1234.5}
    }
    # in the keyring, as keyring itself reads it: service "toolplug", the source's key
    kept = json.loads(keyring.get_password("toolplug", KEY) or "{}")
    assert kept["tokens"]["refresh_token"] == "rt-secret-1"
    assert kept["client"]["client_secret"] == "cs-secret-1"
    assert real_keyring.is_file()
    entry = store.entry(KEY)
    assert entry["tokens"]["access_token"] == "at-secret-1"
    assert entry["expires_at"] == 1234.5
    assert store.where.startswith(f'the keyring ({PLAIN}, service "toolplug")')

    store.update(KEY, tokens=None, expires_at=None)  # a refresh token spent
    assert "tokens" not in store.entry(KEY)
    assert json.loads(keyring.get_password("toolplug", KEY) or "{}") == {
        "client": {"client_id": "c1", "client_secret": "cs-secret-1"}
    }
    gone = store.forget(KEY)
    assert gone["client"]["client_id"] == "c1"
    assert keyring.get_password("toolplug", KEY) is None
    assert store.entry(KEY) == {}


def test_tokens_kept_in_the_file_before_move_to_the_keyring(
    tmp_path: Path, real_keyring: Path
) -> None:
    _signed_in(TokenStore(tmp_path / "oauth", "file"))
    store = TokenStore(tmp_path / "oauth", "auto")  # a configured keyring: "auto" takes it
    assert store.entry(KEY)["tokens"]["refresh_token"] == "rt-secret-1"  # read where it is
    store.update(KEY, expires_at=99.0)  # the next write moves it
    assert "rt-secret-1" not in store.path.read_text(encoding="utf-8")
    assert store.entry(KEY)["tokens"]["refresh_token"] == "rt-secret-1"
    assert store.entry(KEY)["expires_at"] == 99.0


def test_auto_keeps_the_file_when_keyring_has_only_its_fail_backend(tmp_path: Path) -> None:
    # tests/conftest.py sets keyring's fail backend for every test
    keyring.core.init_backend()
    store = TokenStore(tmp_path / "oauth", "auto")
    _signed_in(store)
    assert store.vault() is None
    assert store.where == str(store.path)
    assert "rt-secret-1" in store.path.read_text(encoding="utf-8")
    with pytest.raises(KeyringUnusable, match=r'keyring has no usable backend \(keyring'
                       r'\.backends\.fail\.Keyring\).*store = "file"'):
        TokenStore(tmp_path / "other", "keyring").entry(KEY)


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from toolplug.state._tokens import TokenStore
    store = TokenStore(Path(sys.argv[1]), "keyring")
    for n in range(int(sys.argv[3])):
        store.update(sys.argv[2], tokens={"access_token": f"{sys.argv[2]}-{n}"}, n=n)
""")


def test_two_processes_writing_the_keyring_at_once_lose_nothing(
    tmp_path: Path, real_keyring: Path
) -> None:
    # keyrings.alt's file keyring rewrites its whole file: only the store's lock keeps two
    # processes from losing each other's entries
    directory = tmp_path / "oauth"
    keys = [f"https://{n}.example/mcp" for n in "ab"]
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(directory), key, "15"])
        for key in keys
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    store = TokenStore(directory, "keyring")
    for key in keys:
        assert store.entry(key) == {"n": 14, "tokens": {"access_token": f"{key}-14"}}


def test_a_keyring_required_and_missing_is_the_servers_reason(tmp_path: Path) -> None:
    keyring.core.init_backend()  # the fail backend (tests/conftest.py)
    config = tmp_path / "toolplug.toml"
    config.write_text(
        f'cache_dir = "{tmp_path / "cache"}"\nstate_dir = "{tmp_path / "state"}"\n'
        '[mcp_servers.up]\nurl = "http://127.0.0.1:9/mcp"\nauth = "oauth"\n'
        '[oauth]\nstore = "keyring"\n',
        encoding="utf-8",
    )
    registry = toolplug.load(config)
    try:
        server = mounted(registry)
        assert server is not None
        problem = server.servers["up"].problem
    finally:
        registry.close()
    assert problem is not None
    assert problem.startswith('[oauth] store = "keyring", and keyring has no usable backend'), (
        problem
    )
    assert problem.endswith('or keep the tokens in a file: store = "file"')
