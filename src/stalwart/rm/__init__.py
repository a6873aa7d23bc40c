"""Resource managers: the one interface every engine that runs allocations implements (docs/resource-managers.md).

`base` is the pure contract (an ABC and the frozen values it takes and gives); the agent manager, the first
implementation, lives in the master (`master/scheduling/agent_manager.py`) because it works on the master's rows.
Every implementation passes `stalwart.testing.rm_conformance`."""

from stalwart.rm.base import (
    Gang,
    NodeContainer,
    PoolCapacity,
    QueueEntry,
    ResourceManager,
    RunStatus,
    serves,
)

__all__ = ["Gang", "NodeContainer", "PoolCapacity", "QueueEntry", "ResourceManager", "RunStatus", "serves"]
