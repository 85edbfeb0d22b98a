"""The OS keyring as the home of sign-in secrets (``[oauth] store``), through the
``keyring`` library (the ``toolplug[keyring]`` extra).

One keyring entry per source: service ``toolplug``, user name the source's key (a
protected resource's URL), the password a JSON object of the entry's secret fields
(``SECRET_FIELDS``). Which backend is ``keyring``'s choice (``keyring.get_keyring()``:
``PYTHON_KEYRING_BACKEND``, its ``keyringrc.cfg``, or the best one it detects); for
``"auto"`` it must be one ``keyring`` recommends (priority 1 or more: macOS Keychain,
Windows Credential Locker, Secret Service, KWallet) or one the user configured, never
its fail or null backend. Every call blocks (D-Bus, a system service): the token store
makes them on a worker thread.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

__all__ = ["SECRET_FIELDS", "SERVICE", "KeyringUnusable", "Vault", "vault"]

SERVICE: Final = "toolplug"
SECRET_FIELDS: Final = frozenset({"tokens", "client"})
"""The fields of an entry kept in the keyring (tokens; the client's registration, with
its secret); the rest (metadata, expiry, scopes wanted) stay in the file."""


class KeyringUnusable(Exception):
    """``[oauth] store = "keyring"`` and no keyring can be used: why, and what to do."""


class Vault:
    """The keyring entries of the sign-ins: each a JSON object, by key."""

    def __init__(self, backend: KeyringBackend) -> None:
        self.backend = backend

    @property
    def name(self) -> str:
        kind = type(self.backend)
        return f"{kind.__module__}.{kind.__qualname__}"

    def get(self, key: str) -> dict[str, Any]:
        raw = self._do(self.backend.get_password, SERVICE, key)
        if not raw:
            return {}
        try:
            found = json.loads(raw)
        except ValueError:
            return {}  # not written by toolplug: as if empty
        return found if isinstance(found, dict) else {}

    def put(self, key: str, fields: dict[str, Any]) -> None:
        """Keep ``fields`` as ``key``'s entry (none: the entry is deleted)."""
        if fields:
            self._do(self.backend.set_password, SERVICE, key, json.dumps(fields, sort_keys=True))
        elif self.get(key):
            self._do(self.backend.delete_password, SERVICE, key)

    def _do(self, act: Any, *args: str) -> Any:
        from keyring.errors import KeyringError

        try:
            return act(*args)
        except KeyringError as exc:
            raise KeyringUnusable(
                f"the keyring ({self.name}) refused: {type(exc).__name__}: {exc}; unlock it, "
                'or keep the tokens in a file: [oauth] store = "file"'
            ) from None


def vault(store: str) -> Vault | None:
    """The keyring ``store`` (``"auto"`` or ``"keyring"``) names, or None for the file
    (``"auto"`` with no usable keyring). Raises ``KeyringUnusable`` for ``"keyring"``
    when there is none."""
    if store == "file":
        return None
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:
        if store == "auto":
            return None
        raise KeyringUnusable(
            '[oauth] store = "keyring" needs the keyring library: pip install '
            "'toolplug[keyring]' (or keep the tokens in a file: store = \"file\")"
        ) from None
    backend = keyring.get_keyring()
    kind = type(backend)
    named = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(backend, fail.Keyring | null.Keyring):
        if store == "auto":
            return None
        raise KeyringUnusable(
            f'[oauth] store = "keyring", and keyring has no usable backend ({named}): '
            "install one (the OS's Secret Service, KWallet, or a keyring backend package) "
            'or keep the tokens in a file: store = "file"'
        )
    if store == "auto" and not (_priority(backend) >= 1 or _configured()):
        return None  # only a backend keyring does not recommend (a plain-text file, ...)
    return Vault(backend)


def _priority(backend: KeyringBackend) -> float:
    try:
        return float(backend.priority)
    except Exception:  # a backend that is not viable here says so by raising
        return 0.0


def _configured() -> bool:
    """Whether the user chose keyring's backend (its variable or its configuration file)."""
    if os.environ.get("PYTHON_KEYRING_BACKEND"):
        return True
    from keyring.util import platform_

    return bool((platform_.config_root() / "keyringrc.cfg").is_file())
