"""Containers of an allocation: one per agent it runs on (rank 0 = chief, also named on the allocation row).

A container's state is its own: ASSIGNED → RUNNING → TERMINATED, or KILLING while the master waits for
an agent to confirm it killed a container whose gang already ended. Slots are held until TERMINATED."""

from __future__ import annotations

import json
import zlib

import sqlalchemy as sa

from stalwart.api.states import AllocationState as A
from stalwart.db import tables as t
from stalwart.master.service import Master

KILLING = "KILLING"
RENDEZVOUS_BASE = 29500


def rendezvous_port(allocation_id: str) -> int:
    """A port for the gang's torch.distributed rendezvous, spread over 29500..30499 by allocation id."""
    return RENDEZVOUS_BASE + zlib.crc32(allocation_id.encode()) % 1000


def add(conn, allocation_id: str, containers) -> None:
    for rank, (agent_id, slot_ids) in enumerate(containers):
        conn.execute(t.allocation_containers.insert().values(
            allocation_id=allocation_id, container_rank=rank, agent_id=agent_id, slot_ids=list(slot_ids),
            state=A.ASSIGNED.value))


def of_allocation(conn, allocation_id: str) -> list[dict]:
    return [dict(r) for r in conn.execute(
        sa.select(t.allocation_containers).where(t.allocation_containers.c.allocation_id == allocation_id)
        .order_by(t.allocation_containers.c.container_rank)).mappings()]


def on_agent(conn, agent_id: str) -> list[dict]:
    """This agent's containers that still hold slots."""
    return [dict(r) for r in conn.execute(
        sa.select(t.allocation_containers).where(t.allocation_containers.c.agent_id == agent_id,
                                                 t.allocation_containers.c.state != A.TERMINATED.value)).mappings()]


def used_slots(conn) -> dict[str, set[int]]:
    used: dict[str, set[int]] = {}
    for row in conn.execute(sa.select(t.allocation_containers.c.agent_id, t.allocation_containers.c.slot_ids)
                            .where(t.allocation_containers.c.state != A.TERMINATED.value)):
        used.setdefault(row.agent_id, set()).update(row.slot_ids or [])
    return used


def set_state(conn, allocation_id: str, agent_id: str, state: str, **values) -> None:
    conn.execute(t.allocation_containers.update().where(
        t.allocation_containers.c.allocation_id == allocation_id, t.allocation_containers.c.agent_id == agent_id,
    ).values(state=state, **values))


def kill_others(m: Master, conn, allocation_id: str, except_agent: str | None) -> None:
    """Tell every other live container of the gang to die (the allocation itself is not marked killed)."""
    for c in of_allocation(conn, allocation_id):
        if c["agent_id"] != except_agent and c["state"] not in (A.TERMINATED.value, KILLING):
            set_state(conn, allocation_id, c["agent_id"], KILLING)
            m.signals.notify(f"agent:{c['agent_id']}")


def release(conn, allocation_id: str) -> None:
    """The allocation ended: containers not being killed give their slots back."""
    conn.execute(t.allocation_containers.update().where(
        t.allocation_containers.c.allocation_id == allocation_id,
        t.allocation_containers.c.state.notin_([A.TERMINATED.value, KILLING]),
    ).values(state=A.TERMINATED.value))


def addresses(conn, allocation_id: str) -> list[str]:
    """The container agents' addresses in rank order (loopback agents → 127.0.0.1)."""
    conts = of_allocation(conn, allocation_id)
    hosts = {r.id: r.address or r.hostname for r in conn.execute(
        sa.select(t.agents.c.id, t.agents.c.hostname, t.agents.c.address).where(
            t.agents.c.id.in_([c["agent_id"] for c in conts])))}
    return [_address(hosts.get(c["agent_id"]) or "") for c in conts]


def _address(host: str) -> str:
    return "127.0.0.1" if host in ("", "localhost", "::1") or host.startswith("127.") else host


def env_for(conn, alloc, container: dict) -> tuple[dict, dict]:
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
