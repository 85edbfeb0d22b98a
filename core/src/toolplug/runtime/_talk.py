"""Each call's ``Talk``: the host's channel, checked, redacted and told to the flow guard.

A host gives its ``Channel`` as the ``channel`` entry of a call's ``context`` (or
``Registry.acall(..., channel=)``); the older ``progress`` entry still carries progress. An
accepted answer is the user's own words: it joins the conversation as trusted text, as a
later message of theirs would. A sampled completion is the model's: it joins as an
untrusted record, so a value the model made up cannot reach a sink as if the user had
typed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from toolplug.contract._metadata import Trust
from toolplug.contract._talk import NO_CHANNEL, Answer, Channel, Sampled, Talk
from toolplug.contract._tool import ToolResult
from toolplug.trust._conversation import CURRENT

if TYPE_CHECKING:
    from toolplug.trust._redaction import Redactor

__all__ = ["CHANNEL", "talk_for"]

CHANNEL: Final = "channel"
"""The ``context`` entry a host's ``Channel`` goes in."""

_MODEL: Final = Trust(output="untrusted")


def talk_for(tool: str, host: Mapping[str, Any], redactor: Redactor, seconds: float) -> Talk:
    """The ``Talk`` of a call of ``tool`` whose host passed ``host``."""
    channel = host.get(CHANNEL)
    progress = host.get("progress")
    return Talk(
        tool,
        channel if isinstance(channel, Channel) else NO_CHANNEL,
        legacy_progress=progress if callable(progress) else None,
        seconds=seconds,
        redact=redactor.redact,
        redact_data=redactor.redact_data,
        answered=_answered,
        sampled=_sampled,
    )


def _answered(tool: str, answer: Answer) -> None:
    """The user's answer: trusted text of the conversation the call runs in."""
    conversation = CURRENT.get()
    if conversation is None or not answer.accepted or not answer.content:
        return
    words = [_text(value) for value in answer.content.values()]
    conversation.trust("\n".join(w for w in words if w))


def _sampled(tool: str, sampled: Sampled) -> None:
    """The model's completion: an untrusted record, as a page read would be."""
    conversation = CURRENT.get()
    if conversation is not None and sampled.text:
        conversation.record(f"{tool} (sampled)", _MODEL, ToolResult.success(sampled.text))


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "\n".join(_text(v) for v in value)
    return "" if value is None or isinstance(value, bool) else str(value)
