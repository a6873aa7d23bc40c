"""The Kubernetes API TEST DOUBLE (stalwart.testing.k8s_api_double), started once per test run (per xdist worker)
with no nodes: each test adds its own, labelled with its own pool label so that no test's pods land on another's
nodes, and uses its own namespace (`k8s_space`)."""

from __future__ import annotations

import itertools
import os
import pathlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from stalwart.testing.k8s_api_double import KubeApiDouble, NodeSpec

POOL_LABEL = "stalwart-test/pool"
_spaces = itertools.count(1)


@pytest.fixture(scope="session")
def k8s_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiDouble]:
    venv_bin = str(pathlib.Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    with KubeApiDouble(tmp_path_factory.mktemp("k8s-api"), nodes=[], extra_env=env) as double:
        yield double


@dataclass
class K8sSpace:
    """One test's corner of the shared double: its namespace and a label value its nodes carry."""

    api: KubeApiDouble
    namespace: str
    tag: str
    nodes: list[str] = field(default_factory=list)

    def add_node(self, name: str, cpu: int, gpus: int = 0, pool: str = "default") -> str:
        node = f"{self.tag}-{name}"
        self.api.add_node(NodeSpec(node, cpu=cpu, gpus=gpus, labels={POOL_LABEL: f"{self.tag}-{pool}"}))
        self.nodes.append(node)
        return node

    def remove_node(self, node: str) -> None:
        self.api.remove_node(node)
        self.nodes.remove(node)

    def selector(self, pool: str = "default") -> dict[str, object]:
        """A pool's `cpu_pod_spec`/`gpu_pod_spec` that keeps its pods on this space's nodes of `pool`."""
        return {"spec": {"nodeSelector": {POOL_LABEL: f"{self.tag}-{pool}"}}}

    def pods(self) -> list[dict]:
        return self.api.pods(self.namespace)


@pytest.fixture
def k8s_space(k8s_api: KubeApiDouble) -> Iterator[K8sSpace]:
    n = next(_spaces)
    space = K8sSpace(k8s_api, f"t{os.getpid()}-{n}", f"w{os.getpid()}-{n}")
    yield space
    for node in list(space.nodes):
        space.remove_node(node)
