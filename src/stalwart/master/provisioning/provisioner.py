"""One provisioning pass per elastic pool (at most every `PASS_INTERVAL_S`), called after each scheduling pass.

1. List the pool's instances in its cloud (no database transaction is held during a cloud call).
2. Follow each row: its agent registered (RUNNING), holds work or is idle since when, the cloud took it back or it
   was terminated by someone else (its agent's runs are lost the way a lost agent's are: re-queued, resumed from
   their checkpoints, uncounted), an instance the provisioner terminates is gone.
3. `rm.elastic.decide` with the pool's PENDING gangs' slots: instances to terminate (rows TERMINATING with the
   reason, their agents disabled so nothing new lands there) and how many to launch (a row each, with a fresh
   single-use join credential of which only the hash is kept, valid for max_agent_starting_period).
4. Terminate and launch in the cloud; a launch the cloud refuses ends its rows with the reason.
Each pass's decision is kept (the last `DECISIONS_KEPT` per pool) for `describe`."""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from stalwart.api.states import AllocationState as A
from stalwart.config.master import PoolConfig
from stalwart.config.provider import ProviderConfig
from stalwart.master.allocations import containers, lifecycle
from stalwart.master.identity import tokens
from stalwart.master.provisioning import clouds
from stalwart.master.queries import (
    agent_credentials,
    agents as agent_rows,
    allocations as allocation_rows,
    instances as rows,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master, new_id, now
from stalwart.rm.elastic import (
    Instance,
    InstanceState,
    PoolLimits,
    Provider,
    ProviderError,
    TrackedInstance,
    decide,
)

log = logging.getLogger(__name__)

PASS_INTERVAL_S = 2.0
DECISIONS_KEPT = 20
LIST_GRACE_S = 15.0  # a launched instance the cloud does not list yet is taken as starting this long
Cloud = dict[str, Instance]


@dataclass(frozen=True)
class Record:
    """One pass's decision as `describe` shows it: when, the instances launched and terminated (with the reason),
    and what else the pass noticed."""

    at: float
    launched: tuple[str, ...] = ()
    terminated: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Minted:
    instance_id: str
    agent_id: str
    credential: str


def limits_of(provider: ProviderConfig) -> PoolLimits:
    return PoolLimits(provider.min_instances, provider.max_instances, provider.instance_slots, provider.max_idle_s,
                      provider.max_starting_s)


def decisions(m: Master, pool: str) -> list[Record]:
    """The pool's last decisions, newest first."""
    kept: deque[Record] = m.engine_links.get(f"provisioning-decisions:{pool}") or deque()
    return list(reversed(kept))


def _remember(m: Master, pool: str, record: Record) -> None:
    if not (record.launched or record.terminated or record.notes):
        return
    kept = m.engine_links.setdefault(f"provisioning-decisions:{pool}", deque(maxlen=DECISIONS_KEPT))
    if record.notes and not (record.launched or record.terminated) and kept and kept[-1].notes == record.notes:
        return  # the same standing note as last pass
    kept.append(record)


def elastic_pools(m: Master) -> list[PoolConfig]:
    """The pools of the master config that have a provider."""
    return [p for p in m.settings.cluster.pools if p.provider is not None]


def provision(m: Master) -> None:
    """A pass over every elastic pool whose last one is `PASS_INTERVAL_S` old."""
    for pool in elastic_pools(m):
        if pool.provider is None:
            continue
        key = f"provisioning:{pool.name}"
        if now() - m.engine_state.get(key, 0.0) < PASS_INTERVAL_S:
            continue
        m.engine_state[key] = now()
        try:
            _pass(m, pool, pool.provider)
        except ProviderError as err:
            log.warning("elastic pool %s: %s", pool.name, err)
            _remember(m, pool.name, Record(now(), notes=(f"the cloud could not be asked: {err}",)))


def _pass(m: Master, pool: PoolConfig, provider: ProviderConfig) -> None:
    cloud_api = clouds.provider_of(m, pool)
    cloud = {i.id: i for i in cloud_api.list()}
    at = now()
    with m.db.begin() as conn:
        tracked, notes, leftovers = _follow(m, conn, pool.name, cloud, at)
        pending = [r["slots"] for r in allocation_rows.live_with_jobs(conn)
                   if r["state"] == A.PENDING.value and (r["resource_pool"] or "default") == pool.name]
        decision = decide(limits_of(provider), pending, tracked, at)
        ending = [(_start_termination(m, conn, instance_id, reason, at), reason)
                  for instance_id, reason in decision.terminate]
        minted = [_mint(conn, pool.name, provider, at) for _ in range(decision.launch)]
    for provider_id, reason in ending:
        if provider_id is not None:
            log.info("elastic pool %s: terminating %s: %s", pool.name, provider_id, reason)
    try:
        cloud_api.terminate([*(pid for pid, _ in ending if pid is not None), *leftovers])
    except ProviderError as err:  # the rows stay TERMINATING: the next pass asks again
        log.warning("elastic pool %s: %s", pool.name, err)
        notes.append(f"terminating failed (asked again next pass): {err}")
    launched = _launch(m, cloud_api, pool.name, provider, minted) if minted else []
    _remember(m, pool.name, Record(at, tuple(launched), tuple((pid or "?", why) for pid, why in ending),
                                   (*notes, *decision.notes)))


def _follow(m: Master, conn: Conn, pool: str, cloud: Cloud,
            at: float) -> tuple[list[TrackedInstance], list[str], list[str]]:
    """Bring the pool's rows up to what the cloud and the agents say: the live ones as `decide` takes them, notes,
    and the cloud ids to terminate (again): those whose termination the cloud has not started yet, and those taken
    back that the cloud still keeps (GCE keeps a preempted one stopped, with its disk)."""
    tracked: list[TrackedInstance] = []
    notes: list[str] = []
    leftovers: list[str] = []
    for row in rows.live(conn, pool):
        inst = cloud.get(row["provider_id"] or "")
        gone = _gone_why(row, inst, at)
        if row["state"] == rows.TERMINATING:
            if gone is not None or (inst is not None and inst.state == InstanceState.TERMINATED):
                _end(m, conn, row, row["reason"], at)
            elif inst is not None and inst.state.live:
                leftovers.append(inst.id)  # the last termination call did not reach the cloud
            continue
        if gone is not None:
            notes.append(f"{row['provider_id'] or row['id']}: {gone}; its agent's runs resume elsewhere")
            log.warning("elastic pool %s: instance %s: %s", pool, row["provider_id"], gone)
            _end(m, conn, row, gone, at)
            if inst is not None and (inst.state != InstanceState.TERMINATED or inst.spot_interrupted):
                leftovers.append(inst.id)
            continue
        tracked.append(_track(conn, row, inst, at))
    return tracked, notes, leftovers


def _gone_why(row: Row, inst: Instance | None, at: float) -> str | None:
    """Why the instance is gone without the provisioner asking (None: it is not, as far as anyone can tell)."""
    if inst is not None:
        if inst.state.live:
            return None
        return ("spot interruption: the cloud took the instance back" if inst.spot_interrupted
                else "the instance was terminated outside the provisioner")
    age = at - row["launched_at"]
    if row["provider_id"] is None:  # the launch call never answered (the master stopped during it)
        return "its launch never answered" if age > LIST_GRACE_S * 4 else None
    return "the cloud no longer lists the instance" if age > LIST_GRACE_S else None


def _track(conn: Conn, row: Row, inst: Instance | None, at: float) -> TrackedInstance:
    """The row as `decide` takes it, after noting its agent's registration and whether it holds work."""
    changes: dict[str, Any] = {}
    registered = row["registered_at"] is not None
    if not registered and agent_rows.find(conn, row["agent_id"]) is not None:
        registered = True
        changes.update(registered_at=at, state=rows.RUNNING)
    idle_since = row["idle_since"]
    if registered:
        busy = bool(containers.on_agent(conn, row["agent_id"]))
        idle_since = None if busy else (idle_since or at)
        if idle_since != row["idle_since"]:
            changes["idle_since"] = idle_since
    if changes:
        rows.update(conn, row["id"], changes)
    state = inst.state if inst is not None else InstanceState.STARTING
    return TrackedInstance(row["id"], state, row["launched_at"], registered, idle_since)


def _end(m: Master, conn: Conn, row: Row, reason: str | None, at: float) -> None:
    """The instance is gone: its agent is disconnected and cut off, and what it ran is lost (re-queued)."""
    agent_id = row["agent_id"]
    for c in containers.on_agent(conn, agent_id):
        lifecycle.lose_container(m, conn, c["allocation_id"], agent_id)
    agent_rows.update(conn, agent_id, {"connected": False, "enabled": False})
    if agent_credentials.revoke(conn, agent_id, at=at, reenroll=False):
        m.agent_credential_cache.clear()
    rows.update(conn, row["id"], {"state": rows.TERMINATED, "ended_at": at, "reason": reason, "idle_since": None,
                                  "join_token_hash": None, "join_expires_at": None})


def _start_termination(m: Master, conn: Conn, instance_id: str, reason: str, at: float) -> str | None:
    """Mark the row TERMINATING with the reason; its agent takes no new work. The cloud id to terminate."""
    rows.update(conn, instance_id, {"state": rows.TERMINATING, "reason": reason, "join_token_hash": None,
                                    "join_expires_at": None})
    row = rows.get(conn, instance_id)
    agent_rows.update(conn, row["agent_id"], {"enabled": False})
    m.signals.notify(f"agent:{row['agent_id']}")
    if row["provider_id"] is None:
        _end(m, conn, row, reason, at)
    provider_id: str | None = row["provider_id"]
    return provider_id


def _mint(conn: Conn, pool: str, provider: ProviderConfig, at: float) -> _Minted:
    """A row for an instance about to be launched, with its agent id and join credential (only the hash kept)."""
    instance_id = new_id()
    agent_id = f"{pool}-{instance_id[:12]}"
    credential = tokens.new_agent_credential()
    rows.insert(conn, {"id": instance_id, "pool": pool, "state": rows.STARTING, "launched_at": at,
                       "agent_id": agent_id, "join_token_hash": tokens.credential_hash(credential),
                       "join_expires_at": at + provider.max_starting_s})
    return _Minted(instance_id, agent_id, credential)


def _launch(m: Master, cloud_api: Provider, pool: str, provider: ProviderConfig, minted: list[_Minted]) -> list[str]:
    """Launch one instance per minted row and record the cloud's ids; rows the cloud refused end with the reason."""
    failure: str | None = None
    got: list[Instance] = []
    try:
        got = cloud_api.launch(len(minted), lambda i: clouds.user_data(m, pool, provider, minted[i].agent_id,
                                                                       minted[i].credential))
    except ProviderError as err:
        failure = f"the cloud refused the launch: {err}"
        log.warning("elastic pool %s: %s", pool, failure)
    with m.db.begin() as conn:
        for n, mint in enumerate(minted):
            if n < len(got):
                rows.update(conn, mint.instance_id, {"provider_id": got[n].id})
            else:
                why = failure or "the cloud answered fewer instances than asked"
                _end(m, conn, rows.get(conn, mint.instance_id), why, now())
    if got:
        log.info("elastic pool %s: launched %s", pool, ", ".join(i.id for i in got))
    return [i.id for i in got]
