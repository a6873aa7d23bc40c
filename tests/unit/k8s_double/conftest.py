"""Fixtures of the Kubernetes API double's tests: one double per run (two nodes, one with a GPU) and the
official `kubernetes` client configured from its kubeconfig."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s_client, config as k8s_config

from stalwart.testing.k8s_api_double import KubeApiDouble, NodeSpec


@pytest.fixture(scope="session")
def kube_double(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiDouble]:
    workdir = pathlib.Path(tmp_path_factory.mktemp("k8s-double"))
    nodes = [
        NodeSpec("node-a", cpu=4),
        NodeSpec("node-gpu", cpu=4, gpus=1, labels={"accelerator": "a100"}),
    ]
    with KubeApiDouble(workdir, nodes=nodes, extra_env={"K8S_DOUBLE_TEST": "1"}) as double:
        yield double


@pytest.fixture(scope="session")
def api_client(kube_double: KubeApiDouble) -> Iterator[k8s_client.ApiClient]:
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=str(kube_double.kubeconfig), client_configuration=configuration)
    with k8s_client.ApiClient(configuration) as api:
        yield api


@pytest.fixture(scope="session")
def core(api_client: k8s_client.ApiClient) -> k8s_client.CoreV1Api:
    return k8s_client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def batch(api_client: k8s_client.ApiClient) -> k8s_client.BatchV1Api:
    return k8s_client.BatchV1Api(api_client)


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll `condition` until it answers something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="session")
def wait_for() -> Callable[..., Any]:
    return wait_until
