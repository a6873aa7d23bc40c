"""Which session a CLI command or an SDK login uses with a master (Determined's `login_with_cache` order).

1. A user named explicitly (`stalwart -u NAME`, `login(user=...)`), else `STALWART_USER` / `DET_USER` when
   `STALWART_PASSWORD` / `DET_PASS` is set too: that user's kept session if the master still takes it, else a
   login with the password given (or asked for, by the CLI); the new session is kept in the auth file.
2. `STALWART_USER_TOKEN` / `DET_USER_TOKEN`: a session handed over as it is (a task's owner session).
3. The auth file's active user for this master (`stalwart user login`, `stalwart up`).
Otherwise no session: user routes answer 401 "not logged in".
"""

from __future__ import annotations

import os
from collections.abc import Callable

from stalwart.api.errors import AuthError, StalwartError
from stalwart.client.api import Client
from stalwart.client.auth_file import AuthFile


def env_user() -> tuple[str | None, str | None]:
    """The user and password scripts set in the environment."""
    user = os.environ.get("STALWART_USER") or os.environ.get("DET_USER")
    password = os.environ.get("STALWART_PASSWORD")
    if password is None:
        password = os.environ.get("DET_PASS")
    return user or None, password


def env_token() -> str | None:
    return os.environ.get("STALWART_USER_TOKEN") or os.environ.get("DET_USER_TOKEN") or None


def still_valid(url: str, token: str) -> bool:
    """Does the master still take this session (`GET /api/v1/me` answers 200)?"""
    try:
        with Client(url, session_token=token, timeout=10) as probe:
            probe.me()
    except AuthError:
        return False
    return True


def log_in(url: str, username: str, password: str, store: AuthFile | None = None, *,
           make_active: bool = True) -> str:
    """A new session of `username` (kept in the auth file); AuthError/ForbiddenError from the master as they are."""
    with Client(url, timeout=60) as c:
        token = c.login(username, password).token
    (store or AuthFile()).store(url, username, token, make_active=make_active)
    return token


def session_for(url: str, user: str | None = None, password: str | None = None, *,
                ask_password: Callable[[str], str] | None = None, store: AuthFile | None = None,
                make_active: bool = True) -> str | None:
    """The session token to use with the master at `url`, or None (see the module's order)."""
    store = store or AuthFile()
    if user is None:
        user, env_password = env_user()
        if user is None or env_password is None:  # DET_USER alone names a task's owner, not a login
            return env_token() or _active(url, store)
        password = password if password is not None else env_password
    kept = store.token(url, user)
    if kept is not None and _valid_or_unknown(url, kept):
        if make_active:
            store.store(url, user, kept)
        return kept
    if password is None:
        if ask_password is None:
            raise AuthError(f"not logged in as {user}: give the password (STALWART_PASSWORD or DET_PASS), "
                            f"or run `stalwart user login {user}`")
        password = ask_password(user)
    return log_in(url, user, password, store, make_active=make_active)


def _active(url: str, store: AuthFile) -> str | None:
    user = store.active_user(url)
    return store.token(url, user) if user else None


def _valid_or_unknown(url: str, token: str) -> bool:
    try:
        return still_valid(url, token)
    except StalwartError:  # the master is away: let the real call say so
        return True
