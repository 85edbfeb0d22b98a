"""A ``requests`` session whose every request goes through toolplug's network guard.

Mastodon.py speaks HTTP with ``requests``. The adapter here sends each request with
``toolplug.http.fetch_sync`` instead: the host and every address it resolves to are checked
against the ``[network]`` policy (no cloud metadata service, no private network unless
allowed), the connection goes only to an approved address, redirects are not followed
(the access token must not travel to another host), and the body is bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from toolplug.http import NetworkPolicy, fetch_sync

__all__ = ["guarded_session"]

_MAX_BYTES: Final = 2_000_000
_TIMEOUT: Final = 30.0


class _GuardedAdapter(BaseAdapter):
    def __init__(self, policy: NetworkPolicy) -> None:
        super().__init__()
        self.policy = policy

    def send(  # noqa: PLR0917 - the signature requests calls
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        body = request.body
        content = body.encode("utf-8") if isinstance(body, str) else body
        seconds = timeout[1] if isinstance(timeout, tuple) else timeout
        fetched = fetch_sync(
            request.method or "GET",
            request.url or "",
            policy=self.policy,
            headers={
                k: v if isinstance(v, str) else v.decode("latin-1")
                for k, v in request.headers.items()
                if k.lower() != "content-length"
            },
            content=content if isinstance(content, bytes) else None,
            timeout=float(seconds) if seconds else _TIMEOUT,
            max_bytes=_MAX_BYTES,
            follow_redirects=False,
        )
        response = requests.Response()
        response.status_code = fetched.status
        response.headers = CaseInsensitiveDict(fetched.headers)
        response._content = fetched.content
        response.url = fetched.final_url
        response.request = request
        response.encoding = "utf-8"
        response.reason = ""
        return response

    def close(self) -> None:
        return None


def guarded_session(policy: NetworkPolicy) -> requests.Session:
    """A session for Mastodon.py whose requests all pass the network guard."""
    session = requests.Session()
    session.trust_env = False  # no proxies or .netrc from the environment: the guard decides
    adapter = _GuardedAdapter(policy)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session
