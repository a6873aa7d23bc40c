"""Passwords: what a client sends (Determined's salted SHA-512 of it, or the plain text) and its argon2id hash.

Determined's CLI and SDK send `sha512(salt + password)` with `isHashed: true` (and "" for an empty password).
Stalwart keeps argon2id of that same credential, so a Determined client and Stalwart's own log in the same way.
An empty password is kept as no hash at all (NULL): the bootstrap accounts start that way, and a master
listening beyond loopback refuses to start while an active account has one.

Each argon2id check holds 64 MiB for its duration: callers run them through `login_guard.PasswordChecks`, which
bounds how many run at once. A login for a name that does not exist checks against `DUMMY_HASH` (a hash of a
random secret made at start with the same parameters), so it costs what a wrong password of a real user costs.
"""

from __future__ import annotations

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

DETERMINED_SALT = "GubPEmmotfiK9TMD6Zdw"
MAX_PASSWORD = 1024  # characters, as the API's `Password` (api/models/users.py); the web form is held to it too
_HASHER = PasswordHasher()  # argon2id with the library's RFC 9106 low-memory profile (64 MiB, 3 passes)


def salt_and_hash(password: str) -> str:
    """Determined's client-side hash of a password ("" stays "")."""
    if password == "":
        return ""
    return hashlib.sha512((DETERMINED_SALT + password).encode()).hexdigest()


def credential(password: str, is_hashed: bool) -> str:
    """The credential the stored hash is of, from what the client sent."""
    return password if is_hashed else salt_and_hash(password)


def hash_credential(cred: str) -> str | None:
    """What to store for a credential: None for the empty password, else its argon2id hash (slow on purpose)."""
    return None if cred == "" else _HASHER.hash(cred)


DUMMY_HASH = _HASHER.hash(secrets.token_hex(32))
"""What a login for an unknown user name is checked against: no credential matches it (its secret is forgotten)."""


def verify(stored: str | None, cred: str) -> bool:
    """Does `cred` match the stored hash (slow on purpose: call it off the event loop)."""
    if stored is None:
        return cred == ""
    try:
        return _HASHER.verify(stored, cred)
    except (VerificationError, InvalidHashError):
        return False
