"""The environment every task container gets, whatever its kind: where the master is, who it is, its slots.

A task carries two credentials and nothing else of the master's: its allocation's token (trial-side calls)
and a session of its owner (STALWART_USER_TOKEN, Determined's DET_USER_TOKEN: the SDK inside the task acts with
the owner's rights), which ends with the allocation. Never the cluster token, never the master's home. Both are
masked in the task's stored logs (`secrets_of`), so a trial that prints them shows `********`."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from stalwart.master.allocations import registry_secrets
from stalwart.master.identity import sessions, tokens
from stalwart.master.queries import users as user_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master


def owner_session(m: Master, conn: Conn, alloc: Row, owner: str) -> str | None:
    """The owner's session for this allocation's tasks (None when the owner has no active account)."""
    return sessions.task_session(m, conn, owner, alloc["id"])


def secrets_of(m: Master, allocation_id: str) -> list[str]:
    """Every secret handed to the tasks of `allocation_id`: what the master masks in their stored logs
    (`logs.store_rows`). Keep it complete: a credential a start order gains must be listed here too (the registry
    credentials its container may be pulled with: `registry_secrets`)."""
    return [m.allocation_token(allocation_id), sessions.task_token(m, allocation_id),
            tokens.service_token(m.secret, allocation_id), *registry_secrets.of_allocation(m, allocation_id)]


def run_as(conn: Conn, owner: str, project_id: int | None) -> dict[str, Any] | None:
    """The OS user the task runs as on a root agent: the owner's link, else its workspace's default, else None."""
    return user_rows.agent_user_of(conn, owner, project_id)


def base_env(m: Master, alloc: Row, token: str, owner: str, task_id: str, task_type: str,
             container: Mapping[str, Any], user_token: str | None) -> dict[str, str]:
    """The environment every task container gets: where the master is, who it is, its slots."""
    host, port = _host_port(m.settings.url)
    env = {
        "STALWART_MASTER": m.settings.url,
        "STALWART_ALLOCATION_ID": alloc["id"],
        "STALWART_ALLOCATION_TOKEN": token,
        "DET_MASTER": m.settings.url,
        "DET_MASTER_HOST": host,
        "DET_MASTER_IP": host,
        "DET_MASTER_PORT": port,
        "DET_USE_TLS": "true" if m.settings.url.startswith("https") else "false",
        "DET_USER": owner,
        "DET_RESOURCES_ID": alloc["id"],
        "DET_CONTAINER_ID": alloc["id"],
        "DET_CLUSTER_ID": m.cluster_id,
        "DET_TASK_TYPE": task_type,
        "DET_TASK_ID": task_id,
        "DET_ALLOCATION_ID": alloc["id"],
        "DET_SESSION_TOKEN": token,
        "DET_AGENT_ID": str(container["agent_id"]),
        "DET_SLOT_IDS": json.dumps(list(container["slot_ids"] or [])),
        "DET_SLOT_TYPE": "cpu",
        "DET_RESOURCES_TYPE": "local-process",
    }
    if user_token is not None:
        env["STALWART_USER_TOKEN"] = env["DET_USER_TOKEN"] = user_token
    return env


def _host_port(url: str) -> tuple[str, str]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname or "", str(parsed.port or (443 if parsed.scheme == "https" else 80))
