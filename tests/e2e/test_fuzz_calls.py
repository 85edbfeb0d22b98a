"""Hostile input: generated arguments for every installed tool, valid and wildly invalid.

For each catalog tool, Hypothesis generates arguments that match its schema and arguments
that are anything at all (wrong types, huge strings, deep nesting, unicode, nulls, extra
keys). Whatever arrives: no exception escapes ``call``, no call hangs, every call whose
arguments break the schema is answered with a ValidationError result, every reply fits the
tool's output budget, and no reply, log line, stdout or stderr holds a secret or a
traceback.

The secrets are real: github_api's token (``{ env = "VAR" }`` in the configuration) and a
url_fetch auth profile's token are sent to a service on 127.0.0.1 that echoes every request
header back in its answer, so a secret reaches the tools' results unless it is redacted.

Nothing leaves the machine: name resolution answers only for loopback names, every
network tool is pointed at the echo service or a closed port on 127.0.0.1 (or at the guard,
which refuses anything else), and a tripwire fails the test if any socket connects beyond
loopback.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pytest_httpserver import HTTPServer

import toolplug
from tests.helpers.echo import echo_headers
from toolplug.schema import drop_strict_nulls
from toolplug.utilities._limits import DEFAULT_OUTPUT_CHARS, reply_chars

CALLS_PER_TOOL = {"valid": 120, "invalid": 200}
"""Twelve catalog tools x 320 generated calls: close to 4,000 calls, within a minute in CI."""

ERROR_TYPES = {
    "ValidationError", "NotFoundError", "PermissionError", "TimeoutError", "RateLimitError",
    "UnavailableError", "ExecutionError", "NetworkError", "ParseError",
}

SECRETS = {
    "FUZZ_GITHUB_TOKEN": "ghp_fuzz_token_0123456789",
    "FUZZ_URL_TOKEN": "urlfetch_fuzz_secret_5c2d8e1f",
    "MASTODON_ACCESS_TOKEN": "mastodon_fuzz_token_77aa31",
}
"""Read by the tools through the configuration (github_api, url_fetch's ``echo`` profile)
or their own variable (mastodon)."""


def assert_clean(text: str) -> None:
    """No secret, and no traceback, in ``text``."""
    for secret in SECRETS.values():
        assert secret not in text, f"a secret leaked: {text[:300]!r}"
    assert "Traceback (most recent call last)" not in text, text[:2000]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def echo() -> Iterator[HTTPServer]:
    """The echoing service on 127.0.0.1, for the whole module."""
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    echo_headers(server)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def registry(
    tmp_path_factory: pytest.TempPathFactory, echo: HTTPServer
) -> Iterator[toolplug.Registry]:
    root = tmp_path_factory.mktemp("fuzz")
    closed = f"http://127.0.0.1:{_closed_port()}"
    ics = root / "calendar.ics"
    ics.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//fuzz//EN\r\nBEGIN:VEVENT\r\n"
        "UID:1\r\nDTSTART:20260101T100000Z\r\nDTEND:20260101T110000Z\r\nSUMMARY:x\r\n"
        "RRULE:FREQ=DAILY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        encoding="utf-8",
    )
    config = {
        "cache_dir": str(root / "cache"),
        "state_dir": str(root / "state"),
        "network": {"allow": ["127.0.0.1/32"], "timeout_seconds": 2, "max_redirects": 2},
        "tools": {
            "web_search": {"backend": "searxng", "searxng_url": closed},
            "rss_feed": {"feeds": [f"{closed}/feed.xml"]},
            "github_api": {"api_url": echo.url_for("/api/v3").rstrip("/"),
                           "token": {"env": "FUZZ_GITHUB_TOKEN"}},
            "url_fetch": {"auth_profiles": {"echo": {"env": "FUZZ_URL_TOKEN",
                                                     "hosts": ["127.0.0.1"]}}},
            "calendar": {"sources": [{"name": "local", "path": str(ics)},
                                     {"name": "remote", "url": f"{closed}/cal.ics"}]},
            "static_links": {"links": [{"name": "gh", "url": "https://github.com/x"}]},
            "mastodon": {"instance_url": closed},
            "citations": {"store_dir": str(root / "citations")},
        },
    }
    # Approve every call: the fuzzing is about the tools (approvals:
    # tests/engine/test_approvals.py).
    reg = toolplug.load(config, env=SECRETS, approver=lambda r: True)
    yield reg
    reg.close()


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            ipaddress.ip_address(name)
        except ValueError:
            if name.rstrip(".").lower() != "localhost":
                raise socket.gaierror(socket.EAI_NONAME, "no name resolution in tests") from None
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not ipaddress.ip_address(address[0]).is_loopback:
            raise AssertionError(f"a test tried to connect beyond loopback: {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)


def catalog_tools() -> list[str]:
    registry = toolplug.load({"tools": {
        "static_links": {"links": [{"name": "gh", "url": "https://github.com/x"}]},
    }})
    return sorted(t.name for t in registry.tools.values() if t.distribution != "toolplug")


leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=50),
    # huge strings, built by repetition: drawing them character by character is slow
    st.builds(lambda piece, count: piece * count, st.text(min_size=1, max_size=8),
              st.integers(200, 20_000)),
    st.sampled_from(["", "\x00", "../../etc/passwd", "file:///etc/passwd", "http://[::1]/",
                     "http://169.254.169.254/latest", "$step1.x", "🦜" * 50, "null"]),
)
anything = st.recursive(
    leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=25,
)


def from_schema(schema: Any) -> st.SearchStrategy[Any]:  # noqa: PLR0911 - one strategy per schema type, each a short exit
    """Values that match a schema, for the JSON Schema the catalog uses.

    (hypothesis-jsonschema would do this for any schema, but it does not work with the
    current Hypothesis; the catalog's schemas need only this subset. Generated values are
    checked against the schema with jsonschema before use, so a gap here cannot pass off
    an invalid value as valid.)
    """
    if not isinstance(schema, dict):
        return anything
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}) for k in kind])
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"])
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 60))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False,
                         allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(from_schema(schema.get("items", {})), min_size=low,
                        max_size=min(schema.get("maxItems", low + 4), low + 4))
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = [k for k in schema.get("required", []) if k in props]
        optional = [k for k in props if k not in required]
        extra = schema.get("additionalProperties", True)
        extras = (st.dictionaries(st.text(max_size=8).filter(lambda k: k not in props),
                                  from_schema(extra) if isinstance(extra, dict) else anything,
                                  max_size=2)
                  if extra is not False else st.just({}))
        return st.builds(
            lambda base, more, rest: {**rest, **base, **more},
            st.fixed_dictionaries({k: from_schema(props[k]) for k in required}),
            st.fixed_dictionaries({}, optional={k: from_schema(props[k]) for k in optional}),
            extras,
        )
    return anything


def deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"nested": [value]}
    return value


def hostile(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Arguments that are mostly wrong: random JSON, mistyped known keys, extra keys."""
    names = sorted(schema.get("properties", {}))
    keys = st.sampled_from(names) if names else st.text(max_size=10)
    mistyped = st.dictionaries(st.one_of(keys, st.text(max_size=12)), anything, max_size=6)
    return st.one_of(anything, mistyped, st.builds(deep, st.integers(100, 1500)))


_NOT_JSON = object()


def check(registry: toolplug.Registry, name: str, arguments: Any) -> None:
    result = registry.call(name, arguments)
    assert isinstance(result, toolplug.ToolResult)
    budget = registry.tools[name].metadata.max_output_chars or DEFAULT_OUTPUT_CHARS
    assert reply_chars(result) <= budget, (name, reply_chars(result))
    assert_clean(json.dumps(result.to_dict(), ensure_ascii=False, default=repr))
    assert_clean(result.for_model())
    assert_clean(repr(result))
    if result.error is not None:
        assert result.error.type in ERROR_TYPES, result.error
        assert isinstance(result.error.message, str)
        assert result.error.message
    schema = registry.tools[name].metadata.parameters
    if isinstance(arguments, str | bytes):  # arguments may arrive as the model's JSON text
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            arguments = _NOT_JSON
    if arguments is None:
        arguments = {}  # call(name), call(name, None) and "null" mean "no arguments"
    if isinstance(arguments, dict):
        # documented: null for an optional property that rejects null means "not given"
        arguments = drop_strict_nulls(schema, arguments)
    try:
        valid = isinstance(arguments, dict) and Draft202012Validator(schema).is_valid(arguments)
    except RecursionError:
        valid = False
    if not valid:
        assert result.error is not None, f"{name} accepted invalid arguments {arguments!r:.200}"
        assert result.error.type == "ValidationError", result.error


def targeted(name: str, echo: HTTPServer) -> st.SearchStrategy[Any]:
    """Valid calls that make a tool send a secret to the echo service (github_api sends its
    token with every call already)."""
    if name == "url_fetch":
        paths = st.text("abcxyz/-._~%", max_size=12)
        return st.fixed_dictionaries(
            {"url": paths.map(lambda path: echo.url_for("/" + path)),
             "auth_profile": st.just("echo")},
            optional={"method": st.sampled_from(["GET", "DELETE", "HEAD"]),
                      "max_bytes": st.integers(1, 5_000)},
        )
    return st.nothing()


@pytest.mark.slow
@pytest.mark.parametrize("name", catalog_tools())
def test_generated_calls(
    registry: toolplug.Registry,
    echo: HTTPServer,
    name: str,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    schema = registry.tools[name].metadata.parameters
    assert registry.availability(name).available, registry.availability(name).reasons
    limit = sys.getrecursionlimit()
    def common(examples: int) -> settings:
        return settings(
            max_examples=examples,
            deadline=None,  # network tools wait on refused connections; calls have time limits
            suppress_health_check=[
                HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                HealthCheck.function_scoped_fixture,
            ],
            database=None,
        )

    validator = Draft202012Validator(schema)

    @common(CALLS_PER_TOOL["valid"])
    @given(st.one_of(from_schema(schema), targeted(name, echo)).filter(validator.is_valid))
    def valid(arguments: Any) -> None:
        check(registry, name, arguments)

    @common(CALLS_PER_TOOL["invalid"])
    @given(hostile(schema))
    def invalid(arguments: Any) -> None:
        check(registry, name, arguments)

    valid()
    invalid()
    assert sys.getrecursionlimit() == limit
    out, err = capfd.readouterr()
    assert_clean(out + err)
    assert_clean(caplog.text)


def test_the_secrets_really_reach_the_tools(registry: toolplug.Registry, echo: HTTPServer) -> None:
    """Each secret travels to the echo service, which sends it back; no result keeps it."""
    echo.clear_log()
    results = [
        registry.call("github_api", {"action": "get_readme", "owner": "o", "repo": "r"}),
        registry.call("url_fetch", {"url": echo.url_for("/x"), "auth_profile": "echo"}),
    ]
    sent = [request.headers.get("Authorization", "") for request, _ in echo.log]
    assert sent == [f"Bearer {SECRETS['FUZZ_GITHUB_TOKEN']}", SECRETS["FUZZ_URL_TOKEN"]]
    assert "echo Bearer ***" in results[0].for_model()
    assert "echo ***" in results[1].for_model()
    for result in results:
        assert_clean(json.dumps(result.to_dict(), ensure_ascii=False))


def test_every_catalog_tool_is_fuzzed() -> None:
    assert len(catalog_tools()) == 13
    assert sum(CALLS_PER_TOOL.values()) * len(catalog_tools()) >= 3_500


def test_generated_files_stay_in_the_sandbox(registry: toolplug.Registry, tmp_path: Path) -> None:
    root = Path(registry.config.cache_dir).parent
    outside = [p for p in tmp_path.parent.rglob("*") if p.name == "passwd"]
    assert outside == []
    assert root.exists()
