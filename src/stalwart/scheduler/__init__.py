"""Pure scheduling: pending and running allocations + agents' free slots ⇒ starts, preemptions, reasons.

`schedule` is the cluster pass (priority or fair share per pool, gang fits, zero-slot tasks apart). No I/O, no clock."""

from stalwart.scheduler.model import AgentState, Container, Decision, PoolPolicy, Request, Start
from stalwart.scheduler.planner import schedule

__all__ = ["AgentState", "Container", "Decision", "PoolPolicy", "Request", "Start", "schedule"]
