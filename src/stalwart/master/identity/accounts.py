"""Accounts: the bootstrap users, logging in, and each change to a user (every one ends what it must at once).

On its first start a master creates `admin` (an admin) and `determined` (not one), each with the master
config's `security.initial_user_password` (empty unless set). A master listening beyond loopback refuses to
start while any active account has an empty password (`refuse_open_accounts`).

Every password check and hash runs through the master's `login_guard`: at most a few argon2id checks at once,
and logins (and a user's check of their own current password) under the back-off of failed logins per user
name and per client address (429 while it lasts). An unknown name costs one argon2id check, as a known one does.
"""

from __future__ import annotations

import ipaddress
import time
from typing import Any

from stalwart.api.errors import AuthError, ConfigError, ForbiddenError, InvalidStateError, NotFoundError
from stalwart.master.identity import login_guard, passwords, sessions
from stalwart.master.queries import users as q
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master

BOOTSTRAP = (("admin", True), ("determined", False))
_BOOTSTRAPPED = "users_bootstrapped"


def bootstrap(m: Master) -> None:
    """Create the bootstrap accounts, once per database (deleting or renaming them later does not bring them back)."""
    initial = m.settings.cluster.security.initial_user_password
    stored = passwords.hash_credential(passwords.salt_and_hash(initial)) if initial else None
    with m.db.begin() as conn:
        if m.cluster_info(conn, _BOOTSTRAPPED) is not None:
            return
        for name, admin in BOOTSTRAP:
            if q.by_name(conn, name) is None:
                q.insert_user(conn, username=name, display_name=None, password_hash=stored, admin=admin, active=True,
                              created_at=time.time())
        m.set_cluster_info(conn, _BOOTSTRAPPED, "1")


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_open_accounts(m: Master) -> None:
    """A master reachable beyond loopback must not have an active account with an empty password."""
    if is_loopback(m.settings.host):
        return
    with m.db.begin() as conn:
        names = q.active_without_password(conn)
    if names:
        raise ConfigError(
            f"refusing to listen on {m.settings.host}: the active account(s) {', '.join(names)} have an empty "
            "password, so anyone who reaches the port could log in. Set one with `stalwart user change-password "
            "NAME` against a master on 127.0.0.1, or start the master once with security.initial_user_password "
            "in its config (used when the accounts are first created), or deactivate the account "
            "(`stalwart user deactivate NAME`)")


# -- logging in ---------------------------------------------------------------------------------
async def login(m: Master, username: str, password: str, is_hashed: bool, *, client: str | None = None,
                kind: str = "login", lifespan: float = sessions.LOGIN_LIFESPAN_S) -> tuple[str, Row]:
    """Check a user's password (in the login guard's pool: argon2 is slow on purpose); a new session's token and
    the user. Bad name and bad password read the same (401); an inactive user is refused (403); a name or a
    `client` address in back-off after failed logins, or too many checks at once, answer 429."""
    with m.db.begin() as conn:
        user = q.by_name(conn, username)
    cred = passwords.credential(password, is_hashed)
    ok = await login_guard.guard_of(m).check(username, client, lambda: _matches(user, cred))
    if user is None or not ok:
        raise AuthError("invalid credentials: wrong user name or password")
    if not user["active"]:
        raise ForbiddenError(f"user {username} is not active: an admin can activate it "
                             f"(`stalwart user activate {username}`)")
    with m.db.begin() as conn:
        token, _ = sessions.open_session(conn, user["id"], kind, lifespan=lifespan)
        q.update_user(conn, user["id"], last_auth_at=time.time())
        user = q.by_name(conn, username)
    assert user is not None
    return token, user


def _matches(user: Row | None, cred: str) -> bool:
    """Does `cred` log in as `user` (run in a worker thread)? One argon2id check even for no user, so a name that
    does not exist takes as long to refuse as a wrong password; a single-sign-on user has no password here."""
    if user is None:
        passwords.verify(passwords.DUMMY_HASH, cred)
        return False
    return passwords.verify(user["password_hash"], cred) and not user["remote"]


# -- users ----------------------------------------------------------------------------------
def get_user(conn: Conn, username: str) -> Row:
    user = q.by_name(conn, username)
    if user is None:
        raise NotFoundError(f"user {username} not found (list them with `stalwart user list`)")
    return user


async def create_user(m: Master, *, username: str, display_name: str | None, admin: bool, active: bool,
                      password: str | None, is_hashed: bool) -> Row:
    cred = passwords.credential(password or "", is_hashed)
    stored = await login_guard.guard_of(m).checks.run(passwords.hash_credential, cred, bounded=False)
    with m.db.begin() as conn:
        if q.by_name(conn, username) is not None:
            raise InvalidStateError(f"user {username} already exists")
        q.insert_user(conn, username=username, display_name=display_name, password_hash=stored, admin=admin,
                      active=active, created_at=time.time())
        return get_user(conn, username)


def edit_user(m: Master, username: str, changes: dict[str, Any]) -> Row:
    """Apply `changes` (display_name, admin, active); deactivating ends every session and token of the user."""
    with m.db.begin() as conn:
        user = get_user(conn, username)
        if changes.get("admin") is False or changes.get("active") is False:
            _keep_an_admin(conn, user, changes)
        if changes:
            q.update_user(conn, user["id"], modified_at=time.time(), **changes)
        if changes.get("active") is False:
            q.revoke_sessions_of(conn, user["id"], time.time())
        user = get_user(conn, username)
    sessions.forget_all(m)
    return user


def _keep_an_admin(conn: Conn, user: Row, changes: dict[str, Any]) -> None:
    if not user["admin"] or not user["active"]:
        return
    others = [u for u in q.all_users(conn) if u["admin"] and u["active"] and u["id"] != user["id"]]
    if not others:
        raise InvalidStateError(f"{user['username']} is the last active admin: make another user an admin first")


async def set_password(m: Master, username: str, password: str, is_hashed: bool) -> None:
    """Set a user's password. Sessions stay (Determined's behaviour); tokens stay."""
    cred = passwords.credential(password, is_hashed)
    stored = await login_guard.guard_of(m).checks.run(passwords.hash_credential, cred, bounded=False)
    with m.db.begin() as conn:
        user = get_user(conn, username)
        q.update_user(conn, user["id"], password_hash=stored, modified_at=time.time())


async def check_password(m: Master, username: str, password: str, is_hashed: bool) -> bool:
    """Is this the user's current password? A guess like a login's: under the back-off of `username` (429)."""
    with m.db.begin() as conn:
        user = get_user(conn, username)
    cred = passwords.credential(password, is_hashed)
    return await login_guard.guard_of(m).check(username, None, lambda: passwords.verify(user["password_hash"], cred))
