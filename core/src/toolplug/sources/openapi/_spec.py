"""Reading an OpenAPI description: a file or an http(s) URL, JSON or YAML, version checked.

A URL is fetched through the network guard (``toolplug.http``) like every other request
toolplug makes for a tool; a file is read as it is. What cannot be read or is no OpenAPI
3.0/3.1 description raises ``SpecError`` with a message that says how to fix it.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

from toolplug.contract._network import NetworkPolicy

__all__ = ["SpecError", "is_url", "parse_document", "read_source", "spec_key"]

_SWAGGER_HELP: Final = (
    "Swagger 2.0 descriptions are not read: no well-kept Python converter exists. Convert it "
    "to OpenAPI 3 once (for example `npx swagger2openapi SPEC -o openapi.json`, or the "
    "converter of the API's own tooling) and point spec at the result"
)


class SpecError(Exception):
    """An OpenAPI description that cannot be read or understood; the message says why."""


def is_url(source: str) -> bool:
    """Whether ``spec`` names a URL rather than a file."""
    return source.startswith(("http://", "https://"))


def spec_key(source: str, base: Path) -> tuple[str, Path | None]:
    """What decides a description's content (a file's path, size and time; a URL), and the
    file, if it is one."""
    if is_url(source):
        return f"url:{source}", None
    path = (base / Path(source).expanduser()).resolve()
    try:
        stat = path.stat()
    except OSError:
        return f"file:{path}:missing", path
    return f"file:{path}:{stat.st_size}:{stat.st_mtime_ns}", path


def read_source(
    source: str, *, base: Path, policy: NetworkPolicy, timeout: float,
    max_bytes: int = 64 * 1024 * 1024, limit_key: str = "max_bytes",
) -> tuple[bytes, str]:
    """The bytes of a description (at most ``max_bytes``) and where they came from.

    Raises:
        SpecError: the file cannot be read, the URL cannot be fetched, or it is larger than
            ``max_bytes`` (``limit_key`` names the setting in the message).
    """
    if not is_url(source):
        path = (base / Path(source).expanduser()).resolve()
        try:
            with path.open("rb") as file:
                raw = file.read(max_bytes + 1)
        except OSError as exc:
            raise SpecError(f"cannot read {path}: {exc.strerror or exc}") from None
        if len(raw) > max_bytes:
            raise SpecError(
                f"{path} is larger than {max_bytes} bytes; raise {limit_key} if it is meant "
                "to be read"
            )
        return raw, str(path)
    return _fetch(source, policy, timeout, max_bytes, limit_key), source


def _fetch(url: str, policy: NetworkPolicy, timeout: float, cap: int, limit_key: str) -> bytes:
    from toolplug.http import NetworkError, fetch_sync

    # fetch_sync runs a loop of its own; a thread keeps it off a caller's running loop
    with ThreadPoolExecutor(1, thread_name_prefix="toolplug-openapi") as pool:
        try:
            result = pool.submit(
                fetch_sync, "GET", url, policy=policy, timeout=timeout,
                max_bytes=cap,
                headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.1"},
            ).result()
        except NetworkError as exc:
            raise SpecError(f"cannot fetch {url}: {exc}") from None
    if result.status >= 400:
        raise SpecError(f"cannot fetch {url}: the server answered HTTP {result.status}")
    if result.truncated:
        raise SpecError(
            f"cannot fetch {url}: the description is larger than {cap} bytes; raise "
            f"{limit_key} if it is meant to be read"
        )
    return result.content


def parse_document(
    raw: bytes, where: str, *, max_operations: int | None = None,
    limit_key: str = "max_operations",
) -> dict[str, Any]:
    """A description's bytes as a checked OpenAPI 3.0 or 3.1 document.

    Raises:
        SpecError: not JSON or YAML, YAML with aliases, not an object, Swagger 2.0, another
            version, or more than ``max_operations`` operations.
    """
    text = raw.decode("utf-8-sig", errors="replace")
    document: Any
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise SpecError(f"{where} is not valid JSON: {exc}") from None
    else:
        try:
            import yaml
        except ImportError:
            raise SpecError(
                f"{where} is YAML, and reading YAML needs PyYAML: "
                "pip install 'toolplug[openapi]'"
            ) from None
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            _refuse_aliases(yaml, text, loader, where)
            document = yaml.load(text, Loader=loader)
        except yaml.YAMLError as exc:
            raise SpecError(f"{where} is neither JSON nor valid YAML: {exc}") from None
    if not isinstance(document, dict):
        raise SpecError(f"{where} is not an OpenAPI description (its top level is no object)")
    if "swagger" in document:
        raise SpecError(f"{where}: {_SWAGGER_HELP}")
    version = str(document.get("openapi", ""))
    if not version.startswith(("3.0", "3.1")):
        raise SpecError(
            f"{where} is not an OpenAPI 3.0 or 3.1 description (openapi = {version or 'absent'!r})"
        )
    if not isinstance(document.get("paths"), dict):
        raise SpecError(f"{where} has no paths object: it describes no operation")
    if max_operations is not None:
        count = sum(
            1 for item in document["paths"].values() if isinstance(item, dict)
            for method in item if method.lower() in _METHODS
        )
        if count > max_operations:
            raise SpecError(
                f"{where} has {count} operations, more than {max_operations}; raise "
                f"{limit_key} if they are meant to be read, or describe fewer"
            )
    return document


_METHODS: Final = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))


def _refuse_aliases(yaml: Any, text: str, loader: Any, where: str) -> None:
    """Refuse a YAML description with an alias (``*name``) before it is built: each alias is
    a copy of what its anchor names, so a few hundred bytes of nested aliases expand to
    gigabytes when the description is converted (a "billion laughs"). JSON has no aliases,
    and an OpenAPI description needs none: ``$ref`` says the same, once."""
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            raise SpecError(
                f"{where} uses a YAML alias (*{event.anchor}, line {mark.line + 1}): aliases are "
                "not read, since nested ones expand without bound; write the value out, or "
                "use a $ref"
            )
