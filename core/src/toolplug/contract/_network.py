"""The network policy: what the ``[network]`` table allows, as every tool's context carries it.

The policy is part of the contract because a tool receives it in ``ToolContext.network``;
the guard that enforces it lives in ``toolplug.http``. Pure standard library.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

__all__ = [
    "DEFAULT_USER_AGENT",
    "IPAddress",
    "IPNetwork",
    "NetworkPolicy",
    "canonical_host",
    "has_control",
]

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_USER_AGENT: Final = "toolplug/0.1 (+https://github.com/toolplug)"

# What may remain in a host name once it is percent-decoded, IDNA-encoded and lower-cased.
# Underscores are not valid in DNS host names, but resolvers accept them and real sites use them.
_HOST_NAME: Final = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_DECIMAL_DIGITS: Final = frozenset("0123456789")


_POLICY_KEYS: Final = {
    "allow": 'a list of CIDR ranges or host names, e.g. ["10.0.0.0/8", "intranet.example"]',
    "max_redirects": "a whole number, 0 or more",
    "timeout_seconds": "a number of seconds greater than 0",
    "max_bytes": "a whole number of bytes greater than 0",
    "user_agent": "a non-empty string on one line",
}


@dataclass(frozen=True)
class NetworkPolicy:
    """What the network guard lets through: the ``[network]`` table of the configuration.

    Example:
        >>> policy = NetworkPolicy(allow=("10.0.0.0/8", "intranet.example"))
        >>> policy.allows_host("INTRANET.example.")
        True
    """

    allow: tuple[str, ...] = ()
    """CIDR ranges (``"10.0.0.0/8"``, ``"::1/128"``) or host names (exact, case-insensitive)
    that may be reached although they are loopback, private, link-local or otherwise special."""
    max_redirects: int = 5
    """How many redirects one fetch follows before giving up."""
    timeout_seconds: float = 15.0
    """The limit for each connect, read, write and pool wait; a whole fetch gets twice this."""
    max_bytes: int = 5_000_000
    """The most body bytes (after content decoding) kept; the rest is cut and flagged."""
    user_agent: str = DEFAULT_USER_AGENT
    """The ``User-Agent`` sent when the caller does not set one."""
    disabled: str | None = None
    """Why no request may be made at all (``offline = true``, or the host denied the
    ``network`` capability); None when requests may be made. Not a ``[network]`` key: the
    registry sets it from the ``network`` capability."""
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)
    _hosts: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        allow: object = self.allow
        if isinstance(allow, str | bytes) or not isinstance(allow, Iterable):
            raise ValueError(f"allow: expected {_POLICY_KEYS['allow']}, got {allow!r}")
        entries = tuple(allow)
        networks: list[IPNetwork] = []
        hosts: set[str] = set()
        for entry in entries:
            parsed = _parse_allow_entry(entry)
            if isinstance(parsed, str):
                hosts.add(parsed)
            else:
                networks.append(parsed)
        # Frozen: assign through object.__setattr__, once, while the instance is being built.
        object.__setattr__(self, "allow", entries)
        object.__setattr__(self, "_networks", tuple(networks))
        object.__setattr__(self, "_hosts", frozenset(hosts))
        _check_int("max_redirects", self.max_redirects, minimum=0)
        _check_int("max_bytes", self.max_bytes, minimum=1)
        timeout: object = self.timeout_seconds
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(
                f"timeout_seconds: expected {_POLICY_KEYS['timeout_seconds']}, got {timeout!r}"
            )
        if timeout == float("inf"):  # a deadline that never comes is no deadline
            raise ValueError("timeout_seconds: expected a finite number of seconds, got inf")
        agent: object = self.user_agent
        if not isinstance(agent, str) or not agent.strip() or has_control(agent):
            raise ValueError(f"user_agent: expected {_POLICY_KEYS['user_agent']}, got {agent!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> NetworkPolicy:
        """Build a policy from the ``[network]`` configuration table.

        Args:
            data: The table as parsed from TOML; every key is optional.

        Returns:
            The policy, with defaults for the keys not given.

        Raises:
            ValueError: A key is unknown or its value has the wrong type or range; the message
                names the key and what is expected.
        """
        for key in data:
            if key not in _POLICY_KEYS:
                raise ValueError(
                    f"unknown key {key!r} in [network]; expected one of "
                    + ", ".join(sorted(_POLICY_KEYS))
                )
        values: dict[str, Any] = dict(data)
        if not isinstance(values.get("allow", ()), list | tuple):  # a table would pass as keys
            raise ValueError(f"allow: expected {_POLICY_KEYS['allow']}, got {values['allow']!r}")
        timeout = values.get("timeout_seconds")
        if isinstance(timeout, int) and not isinstance(timeout, bool):
            values["timeout_seconds"] = float(timeout)
        return cls(**values)  # __post_init__ checks every value and names what it expects

    def allows_host(self, host: str) -> bool:
        """Whether ``host`` (any case, trailing dot or not) is listed by name in ``allow``."""
        try:
            return canonical_host(host) in self._hosts
        except ValueError:
            return False

    def allows_address(self, address: str | IPAddress) -> bool:
        """Whether ``address`` lies in a CIDR range listed in ``allow``.

        An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) is the same endpoint as the IPv4
        address it carries, so a range of either family covers it.
        """
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        return any(
            candidate.version == network.version and candidate in network
            for candidate in candidates
            for network in self._networks
        )


def _check_int(key: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key}: expected {_POLICY_KEYS[key]}, got {value!r}")


def _parse_allow_entry(entry: object) -> IPNetwork | str:
    """One ``allow`` entry as a network, or as a canonical host name."""
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"allow: expected {_POLICY_KEYS['allow']}, got entry {entry!r}")
    text = entry.strip()
    if "://" in text:
        raise ValueError(
            f"allow: entry {entry!r} is a URL; list its host name or address range instead"
        )
    if "/" in text or ":" in text or _looks_like_ipv4(text):
        try:
            return ipaddress.ip_network(text, strict=True)
        except ValueError as exc:
            hint = ""
            try:
                loose = ipaddress.ip_network(text, strict=False)
            except ValueError:
                pass
            else:
                hint = f"; did you mean {str(loose)!r}?"
            raise ValueError(
                f"allow: entry {entry!r} is not a valid CIDR range ({exc}){hint}"
            ) from None
    if "*" in text:
        raise ValueError(
            f"allow: entry {entry!r}: wildcards are not supported; list each host name"
        )
    try:
        return canonical_host(text)
    except ValueError as exc:
        raise ValueError(f"allow: entry {entry!r} is not a valid host name ({exc})") from None


def _looks_like_ipv4(text: str) -> bool:
    return all(part and set(part) <= _DECIMAL_DIGITS for part in text.split("."))


def has_control(text: str) -> bool:
    return any(ord(char) < 32 or ord(char) == 127 for char in text)


def canonical_host(text: str) -> str:
    """Lower-case ASCII form of a host name: IDNA-encoded, without its trailing dot."""
    if not text.isascii():
        # The standard library's codec (IDNA 2003 with nameprep) maps full-width digits and
        # dots the way browsers do: full-width "127.0.0.1" (U+FF11 U+FF12 ...) comes out as
        # plain "127.0.0.1" and is then caught as an address.
        text = text.encode("idna").decode("ascii")
    text = text.lower()
    if text.endswith("."):
        text = text[:-1]
    if not text:
        raise ValueError("empty host name")
    if not _HOST_NAME.fullmatch(text):
        raise ValueError("only letters, digits, '-', '_' and '.' may appear in a host name")
    if len(text) > 253 or any(len(label) > 63 for label in text.split(".")):
        raise ValueError("a host name has at most 253 characters and 63 per label")
    return text
