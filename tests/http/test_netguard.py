"""The network guard's pure logic: URL parsing, address rules, the allow list, body bounds.

No test here opens a connection. Host names are answered by an injected resolver, except
``localhost``, which the system resolves from its hosts file.
"""

from __future__ import annotations

import gzip
import ipaddress
import pickle
import re
import socket
import zlib
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolplug.contract._network import (
    DEFAULT_USER_AGENT,
    NetworkPolicy,
)
from toolplug.http._errors import (
    NetworkError,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    TooManyRedirects,
)
from toolplug.http._netguard import (
    check_url,
    classify_address,
    parse_url,
    redact_url,
    resolve_host,
)
from toolplug.http._wire import (
    BoundedBody,
    basic_auth,
    parse_content_type,
    redirect_method,
    without_headers,
)

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"

# What the fake DNS knows. Anything else is an unknown name, as with real DNS.
NAMES: dict[str, list[str]] = {
    "public.test": [PUBLIC_V4, PUBLIC_V6],
    "internal.test": ["10.0.0.5"],
    "intranet.example": ["10.0.0.5"],
    "sub.intranet.example": ["10.0.0.6"],
    "mixed.test": [PUBLIC_V4, "10.0.0.5"],  # one bad answer among good ones
    "metadata.test": ["169.254.169.254"],
    "v6loop.test": ["::1"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "scoped.test": ["fe80::1%eth0"],
    "xn--bcher-kva.test": [PUBLIC_V4],  # bücher.test
}


def fake_resolve(host: str, port: int) -> list[str]:
    """The test DNS: NAMES, and the system's answer for localhost only."""
    if host == "localhost":
        return resolve_host(host, port)
    if host in NAMES:
        return list(NAMES[host])
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def refused(url: str, policy: NetworkPolicy | None = None) -> NetworkRefused:
    with pytest.raises(NetworkRefused) as info:
        check_url(url, policy or NetworkPolicy(), resolve=fake_resolve)
    return info.value


# --- hostile input ------------------------------------------------------------------------

HOSTILE: list[tuple[str, str, str | None]] = [
    # (url, rule, the refused address when an address is the reason)
    # -- every spelling of loopback
    ("http://127.0.0.1/", "loopback address", "127.0.0.1"),  # plain
    ("http://127.1/", "loopback address", "127.0.0.1"),  # shortened: 127.0.0.1
    ("http://127.0.1/", "loopback address", "127.0.0.1"),  # shortened, three parts
    ("http://2130706433/", "loopback address", "127.0.0.1"),  # one decimal integer
    ("http://0x7f000001/", "loopback address", "127.0.0.1"),  # one hexadecimal integer
    ("http://0177.0.0.1/", "loopback address", "127.0.0.1"),  # octal first part
    ("http://0x7f.1/", "loopback address", "127.0.0.1"),  # hexadecimal, shortened
    ("http://0x7F.0X0.00.0001/", "loopback address", "127.0.0.1"),  # mixed bases and cases
    ("http://127.255.255.254/", "loopback address", "127.255.255.254"),  # all of 127/8
    ("http://[::1]/", "loopback address", "::1"),  # IPv6 loopback
    ("http://[0:0:0:0:0:0:0:1]/", "loopback address", "::1"),  # uncompressed
    ("http://[::ffff:127.0.0.1]/", "loopback address", "::ffff:7f00:1"),  # IPv4-mapped
    ("http://[0:0:0:0:0:ffff:7f00:1]/", "loopback address", "::ffff:7f00:1"),  # mapped, hex
    ("http://[::127.0.0.1]/", "loopback address", "::7f00:1"),  # IPv4-compatible (deprecated)
    ("http://[64:ff9b::7f00:1]/", "loopback address", "64:ff9b::7f00:1"),  # NAT64 of 127.0.0.1
    ("http://[2002:7f00:1::]/", "loopback address", "2002:7f00:1::"),  # 6to4 of 127.0.0.1
    ("http://localhost/", "loopback address", "127.0.0.1"),  # the name, resolved by the system
    ("http://LOCALHOST./", "loopback address", "127.0.0.1"),  # upper case, trailing dot
    ("http://127.0.0.1./", "loopback address", "127.0.0.1"),  # trailing dot on an address
    ("http://127.0.0.1:8080/", "loopback address", "127.0.0.1"),  # with a port
    ("http://%31%32%37.0.0.1/", "loopback address", "127.0.0.1"),  # percent-encoded digits
    ("http://127%2E0%2E0%2E1/", "loopback address", "127.0.0.1"),  # percent-encoded dots
    ("http://%6c%6f%63%61%6c%68%6f%73%74/", "loopback address", "127.0.0.1"),  # "localhost"
    (
        "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",
        "loopback address",
        "127.0.0.1",
    ),  # full-width digits and dots, mapped by IDNA as browsers do
    ("http://v6loop.test/", "loopback address", "::1"),  # a name resolving to ::1
    ("http://mapped.test/", "loopback address", "::ffff:7f00:1"),  # a name resolving to mapped
    ("http://93.184.216.34@127.0.0.1/", "loopback address", "127.0.0.1"),  # userinfo decoy
    # -- unspecified: 0.0.0.0 reaches the local host on Linux
    ("http://0.0.0.0/", "unspecified address", "0.0.0.0"),
    ("http://0/", "unspecified address", "0.0.0.0"),  # one-number form of 0.0.0.0
    ("http://[::]/", "unspecified address", "::"),
    # -- link-local, the cloud metadata service above all
    ("http://169.254.169.254/latest/meta-data/", "link-local address", "169.254.169.254"),
    ("http://2852039166/", "link-local address", "169.254.169.254"),  # metadata as an integer
    ("http://[::ffff:169.254.169.254]/", "link-local address", "::ffff:a9fe:a9fe"),  # mapped
    ("http://metadata.test/", "link-local address", "169.254.169.254"),  # a name for it
    ("http://[fe80::1]/", "link-local address", "fe80::1"),  # fe80::/10
    ("http://[febf::1]/", "link-local address", "febf::1"),  # top of fe80::/10
    ("http://scoped.test/", "link-local address", "fe80::1"),  # resolver answer with a zone
    # -- private ranges
    ("http://10.0.0.1/", "private address", "10.0.0.1"),
    ("http://10.255.255.255/", "private address", "10.255.255.255"),
    ("http://172.16.0.1/", "private address", "172.16.0.1"),
    ("http://172.31.255.255/", "private address", "172.31.255.255"),  # top of 172.16/12
    ("http://192.168.0.1/", "private address", "192.168.0.1"),
    ("http://[fd00::1]/", "private address", "fd00::1"),  # unique local fd00::/8
    ("http://[fc00::1]/", "private address", "fc00::1"),  # the rest of fc00::/7
    ("http://[::ffff:10.0.0.1]/", "private address", "::ffff:a00:1"),  # mapped private
    ("http://[2002:a00:1::1]/", "private address", "2002:a00:1::1"),  # 6to4 of 10.0.0.1
    ("http://[64:ff9b::c0a8:1]/", "private address", "64:ff9b::c0a8:1"),  # NAT64 of 192.168.0.1
    ("http://internal.test/", "private address", "10.0.0.5"),  # a name resolving there
    ("http://mixed.test/", "private address", "10.0.0.5"),  # every answer is checked
    # -- CGNAT shared space, multicast, broadcast, documentation, reserved
    ("http://100.64.0.1/", "CGNAT shared address", "100.64.0.1"),
    ("http://100.127.255.255/", "CGNAT shared address", "100.127.255.255"),
    ("http://224.0.0.1/", "multicast address", "224.0.0.1"),
    ("http://[ff02::1]/", "multicast address", "ff02::1"),
    ("http://255.255.255.255/", "broadcast address", "255.255.255.255"),
    ("http://240.0.0.1/", "reserved address", "240.0.0.1"),
    ("http://192.0.2.1/", "documentation address", "192.0.2.1"),
    ("http://[2001:db8::1]/", "documentation address", "2001:db8::1"),
    ("http://[2001::1]/", "reserved address", "2001::1"),  # Teredo
    ("http://[4000::1]/", "reserved address", "4000::1"),  # outside global unicast 2000::/3
    # -- schemes other than http(s)
    ("file:///etc/passwd", "scheme not allowed", None),
    ("ftp://public.test/", "scheme not allowed", None),
    ("gopher://public.test:70/_GET", "scheme not allowed", None),
    ("javascript:alert(1)", "scheme not allowed", None),
    ("data:text/html,hi", "scheme not allowed", None),
    ("//public.test/", "scheme not allowed", None),  # scheme-relative: no scheme at all
    # -- no host, or a host that cannot be read
    ("http:///path", "missing host", None),
    ("http://", "missing host", None),
    ("http://:80/", "missing host", None),
    ("http://user@/x", "missing host", None),
    ("http://1.2.3.4.5/", "invalid host", None),  # ends in a number: must be IPv4, is not
    ("http://256.0.0.1/", "invalid host", None),  # a part over 255
    ("http://08.0.0.1/", "invalid host", None),  # 8 is no octal digit
    ("http://example.123/", "invalid host", None),  # ends in a number, is no address
    ("http://exa%20mple.test/", "invalid host", None),  # percent-decodes to a space
    ("http://a..b/", "invalid host", None),  # empty label
    ("http://::1/", "invalid host", None),  # IPv6 without brackets
    ("http://[::1]x/", "invalid host", None),  # text after the bracket
    ("http://[127.0.0.1]/", "invalid host|invalid URL", None),  # IPv4 in brackets (*)
    ("http://[fe80::1%25eth0]/", "invalid host", None),  # zone identifier
    ("http://[::1/", "invalid URL", None),  # unbalanced bracket
    # (*) Python 3.11.4+ urllib rejects it while splitting ("invalid URL"), older ones let it
    # through to the guard's own host check ("invalid host"): refused either way.
    ("http://public.test\\@127.0.0.1/", "invalid URL", None),  # "\" read as "/" by browsers
    ("http://public.test:0/", "invalid port", None),
    ("http://public.test:65536/", "invalid port", None),
    ("http://public.test:8o/", "invalid port", None),
]


@pytest.mark.parametrize(("url", "rule", "address"), HOSTILE)
def test_hostile_urls_are_refused(url: str, rule: str, address: str | None) -> None:
    error = refused(url)
    assert error.rule in rule.split("|")
    assert error.address == address
    if address is not None:
        # The message names the address and the config line that would let it through.
        assert f" {address} " in str(error) or f" {address}," in str(error)
        assert "[network] allow = [" in str(error)


def test_message_names_address_and_allow_entry() -> None:
    error = refused("http://127.0.0.1:8080/x")
    assert str(error) == (
        "refused http://127.0.0.1:8080/x: 127.0.0.1 is a loopback address; "
        'allow it with [network] allow = ["127.0.0.1/32"]'
    )
    assert (error.url, error.host, error.address) == (
        "http://127.0.0.1:8080/x",
        "127.0.0.1",
        "127.0.0.1",
    )


def test_message_for_a_name_offers_address_and_host() -> None:
    error = refused("http://internal.test/a")
    assert str(error) == (
        "refused http://internal.test/a: internal.test resolves to 10.0.0.5, a private "
        'address; allow it with [network] allow = ["10.0.0.5/32"] (that address) or '
        '["internal.test"] (that host)'
    )
    assert error.host == "internal.test"


def test_message_for_mapped_and_metadata() -> None:
    mapped = refused("http://[::ffff:127.0.0.1]/")
    assert "::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address" in str(mapped)
    assert '["127.0.0.1/32"]' in str(mapped)  # the mapped form is allowed as the IPv4 address
    nat64 = refused("http://[64:ff9b::a00:1]/")
    assert '["64:ff9b::a00:1/128"]' in str(nat64)  # a gateway is another endpoint: as itself
    metadata = refused("http://169.254.169.254/")
    assert "(the cloud instance metadata service)" in str(metadata)


def test_scheme_message_offers_no_allow_entry() -> None:
    error = refused("ftp://public.test/")
    assert str(error) == (
        "refused ftp://public.test/: scheme 'ftp' is not allowed; only http and https are fetched"
    )


def test_credentials_never_appear_in_errors_or_repr() -> None:
    error = refused("http://alice:s3cret@10.0.0.1/")
    assert "s3cret" not in str(error)
    assert "alice" not in str(error)
    assert error.url == "http://10.0.0.1/"
    target = parse_url("https://alice:s3cret@public.test/x")
    assert (target.username, target.password) == ("alice", "s3cret")
    assert "s3cret" not in repr(target)
    assert target.redacted == "https://public.test/x"


# --- what passes --------------------------------------------------------------------------

ALLOWED: list[tuple[str, list[str]]] = [
    (f"http://{PUBLIC_V4}/", [PUBLIC_V4]),  # a public address
    ("https://public.test/", [PUBLIC_V4, PUBLIC_V6]),  # every answer, in resolver order
    ("http://user:pass@public.test:8443/x?y#z", [PUBLIC_V4, PUBLIC_V6]),  # userinfo is fine
    ("HTTP://PUBLIC.TEST./", [PUBLIC_V4, PUBLIC_V6]),  # case and trailing dot
    ("http://0x5d.0xb8.0xd8.0x22/", [PUBLIC_V4]),  # hex spelling of a public address
    ("http://1572395042/", [PUBLIC_V4]),  # integer spelling of a public address
    (f"http://[::ffff:{PUBLIC_V4}]/", [PUBLIC_V4]),  # mapped public: pinned as IPv4
    ("http://[64:ff9b::5db8:d822]/", ["64:ff9b::5db8:d822"]),  # NAT64 of a public address
    (f"http://[{PUBLIC_V6}]:8080/", [PUBLIC_V6]),  # public IPv6
    ("http://172.32.0.1/", ["172.32.0.1"]),  # just past 172.16/12
    ("http://100.128.0.1/", ["100.128.0.1"]),  # just past 100.64/10
    ("http://11.0.0.1/", ["11.0.0.1"]),  # just past 10/8
    ("http://b\u00fccher.test/", [PUBLIC_V4]),  # IDNA: looked up as xn--bcher-kva.test
]


@pytest.mark.parametrize(("url", "addresses"), ALLOWED)
def test_public_urls_pass_with_their_addresses(url: str, addresses: list[str]) -> None:
    assert check_url(url, NetworkPolicy(), resolve=fake_resolve) == addresses


def test_parse_url_parts() -> None:
    target = parse_url("HTTPS://Public.Test.:8443/a%20b?q=1#frag")
    assert (target.scheme, target.host, target.port, target.path) == (
        "https",
        "public.test",
        8443,
        "/a%20b?q=1",
    )
    assert target.origin == ("https", "public.test", 8443)
    assert target.host_header == "public.test:8443"
    assert target.with_address("::1") == "https://[::1]:8443/a%20b?q=1"
    bare = parse_url("http://2130706433")
    assert (bare.host, bare.path, bare.host_header) == ("127.0.0.1", "/", "127.0.0.1")
    assert bare.address == ipaddress.IPv4Address("127.0.0.1")
    v6 = parse_url("http://[::1]:80/")
    assert v6.host_header == "[::1]"


def test_literals_are_not_resolved() -> None:
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return [PUBLIC_V4]

    assert check_url("http://1.1.1.1/", NetworkPolicy(), resolve=resolve) == ["1.1.1.1"]
    assert calls == []


# --- the allow list -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "opened"),
    [
        ("http://127.0.0.1/", True),  # the range itself
        ("http://127.1/", True),  # any spelling of it
        ("http://2130706433/", True),
        ("http://[::ffff:127.0.0.1]/", True),  # the mapped form is the same endpoint
        ("http://localhost/", True),  # a name resolving into the range
        ("http://127.0.0.2/", False),  # the next address is still loopback
        ("http://[::1]/", False),  # IPv6 loopback is another address
        ("http://10.0.0.1/", False),  # and nothing else opens
        ("http://[64:ff9b::7f00:1]/", False),  # NAT64 reaches a gateway, not this host
    ],
)
def test_allow_cidr_opens_exactly_that(url: str, opened: bool) -> None:
    policy = NetworkPolicy(allow=("127.0.0.1/32",))
    if opened:
        assert check_url(url, policy, resolve=fake_resolve) == ["127.0.0.1"]
    else:
        assert refused(url, policy).rule in {"loopback address", "private address"}


