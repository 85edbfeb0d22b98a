"""The ``toolplug`` command line (also ``python -m toolplug``).

This module is the console script's entry point and stays tiny on purpose: a command whose
answer is cached (see ``toolplug.cli._cache``) is printed without importing anything else.
The commands themselves live in ``toolplug.cli._commands``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["console", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    from toolplug.cli import _cache as _clicache

    cacheable = _clicache.enabled(args)
    if cacheable:
        hit = _clicache.lookup(args)
        if hit is not None:
            code, out = hit
            sys.stdout.write(out)
            if os.environ.get("TOOLPLUG_CACHE_DEBUG"):
                sys.stderr.write("toolplug: answered from the output cache\n")
            return code
    from toolplug.cli._commands import run

    return run(args, cache=cacheable)


def console() -> int:
    """The ``toolplug`` command's process: ``main``, then the way out of a process that ran
    code-mode programs (``toolplug.sources._code.exit_without_finalizing``). Only a process
    of its own may leave that way, so hosts and tests call ``main``."""
    code = main()
    code_mode = sys.modules.get("toolplug.sources._code")
    if code_mode is not None:
        code_mode.exit_without_finalizing(code)
    return code
