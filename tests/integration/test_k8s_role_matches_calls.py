"""deploy/kubernetes/role.yaml grants the master exactly the Kubernetes API calls its resource manager makes.

The manager runs through a trial's whole life in-process, on this run's Kubernetes API TEST DOUBLE
(tests/k8s_server.py), which records every call with its RBAC verb, resource and API group: the conformance checks
`capacity`, `start`, `kill` and `lost_node` (stalwart.testing.rm_conformance), each in its own namespace, and a run
whose pod fails before its agent joins (the master reads the log's tail). The namespaced calls must be what the
Role grants, the cluster-scoped ones what the ClusterRole grants, and all of them the lines of
deploy/kubernetes/api-calls.txt, which reviewers read against the Kubernetes API reference. With
STALWART_RECORD_K8S_CALLS=1 the test writes that file instead of comparing.

As in tests/integration/test_rm_conformance_k8s.py, the world is tests/k8s_server.py's `K8sWorld`: a stand-in
command holds each pod and the world plays the pods' one-shot agents in-process."""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Iterable

import yaml

from k8s_server import SETTLE_S, K8sSpace, K8sWorld
from stalwart.master.scheduling import scheduling
from stalwart.testing.k8s_api_double.calls import RecordedCall
from stalwart.testing.rm_conformance import CHECKS, run_check

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
CALLS_FILE = DEPLOY / "api-calls.txt"
RECORD_ENV = "STALWART_RECORD_K8S_CALLS"
LIFECYCLE = ("capacity", "start", "kill", "lost_node")
HEADER = """# The Kubernetes API calls the master's resource manager makes: API group (core: the "" group),
# resource, RBAC verb. Recorded on the API test double by tests/integration/test_k8s_role_matches_calls.py;
# role.yaml grants exactly these. To regenerate:
#   STALWART_RECORD_K8S_CALLS=1 pytest tests/integration/test_k8s_role_matches_calls.py
"""


def _fail_before_joining(home: pathlib.Path, space: K8sSpace) -> None:
    """A run whose pods cannot start the agent (no Stalwart in the image) fails, with the pod's log's tail."""
    world = K8sWorld(home, space, agent_command=[str(home / "no-stalwart-in-this-image")])
    try:
        world.add_node(1)
        exp = world.create(1)
        for _ in range(int(SETTLE_S / 0.1)):  # passes until its first run has ended (its pods then keep failing)
            scheduling.tick(world.master)
            if (runs := world.runs_of(exp)) and world.status(runs[0]).state == "TERMINATED":
                break
            time.sleep(0.1)
        ended = world.status(world.runs_of(exp)[0])
        assert (ended.state, ended.exit_reason) == ("TERMINATED", "EXITED"), ended
    finally:
        world.close()


def _granted(kind: str) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) of every rule of role.yaml's documents of `kind`, expanded."""
    docs = [d for d in yaml.safe_load_all((DEPLOY / "role.yaml").read_text()) if d and d["kind"] == kind]
    assert docs, f"role.yaml has no {kind}"
    return {(group, resource, verb) for d in docs for rule in d["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def _made(calls: Iterable[RecordedCall]) -> set[tuple[str, str, str]]:
    return {(c.api_group, c.resource, c.verb) for c in calls}


def _lines(made: set[tuple[str, str, str]]) -> list[str]:
    return sorted(f"{group or 'core'} {resource} {verb}" for group, resource, verb in made)


def test_the_role_grants_exactly_the_calls_the_kubernetes_manager_makes(tmp_path, k8s_space):
    first_call = len(k8s_space.api.calls)
    spaces = {name: K8sSpace(k8s_space.api, f"{k8s_space.namespace}-{i}", f"{k8s_space.tag}-{i}")
              for i, name in enumerate((*LIFECYCLE, "fails"))}
    try:
        for check in LIFECYCLE:
            assert run_check(K8sWorld(tmp_path / check, spaces[check]), check) is None, CHECKS[check].__doc__
        _fail_before_joining(tmp_path / "fails", spaces["fails"])
    finally:
        for space in spaces.values():
            for node in list(space.nodes):
                space.remove_node(node)
    ours = k8s_space.api.calls[first_call:]
    prefixes = tuple(f"/namespaces/{s.namespace}/" for s in spaces.values())
    namespaced = [c for c in ours if any(p in c.path for p in prefixes)]
    cluster_wide = [c for c in ours if "/namespaces/" not in c.path]
    lines = _lines(_made(namespaced) | _made(cluster_wide))
    if os.environ.get(RECORD_ENV) == "1":
        CALLS_FILE.write_text(HEADER + "\n".join(lines) + "\n")
    checked_in = [ln for ln in CALLS_FILE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert checked_in == lines, f"{CALLS_FILE} is not what was recorded: rerun with {RECORD_ENV}=1 and review it"
    assert _made(namespaced) == _granted("Role"), "the Role (role.yaml) against the namespaced calls made"
    assert _made(cluster_wide) == _granted("ClusterRole"), "the ClusterRole (role.yaml) against the calls on nodes"
