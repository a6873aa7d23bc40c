"""Shells: an sshd per task, reached by `ssh` through the master's proxy (`stalwart shell open`).

Each shell has its own ed25519 key pair, made when it starts. Nothing secret is stored: the private key is derived
from the master's secret and a random key id (`HMAC(secret, "shell-key:" + key id)` is the key's seed). The key
id and the public key are the arguments of the shell's entrypoint (`python3 -m stalwart.harness.shell_task
--public-key ... --key-id ...`), which the task needs anyway, so `shell describe` and `cmd config` show nothing
secret. Only the shell's owner fetches the private key (`private_key_of`, GET /api/v1/shells/{id}/key): not even an
admin, as the key opens a session that runs code as the owner. Fetching it counts as the shell's activity (its
owner is about to open it), so a shell with a short idle_timeout lives until the session opens.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as pysecrets
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from stalwart.api.errors import NotFoundError
from stalwart.master.allocations.env import run_as
from stalwart.master.queries import allocations as allocation_rows, commands as command_rows
from stalwart.master.queries.rows import Row
from stalwart.master.service import Master
from stalwart.master.tasks import idle

KIND = "shell"
TASK_MODULE = "stalwart.harness.shell_task"
KEY_ID_FLAG = "--key-id"
PUBLIC_KEY_FLAG = "--public-key"


def _private_key(m: Master, key_id: str) -> Ed25519PrivateKey:
    seed = hmac.new(m.secret.encode(), f"shell-key:{key_id}".encode(), hashlib.sha256).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_key_line(key: Ed25519PrivateKey, comment: str) -> str:
    """The OpenSSH public key line of `key` (`ssh-ed25519 AAAA... comment`)."""
    raw = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return f"{raw.decode()} {comment}"


def shaper(m: Master) -> Any:
    """The `shape` of a shell's config (tasks.starting): a new key id, and the entrypoint that serves sshd with the
    key's public half as its only authorized key (whatever entrypoint the config or a template gave is replaced)."""

    def shape(config: dict[str, Any]) -> dict[str, Any]:
        key_id = pysecrets.token_hex(16)
        public = public_key_line(_private_key(m, key_id), f"stalwart-shell-{key_id[:8]}")
        entrypoint = ["python3", "-m", TASK_MODULE, PUBLIC_KEY_FLAG, public, KEY_ID_FLAG, key_id]
        return {**config, "entrypoint": entrypoint,
                "description": config.get("description") or "Shell"}

    return shape


def _key_id_of(config: dict[str, Any]) -> str | None:
    argv = config.get("entrypoint") or []
    if not isinstance(argv, list) or KEY_ID_FLAG not in argv:
        return None
    at = argv.index(KEY_ID_FLAG) + 1
    return str(argv[at]) if at < len(argv) else None


def private_key_of(m: Master, shell_id: int, may_open: Callable[[Row], None]) -> dict[str, str | None]:
    """The shell's private key (OpenSSH format) and the OS user to log in as (None: the agent's own user), once
    `may_open(task)` has passed: the proxy's check, its owner alone (403 for anyone else, admins too); 404 for what
    is no shell."""
    with m.db.begin() as conn:
        try:
            task = command_rows.get(conn, shell_id)
        except NotFoundError:
            task = None
        if task is None or (task["kind"] or "command") != KIND:
            raise NotFoundError(f"shell {shell_id} not found (see `stalwart shell list`)")
        may_open(task)
        linked = run_as(conn, task["owner"], task["project_id"])
        running = allocation_rows.running_of_command(conn, shell_id)
    if running is not None:  # its owner is about to open it: the idle clock starts over (tasks/idle.py)
        idle.note_activity(m, running["id"])
    key_id = _key_id_of(task["config"])
    if key_id is None:
        raise NotFoundError(f"shell {shell_id} has no key: it was not started by `stalwart shell start`")
    pem = _private_key(m, key_id).private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                                serialization.NoEncryption())
    return {"private_key": pem.decode(), "user": str(linked["user"]) if linked else None}
