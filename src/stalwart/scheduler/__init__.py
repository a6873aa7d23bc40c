"""Pure placement: pending allocations + free slots ⇒ which allocation starts on which agent."""

from stalwart.scheduler.placement import AgentCapacity, Assignment, PendingAllocation, place

__all__ = ["AgentCapacity", "Assignment", "PendingAllocation", "place"]