def test_allow_wider_cidr_and_ipv6() -> None:
    policy = NetworkPolicy(allow=("10.0.0.0/8", "::1/128"))
    assert check_url("http://10.255.255.255/", policy) == ["10.255.255.255"]
    assert check_url("http://internal.test/", policy, resolve=fake_resolve) == ["10.0.0.5"]
    assert check_url("http://[::1]/", policy) == ["::1"]
    assert refused("http://172.16.0.1/", policy).rule == "private address"
    assert refused("http://127.0.0.1/", policy).rule == "loopback address"


@pytest.mark.parametrize(
    ("url", "opened"),
    [
        ("http://intranet.example/", True),  # the listed host
        ("https://INTRANET.Example.:8443/x", True),  # case, trailing dot and port do not matter
        ("http://other.test/", False),  # unknown names are not opened (they do not resolve)
        ("http://internal.test/", False),  # same address, other name: refused
        ("http://10.0.0.5/", False),  # the address itself is not opened by the name
        ("http://sub.intranet.example/", False),  # exact host only, no subdomains
    ],
)
def test_allow_host_name_opens_exactly_that(url: str, opened: bool) -> None:
    policy = NetworkPolicy(allow=("intranet.example",))
    if opened:
        assert check_url(url, policy, resolve=fake_resolve) == ["10.0.0.5"]
    else:
        with pytest.raises(NetworkError) as info:
            check_url(url, policy, resolve=fake_resolve)
        assert isinstance(info.value, NetworkRefused | NetworkUnreachable)


