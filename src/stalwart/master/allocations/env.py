"""The environment every task container gets, whatever its kind: where the master is, who it is, its slots."""

from __future__ import annotations

import json
import urllib.parse

from stalwart.master.service import Master


def base_env(m: Master, alloc, token: str, owner: str, task_id: str, task_type: str, container: dict) -> dict:
    """The environment every task container gets: where the master is, who it is, its slots."""
    host, port = _host_port(m.settings.url)
    return {
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


def _host_port(url: str) -> tuple[str, str]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname or "", str(parsed.port or (443 if parsed.scheme == "https" else 80))
