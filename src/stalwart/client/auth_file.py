"""The auth file: the sessions the CLI and the SDK keep, one set per master (as Determined's CLI keeps auth.json).

`$STALWART_HOME/auth.json` (mode 0600), shaped like Determined's:
`{"version": 1, "masters": {"http://127.0.0.1:8080": {"active_user": "admin", "tokens": {"admin": "..."}}}}`.
Writers hold an exclusive lock on `auth.json.lock`, and replace the file whole (a reader never sees half of it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any

VERSION = 1


def default_path() -> pathlib.Path:
    base = os.environ.get("STALWART_HOME") or pathlib.Path.home() / ".stalwart"
    return pathlib.Path(base).expanduser() / "auth.json"


class AuthFile:
    """The sessions kept in one auth file, by master URL and user name."""

    def __init__(self, path: pathlib.Path | None = None) -> None:
        self.path = path or default_path()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"version": VERSION, "masters": {}}
        if not isinstance(data, dict) or not isinstance(data.get("masters"), dict):
            return {"version": VERSION, "masters": {}}
        return data

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = self._read()
            yield data
            tmp = self.path.with_name(self.path.name + ".tmp")
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(out, "w") as f:
                json.dump(data, f, indent=2)
            os.replace(tmp, self.path)
        finally:
            os.close(fd)

    def _master(self, data: dict[str, Any], url: str) -> dict[str, Any]:
        entry: dict[str, Any] = data["masters"].setdefault(url, {})
        if not isinstance(entry.get("tokens"), dict):
            entry["tokens"] = {}
        return entry

    def active_user(self, url: str) -> str | None:
        entry = self._read()["masters"].get(url) or {}
        user = entry.get("active_user")
        return user if isinstance(user, str) else None

    def token(self, url: str, username: str) -> str | None:
        entry = self._read()["masters"].get(url) or {}
        token = (entry.get("tokens") or {}).get(username)
        return token if isinstance(token, str) else None

    def store(self, url: str, username: str, token: str, *, make_active: bool = True) -> None:
        with self._editing() as data:
            entry = self._master(data, url)
            entry["tokens"][username] = token
            if make_active:
                entry["active_user"] = username

    def forget(self, url: str, username: str) -> None:
        """Drop one user's session (and make nobody active if it was the active user)."""
        with self._editing() as data:
            entry = self._master(data, url)
            entry["tokens"].pop(username, None)
            if entry.get("active_user") == username:
                entry.pop("active_user", None)
