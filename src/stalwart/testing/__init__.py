"""Shipped test helpers: a real local cluster (master + agent processes on loopback) for integration tests."""

from stalwart.testing.cluster import LocalTestCluster, free_port

__all__ = ["LocalTestCluster", "free_port"]
