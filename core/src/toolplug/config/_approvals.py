"""The ``[approvals]`` table: where a call waits when nobody can be asked at once, and who
is told about it.

    [approvals]
    inbox = true                    # a call nobody could be asked about waits for a person
    wait_seconds = 3600             # how long it may wait before it is refused as expired
    lease_seconds = 15              # a request whose process stopped fails after this
    store = "sqlite"                # where requests and remembered decisions are kept
    webhook_url = "https://hooks.example.com/toolplug"
    webhook_secret = { env = "TOOLPLUG_WEBHOOK_SECRET" }
    reply_url = "https://toolplug.example/approvals/decide"   # told in each webhook

``store``: ``"auto"`` (the default) keeps them where ``[calls] store`` keeps the rest when
that is Redis (shared by replicas), else in a SQLite file in the state directory (shared
by the processes of this machine: ``toolplug approvals`` decides from another terminal);
``"sqlite"`` or ``"sqlite:PATH"`` that file; ``"memory"`` this process only; a
``redis://`` URL that server.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import Field, ValidationError

from toolplug.config._settings import FromEnv, FromFile, _fail, _raiser
from toolplug.contract._settings import StrictTable

__all__ = ["APPROVALS_KEYS", "ApprovalsSettings", "parse_approvals"]


class ApprovalsSettings(StrictTable):
    """The ``[approvals]`` table (``toolplug.engine._inbox``)."""

    inbox: bool = Field(
        default=False,
        description="a boolean: true makes a call nobody can be asked about wait for a "
        "person's decision (toolplug approvals) instead of failing",
    )
    """A call that needs approval, where no approver decided, becomes a pending request."""
    wait_seconds: float = Field(
        default=3600.0, gt=0, le=7 * 24 * 3600, allow_inf_nan=False,
        description="a number of seconds, more than 0 and at most a week: how long a "
        "request may wait for a decision",
    )
    """After this the request expires and the call is refused, saying so."""
    lease_seconds: float = Field(
        default=15.0, ge=0.3, le=3600, allow_inf_nan=False,
        description="a number of seconds, at least 0.3 and at most 3600: how long a request "
        "stays pending after the process waiting for its call stopped renewing it",
    )
    """The process whose call waits renews its lease on the request every third of this;
    a request whose lease lapsed (its process was killed) is marked failed by whoever
    lists or decides it next."""
    store: str = Field(
        default="auto", pattern=r"^(auto|memory|sqlite(:.+)?|rediss?://.+)$",
        description='"auto", "memory", "sqlite", "sqlite:PATH" or a redis:// URL',
    )
    """Where pending requests and remembered decisions are kept (the module's docstring)."""
    webhook_url: str | None = Field(
        default=None, pattern=r"^https?://",
        description="an http:// or https:// URL told of each new request (a signed POST)",
    )
    """Each new request is POSTed here as JSON, signed with ``webhook_secret``."""
    webhook_secret: FromEnv | FromFile | None = Field(
        default=None,
        description='{ env = "VAR" } or { file = "PATH" }: the key of the webhook\'s '
        "HMAC-SHA256 signature (never the key itself)",
    )
    """The key of the ``X-Toolplug-Signature`` header; without one the POST is unsigned.
    A decision POSTed back (``toolplug.engine._reply``) counts only signed with it."""
    reply_url: str | None = Field(
        default=None, pattern=r"^https?://",
        description="an http:// or https:// URL: where a webhook's receiver POSTs the "
        "person's signed decision back (the console's /approvals/decide), told in each webhook",
    )
    """Put in each signed webhook's ``reply.url`` (``serve --http`` tells its own otherwise)."""

    def store_for(self, calls_store: str, state_dir: Path) -> str:
        """The store ``store`` names, ``auto`` resolved: a Redis URL, ``memory`` or
        ``sqlite:PATH``."""
        chosen = self.store
        if chosen == "auto":
            chosen = calls_store if calls_store != "memory" else "sqlite"
        if chosen == "sqlite":
            return f"sqlite:{state_dir / 'approvals.sqlite3'}"
        return chosen


APPROVALS_KEYS: Final[dict[str, str]] = {
    name: field.description or "" for name, field in ApprovalsSettings.model_fields.items()
}


def parse_approvals(
    table: Mapping[str, Any], *, file: str, prefix: str = ""
) -> ApprovalsSettings:
    """The ``[approvals]`` table, checked.

    Raises:
        ConfigError: a key is unknown or has a value of the wrong kind.
    """
    try:
        return ApprovalsSettings.model_validate(dict(table))
    except ValidationError as exc:
        raise _fail(exc, ApprovalsSettings, prefix + "approvals.", _raiser(file)) from None
