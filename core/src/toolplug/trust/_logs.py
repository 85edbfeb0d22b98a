"""Configured secrets kept out of toolplug's log records, tracebacks included.

A tool that raises with a secret in its message is logged with its traceback for the host
(``toolplug.engine._pipeline``); a mounted server's failure is logged with its reason. Every
registry hands its ``Redactor`` to ``protect``, which puts one ``SecretFilter`` on the
``toolplug`` logger and on every ``toolplug.*`` logger there is (the plugins' loggers exist
once they are loaded; a logger's filters see only the records logged on it, not those its
children pass up). The command line also puts it on the handlers of its process
(``protect_handler``), so records of other libraries' loggers are redacted there too.

The filter rewrites a record before a handler sees it: its message formatted and redacted,
its traceback (``exc_info``) and stack formatted once and redacted into ``exc_text`` and
``stack_info``. Handlers that format records the standard way print those; a record whose
traceback held a secret loses ``exc_info``, which holds the raw exception.
"""

from __future__ import annotations

import logging
import threading
import traceback
import weakref
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from toolplug.trust._redaction import Redactor

__all__ = ["SecretFilter", "protect", "protect_handler"]

_ROOT: Final = "toolplug"
_OWN: Final = ("toolplug", "toolplug.mount")
"""toolplug's own loggers, protected whether or not they exist yet."""


class SecretFilter(logging.Filter):
    """Replaces the secrets of every live registry with ``***`` in a record; never drops one."""

    def __init__(self) -> None:
        super().__init__()
        self._redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()

    def add(self, redactor: Redactor) -> None:
        """Redact this registry's secrets too, for as long as it lives."""
        self._redactors.add(redactor)

    def _redact(self, text: str) -> str:
        for redactor in list(self._redactors):
            text = redactor.redact(text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not any(self._redactors):
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: the handler reports it as always
            return True
        redacted = self._redact(message)
        if redacted is not message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            redacted = self._redact(text)
            if redacted != text:  # the raw exception goes; its redacted traceback stays
                record.exc_text, record.exc_info = redacted, None
        elif record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        return True


_FILTER: Final = SecretFilter()
_lock = threading.Lock()


def protect(redactor: Redactor) -> None:
    """Keep ``redactor``'s secrets out of every record logged on ``toolplug`` and the
    ``toolplug.*`` loggers that exist now."""
    with _lock:
        _FILTER.add(redactor)
        names = {*_OWN, *(
            name for name in list(logging.root.manager.loggerDict)
            if name.startswith(_ROOT + ".")
        )}
        for name in sorted(names):
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)


def protect_handler(handler: logging.Handler) -> None:
    """Redact every record ``handler`` emits, whichever logger it came from (the command
    line's own handlers and Python's last-resort handler, in a process toolplug owns, where
    the MCP SDK's and the web server's loggers write too)."""
    with _lock:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
