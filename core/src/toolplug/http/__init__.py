"""Guarded HTTP for network plugins: every request, and every redirect, passes the network guard.

Network plugins fetch through this module and nothing else::

    from toolplug.http import fetch

    result = await fetch("GET", url, policy=context.network)
    result.status, result.text(), result.truncated

What it does for every request:

* **Checks the URL and every redirect hop** with ``toolplug.http._netguard.check_url``:
  only http(s), and no loopback, private, link-local, ... address unless ``[network]
  allow`` lists it.
* **Pins the connection** to the address that was checked: the request goes to
  ``scheme://ADDRESS:port/path`` with the real ``Host`` header and, for https, the real TLS
  server name (httpx's ``sni_hostname`` extension, which is also the name the certificate is
  verified against). A second DNS answer cannot swap in another address (DNS rebinding).
  When a host has several approved addresses, they are tried in order until one connects.
* **Follows redirects itself** (httpx never does), at most ``max_redirects``; detects loops;
  303 becomes GET, and 301/302 after POST become GET, as in browsers; ``Authorization``,
  ``Cookie`` and ``Proxy-Authorization`` are dropped when the origin (scheme, host, port)
  changes, unless ``on_redirect`` decides the next hop's headers itself.
* **Bounds the body**: it is streamed and kept up to ``max_bytes`` (after gzip/deflate decoding,
  which is done here in bounded steps); the rest is never read, and the result says
  ``truncated=True``.
* **Bounds the time**: ``timeout`` limits each connect, read, write and pool wait;
  ``deadline`` (twice ``timeout`` unless given) limits the whole fetch, redirects and body
  included, so a server that sends one byte at a time cannot hold a tool forever.
* **Keeps cookies and environment out**: requests are built here, so a client's default
  headers, cookies and auth are never sent; the client made for a call (or by
  ``new_client()``) also keeps no cookies and ignores proxy and ``.netrc`` settings from the
  environment. A caller who needs a proxy passes a ``client`` configured for it; the
  connection is still pinned, since the proxy is asked for the checked address.

Importing this module does not import httpx; calling ``fetch`` does. Install with
``pip install "toolplug[http]"``.

Errors: every one is an ``OSError``. ``NetworkError`` (a request could not be made or
completed) has three kinds: ``NetworkRefused`` (also a ``PermissionError``; its subclass
``TooManyRedirects``), ``NetworkUnreachable`` and ``NetworkTimeout`` (also a
``TimeoutError``). Each class says when it is raised; ``toolplug.http._errors`` draws the tree.

Passing wrong arguments (both ``content`` and ``json``, a header with a line break, ...) is
the caller's mistake and raises ``ValueError`` instead.
"""

from toolplug.contract._network import NetworkPolicy
from toolplug.http._client import RedirectHook, fetch, fetch_sync, guard_failure, new_client
from toolplug.http._errors import (
    NetworkError,
    NetworkRefused,
    NetworkTimeout,
    NetworkUnreachable,
    TooManyRedirects,
)
from toolplug.http._netguard import Resolver, check_url
from toolplug.http._wire import FetchResult

__all__ = [
    "FetchResult",
    "NetworkError",
    "NetworkPolicy",
    "NetworkRefused",
    "NetworkTimeout",
    "NetworkUnreachable",
    "RedirectHook",
    "Resolver",
    "TooManyRedirects",
    "check_url",
    "fetch",
    "fetch_sync",
    "guard_failure",
    "new_client",
]
