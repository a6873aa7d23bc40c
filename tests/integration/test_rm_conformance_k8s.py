"""The resource-manager conformance suite (`stalwart.testing.rm_conformance`) against the Kubernetes manager, on
this run's Kubernetes API TEST DOUBLE (tests/k8s_server.py; each check in its own namespace, on its own nodes).

The pods are real objects of the double, placed by its scheduler on the check's nodes (cpu slots, one CPU each);
the world (tests/k8s_server.py's `K8sWorld`) holds each pod with a stand-in command and plays the one-shot agents
in-process, as the Slurm world does. The real pod agent runs in tests/e2e/test_k8s_trials.py. Losing a node is the
double's node removal (its pods are force-deleted)."""

from __future__ import annotations

import pytest

from k8s_server import K8sWorld
from stalwart.testing.rm_conformance import CHECKS, run_check


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_kubernetes_manager_conforms(check, tmp_path, k8s_space):
    if (why := run_check(K8sWorld(tmp_path, k8s_space), check)) is not None:
        pytest.skip(why)
