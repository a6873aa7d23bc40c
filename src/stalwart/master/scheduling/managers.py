"""Which resource manager serves each pool (`resource_manager.type`), and the two steps of a scheduling pass that
are theirs: `reconcile` (what changed on the engine's side) and `place` (hand each manager its pools' gangs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stalwart.api.errors import ConfigError, NotFoundError
from stalwart.api.states import AllocationState as A
from stalwart.master.queries.rows import Conn
from stalwart.master.scheduling import k8s_submit, placing, slurm_submit
from stalwart.master.scheduling.agent_manager import AgentManager
from stalwart.master.scheduling.k8s_manager import KubernetesManager
from stalwart.master.scheduling.slurm_manager import SlurmManager
from stalwart.master.service import Master
from stalwart.rm import Gang, ResourceManager

Factory = Callable[[Master, Conn, Sequence[str]], ResourceManager]
FACTORIES: dict[str, Factory] = {"agent": AgentManager, "slurm": SlurmManager, "kubernetes": KubernetesManager}
"""`resource_manager.type` → its implementation, opened on (master, connection, its pools)."""


def pool_types(m: Master) -> dict[str, str]:
    """Pool name → the type of the manager that serves it (today the cluster's one `resource_manager.type`)."""
    return {p.name: m.settings.cluster.resource_manager for p in m.settings.cluster.pools}


def open_all(m: Master, conn: Conn) -> list[ResourceManager]:
    """One manager per type in use, each with its pools; the cluster's own type first."""
    by_type: dict[str, list[str]] = {m.settings.cluster.resource_manager: []}
    for pool, kind in pool_types(m).items():
        by_type.setdefault(kind, []).append(pool)
    out = []
    for kind, pools in by_type.items():
        factory = FACTORIES.get(kind)
        if factory is None:
            raise ConfigError(f"resource_manager.type: {kind!r} has no implementation in this master; it runs: "
                              f"{', '.join(sorted(FACTORIES))}")
        out.append(factory(m, conn, pools))
    return out


def for_pool(m: Master, conn: Conn, pool: str) -> ResourceManager:
    """The manager that serves `pool`."""
    for manager in open_all(m, conn):
        if pool in manager.pools():
            return manager
    raise NotFoundError(f"resource pool {pool} not found; the pools are {', '.join(m.settings.cluster.pool_names)}")


def reconcile(m: Master, conn: Conn) -> None:
    for manager in open_all(m, conn):
        manager.reconcile()


def split(managers: Sequence[ResourceManager], gangs: Sequence[Gang]) -> list[list[Gang]]:
    """Each manager's gangs; a run of a pool no manager serves (its job gone, or its pool since removed from the
    config) stays with the first, the cluster's own manager, which has always held its place."""
    served = {pool: i for i, manager in enumerate(managers) for pool in manager.pools()}
    out: list[list[Gang]] = [[] for _ in managers]
    for g in gangs:
        out[served.get(g.pool, 0)].append(g)
    return out


def place(m: Master, conn: Conn) -> None:
    """Hand every manager that has a PENDING gang all of its live gangs."""
    gangs = placing.live_gangs(conn)
    if not any(g.state == A.PENDING.value for g in gangs):
        return
    managers = open_all(m, conn)
    for manager, mine in zip(managers, split(managers, gangs), strict=True):
        if any(g.state == A.PENDING.value for g in mine):
            manager.submit(mine)


def check_new_work(m: Master, conn: Conn, config: Mapping[str, Any], pool: str, owner: str,
                   project_id: int | None) -> None:
    """Refuse (400) new work that its pool's manager could never run, naming the fix. Slurm: its owner has no OS
    user to run as, or only a root `user_name` where root tasks are not allowed, or it names an image where jobs
    run processes. Kubernetes: it names no image, or its slots do not split evenly into pods."""
    kind = pool_types(m).get(pool)
    if kind == "slurm":
        why = slurm_submit.refusal(conn, m.settings.cluster.slurm, dict(config), owner, project_id,
                                   m.settings.cluster.root_tasks_allowed(pool))
        engine = "Slurm jobs"
    elif kind == "kubernetes":
        slots = int((config.get("resources") or {}).get("slots_per_trial") or (config.get("resources") or {})
                    .get("slots") or 1)
        why = k8s_submit.refusal(m, dict(config), pool, slots)
        engine = "Kubernetes pods"
    else:
        return
    if why is not None:
        raise ConfigError(f"resources.resource_pool: pool {pool!r} runs its work as {engine}, and {why}")