def test_policy_allows_helpers() -> None:
    policy = NetworkPolicy(allow=("127.0.0.0/8", "Intranet.Example."))
    assert policy.allows_host("intranet.example")
    assert not policy.allows_host("example")
    assert policy.allows_address("127.9.9.9")
    assert policy.allows_address("::ffff:127.0.0.1")
    assert not policy.allows_address("::1")


# --- resolution failures ------------------------------------------------------------------


def test_unresolvable_name_is_unreachable_not_refused() -> None:
    with pytest.raises(NetworkUnreachable) as info:
        check_url("http://nowhere.test/", NetworkPolicy(), resolve=fake_resolve)
    assert not isinstance(info.value, PermissionError)
    assert info.value.host == "nowhere.test"
    assert str(info.value).startswith("could not resolve host 'nowhere.test' for http://nowhere")


def test_empty_answer_is_unreachable() -> None:
    with pytest.raises(NetworkUnreachable, match="resolved to no address"):
        check_url("http://empty.test/", NetworkPolicy(), resolve=lambda host, port: [])


def test_garbage_answer_fails_closed() -> None:
    error = refused_with(lambda host, port: ["not-an-address"])
    assert (error.rule, error.address) == ("invalid address", "not-an-address")


def refused_with(resolve: Callable[[str, int], list[str]]) -> NetworkRefused:
    with pytest.raises(NetworkRefused) as info:
        check_url("http://odd.test/", NetworkPolicy(), resolve=resolve)
    return info.value


