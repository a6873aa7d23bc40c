"""environment and resources sections: variable forms, images, ports, slots and sizes."""

from __future__ import annotations

import pytest

from stalwart.config import environment_variables


def test_environment_variable_list_applies_to_every_kind(minimal, expand):
    minimal["environment"] = {"environment_variables": ["A=1", "B=x=y", "EMPTY="]}
    cfg = expand(minimal)
    assert cfg["environment"]["environment_variables"] == {
        "cpu": ["A=1", "B=x=y", "EMPTY="],
        "cuda": ["A=1", "B=x=y", "EMPTY="],
        "rocm": ["A=1", "B=x=y", "EMPTY="],
    }
    assert environment_variables(cfg) == {"A": "1", "B": "x=y", "EMPTY": ""}


def test_environment_variable_map_with_gpu_alias(minimal, expand):
    minimal["environment"] = {"environment_variables": {"cpu": ["A=1"], "gpu": ["NCCL_DEBUG=INFO"]}}
    cfg = expand(minimal)
    assert cfg["environment"]["environment_variables"] == {
        "cpu": ["A=1"],
        "cuda": ["NCCL_DEBUG=INFO"],
        "rocm": [],
    }
    assert environment_variables(cfg, "gpu") == {"NCCL_DEBUG": "INFO"}
    assert environment_variables(cfg, "cuda") == {"NCCL_DEBUG": "INFO"}
    assert environment_variables(cfg, "rocm") == {}


@pytest.mark.parametrize(
    ("variables", "details"),
    [
        (["A=1", "NOVALUE"], ["environment.environment_variables[1]: expected NAME=VALUE, got 'NOVALUE'"]),
        (["=1"], ["environment.environment_variables[0]: expected NAME=VALUE, got '=1'"]),
        ([5], ["environment.environment_variables[0]: expected NAME=VALUE, got 5"]),
        ({"cpu": ["X"], "tpu": []},
         ["environment.environment_variables.cpu[0]: expected NAME=VALUE, got 'X'",
          "environment.environment_variables.tpu: unknown key; did you mean 'gpu'?"]),
        ("A=1",
         ["environment.environment_variables: expected a list of NAME=VALUE strings or a map of such lists, "
          "got 'A=1'"]),
    ],
)  # fmt: skip
def test_environment_variable_errors(minimal, problems, variables, details):
    minimal["environment"] = {"environment_variables": variables}
    assert problems(minimal) == details


def test_environment_other_fields(minimal, expand, problems):
    minimal["environment"] = {
        "image": {"cpu": "img:cpu", "gpu": "img:gpu"},
        "proxy_ports": [{"proxy_port": 8888}],
        "ports": {"tb": 6006},
        "registry_auth": {"username": "u", "password": "p"},
        "pod_spec": {"spec": {"containers": []}},
        "add_capabilities": ["SYS_ADMIN"],
    }
    env = expand(minimal)["environment"]
    assert env["image"] == {"cpu": "img:cpu", "cuda": "img:gpu", "rocm": None}
    assert env["proxy_ports"] == [
        {"proxy_port": 8888, "proxy_tcp": False, "unauthenticated": False, "default_service_id": False}
    ]
    assert env["ports"] == {"tb": 6006}
    assert env["registry_auth"]["username"] == "u"
    minimal["environment"] = {
        "image": 5,
        "proxy_ports": [{"proxy_tcp": True}],
        "ports": {"tb": 70000},
        "registry_auth": {"user": "u"},
    }
    assert problems(minimal) == [
        "environment.image: expected an image name or a map of cpu/cuda/rocm images, got 5",
        "environment.registry_auth.user: unknown key; did you mean 'username'?",
        "environment.proxy_ports[0].proxy_port: required",
        "environment.ports.tb: expected an integer in 1..65535, got 70000",
    ]


def test_resources_fields(minimal, expand):
    minimal["resources"] = {
        "slots_per_trial": 0,
        "max_slots": 8,
        "weight": 0.5,
        "priority": 10,
        "resource_pool": "cpu",
        "shm_size": "1.5G",
        "devices": [{"host_path": "/dev/x", "container_path": "/dev/x"}],
        "is_single_node": True,
    }
    res = expand(minimal)["resources"]
    assert res["slots_per_trial"] == 0
    assert res["shm_size"] == "1.5G"
    assert res["devices"] == [{"host_path": "/dev/x", "container_path": "/dev/x", "mode": "mrw"}]


@pytest.mark.parametrize(
    ("resources", "detail"),
    [
        ({"slots": 2}, "resources.slots: not allowed for experiments; use slots_per_trial"),
        ({"slots_per_trial": "two"}, "resources.slots_per_trial: expected an integer >= 0, got 'two'"),
        ({"slots_per_trial": -1}, "resources.slots_per_trial: expected an integer >= 0, got -1"),
        ({"priority": 0}, "resources.priority: expected an integer in 1..99, got 0"),
        ({"priority": 100}, "resources.priority: expected an integer in 1..99, got 100"),
        ({"weight": "heavy"}, "resources.weight: expected a number >= 0, got 'heavy'"),
        ({"shm_size": "lots"}, "resources.shm_size: expected a byte count or a size like '128M' or '1.5G', got 'lots'"),
        ({"devices": [{"host_path": "/dev/x"}]}, "resources.devices[0].container_path: required"),
        ({"is_single_node": "no"}, "resources.is_single_node: expected a boolean (true or false), got 'no'"),
    ],
)  # fmt: skip
def test_resources_errors(minimal, problems, resources, detail):
    minimal["resources"] = resources
    assert problems(minimal) == [detail]


@pytest.mark.parametrize("size", [4294967296, "128M", "1.5G", "4Gi", "512mb"])
def test_shm_sizes_accepted(minimal, expand, size):
    minimal["resources"] = {"shm_size": size}
    assert expand(minimal)["resources"]["shm_size"] == size
