"""Every resource pool as `resource-pool list` (`GET /api/v1/resource-pools`) shows it: the config's pool, the type
of the manager that serves it, that manager's capacity of it now and how many of its live runs wait or hold slots.

Each manager is asked once (Slurm: one `scontrol show node`). A manager whose engine cannot be asked (Slurm's tools
missing, slurmctld away) does not fail the list: its pools come without capacity and with the reason."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from stalwart.api.states import AllocationState as A
from stalwart.config.master import PoolConfig
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import managers
from stalwart.master.service import Master
from stalwart.rm import PoolCapacity
from stalwart.rm.kubernetes import KubeError
from stalwart.rm.slurm import SlurmError


@dataclass(frozen=True)
class PoolState:
    """One pool now. `capacity` is None when its manager's engine could not be asked (`error` says why);
    `scheduler` is what orders its queue: the pool's `scheduler.type` where the master places the work (agent
    pools), else the engine's own (`slurm`)."""

    config: PoolConfig
    type: str
    scheduler: str
    capacity: PoolCapacity | None
    pending: int
    running: int
    error: str | None = None


def pool_states(m: Master, conn: Conn) -> list[PoolState]:
    """Every pool of the master config, in its order."""
    kinds: dict[str, str] = {}
    capacities: dict[str, PoolCapacity] = {}
    errors: dict[str, str] = {}
    counts: Counter[tuple[str, str]] = Counter()
    for manager in managers.open_all(m, conn):
        kinds.update((pool, manager.type) for pool in manager.pools())
        try:
            capacities.update((c.pool, c) for c in manager.capacity())
        except (SlurmError, KubeError) as err:
            errors.update((pool, f"the {manager.type} resource manager could not tell this pool's nodes: {err}")
                          for pool in manager.pools())
        for entry in manager.queue():
            counts[entry.pool, A.PENDING.value if entry.state == A.PENDING.value else A.RUNNING.value] += 1
    out = []
    for pool in m.settings.cluster.pools:
        kind = kinds.get(pool.name, m.settings.cluster.resource_manager)
        error = errors.get(pool.name)
        out.append(PoolState(pool, kind, pool.scheduler.type if kind == "agent" else kind,
                             None if error else capacities.get(pool.name, PoolCapacity(pool.name, 0, 0, 0, 0)),
                             counts[pool.name, A.PENDING.value], counts[pool.name, A.RUNNING.value], error))
    return out
