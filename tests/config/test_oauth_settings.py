"""``auth = "oauth"`` in ``[mcp_servers.NAME]``: what is accepted, and the error for what
is not (the file, the key and what to write instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolplug import ConfigError
from toolplug.config._config import load_config

URL = 'url = "https://mcp.example.test/mcp"\n'


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "toolplug.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def test_auth_oauth_alone_signs_in_with_the_defaults(tmp_path: Path) -> None:
    config = _load(tmp_path, f'[mcp_servers.tracker]\n{URL}auth = "oauth"\n')
    oauth = config.mcp_servers["tracker"].oauth_settings
    assert oauth is not None
    assert (oauth.grant, oauth.client_id, oauth.scope, oauth.redirect_port) == (
        "authorization_code", None, None, None
    )


def test_every_key_of_the_oauth_table(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        f'[mcp_servers.tracker]\n{URL}auth = "oauth"\n[mcp_servers.tracker.oauth]\n'
        'client_id = "toolplug-cli"\nclient_secret = { env = "TRACKER_SECRET" }\n'
        'scopes = ["issues:read", "offline_access"]\nredirect_port = 8765\n'
        'client_metadata_url = "https://toolplug.example.test/client.json"\n',
    )
    oauth = config.mcp_servers["tracker"].oauth_settings
    assert oauth is not None
    assert oauth.scope == "issues:read offline_access"
    assert oauth.redirect_port == 8765
    assert oauth.client_metadata_url == "https://toolplug.example.test/client.json"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('auth = "oauth"\n[mcp_servers.s.oauth]\nclient_secret = "written-here"\n',
         "must not be written in the file"),
        ('auth = "oauth"\n[mcp_servers.s.oauth]\nclient_secret = { env = "S" }\n',
         "needs the client_id"),
        ('auth = "oauth"\n[mcp_servers.s.oauth]\ngrant = "client_credentials"\n',
         "needs client_id and client_secret"),
        ('auth = "oauth"\n[mcp_servers.s.oauth]\ngrant = "password"\n',
         '"authorization_code"'),
        ('auth = "oauth"\n[mcp_servers.s.oauth]\n'
         'client_metadata_url = "http://toolplug.example.test/client.json"\n',
         "an https URL with a path"),
        ('auth = "oauth"\n[mcp_servers.s.oauth]\nredirect_port = 70000\n', "redirect_port"),
        ('auth = "oauth"\n[mcp_servers.s.oauth]\nscopes = ["a b"]\n', "not one scope"),
        ('[mcp_servers.s.oauth]\nclient_id = "x"\n', 'needs auth = "oauth"'),
        ('auth = "bearer"\n', '"oauth"'),
        ('auth = "oauth"\nheaders = { Authorization = "Bearer x" }\n',
         "remove the one in headers"),
    ],
)
def test_a_wrong_oauth_setting_names_the_key(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, f"[mcp_servers.s]\n{URL}{body}")
    said = str(caught.value)
    assert "toolplug.toml" in said
    assert "mcp_servers" in said
    assert expected in said, said


def test_oauth_belongs_to_a_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="belongs to a url"):
        _load(tmp_path, '[mcp_servers.s]\ncommand = "srv"\nauth = "oauth"\n')
