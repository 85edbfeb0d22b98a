"""A cache of the command line's rendered output, so listing and prompting start fast.

Loading plugins means importing pydantic, jsonschema, pluggy and every plugin's entry
module: far more than a bare interpreter start. The output of ``list``, ``prompt``,
``info`` and ``schema`` depends only on inputs that are cheap to check, so the first run
renders it and records those inputs; later runs compare them and print the stored text.

What a stored answer depends on, all compared before it is used:

* the command line, the working directory, the interpreter and ``sys.path``;
* every directory on ``sys.path`` (its modification time changes when a distribution is
  installed, upgraded or removed), and each plugin distribution's metadata files;
* the file of every module that was imported while rendering (an edited editable plugin,
  or an upgraded toolplug, changes them);
* the configuration files that were (or could have been) read, and files that
  ``{ file = "..." }`` settings point to;
* the tool lists of mounted MCP servers (``toolplug.sources.mcp``): their files, and the time
  the first of them stops being fresh;
* every environment variable that was read while loading, through the recording mapping
  handed to ``toolplug.load`` (detectors read the environment through it), plus all
  ``TOOLPLUG_*`` variables. Values are stored as hashes, never in clear.

This module imports only what a bare interpreter has loaded already (plus ``marshal`` and
the built-in SHA-256): it runs before anything else, and ``json``, ``hashlib`` or ``typing``
alone would cost more than the whole cached answer. The stored entries are ``marshal``
data, keyed by interpreter version.
``TOOLPLUG_NO_CACHE=1`` turns it off; ``TOOLPLUG_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

try:  # the standard library's own SHA-256: no OpenSSL to load at start-up
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # Python 3.11
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found, no-redef, unused-ignore]

__all__ = ["CACHEABLE", "enabled", "lookup", "store"]

CACHEABLE = frozenset({"list", "prompt", "info", "schema"})
_FORMAT = 2
# A file modified this close to when an answer was stored may have been modified again within
# the file system's timestamp granularity without its time changing; such answers are not
# trusted (git's "racily clean" rule).
_RACY_NS = 2_000_000_000


def enabled(argv: list[str]) -> bool:
    """True when this command line may be answered from (and stored into) the cache."""
    if os.environ.get("TOOLPLUG_NO_CACHE", "") not in ("", "0"):
        return False
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in CACHEABLE or "--help" in argv or "-h" in argv:
        return False
    return not any(a.startswith("--strict") for a in argv)


def _cache_dir() -> str:
    explicit = os.environ.get("TOOLPLUG_CACHE_DIR")
    if explicit:
        return explicit
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "toolplug", "Cache", "cli")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/toolplug/cli")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "toolplug", "cli")


def _hash(text: str) -> str:
    digest: str = _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return digest


def _entry_file(argv: list[str]) -> str:
    toolplug_env = sorted((k, v) for k, v in os.environ.items() if k.startswith("TOOLPLUG_"))
    material = repr(
        [_FORMAT, argv, os.getcwd(), sys.executable, sys.version, sys.path, toolplug_env]
    )
    return os.path.join(_cache_dir(), _hash(material)[:40] + ".bin")


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _config_candidates(argv: list[str]) -> list[str]:
    cwd = os.getcwd()
    paths = [os.path.join(cwd, "toolplug.toml"), os.path.join(cwd, "pyproject.toml")]
    explicit = os.environ.get("TOOLPLUG_CONFIG")
    if explicit:
        paths.append(os.path.abspath(explicit))
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            paths.append(os.path.abspath(argv[i + 1]))
        elif arg.startswith("--config="):
            paths.append(os.path.abspath(arg.split("=", 1)[1]))
    return paths


def lookup(argv: list[str]) -> tuple[int, str] | None:
    """The stored exit code and output for this command line, if every input is unchanged."""
    try:
        with open(_entry_file(argv), "rb") as handle:
            entry = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    try:
        racy_after = int(entry["stored_ns"]) - _RACY_NS
        for path, expected in entry["files"].items():
            if _stat(path) != expected:
                return None
            if expected is not None and expected[0] >= racy_after:
                return None
        expires = entry.get("expires_ns")
        if expires is not None and time.time_ns() >= int(expires):
            return None
        for name, expected in entry["env"].items():
            value = os.environ.get(name)
            if (None if value is None else _hash(value)) != expected:
                return None
        return int(entry["code"]), str(entry["stdout"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def store(
    argv: list[str],
    code: int,
    stdout: str,
    *,
    env_read: set[str],
    extra_files: list[str],
    expires_ns: int | None = None,
) -> None:
    """Record the output of a full run with everything it depended on; never raises.
    ``expires_ns``: when the answer goes stale by itself (a mounted server's tool list)."""
    try:
        stored_ns = time.time_ns()
        files: dict[str, list[int] | None] = {}
        watched = list(_config_candidates(argv)) + list(extra_files)
        watched += [p for p in sys.path if p and os.path.isdir(p)]
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if path:
                watched.append(path)
        for path in watched:
            files[os.path.abspath(path)] = _stat(path)
        names = set(env_read) | {k for k in os.environ if k.startswith("TOOLPLUG_")}
        env = {
            name: (None if os.environ.get(name) is None else _hash(os.environ[name]))
            for name in sorted(names)
        }
        entry = {
            "format": _FORMAT,
            "stored_ns": stored_ns,
            "code": code,
            "stdout": stdout,
            "files": files,
            "env": env,
            "expires_ns": expires_ns,
        }
        target = _entry_file(argv)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        temporary = f"{target}.{os.getpid()}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(marshal.dumps(entry))
        os.replace(temporary, target)
    except (OSError, TypeError, ValueError):
        return
