"""toolplug-mastodon: post a status to a Mastodon instance, or delete one.

The first catalog tool that changes the world outside the session: its annotations say so
(destructive, because ``delete`` removes a status; not read-only; open-world; per call a
post is not destructive), so by default every call waits for a person's approval
(docs/concepts.md, Approvals). Before the first post
or delete for an instance and token, the token is checked with the instance's
verify_credentials endpoint, once per process::

    [tools.mastodon]
    instance_url = "https://mastodon.social"
    # the token: MASTODON_ACCESS_TOKEN, or access_token = { env = "MY_TOKEN" }
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from toolplug import (
    Annotations,
    Capability,
    Check,
    ConfigField,
    DetectContext,
    ErrorSpec,
    ErrorType,
    Example,
    Guidelines,
    Tool,
    ToolContext,
    ToolFailure,
    ToolMetadata,
    ToolResult,
    Trust,
    provides,
)

__all__ = ["ACCOUNT", "MastodonTool", "register_capabilities", "register_tools"]

ACCOUNT: Final = "mastodon_account"
"""The capability the tool requires: an instance URL and an access token are configured."""

_SETUP: Final = """\
1. On your instance, open Preferences > Development > New application.
2. Name it (for example "toolplug"), keep the scopes write:statuses (and read:accounts for
   the credentials check), and save. Open the application and copy "Your access token".
3. Give toolplug the instance and the token:
       [tools.mastodon]
       instance_url = "https://mastodon.example"
       export MASTODON_ACCESS_TOKEN=...
   or keep the token in another variable: access_token = { env = "MY_MASTODON_TOKEN" }"""

_NEW_TOKEN: Final = (
    "the user must create a new access token (Preferences > Development, scopes "
    "write:statuses and read:accounts) and set it as MASTODON_ACCESS_TOKEN or "
    "[tools.mastodon] access_token. Do not retry; nothing was posted or deleted."
)

_verified: set[tuple[str, str]] = set()
"""(instance URL, SHA-256 of the token) pairs whose credentials check passed in this process.