def test_resolver_gets_host_and_port() -> None:
    seen: list[tuple[str, int]] = []

    def resolve(host: str, port: int) -> list[str]:
        seen.append((host, port))
        return [PUBLIC_V4]

    check_url("https://Public.Test./", NetworkPolicy(), resolve=resolve)
    check_url("http://public.test:8080/", NetworkPolicy(), resolve=resolve)
    assert seen == [("public.test", 443), ("public.test", 8080)]


# --- spellings, by property ---------------------------------------------------------------


def spellings(value: int) -> list[str]:
    """Hosts a browser reads as the IPv4 address ``value``."""
    octets = [(value >> shift) & 0xFF for shift in (24, 16, 8, 0)]
    return [
        ".".join(map(str, octets)),
        str(value),
        hex(value),
        ".".join(f"0{o:o}" for o in octets),
        ".".join(hex(o) for o in octets),
        f"{octets[0]}.{octets[1]}.{(octets[2] << 8) | octets[3]}",
        f"{octets[0]}.{(octets[1] << 16) | (octets[2] << 8) | octets[3]}",
        f"[::ffff:{'.'.join(map(str, octets))}]",
    ]


def outcome(url: str) -> tuple[str, object]:
    try:
        return ("ok", check_url(url, NetworkPolicy()))
    except NetworkRefused as error:
        return ("refused", error.rule)


