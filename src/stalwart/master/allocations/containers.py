"""Containers of an allocation: one per agent it runs on (rank 0 = chief, also named on the allocation row).

A container's state is its own: ASSIGNED → RUNNING → TERMINATED, or KILLING while the master waits for
an agent to confirm it killed a container whose gang already ended. Slots are held until TERMINATED."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from stalwart.api.states import AllocationState as A
from stalwart.master.queries import agents as agent_rows, containers as container_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master

KILLING = "KILLING"
RENDEZVOUS_BASE = 29500


def rendezvous_port(allocation_id: str) -> int:
    """A port for the gang's torch.distributed rendezvous, spread over 29500..30499 by allocation id."""
    return RENDEZVOUS_BASE + zlib.crc32(allocation_id.encode()) % 1000


def add(conn: Conn, allocation_id: str, placed: Iterable[tuple[str, Sequence[int]]]) -> None:
    """One ASSIGNED container per (agent id, slot ids) the scheduler placed, chief first."""
    container_rows.add(conn, allocation_id, placed)


def of_allocation(conn: Conn, allocation_id: str) -> list[dict[str, Any]]:
    return container_rows.of_allocation(conn, allocation_id)


def on_agent(conn: Conn, agent_id: str) -> list[dict[str, Any]]:
    """This agent's containers that still hold slots."""
    return container_rows.live_on_agent(conn, agent_id)


def used_slots(conn: Conn) -> dict[str, set[int]]:
    return container_rows.used_slots(conn)


def set_state(conn: Conn, allocation_id: str, agent_id: str, state: str, **values: Any) -> None:
    container_rows.set_state(conn, allocation_id, agent_id, state, values)


def kill_others(m: Master, conn: Conn, allocation_id: str, except_agent: str | None) -> None:
    """Tell every other live container of the gang to die (the allocation itself is not marked killed)."""
    for c in of_allocation(conn, allocation_id):
        if c["agent_id"] != except_agent and c["state"] not in (A.TERMINATED.value, KILLING):
            set_state(conn, allocation_id, c["agent_id"], KILLING)
            m.signals.notify(f"agent:{c['agent_id']}")


def release(conn: Conn, allocation_id: str) -> None:
    """The allocation ended: containers not being killed give their slots back."""
    container_rows.release(conn, allocation_id, keep=[A.TERMINATED.value, KILLING])


def addresses(conn: Conn, allocation_id: str) -> list[str]:
    """The container agents' addresses in rank order (loopback agents → 127.0.0.1)."""
    conts = of_allocation(conn, allocation_id)
    hosts = agent_rows.hosts(conn, [c["agent_id"] for c in conts])
    return [_address(hosts.get(c["agent_id"]) or "") for c in conts]


def _address(host: str) -> str:
    return "127.0.0.1" if host in ("", "localhost", "::1") or host.startswith("127.") else host


def env_for(conn: Conn, alloc: Row, container: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """Extra env and info-file keys of one container of a gang."""
    conts = of_allocation(conn, alloc["id"])
    addrs = addresses(conn, alloc["id"])
    port = alloc["rendezvous_port"] or rendezvous_port(alloc["id"])
    rank = container["container_rank"]
    env = {
        "STALWART_CONTAINER_RANK": str(rank), "DET_CONTAINER_RANK": str(rank),
        "STALWART_NUM_CONTAINERS": str(len(conts)),
        "STALWART_CONTAINER_ADDRS": json.dumps(addrs), "DET_CONTAINER_ADDRS": json.dumps(addrs),
        "STALWART_RENDEZVOUS_PORT": str(port),
        "STALWART_SLOTS_TOTAL": str(alloc["slots"]),
    }
    info = {"container_rank": rank, "container_addrs": addrs, "slot_ids": list(container["slot_ids"] or []),
            "num_containers": len(conts), "rendezvous_port": port}
    return env, info
