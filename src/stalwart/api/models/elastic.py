"""Elastic pools' instances and the provisioner's decisions (`GET /api/v1/resource-pools/{pool}/instances`,
`stalwart resource-pool describe`; docs/elastic-agents.md)."""

from __future__ import annotations

from pydantic import Field

from stalwart.api.models.common import Response, Timestamp


class ElasticInstance(Response):
    """One cloud instance the provisioner launched: STARTING (its agent has not registered), RUNNING (registered;
    `idleSince` set while it holds no work), TERMINATING (the provisioner asked the cloud to end it, `reason` says
    why) or TERMINATED (gone: `reason` is why, e.g. idle, never registered, a spot interruption)."""

    id: str = Field(description="the cloud's instance id (our own id until the launch call answered)")
    agentId: str
    state: str
    launchedAt: Timestamp
    registeredAt: Timestamp | None = None
    idleSince: Timestamp | None = None
    endedAt: Timestamp | None = None
    reason: str | None = None


class TerminatedByDecision(Response):
    instance: str
    reason: str


class ProvisionerDecision(Response):
    """One provisioning pass that did something or noticed something: when, the instances it launched and
    terminated (each with the reason), and its notes (a gang too large for the pool, the cloud unreachable)."""

    at: Timestamp
    launched: list[str] = Field(default_factory=list)
    terminated: list[TerminatedByDecision] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PoolInstances(Response):
    """A pool's provider (null: agents join it on their own) with its limits, its live instances and its last ended
    ones (newest first), and the provisioner's last decisions (newest first)."""

    pool: str
    provider: str | None = Field(default=None, description="aws or gcp; null for a pool without a provider")
    minInstances: int | None = None
    maxInstances: int | None = None
    instanceSlots: int | None = None
    instances: list[ElasticInstance] = Field(default_factory=list)
    decisions: list[ProvisionerDecision] = Field(default_factory=list)