interesting_ipv4 = st.one_of(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.sampled_from(["127.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10"]).flatmap(
        lambda cidr: st.integers(
            int(ipaddress.IPv4Network(cidr).network_address),
            int(ipaddress.IPv4Network(cidr).broadcast_address),
        )
    ),
)


@given(interesting_ipv4)
def test_every_spelling_of_an_address_gets_the_same_verdict(value: int) -> None:
    dotted = str(ipaddress.IPv4Address(value))
    expected = outcome(f"http://{dotted}/")
    if expected[0] == "ok":
        assert expected == ("ok", [dotted])
    assert classify_address(dotted) == (None if expected[0] == "ok" else expected[1])
    for host in spellings(value):
        assert outcome(f"http://{host}/") == expected, host


# --- the policy ---------------------------------------------------------------------------


def test_policy_defaults() -> None:
    policy = NetworkPolicy()
    assert (policy.allow, policy.max_redirects, policy.timeout_seconds, policy.max_bytes) == (
        (),
        5,
        15.0,
        5_000_000,
    )
    assert policy.user_agent == DEFAULT_USER_AGENT == "toolplug/0.1 (+https://github.com/toolplug)"


def test_from_mapping_reads_the_network_table() -> None:
    policy = NetworkPolicy.from_mapping(
        {
            "allow": ["10.0.0.0/8", "intranet.example"],
            "max_redirects": 2,
            "timeout_seconds": 3,
            "max_bytes": 1000,
            "user_agent": "agent/1",
        }
    )
    assert policy == NetworkPolicy(
        allow=("10.0.0.0/8", "intranet.example"),
        max_redirects=2,
        timeout_seconds=3.0,
        max_bytes=1000,
        user_agent="agent/1",
    )
    assert NetworkPolicy.from_mapping({}) == NetworkPolicy()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"alow": []}, "unknown key 'alow' in [network]; expected one of allow, max_bytes"),
        ({"allow": "10.0.0.0/8"}, "allow: expected a list of CIDR ranges or host names"),
        ({"allow": [10]}, "allow: expected a list of CIDR ranges or host names"),
        ({"allow": ["10.0.0.1/8"]}, "did you mean '10.0.0.0/8'?"),
        ({"allow": ["10.0.0.0/33"]}, "allow: entry '10.0.0.0/33' is not a valid CIDR range"),
        ({"allow": ["http://intranet/"]}, "is a URL; list its host name or address range"),
        ({"allow": ["*.example"]}, "wildcards are not supported"),
        ({"allow": ["bad host"]}, "allow: entry 'bad host' is not a valid host name"),
        ({"allow": [""]}, "allow: expected a list of CIDR ranges or host names"),
        ({"max_redirects": "5"}, "max_redirects: expected a whole number, 0 or more, got '5'"),
        ({"max_redirects": True}, "max_redirects: expected a whole number, 0 or more, got True"),
        ({"max_redirects": -1}, "max_redirects: expected a whole number, 0 or more, got -1"),
        ({"timeout_seconds": 0}, "timeout_seconds: expected a number of seconds greater than 0"),
        ({"timeout_seconds": "1"}, "timeout_seconds: expected a number of seconds greater"),
        ({"timeout_seconds": float("inf")}, "timeout_seconds: expected a finite number"),
        ({"max_bytes": 0}, "max_bytes: expected a whole number of bytes greater than 0, got 0"),
        ({"max_bytes": 1.5}, "max_bytes: expected a whole number of bytes greater than 0"),
        ({"user_agent": ""}, "user_agent: expected a non-empty string on one line"),
        ({"user_agent": "a\r\nX-Evil: 1"}, "user_agent: expected a non-empty string on one"),
        ({"user_agent": 7}, "user_agent: expected a non-empty string on one line, got 7"),
    ],
)
def test_from_mapping_names_key_and_expectation(table: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        NetworkPolicy.from_mapping(table)


def test_policy_rejects_a_bare_string_for_allow() -> None:
    # tuple("10.0.0.0/8") would silently allow nothing useful; refuse it outright.
    with pytest.raises(ValueError, match="allow: expected"):
        NetworkPolicy(allow="10.0.0.0/8")  # type: ignore[arg-type]


def test_policy_accepts_a_list_and_stays_hashable() -> None:
    policy = NetworkPolicy(allow=["10.0.0.0/8"])  # type: ignore[arg-type]
    assert policy.allow == ("10.0.0.0/8",)
    assert hash(policy) == hash(NetworkPolicy(allow=("10.0.0.0/8",)))


# --- errors -------------------------------------------------------------------------------


def test_error_tree() -> None:
    assert issubclass(NetworkRefused, NetworkError)
    assert issubclass(NetworkRefused, PermissionError)
    assert issubclass(TooManyRedirects, NetworkRefused)
    assert issubclass(NetworkUnreachable, NetworkError)
    assert not issubclass(NetworkUnreachable, PermissionError)
    assert issubclass(NetworkTimeout, NetworkError)
    assert issubclass(NetworkTimeout, TimeoutError)
    assert issubclass(NetworkError, OSError)
    for cls in (NetworkError, NetworkRefused, TooManyRedirects, NetworkUnreachable, NetworkTimeout):
        assert cls.__doc__ is not None
        assert "\n" not in cls.__doc__.strip()  # one line, saying when it is raised


def test_errors_survive_pickling() -> None:
    error = refused("http://10.0.0.1/")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is NetworkRefused
    assert (str(copy), copy.url, copy.rule, copy.host, copy.address) == (
        str(error),
        "http://10.0.0.1/",
        "private address",
        "10.0.0.1",
        "10.0.0.1",
    )
    loop = TooManyRedirects("loop", url="http://x/", rule="redirect loop", redirects=[(302, "a")])
    assert pickle.loads(pickle.dumps(loop)).redirects == [(302, "a")]


def test_error_str_is_the_message() -> None:
    error = NetworkTimeout("slow", url="http://x/", timeout=1.0, phase="read")
    assert (str(error), error.url, error.timeout, error.phase) == ("slow", "http://x/", 1.0, "read")


# --- helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "method", "expected"),
    [
        (303, "POST", "GET"),  # See Other: always GET
        (303, "PUT", "GET"),
        (303, "HEAD", "HEAD"),  # ... except HEAD stays HEAD
        (301, "POST", "GET"),  # what browsers do, against the letter of old RFCs
        (302, "POST", "GET"),
        (301, "PUT", "PUT"),  # only POST is rewritten by 301/302
        (307, "POST", "POST"),  # 307/308 keep method and body
        (308, "POST", "POST"),
        (302, "GET", "GET"),
    ],
)
def test_redirect_method(status: int, method: str, expected: str) -> None:
    assert redirect_method(status, method) == expected


