"""Configuration: sources, checks that name file, key and expectation, secrets, toolsets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolplug
from toolplug import ConfigError, Toolset
from toolplug.config._config import load_config

LINKS = '[tools.static_links]\nlinks = [{ name = "gh", url = "https://github.com/x" }]\n'


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_is_an_empty_configuration() -> None:
    config = load_config()
    assert config.path is None
    assert config.tools == {}
    assert not config.offline


def test_sources_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(Path("pyproject.toml"), "[tool.toolplug]\noffline = true\n")
    assert load_config().offline is True  # pyproject.toml when nothing else
    write(Path("toolplug.toml"), "offline = false\n")
    assert load_config().offline is False  # toolplug.toml wins over pyproject.toml
    explicit = write(tmp_path / "other.toml", "offline = true\n")
    monkeypatch.setenv("TOOLPLUG_CONFIG", str(explicit))
    assert load_config().path == explicit  # TOOLPLUG_CONFIG wins over the working directory
    assert load_config(Path("toolplug.toml")).offline is False  # --config wins over all


def test_pyproject_without_table_is_empty() -> None:
    write(Path("pyproject.toml"), "[project]\nname = 'x'\n")
    assert load_config().tools == {}


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        # an unknown top-level key
        ("colour = 'blue'\n", "colour", "one of approvals, cache_dir"),
        # a wrong type at the top
        ("offline = 'yes'\n", "offline", "a boolean"),
        # an unknown key in the network table
        ("[network]\nallowed = []\n", "network", "allowed"),
        # a capability list that is not a list of names
        ("[capabilities]\ngrant = 'network'\n", "capabilities.grant", "a list of names"),
        # a call-policy key of the wrong type
        ("[tools.static_links]\ntimeout_seconds = -1\n", "tools.static_links.timeout_seconds",
         "a positive number of seconds"),
        # an unknown key in a toolset
        ("[toolsets.writer]\nincludes = ['x']\n", "toolsets.writer.includes",
         "include, exclude or description"),
        # a rate limit with a bad count
        ("[tools.static_links.rate_limit]\ncalls = 0\n", "tools.static_links.rate_limit.calls",
         "1 or more"),
        # who approves served calls: a word [serve] does not know
        ("[serve]\napprovals = 'host'\n", "serve.approvals", '"toolplug"'),
        # the same for one tool: the key names the tool
        ("[serve.approvals_by_tool]\npost = true\n", "serve.approvals_by_tool.post",
         'each "toolplug" or "client"'),
        # an unknown key in [serve]
        ("[serve]\napproval = 'client'\n", "serve.approval", "approvals, approvals_by_tool"),
    ],
)
def test_bad_config_names_file_key_and_expectation(text: str, key: str, expected: str) -> None:
    write(Path("toolplug.toml"), text)
    with pytest.raises(ConfigError) as caught:
        load_config()
    message = str(caught.value)
    assert "toolplug.toml" in message
    assert key in message
    assert expected in message


def test_serve_approvals_by_tool_a_name_first_then_the_longest_glob() -> None:
    write(
        Path("toolplug.toml"),
        '[serve]\napprovals = "client"\n[serve.approvals_by_tool]\n'
        '"notes_*" = "toolplug"\n"notes_count_*" = "client"\nnotes_count_lines = "toolplug"\n',
    )
    serve = load_config().serve
    assert serve.approvals_for("write_file") == "client"  # the table's default
    assert serve.approvals_for("notes_clear") == "toolplug"  # the one glob that matches
    assert serve.approvals_for("notes_count_words") == "client"  # the longer glob
    assert serve.approvals_for("notes_count_lines") == "toolplug"  # the name itself
    assert toolplug.load({}).config.serve.approvals == "toolplug"  # off by default


def test_pyproject_errors_name_the_tool_table() -> None:
    write(Path("pyproject.toml"), "[tool.toolplug]\noffline = 3\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: tool.toolplug.offline"):
        load_config()


def test_invalid_toml_is_a_config_error() -> None:
    write(Path("toolplug.toml"), "offline = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config()


def test_missing_explicit_file() -> None:
    with pytest.raises(ConfigError, match="configuration file not found"):
        load_config("nope.toml")


def test_tool_fields_are_checked_against_config_fields() -> None:
    write(Path("toolplug.toml"), "[tools.static_links]\nlinks = 'not a list'\n")
    with pytest.raises(ConfigError, match=r"tools.static_links.links: got 'not a list'"):
        toolplug.load()
    write(Path("toolplug.toml"), "[tools.static_links]\nlinkz = []\n")
    with pytest.raises(ConfigError, match=r"tools.static_links.linkz: unknown key.*links"):
        toolplug.load()
    bad_url = "[tools.static_links]\nlinks = [{ name = 'x', url = 'ftp://x' }]\n"
    write(Path("toolplug.toml"), bad_url)
    with pytest.raises(ConfigError, match=r"links\[0\]\[url\]: 'ftp://x' does not match"):
        toolplug.load()


def test_config_for_an_uninstalled_tool_is_reported_not_fatal() -> None:
    write(Path("toolplug.toml"), "[tools.not_installed]\nenabled = true\n")
    registry = toolplug.load()
    assert any(p.kind == "config" and "not_installed" in p.message for p in registry.problems)


def test_relative_dirs_resolve_against_the_config_file(tmp_path: Path) -> None:
    config_dir = tmp_path / "conf"
    config_dir.mkdir()
    write(config_dir / "toolplug.toml", "cache_dir = 'c'\nstate_dir = '../s'\n")
    config = load_config(config_dir / "toolplug.toml")
    assert config.cache_dir == (config_dir / "c").resolve()
    assert config.state_dir == (tmp_path / "s").resolve()


# -- secrets --------------------------------------------------------------------------


class Secretive(toolplug.Tool):
    metadata = toolplug.ToolMetadata(
        name="secretive",
        description="Use a token.",
        category="utility",
        config_fields=(
            toolplug.ConfigField(
                name="token", type="string", description="API token", secret=True,
                env_var="SECRETIVE_TOKEN",
            ),
            toolplug.ConfigField(name="region", type="string", description="Region", default="eu"),
        ),
    )

    def run(self, arguments: dict[str, Any], context: toolplug.ToolContext) -> toolplug.ToolResult:
        return toolplug.ToolResult.success(f"token is {context.config['token']}")


class SecretPlugin:
    @toolplug.hookimpl
    def register_tools(self, register: Callable[[Any], None]) -> None:
        register(Secretive)


def load_secretive(config: dict[str, Any], env: dict[str, str]) -> toolplug.Registry:
    return toolplug.load(
        config, env={"TOOLPLUG_PLUGINS": "", **env}, plugins=[("secretive", SecretPlugin())]
    )


def test_secret_literal_in_config_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"secrets may not be written.*SECRETIVE_TOKEN"):
        load_secretive({"tools": {"secretive": {"token": "abcd1234"}}}, {})


def test_secret_from_env_indirection_file_and_env_var(tmp_path: Path) -> None:
    by_env = load_secretive({"tools": {"secretive": {"token": {"env": "MY_TOKEN"}}}},
                            {"MY_TOKEN": "s3cr3t-value"})
    assert by_env.tool_config("secretive") == {"token": "s3cr3t-value", "region": "eu"}
    secret_file = write(tmp_path / "token.txt", "from-a-file-123\n")
    by_file = load_secretive({"tools": {"secretive": {"token": {"file": str(secret_file)}}}}, {})
    assert by_file.tool_config("secretive")["token"] == "from-a-file-123"
    by_var = load_secretive({}, {"SECRETIVE_TOKEN": "fallback-token"})
    assert by_var.tool_config("secretive")["token"] == "fallback-token"
    unset = load_secretive({"tools": {"secretive": {"token": {"env": "UNSET_VAR"}}}}, {})
    assert "token" not in unset.tool_config("secretive")


def test_secrets_are_redacted_in_results_and_output() -> None:
    registry = load_secretive({}, {"SECRETIVE_TOKEN": "hunter2-hunter2"})
    assert registry.redact("the token is hunter2-hunter2!") == "the token is ***!"
    result = registry.call("secretive", {})
    assert result.ok
    assert registry.redact(result.output) == "token is ***"


def test_secrets_are_redacted_by_the_cli(cli: Callable[..., Any], site: Any) -> None:
    site.add("secretive-dist", entry_points={"s": "secretive_mod"}, modules={"secretive_mod": '''
        from toolplug import Tool, ToolMetadata, ToolResult, ConfigField, hookimpl, ErrorSpec
        class S(Tool):
            metadata = ToolMetadata(
                name="secretive", description="Use a token. ",
                category="utility", usage_hint="never",
                config_fields=(ConfigField(name="token", type="string", description="tok",
                                           secret=True, env_var="SECRETIVE_TOKEN"),))
            def run(self, arguments, context):
                return ToolResult.success(context.config["token"])
        @hookimpl
        def register_tools(register):
            register(S)
        '''})
    env = site.env(SECRETIVE_TOKEN="very-secret-token-42")
    shown = cli("info", "secretive", "--json", env=env)
    assert shown.code == 0, shown.err
    assert "very-secret-token-42" not in shown.out
    assert '"token": "***"' in shown.out


# -- toolsets -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toolset", "tool", "category", "member"),
    [
        (Toolset("all"), "web_search", "research", True),  # empty include means everything
        (Toolset("t", include=("web_*",)), "web_search", "research", True),  # glob
        (Toolset("t", include=("web_*",)), "rss_feed", "research", False),
        (Toolset("t", include=("category:research",)), "rss_feed", "research", True),
        (Toolset("t", include=("category:research",), exclude=("rss_feed",)), "rss_feed",
         "research", False),  # exclude wins
        (Toolset("t", exclude=("category:publish",)), "post", "publish", False),
    ],
)
def test_toolset_matching(toolset: Toolset, tool: str, category: str, member: bool) -> None:
    assert toolset.matches(tool, category) is member


def test_unknown_toolset_is_a_usage_error() -> None:
    registry = toolplug.load({"toolsets": {"writer": {"include": ["static_links"]}}})
    with pytest.raises(toolplug.UsageError, match=r"unknown toolset 'editor' \(known: writer\)"):
        registry.select(toolset="editor")
