"""The web UI's read of what runs on the cluster's slots: the live allocations with their trial and experiment."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.api.states import AllocationState
from stalwart.db import tables as t
from stalwart.master.queries.rows import Conn, Row

_A = t.allocations.c
LIVE = (AllocationState.PENDING.value, AllocationState.ASSIGNED.value, AllocationState.RUNNING.value)


def live_runs(conn: Conn) -> list[Row]:
    """Every allocation pending, assigned or running: its id, agent, slots, state, trial, started_at, and the id
    and name of its trial's experiment (None for a command's)."""
    return list(conn.execute(
        sa.select(_A.id, _A.agent_id, _A.slot_ids, _A.state, _A.trial_id, _A.started_at,
                  t.trials.c.experiment_id, t.experiments.c.name.label("experiment_name"))
        .select_from(t.allocations.outerjoin(t.trials, t.trials.c.id == _A.trial_id)
                     .outerjoin(t.experiments, t.experiments.c.id == t.trials.c.experiment_id))
        .where(_A.state.in_(LIVE))).mappings().all())