def test_header_helpers() -> None:
    headers = {"Authorization": "x", "COOKIE": "y", "Accept": "z"}
    assert without_headers(headers, ["authorization", "cookie"]) == {"Accept": "z"}
    assert basic_auth("alice", "s3cret") == "Basic YWxpY2U6czNjcmV0"
    assert basic_auth("alice", None) == "Basic YWxpY2U6"
    assert parse_content_type('Text/HTML; Charset="ISO-8859-1"; q') == (
        "text/html",
        {"charset": "ISO-8859-1"},
    )
    assert parse_content_type(None) == (None, {})


def test_redact_url() -> None:
    assert redact_url("https://u:p@h.test:1/x?y") == "https://h.test:1/x?y"
    assert redact_url("http://h.test/") == "http://h.test/"
    assert redact_url("http://u:p@[::1/x") == "http://[::1/x"  # unparseable: still scrubbed
    long = "http://h.test/" + "a" * 500
    assert len(redact_url(long)) == 200
    assert redact_url(long, limit=None) == long


# --- bounded bodies -----------------------------------------------------------------------


def test_body_at_cap_is_not_truncated() -> None:
    body = BoundedBody(5)
    assert body.feed(b"abc")
    assert body.feed(b"de")
    body.finish()
    assert (body.content, body.truncated) == (b"abcde", False)
    assert not body.feed(b"f")  # one byte more: now it is
    assert (body.content, body.truncated) == (b"abcde", True)


