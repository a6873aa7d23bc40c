"""A pool's instances and the provisioner's last decisions as the API shows them (`resource-pool describe`)."""

from __future__ import annotations

from stalwart.api.errors import NotFoundError
from stalwart.api.models.elastic import ElasticInstance, PoolInstances, ProvisionerDecision, TerminatedByDecision
from stalwart.master.provisioning import provisioner
from stalwart.master.queries import instances as rows
from stalwart.master.service import Master


def pool_instances(m: Master, pool: str) -> PoolInstances:
    """404 for a pool the master config does not have; a pool without a provider answers with no instances."""
    config = m.settings.cluster.pool(pool)
    if config is None:
        raise NotFoundError(f"resource pool {pool} not found; the pools are {', '.join(m.settings.cluster.pool_names)}")
    if config.provider is None:
        return PoolInstances(pool=pool)
    with m.db.begin() as conn:
        found = rows.recent(conn, pool)
    return PoolInstances(
        pool=pool, provider=config.provider.type, minInstances=config.provider.min_instances,
        maxInstances=config.provider.max_instances, instanceSlots=config.provider.instance_slots,
        instances=[ElasticInstance(id=r["provider_id"] or r["id"], agentId=r["agent_id"], state=r["state"],
                                   launchedAt=r["launched_at"], registeredAt=r["registered_at"],
                                   idleSince=r["idle_since"], endedAt=r["ended_at"], reason=r["reason"])
                   for r in found],
        decisions=[ProvisionerDecision(at=d.at, launched=list(d.launched), notes=list(d.notes),
                                       terminated=[TerminatedByDecision(instance=i, reason=why)
                                                   for i, why in d.terminated])
                   for d in provisioner.decisions(m, pool)])
