"""Whether an experiment's trials could ever fit its pool's agents: the warning `create`, `describe` and the UI show.

The decision is the pure scheduler's (`scheduler.planner.impossible`); an experiment that cannot fit is still
accepted, because agents that fit may join the pool later. A pool with no agents at all gets no warning: that is
a cluster still starting (the zero-setup one starts its agent after its master)."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.states import ExperimentState
from stalwart.config import views
from stalwart.db import tables as t
from stalwart.master.scheduling.jobs import EXPERIMENT
from stalwart.scheduler.planner import impossible

TERMINAL = {s.value for s in ExperimentState if s.terminal}


def pool_sizes(conn, pool: str) -> dict[int, int]:
    """Agent size (slots) → how many agents of the pool have it, as the scheduling pass counts them."""
    rows = conn.execute(sa.select(t.agents.c.slots, sa.func.count()).where(t.agents.c.resource_pool == pool)
                        .group_by(t.agents.c.slots)).all()
    return {int(slots): int(n) for slots, n in rows}


def slots_warning(conn, slots: int, pool: str) -> str | None:
    """A warning when no set of the pool's agents could hold `slots` slots (None when they could, or it has none)."""
    sizes = pool_sizes(conn, pool)
    if not sizes or impossible(slots, pool, sizes) is None:
        return None
    total = sum(size * n for size, n in sizes.items())
    return (f"resources.slots_per_trial: {slots} slots asked, but the largest agent in pool '{pool}' has {max(sizes)} "
            f"(the pool has {total} in all); the trials will wait until agents that fit join")


def experiment_warnings(conn, exp_row) -> list[str]:
    """The scheduling warnings of a live experiment, from its job's pool and the agents there now."""
    if exp_row["state"] in TERMINAL:
        return []
    pool = conn.execute(sa.select(t.jobs.c.resource_pool).where(
        t.jobs.c.type == EXPERIMENT, t.jobs.c.entity_id == exp_row["id"])).scalar()
    if pool is None:
        return []
    warning = slots_warning(conn, views.slots_per_trial(exp_row["config"]), pool)
    return [warning] if warning else []