def test_body_past_cap_is_cut() -> None:
    body = BoundedBody(4)
    assert not body.feed(b"abcdef")
    assert (body.content, body.truncated) == (b"abcd", True)
    assert not body.feed(b"more")  # nothing is added after the cut
    assert body.content == b"abcd"


def test_gzip_is_decoded_in_chunks() -> None:
    data = gzip.compress(b"hello gzip " * 100)
    body = BoundedBody(10_000, "gzip")
    for start in range(0, len(data), 7):
        assert body.feed(data[start : start + 7])
    body.finish()
    assert (body.content, body.truncated, body.decoded) == (b"hello gzip " * 100, False, True)


def test_gzip_bomb_never_inflates_past_the_cap() -> None:
    bomb = gzip.compress(b"\0" * 50_000_000)  # about 50 KB on the wire
    body = BoundedBody(1000, "gzip")
    assert not body.feed(bomb)
    assert (len(body.content), body.truncated) == (1000, True)
    # The decoder was asked for at most cap + 1 bytes at a time; the rest stays compressed.


def test_gzip_members_and_padding() -> None:
    two = gzip.compress(b"one ") + gzip.compress(b"two") + b"\0\0\0\0"
    body = BoundedBody(100, "x-gzip")
    body.feed(two)
    body.finish()
    assert body.content == b"one two"


def test_deflate_with_and_without_zlib_header() -> None:
    wrapped = zlib.compress(b"deflated")
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bare = raw.compress(b"deflated") + raw.flush()
    for data in (wrapped, bare):
        body = BoundedBody(100, "deflate")
        body.feed(data)
        body.finish()
        assert body.content == b"deflated"


def test_unknown_coding_is_kept_as_received() -> None:
    body = BoundedBody(100, "br")
    body.feed(b"\x8b\x00")
    assert (body.content, body.decoded) == (b"\x8b\x00", False)


def test_corrupt_gzip_raises() -> None:
    body = BoundedBody(100, "gzip")
    with pytest.raises(zlib.error):
        body.feed(b"this is not gzip at all")
