"""The network guard: which URLs toolplug's network plugins may fetch, and why not.

Every network plugin reaches the network through ``toolplug.http``, and ``toolplug.http``
asks this module first. A URL passes when its scheme is ``http`` or ``https``, its host parses
cleanly in whatever spelling it came in, and *every* address the host resolves to is a public
one, or is listed in ``[network] allow``. The addresses that passed are returned so the caller
can connect to exactly those and nothing a later DNS answer says (DNS rebinding).

This module is pure standard library on purpose: configuration loading and the capability
checker import it, and neither may pay for importing an HTTP client.

Its errors are in ``_errors.py``; the small HTTP helpers the client needs in ``_wire.py``.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeAlias
from urllib.parse import unquote, urlsplit, urlunsplit

from toolplug.contract._network import (
    DEFAULT_USER_AGENT,
    IPAddress,
    NetworkPolicy,
    canonical_host,
)
from toolplug.http._errors import NetworkError, NetworkRefused, NetworkUnreachable

__all__ = [
    "DEFAULT_USER_AGENT",
    "SENSITIVE_HEADERS",
    "NetworkPolicy",
    "Resolver",
    "Target",
    "check_target",
    "check_url",
    "classify_address",
    "parse_url",
    "redact_url",
    "resolve_host",
]

Resolver: TypeAlias = Callable[[str, int], list[str]]
"""Turns ``(host, port)`` into address strings; ``socket.getaddrinfo`` by default."""

SENSITIVE_HEADERS: Final = frozenset({"authorization", "cookie", "proxy-authorization"})
"""Request headers that must not follow a redirect to another origin (scheme, host, port)."""

_SCHEMES: Final = {"http": 80, "https": 443}
_MAX_MESSAGE_URL: Final = 200
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
_OCTAL_DIGITS: Final = frozenset("01234567")
_DECIMAL_DIGITS: Final = frozenset("0123456789")


# --- URL parsing --------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A URL taken apart the way the network guard and the HTTP layer need it."""

    url: str = field(repr=False)
    """The URL as given (may hold a user name and password: never log it; see ``redacted``)."""
    scheme: str
    """``"http"`` or ``"https"``."""
    host: str
    """Canonical host: lower-case ASCII name without trailing dot, or a compressed IP address."""
    port: int
    """The port, the scheme's default when the URL names none."""
    path: str
    """Path and query as they go on the request line (at least ``"/"``); no fragment."""
    address: IPAddress | None = None
    """The address when the host is an IP literal in any spelling, else ``None``."""
    username: str | None = field(default=None, repr=False)
    """User name from the URL, percent-decoded."""
    password: str | None = field(default=None, repr=False)
    """Password from the URL, percent-decoded."""

    @property
    def origin(self) -> tuple[str, str, int]:
        """``(scheme, host, port)``: what must stay the same for credentials to follow."""
        return (self.scheme, self.host, self.port)

    @property
    def host_header(self) -> str:
        """The ``Host`` header value: the host, bracketed for IPv6, with a non-default port."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _SCHEMES[self.scheme] else f"{host}:{self.port}"

    @property
    def redacted(self) -> str:
        """The URL without user name and password, safe for messages and logs."""
        return redact_url(self.url)

    def with_address(self, address: str) -> str:
        """This URL with its host replaced by ``address``: the connection is pinned to it."""
        host = f"[{address}]" if ":" in address else address
        return f"{self.scheme}://{host}:{self.port}{self.path}"


def redact_url(url: str, *, limit: int | None = _MAX_MESSAGE_URL) -> str:
    """``url`` without user name and password, cut to ``limit`` characters for messages.

    Example:
        >>> redact_url("https://me:secret@example.com/x")
        'https://example.com/x'
    """
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:
            url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    except ValueError:
        # Unparseable: still make sure nothing that looks like userinfo survives.
        url = re.sub(r"//[^/?#]*@", "//", url)
    if limit is not None and len(url) > limit:
        url = url[: limit - 1] + "…"
    return url


def _refuse(url: str, rule: str, detail: str, host: str | None = None) -> NetworkRefused:
    where = redact_url(url)
    return NetworkRefused(f"refused {where}: {detail}", url=where, rule=rule, host=host)


def parse_url(url: str) -> Target:
    """Take ``url`` apart, reading its host in every spelling a browser or resolver accepts.

    Decimal (``2130706433``), octal (``0177.0.0.1``), hexadecimal (``0x7f.1``) and shortened
    (``127.1``) IPv4 forms become the address they stand for; so do bracketed IPv6 literals.
    Host names are percent-decoded, IDNA-encoded, lower-cased and lose one trailing dot.

    Args:
        url: An absolute ``http`` or ``https`` URL.

    Returns:
        The parsed target.

    Raises:
        NetworkRefused: The scheme is not ``http``/``https`` (rule ``"scheme not allowed"``),
            the URL has no host (``"missing host"``), or the host or port cannot be read
            (``"invalid host"``, ``"invalid port"``, ``"invalid URL"``).
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise _refuse(url, "invalid URL", f"the URL cannot be parsed ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        shown = f"scheme {scheme!r}" if scheme else "a URL without a scheme"
        raise _refuse(
            url, "scheme not allowed", f"{shown} is not allowed; only http and https are fetched"
        )
    netloc = parts.netloc
    userinfo, has_userinfo, hostport = netloc.rpartition("@")
    if "\\" in netloc:
        # Browsers read "\" as "/" in http(s) URLs, urllib does not: the two would disagree on
        # which host is meant, so neither reading is trusted.
        raise _refuse(url, "invalid URL", "a backslash in the authority part is ambiguous")
    host_text, port_text = _split_host_port(url, hostport)
    if not host_text:
        raise _refuse(url, "missing host", "the URL has no host")
    host, address = _parse_host(url, host_text)
    port = _parse_port(url, port_text, default=_SCHEMES[scheme], host=host)
    username = password = None
    if has_userinfo:
        user, _, secret = userinfo.partition(":")
        username = unquote(user)
        password = unquote(secret) if ":" in userinfo else None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(
        url=url,
        scheme=scheme,
        host=host,
        port=port,
        path=path,
        address=address,
        username=username,
        password=password,
    )


def _split_host_port(url: str, hostport: str) -> tuple[str, str]:
    if hostport.startswith("["):
        inside, bracket, rest = hostport[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise _refuse(url, "invalid host", "the bracketed IPv6 host is malformed")
        return f"[{inside}]", rest[1:]
    if hostport.count(":") > 1:
        raise _refuse(url, "invalid host", "an IPv6 host must be written in brackets")
    host, _, port = hostport.partition(":")
    return host, port


def _parse_port(url: str, text: str, *, default: int, host: str) -> int:
    if not text:
        return default
    if not set(text) <= _DECIMAL_DIGITS or not 0 < int(text) < 65536:
        raise _refuse(url, "invalid port", f"port {text!r} is not a number from 1 to 65535", host)
    return int(text)


def _parse_host(url: str, text: str) -> tuple[str, IPAddress | None]:
    """Canonical host and, for IP literals in any spelling, the address."""
    if text.startswith("["):
        inside = text[1:-1]
        if "%" in inside:
            raise _refuse(url, "invalid host", "IPv6 zone identifiers are not supported")
        try:
            v6 = ipaddress.IPv6Address(inside)
        except ValueError:
            raise _refuse(url, "invalid host", f"{text} is not a valid IPv6 address") from None
        return str(v6), v6
    try:
        name = canonical_host(unquote(text, errors="strict"))
    except (ValueError, UnicodeError) as exc:
        raise _refuse(url, "invalid host", f"host {text!r} is not valid ({exc})") from None
    try:
        v4 = _parse_ipv4(name)
    except ValueError as exc:
        raise _refuse(url, "invalid host", f"host {text!r} is not valid ({exc})", name) from None
    if v4 is not None:
        return str(v4), v4
    return name, None


def _ipv4_number(part: str) -> int | None:
    """One part of a numeric IPv4 host, read as browsers and ``inet_aton`` read it."""
    if part[:2] in ("0x", "0X"):
        digits, base, allowed = part[2:], 16, _HEX_DIGITS
        if not digits:
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, base, allowed = part[1:], 8, _OCTAL_DIGITS
    else:
        digits, base, allowed = part, 10, _DECIMAL_DIGITS
    if not digits or not set(digits) <= allowed:
        return None
    return int(digits, base)


def _parse_ipv4(name: str) -> ipaddress.IPv4Address | None:
    """The address a numeric host stands for, ``None`` for a name.

    A host whose last label is a number is an IPv4 address or nothing (the WHATWG URL
    standard's rule), so ``1.2.3.4.5`` or ``08.1`` is an error, not a name to look up.
    """
    parts = name.split(".")
    last = parts[-1]
    if not (set(last) <= _DECIMAL_DIGITS or _ipv4_number(last) is not None):
        return None
    if len(parts) > 4:
        raise ValueError("a numeric host has at most four parts")
    numbers = [_ipv4_number(part) for part in parts]
    if any(number is None for number in numbers):
        raise ValueError(
            "a host ending in a number is an IPv4 address, and each of its parts must be a "
            "decimal, octal (leading 0) or hexadecimal (leading 0x) number"
        )
    values = [number for number in numbers if number is not None]
    if any(value > 255 for value in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise ValueError("a part of the IPv4 address is out of range")
    total = values[-1]
    for index, value in enumerate(values[:-1]):
        total += value << (8 * (3 - index))
    return ipaddress.IPv4Address(total)


# --- addresses ----------------------------------------------------------------------------

_V4_RULES: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = tuple(
    (ipaddress.IPv4Network(cidr), rule)
    for cidr, rule in (
        # 0.0.0.0 reaches the local host on Linux; the rest of 0/8 is not a valid destination.
        ("0.0.0.0/8", "unspecified address"),
        ("10.0.0.0/8", "private address"),
        ("100.64.0.0/10", "CGNAT shared address"),
        ("127.0.0.0/8", "loopback address"),
        ("169.254.0.0/16", "link-local address"),
        ("172.16.0.0/12", "private address"),
        ("192.0.0.0/24", "reserved address"),
        ("192.0.2.0/24", "documentation address"),
        ("192.88.99.0/24", "reserved address"),
        ("192.168.0.0/16", "private address"),
        ("198.18.0.0/15", "reserved address"),
        ("198.51.100.0/24", "documentation address"),
        ("203.0.113.0/24", "documentation address"),
        ("224.0.0.0/4", "multicast address"),
        ("255.255.255.255/32", "broadcast address"),
        ("240.0.0.0/4", "reserved address"),
    )
)

# IPv6 ranges in the order they are tried; "embedded" ranges carry an IPv4 address that is
# classified in turn. Anything outside 2000::/3 (global unicast) is reserved.
_V6_RULES: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = tuple(
    (ipaddress.IPv6Network(cidr), rule)
    for cidr, rule in (
        ("::/128", "unspecified address"),
        ("::1/128", "loopback address"),
        ("::ffff:0:0/96", "embedded:an IPv4-mapped"),
        ("::/96", "embedded:an IPv4-compatible"),
        # NAT64 (RFC 6052): the gateway forwards to the IPv4 address in the low 32 bits, so
        # 64:ff9b::7f00:1 is 127.0.0.1 seen from the gateway. Public ones are how IPv6-only
        # networks reach IPv4 sites, so only special embedded addresses are refused.
        ("64:ff9b::/96", "embedded:a NAT64"),
        ("64:ff9b:1::/48", "private address"),
        ("100::/64", "reserved address"),
        ("2001:db8::/32", "documentation address"),
        # IETF protocol assignments, Teredo among them: no web server lives here.
        ("2001::/23", "reserved address"),
        # 6to4 (RFC 3056): a host with a 6to4 route tunnels 2002:AABB:CCDD:: to AA.BB.CC.DD.
        ("2002::/16", "embedded:a 6to4"),
        ("3fff::/20", "documentation address"),
        ("fc00::/7", "private address"),
        ("fe80::/10", "link-local address"),
        ("fec0::/10", "private address"),
        ("ff00::/8", "multicast address"),
    )
)
_V6_GLOBAL: Final = ipaddress.IPv6Network("2000::/3")
_METADATA_SERVICE: Final = ipaddress.IPv4Address("169.254.169.254")


@dataclass(frozen=True)
class _Verdict:
    """Why an address is special: the rule, and the IPv4 address it carries, if any."""

    rule: str
    embedded: ipaddress.IPv4Address | None = None
    form: str | None = None


def classify_address(address: str | IPAddress) -> str | None:
    """The rule an address falls under (``"loopback address"`` ...), ``None`` when public.

    IPv6 addresses that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4)
    are classified by the IPv4 address they carry.
    """
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    verdict = _classify(ip)
    return verdict.rule if verdict else None


def _classify(ip: IPAddress) -> _Verdict | None:
    if isinstance(ip, ipaddress.IPv4Address):
        for v4_network, v4_rule in _V4_RULES:
            if ip in v4_network:
                return _Verdict(v4_rule)
        return None
    for network, rule in _V6_RULES:
        if ip not in network:
            continue
        if not rule.startswith("embedded:"):
            return _Verdict(rule)
        if network.prefixlen == 16:  # 6to4 puts the IPv4 address right after the prefix
            embedded = ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)
        else:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        inner = _classify(embedded)
        form = rule.removeprefix("embedded:")
        if inner is not None:
            return _Verdict(inner.rule, embedded, form)
        if form == "an IPv4-compatible":
            return _Verdict("reserved address", embedded, form)  # deprecated, never routed
        return None
    return None if ip in _V6_GLOBAL else _Verdict("reserved address")


def _article(rule: str) -> str:
    return "an" if rule[0] in "aeiou" else "a"


def _describe(ip: IPAddress, verdict: _Verdict) -> str:
    rule = f"{_article(verdict.rule)} {verdict.rule}"
    if verdict.embedded is not None and verdict.form is not None:
        text = f"{verdict.form} form of {verdict.embedded}, {rule}"
    else:
        text = rule
    if _METADATA_SERVICE in (ip, verdict.embedded):
        text += " (the cloud instance metadata service)"
    return text


def _allow_entry(ip: IPAddress, verdict: _Verdict) -> str:
    # An IPv4-mapped address is covered by the plain IPv4 range; other embedded forms are
    # different endpoints (a gateway, a tunnel) and must be allowed as themselves.
    if verdict.form == "an IPv4-mapped" and verdict.embedded is not None:
        return f"{verdict.embedded}/32"
    return f"{ip}/{ip.max_prefixlen}"


# --- the check ----------------------------------------------------------------------------


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to for a TCP connection, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check_target(
    target: Target, policy: NetworkPolicy, *, resolve: Resolver | None = None
) -> list[str]:
    """Resolve a parsed URL and check every address; see ``check_url``."""
    if policy.disabled is not None:
        raise NetworkRefused(
            f"refused {target.redacted}: the network is off ({policy.disabled})",
            url=target.url,
            rule="network disabled",
            host=target.host,
        )
    if target.address is not None:
        addresses: list[IPAddress] = [target.address]
    else:
        addresses = _resolve(target, resolve or resolve_host)
    allowed_by_name = target.address is None and policy.allows_host(target.host)
    approved: list[str] = []
    for ip in addresses:
        verdict = _classify(ip)
        if verdict is not None and not allowed_by_name and not policy.allows_address(ip):
            raise _refused_address(target, ip, verdict)
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        # Connect to a mapped address as the IPv4 address it is: same endpoint, and it works
        # on hosts without IPv6.
        approved.append(str(mapped if mapped is not None else ip))
    return list(dict.fromkeys(approved))


def _resolve(target: Target, resolve: Resolver) -> list[IPAddress]:
    where = redact_url(target.url)
    try:
        answers = resolve(target.host, target.port)
    except NetworkError:
        raise
    except (OSError, UnicodeError) as exc:
        raise NetworkUnreachable(
            f"could not resolve host {target.host!r} for {where}: {exc}",
            url=where,
            host=target.host,
        ) from exc
    if not answers:
        raise NetworkUnreachable(
            f"host {target.host!r} resolved to no address (for {where})",
            url=where,
            host=target.host,
        )
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            # A resolver may append a zone ("fe80::1%eth0"); the zone does not change the class.
            addresses.append(ipaddress.ip_address(str(answer).split("%", 1)[0]))
        except ValueError:
            # Fail closed: what cannot be read cannot be checked.
            raise NetworkRefused(
                f"refused {where}: the resolver returned {answer!r} for {target.host!r}, "
                "which is not an IP address",
                url=where,
                rule="invalid address",
                host=target.host,
                address=str(answer),
            ) from None
    return addresses


def _refused_address(target: Target, ip: IPAddress, verdict: _Verdict) -> NetworkRefused:
    where = redact_url(target.url)
    entry = _allow_entry(ip, verdict)
    if target.address is not None:
        detail = f'{ip} is {_describe(ip, verdict)}; allow it with [network] allow = ["{entry}"]'
    else:
        detail = (
            f"{target.host} resolves to {ip}, {_describe(ip, verdict)}; allow it with "
            f'[network] allow = ["{entry}"] (that address) or ["{target.host}"] (that host)'
        )
    return NetworkRefused(
        f"refused {where}: {detail}",
        url=where,
        rule=verdict.rule,
        host=target.host,
        address=str(ip),
    )


def check_url(url: str, policy: NetworkPolicy, *, resolve: Resolver | None = None) -> list[str]:
    """Decide whether ``url`` may be fetched, and to which addresses a connection may go.

    The host is read in every spelling a browser or resolver accepts (see ``parse_url``),
    resolved, and every address is checked: loopback, private, link-local (the cloud metadata
    service among them), CGNAT, multicast, broadcast, documentation, reserved and unspecified
    addresses, and IPv6 forms carrying any of those, are refused unless the address lies in a
    range of ``policy.allow`` or the host is listed there by name.

    Args:
        url: The URL to check.
        policy: The ``[network]`` policy.
        resolve: Turns ``(host, port)`` into addresses; ``socket.getaddrinfo`` by default.
            Not called for IP literals.

    Returns:
        The approved addresses, in resolver order, without duplicates; connect only to these.

    Raises:
        NetworkRefused: The URL or one of the addresses is not allowed; the message names the
            address and the ``[network] allow`` entry that would allow it.
        NetworkUnreachable: The host name does not resolve.

    Example:
        >>> check_url("http://10.1.2.3/", NetworkPolicy(allow=("10.0.0.0/8",)))
        ['10.1.2.3']
    """
    return check_target(parse_url(url), policy, resolve=resolve)
