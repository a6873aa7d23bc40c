"""Whether an experiment's trials could ever fit its pool's agents: the warning `create`, `describe` and the UI show.

The decision is the pure scheduler's (`scheduler.planner.impossible`); an experiment that cannot fit is still
accepted, because agents that fit may join the pool later. A pool with no agents at all gets no warning: that is
a cluster still starting (the zero-setup one starts its agent after its master)."""

from __future__ import annotations

from stalwart.api.states import ExperimentState
from stalwart.config import views
from stalwart.master.queries import agents as agent_rows, jobs as job_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.scheduling.jobs import EXPERIMENT
from stalwart.scheduler.planner import impossible

TERMINAL = {s.value for s in ExperimentState if s.terminal}


def pool_sizes(conn: Conn, pool: str) -> dict[int, int]:
    """Agent size (slots) → how many agents of the pool have it, as the scheduling pass counts them."""
    return agent_rows.size_counts(conn, pool)


def slots_warning(conn: Conn, slots: int, pool: str) -> str | None:
    """A warning when no set of the pool's agents could hold `slots` slots (None when they could, or it has none)."""
    sizes = pool_sizes(conn, pool)
    if not sizes or impossible(slots, pool, sizes) is None:
        return None
    total = sum(size * n for size, n in sizes.items())
    return (f"resources.slots_per_trial: {slots} slots asked, but the largest agent in pool '{pool}' has {max(sizes)} "
            f"(the pool has {total} in all); the trials will wait until agents that fit join")


def experiment_warnings(conn: Conn, exp_row: Row) -> list[str]:
    """The scheduling warnings of a live experiment, from its job's pool and the agents there now."""
    if exp_row["state"] in TERMINAL:
        return []
    pool = job_rows.pool_of(conn, EXPERIMENT, exp_row["id"])
    if pool is None:
        return []
    warning = slots_warning(conn, views.slots_per_trial(exp_row["config"]), pool)
    return [warning] if warning else []