Only successes are kept; a token the instance later refuses is dropped again. The token
itself is not kept here, only its digest."""
_verified_lock: Final = threading.Lock()


def _account_problem(ctx: DetectContext) -> str | None:
    missing = []
    if not ctx.config("tools.mastodon.instance_url"):
        missing.append("[tools.mastodon] instance_url is not set")
    if not (ctx.env("MASTODON_ACCESS_TOKEN") or ctx.config("tools.mastodon.access_token")):
        missing.append(
            "no access token: MASTODON_ACCESS_TOKEN is not set and [tools.mastodon] "
            "access_token has no value"
        )
    return "; ".join(missing) or None


_CAPABILITY: Final = Capability(
    name=ACCOUNT,
    description="A Mastodon instance and an access token that may post to it.",
    detectors=(Check(_account_problem),),
    setup=_SETUP,
)


_ACTIONS: Final[Mapping[Any, Annotations]] = {
    "post": Annotations(read_only=False, destructive=False, idempotent=False, open_world=True),
    "delete": Annotations(read_only=False, destructive=True, idempotent=True, open_world=True),
}
"""The annotations of a call by its action (``MastodonTool.annotations_for``)."""


class MastodonTool(Tool):
    """Posts and deletes statuses through Mastodon.py, over the guarded network."""

    metadata = ToolMetadata(
        name="mastodon",
        title="Mastodon",
        description=(
            "Post a status to the configured Mastodon account, or delete one of its statuses."
        ),
        category="publish",
        optionality="optional",
        usage_hint=(
            "Use only when the user asks to publish on Mastodon: each call waits for their "
            "approval, and a post is public the moment it is approved."
        ),
        guidelines=Guidelines(
            do=(
                "The user asks you to post, announce or reply on Mastodon",
                "A finished piece should be shared on the user's Mastodon account",
                "The user asks you to delete a status you posted",
            ),
            do_not=(
                "The user has not asked to publish: draft the text and show it instead",
                "The text is longer than the instance allows (500 characters on most)",
                "Retrying a denied or failed post without asking: it may post twice",
            ),
            common_mistakes=(
                "Posting a draft before the user has read it",
                "Deleting without the user's word: a deleted status cannot be restored",
                "Using delete with a status id of another account: only your own can go",
                "Putting content warnings in the text instead of content_warning",
            ),
        ),
        requires_capabilities=(ACCOUNT, "network"),
        produces=("published_post",),
        parameters={
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ["post", "delete"],
                    "description": "post a new status, or delete one by status_id",
                },
                "text": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 5000,
                    "description": "For post: the status text",
                },
                "visibility": {
                    "type": "string",
                    "enum": ["public", "unlisted", "private", "direct"],
                    "description": "For post; default: the account's own default",
                },
                "content_warning": {
                    "type": "string",
                    "maxLength": 500,
                    "description": "For post: shown before the text, which is then folded",
                },
                "in_reply_to_id": {
                    "type": "string",
                    "pattern": "^[0-9A-Za-z]+$",
                    "description": "For post: the id of the status this replies to",
                },
                "language": {
                    "type": "string",
                    "pattern": "^[a-z]{2}$",
                    "description": "For post: ISO 639-1 code such as en",
                },
                "status_id": {
                    "type": "string",
                    "pattern": "^[0-9A-Za-z]+$",
                    "description": "For delete: the status to delete",
                },
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        returns={
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "url": {"type": ["string", "null"]},
                "visibility": {"type": "string"},
                "created_at": {"type": "string"},
                "deleted": {"type": "boolean"},
            },
            "required": ["id", "deleted"],
        },
        errors=(
            ErrorSpec(
                type="ValidationError",
                when="post without text, delete without status_id, or the instance refused it",
            ),
            ErrorSpec(
                type="PermissionError",
                when="the token is invalid, revoked or lacks a scope (checked with the "
                "instance's verify_credentials before the first post or delete), or the "
                "network guard refuses the instance",
            ),
            ErrorSpec(
                type="NotFoundError",
                when="delete names a status that does not exist or is not yours, or "
                "instance_url has no Mastodon API",
            ),
            ErrorSpec(
                type="RateLimitError",
                when="the instance's rate limit is used up; details give retry_after_seconds",
                retry_possible=True,
            ),
            ErrorSpec(
                type="NetworkError",
                when="the instance cannot be reached or answers with a server error",
                retry_possible=True,
            ),
        ),
        examples=(
            Example(
                description="Announce a new post",
                input={
                    "action": "post",
                    "text": "New on the blog: how we test toolplug.",
                    "visibility": "public",
                    "language": "en",
                },
            ),
            Example(
                description="Delete a status",
                input={"action": "delete", "status_id": "109876543210"},
            ),
        ),
        config_fields=(
            ConfigField(
                name="instance_url",
                type="string",
                description="The instance's address, such as https://mastodon.social",
                json_schema={"type": "string", "pattern": "^https?://"},
            ),
            ConfigField(
                name="access_token",
                type="string",
                description="An access token with write:statuses and read:accounts (secret: "
                "give it as MASTODON_ACCESS_TOKEN or { env = ... })",
                secret=True,
                env_var="MASTODON_ACCESS_TOKEN",
            ),
        ),
        setup_instructions=_SETUP,
        required_packages=("toolplug-mastodon",),
        # destructive: delete removes a status for good (MCP hosts get destructiveHint).
        # The result describes the account's own status. The text and content warning are
        # published; in_reply_to_id and status_id choose which status is answered or
        # deleted: all four change the world.
        trust=Trust(
            output="trusted",
            sinks=("text", "content_warning", "in_reply_to_id", "status_id"),
        ),
        annotations=Annotations(
            read_only=False, destructive=True, idempotent=False, open_world=True
        ),
        timeout_seconds=45,
    )

    @classmethod
    def annotations_for(cls, arguments: Mapping[str, Any]) -> Annotations:
        """What this call does: a post adds a status (not destructive; posted twice, it is
        there twice), a delete removes one for good (destructive; deleting it again changes
        nothing more). Both change the world outside the session, so both wait for a
        person's approval by default. Any other action: the declared annotations."""
        return _ACTIONS.get(arguments.get("action"), cls.metadata.annotations)

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Post or delete (sync: Mastodon.py blocks, so a worker thread runs this)."""
        from mastodon import Mastodon

        from toolplug_mastodon._guarded import guarded_session

        deleting = arguments["action"] == "delete"
        if deleting and not arguments.get("status_id"):
            return ToolResult.failure("ValidationError", "status_id is required to delete a status")
        if not deleting and not arguments.get("text"):
            return ToolResult.failure("ValidationError", "text is required to post a status")
        instance = context.config["instance_url"].rstrip("/")
        token = context.config["access_token"]
        api = Mastodon(
            access_token=token,
            api_base_url=instance,
            session=guarded_session(context.network),
            ratelimit_method="throw",
            version_check_mode="none",
            request_timeout=30,
        )
        key = (instance, hashlib.sha256(token.encode()).hexdigest())
        _verify(api, key)
        try:
            if deleting:
                return _delete(api, arguments)
            return _post(api, arguments)
        except Exception as exc:
            failure = _failure(api, exc)
            if failure.type == ErrorType.PERMISSION:
                with _verified_lock:  # refused after all (revoked since): check it again
                    _verified.discard(key)
            raise failure from None


def _verify(api: Any, key: tuple[str, str]) -> None:
    """Check the token with verify_credentials, unless it passed before in this process.

    Raises:
        ToolFailure: the instance refused the token (PermissionError, with how to fix it),
            has no Mastodon API there (NotFoundError), or could not be asked (as
            ``_failure``).
    """
    with _verified_lock:
        if key in _verified:
            return
    from mastodon import errors

    try:
        api.account_verify_credentials()
    except errors.MastodonUnauthorizedError as exc:
        raise ToolFailure(
            ErrorType.PERMISSION,
            f"the instance refused the access token ({_said(exc)}): it is invalid, expired "
            f"or revoked; {_NEW_TOKEN}",
        ) from None
    except errors.MastodonNotFoundError:
        raise ToolFailure(
            ErrorType.NOT_FOUND,
            "the instance has no Mastodon API (verify_credentials was not found); the user "
            "must check [tools.mastodon] instance_url. Nothing was posted or deleted.",
        ) from None
    except errors.MastodonAPIError as exc:
        if _status(exc) != 403:
            raise _failure(api, exc) from None
        raise ToolFailure(
            ErrorType.PERMISSION,
            f"the instance refused to show the token's account ({_said(exc)}): the token "
            f"lacks the read:accounts scope the credentials check needs, or the account is "
            f"disabled; {_NEW_TOKEN}",
        ) from None
    except Exception as exc:
        raise _failure(api, exc) from None
    with _verified_lock:
        _verified.add(key)


def _post(api: Any, arguments: dict[str, Any]) -> ToolResult:
    text = arguments["text"]
    options: dict[str, Any] = {
        k: arguments[k] for k in ("visibility", "in_reply_to_id", "language") if k in arguments
    }
    if "content_warning" in arguments:
        options["spoiler_text"] = arguments["content_warning"]
    # The same post asked twice within the hour (a retry after a lost answer) posts once.
    key = hashlib.sha256(json.dumps([text, options], sort_keys=True).encode()).hexdigest()
    status = api.status_post(text, idempotency_key=key, **options)
    data = {
        "id": str(status["id"]),
        "url": status.get("url"),
        "visibility": str(status.get("visibility", "")),
        "created_at": str(status.get("created_at", "")),
        "deleted": False,
    }
    return ToolResult.success(f"Posted status {data['id']}: {data['url']}", data)


def _delete(api: Any, arguments: dict[str, Any]) -> ToolResult:
    status_id = arguments["status_id"]
    api.status_delete(status_id)
    return ToolResult.success(f"Deleted status {status_id}.", {"id": status_id, "deleted": True})


def _failure(api: Any, exc: Exception) -> ToolFailure:
    """The structured error for what Mastodon.py (or the guard below it) raised."""
    from mastodon import errors

    from toolplug.http import NetworkError, guard_failure

    cause = exc.__context__
    if isinstance(exc, errors.MastodonNetworkError) and isinstance(cause, NetworkError):
        return guard_failure(cause)
    if isinstance(exc, errors.MastodonRatelimitError):
        reset = getattr(api, "ratelimit_reset", None)
        wait = max(0.0, float(reset) - time.time()) if reset else None
        details = {"retry_after_seconds": round(wait, 1)} if wait is not None else {}
        later = f"; try again in {wait:.0f} s" if wait is not None else ""
        return ToolFailure(
            "RateLimitError",
            f"the instance's rate limit is used up{later}",
            retry_possible=True,
            details=details,
        )
    if isinstance(exc, errors.MastodonUnauthorizedError):
        return ToolFailure(
            "PermissionError",
            f"the instance refused the access token: {_said(exc)}; the user must check "
            "MASTODON_ACCESS_TOKEN (or [tools.mastodon] access_token). Do not retry.",
        )
    if isinstance(exc, errors.MastodonNotFoundError):
        return ToolFailure("NotFoundError", f"no such status on this account: {_said(exc)}")
    if isinstance(exc, errors.MastodonServerError | errors.MastodonNetworkError):
        return ToolFailure(
            "NetworkError", f"the instance failed: {_said(exc)}", retry_possible=True
        )
    if isinstance(exc, errors.MastodonAPIError):
        return ToolFailure("ValidationError", f"the instance refused the request: {_said(exc)}")
    return ToolFailure("ExecutionError", f"{type(exc).__name__}: {exc}")


def _status(exc: Exception) -> int | None:
    """The HTTP status of a Mastodon.py API error: its args are (text, status, reason, message)."""
    status = exc.args[1] if len(exc.args) > 1 else None
    return status if isinstance(status, int) else None


def _said(exc: Exception) -> str:
    """What the instance said: Mastodon.py's error carries (name, status, reason, message)."""
    parts = [str(p) for p in exc.args if p]
    return parts[-1] if parts else type(exc).__name__


register_capabilities = provides(_CAPABILITY)
register_tools = provides(MastodonTool)
