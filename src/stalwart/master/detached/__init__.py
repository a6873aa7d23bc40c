"""Detached experiments (Determined's core_v2 "unmanaged" mode): a script outside the cluster reports as a trial.

Its face (what routes may import): `experiments` (make or find a detached experiment by its external id; refuse what
only the cluster can do to one) and `runs` (make or find a trial, start a run and hand out its token, heartbeats,
the end of a run). It builds on the experiments domain (an experiment's end, a trial's latest checkpoint).

Importing it registers the unmanaged task kind with `allocations` (what the end of a detached run means) and its step
of the scheduling pass (runs whose heartbeats stopped, or that were killed, end)."""

from typing import Any

from stalwart.master.allocations import kinds
from stalwart.master.detached import runs
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master


def _never_started(m: Master, conn: Any, alloc: Any, container: Any) -> dict[str, Any]:
    raise RuntimeError(f"allocation {alloc['id']} is a detached script's run: no agent starts it")


kinds.register(kinds.TaskKind(kinds.UNMANAGED_TRIAL, start_order=_never_started, on_ended=runs.run_ended))
scheduling.register_step(runs.sweep)
