"""Pure scheduling: pending and running allocations + agents' free slots ⇒ starts, preemptions, reasons.

`schedule` is the cluster pass (priority or fair share per pool, gang fits, zero-slot tasks apart);
`place` is the older first-come single-agent placement, kept for its callers. No I/O, no clock."""

from stalwart.scheduler.model import AgentState, Container, Decision, PoolPolicy, Request, Start
from stalwart.scheduler.placement import AgentCapacity, Assignment, PendingAllocation, place
from stalwart.scheduler.planner import schedule

__all__ = ["AgentCapacity", "AgentState", "Assignment", "Container", "Decision", "PendingAllocation", "PoolPolicy",
           "Request", "Start", "place", "schedule"]
