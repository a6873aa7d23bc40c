"""Elastic agents (issue 31): pools whose agents run on cloud instances the master starts and stops.

`provider` is the small interface a cloud implements (launch, list, terminate; `Instance` as the master sees one),
`decide` the pure decision of one provisioning pass (how many instances to launch, which to terminate and why),
`aws` (boto3 EC2) and `gcp` (the Compute Engine v1 REST API) the two clouds. The master's side, which mints each
instance's join credential and records the decisions, is `master/provisioning/`. docs/elastic-agents.md."""

from stalwart.rm.elastic.decide import Decision, PoolLimits, TrackedInstance, decide
from stalwart.rm.elastic.provider import Instance, InstanceState, Provider, ProviderError

__all__ = ["Decision", "Instance", "InstanceState", "PoolLimits", "Provider", "ProviderError", "TrackedInstance",
           "decide"]
