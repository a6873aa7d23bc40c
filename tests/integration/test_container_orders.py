"""The master's half of trials in containers (issue 28), on a real master over HTTP whose agents are the test
(container_world.OrderTaker): the start order's `container` block and variables for a cuda and a cpu agent, the
pool's `task_container_defaults` over the cluster's, the `task_container_policy` at submit (a 400 naming the key
and the allow-list), and a run whose container could not be set up (SETUP_FAILED: the trial ends in ERROR with no
restart used up; a command ends in ERROR)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

import pytest
import yaml
from container_world import BASE_CONFIG, OrderTaker, context_of, create, first_trial

from stalwart.api.errors import ConfigError
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration
GIB = 1024**3
REGISTRY_PW = "cluster-registry-pw"

MASTER_CONFIG = {
    "task_container_defaults": {
        "image": {"cpu": "registry.local:5000/cluster/cpu:1", "cuda": "registry.local:5000/cluster/cuda:1"},
        "environment_variables": {"cpu": ["FROM_TCD=cluster", "SHARED=cluster"], "cuda": ["FROM_TCD=cluster-cuda"]},
        "shm_size_bytes": "1G",
        "bind_mounts": [{"host_path": "/srv/cluster-data", "container_path": "/data"},
                        {"host_path": "/srv/models", "container_path": "/models", "read_only": True}],
        "drop_capabilities": ["NET_RAW"],
        "registry_auth": {"username": "admin", "password": REGISTRY_PW, "serveraddress": "registry.local:5000"},
    },
    "task_container_policy": {"allowed_host_paths": ["/srv/allowed"]},
    "resource_pools": [
        {"pool_name": "default"},
        {"pool_name": "gpu", "allow_root_tasks": True,
         "task_container_defaults": {"image": {"cuda": "registry.local:5000/pool/cuda:2"}, "network_mode": "bridge",
                                     "environment_variables": {"cuda": ["FROM_TCD=pool"]}},
         "task_container_policy": {"allowed_capabilities": ["SYS_PTRACE"]}},
    ],
}


class World:
    def __init__(self, cluster: LocalTestCluster, context: str) -> None:
        self.cluster, self.context = cluster, context
        self.cuda = OrderTaker(cluster, "cuda-box", pool="gpu", slot_type="cuda")
        self.cpu = OrderTaker(cluster, "cpu-box", pool="default", slot_type="cpu")

    def experiment(self, name: str, extra: dict[str, object]) -> int:
        text = BASE_CONFIG.format(name=name) + (yaml.safe_dump(extra) if extra else "")
        return create(self.cluster, text, self.context)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("container-orders")
    with LocalTestCluster(home, agents=0, master_config=yaml.safe_dump(MASTER_CONFIG)) as cluster:
        w = World(cluster, context_of(home))
        yield w
        w.cuda.close()
        w.cpu.close()


def test_a_cuda_agent_gets_the_cuda_image_and_cuda_variables(world: World) -> None:
    exp_id = world.experiment("cuda", {
        "resources": {"resource_pool": "gpu", "shm_size": "256M"},
        "environment": {"image": {"cpu": "team/cpu:1", "gpu": "team/cuda:1"},
                        "environment_variables": {"cpu": ["MINE=cpu"], "cuda": ["MINE=cuda", "SHARED=mine"]},
                        "add_capabilities": ["SYS_PTRACE"], "ports": {"tensorboard": 6006}},
        "bind_mounts": [{"host_path": "/srv/allowed/x", "container_path": "/data", "read_only": True}],
    })
    order = world.cuda.order(trial_id=first_trial(world.cluster, exp_id))
    container = order.container
    assert container is not None
    assert (container.image, container.slot_type, order.env["DET_SLOT_TYPE"]) == ("team/cuda:1", "cuda", "cuda")
    assert (order.env["MINE"], order.env["SHARED"], order.env["FROM_TCD"]) == ("cuda", "mine", "pool")
    assert container.network_mode == "bridge" and container.shm_size == 256 * 1024**2
    # the config's mount takes /data; the cluster's other mount follows (an admin's: trusted, not on the allow-list)
    assert [(m.host_path, m.container_path, m.read_only) for m in container.bind_mounts] == [
        ("/srv/allowed/x", "/data", True), ("/srv/models", "/models", True)]
    assert (container.add_capabilities, container.drop_capabilities) == (["SYS_PTRACE"], ["NET_RAW"])
    assert container.ports == {"tensorboard": 6006} and container.allow_root is True
    # its own image from Docker Hub: the admin's registry credentials do not go with it
    assert container.registry_auth is None and not container.force_pull


def test_pool_defaults_override_the_clusters_and_a_cpu_agent_gets_the_cpu_ones(world: World) -> None:
    gpu = world.cuda.order(trial_id=first_trial(world.cluster, world.experiment("gpu-defaults", {
        "resources": {"resource_pool": "gpu"}})))
    assert gpu.container is not None and gpu.container.image == "registry.local:5000/pool/cuda:2"
    assert gpu.env["FROM_TCD"] == "pool" and "SHARED" not in gpu.env  # the cuda list has no SHARED
    cpu = world.cpu.order(trial_id=first_trial(world.cluster, world.experiment("cpu-defaults", {})))
    assert cpu.container is not None
    assert (cpu.container.image, cpu.container.slot_type, cpu.env["DET_SLOT_TYPE"]) == (
        "registry.local:5000/cluster/cpu:1", "cpu", "cpu")
    assert (cpu.env["FROM_TCD"], cpu.env["SHARED"]) == ("cluster", "cluster")
    assert cpu.container.network_mode == "host" and cpu.container.shm_size == GIB and not cpu.container.allow_root
    assert [m.container_path for m in cpu.container.bind_mounts] == ["/data", "/models"]
    # the image is the defaults' own: the defaults' registry credentials come with it, to the agent only
    assert cpu.container.registry_auth is not None and cpu.container.registry_auth["password"] == REGISTRY_PW


def test_a_command_gets_its_container_the_same_way(world: World) -> None:
    client = world.cluster.client()
    cmd = client.create_command({"entrypoint": ["python3", "-c", "pass"], "resources": {"slots": 1},
                                 "environment": {"image": "registry.local:5000/team/tool:3",
                                                 "environment_variables": ["TOOL=1"], "force_pull_image": True},
                                 "bind_mounts": [{"host_path": "/srv/allowed/tools", "container_path": "/tools"}]},
                                world.context).command
    order = world.cpu.order(task_id=f"command-{cmd.id}")
    assert order.container is not None
    assert (order.container.image, order.container.force_pull, order.env["TOOL"]) == (
        "registry.local:5000/team/tool:3", True, "1")
    # its own image, from the registry the defaults' credentials name: they come with it
    assert order.container.registry_auth is not None and order.container.registry_auth["username"] == "admin"
    assert [m.host_path for m in order.container.bind_mounts] == ["/srv/allowed/tools", "/srv/cluster-data",
                                                                  "/srv/models"]
    client.kill_command(cmd.id)


@pytest.mark.parametrize(("extra", "key", "words"), [
    ({"bind_mounts": [{"host_path": "/", "container_path": "/host"}]}, "bind_mounts[0].host_path: / ",
     "the host's whole file system"),
    ({"bind_mounts": [{"host_path": "/srv/allowed", "container_path": "/a"},
                      {"host_path": "/var/run/docker.sock", "container_path": "/var/run/docker.sock"}]},
     "bind_mounts[1].host_path: /var/run/docker.sock ", "container engine's socket"),
    ({"bind_mounts": [{"host_path": "/home/ann", "container_path": "/home"}]}, "bind_mounts[0].host_path: /home/ann ",
     "resource pool 'default' allows /srv/allowed. An admin can allow it in the master config: "
     "task_container_policy.allowed_host_paths"),
    ({"environment": {"add_capabilities": ["SYS_PTRACE"]}}, "environment.add_capabilities[0]: SYS_PTRACE ",
     "resource pool 'default' allows none"),
    ({"environment": {"add_capabilities": ["SYS_ADMIN"]}, "resources": {"resource_pool": "gpu"}},
     "environment.add_capabilities[0]: SYS_ADMIN ", "resource pool 'gpu' allows SYS_PTRACE"),
    ({"resources": {"devices": [{"host_path": "/dev/sda", "container_path": "/dev/sda"}]}},
     "resources.devices[0].host_path: /dev/sda ", "allowed_devices"),
])
def test_what_the_pool_does_not_allow_is_refused_at_submit(world: World, extra: dict[str, object], key: str,
                                                            words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        world.experiment("refused", extra)
    assert refused.value.http_status == 400
    assert refused.value.message.startswith(key) and words in refused.value.full_message(), refused.value.message


def test_a_command_mounting_the_engine_socket_is_refused(world: World) -> None:
    with pytest.raises(ConfigError, match=r"^bind_mounts\[0\]\.host_path: /run/podman "):
        world.cluster.client().create_command({"entrypoint": ["true"], "bind_mounts": [
            {"host_path": "/run/podman", "container_path": "/run/podman"}]}, world.context)


def test_a_failed_setup_ends_the_trial_without_using_a_restart(world: World) -> None:
    client = world.cluster.client()
    exp_id = world.experiment("setup-fails", {"environment": {"image": "registry.local:5000/no/such:image"}})
    trial_id = first_trial(world.cluster, exp_id)
    order = world.cpu.order(trial_id=trial_id)
    world.cpu.log(order, "pulling registry.local:5000/no/such:image: manifest unknown")
    world.cpu.client.allocation_exited(order.allocation_id, agent_id="cpu-box", exit_code=None, setup_failed=True)
    world.cluster.wait_for(lambda: client.get_experiment(exp_id).trials[0].state.value == "ERROR",
                           what="the trial to end in ERROR")
    detail = client.get(f"/trials/{trial_id}")
    assert detail["trial"]["restarts"] == 0, detail
    assert [run["exit_reason"] for run in detail["runs"]] == ["SETUP_FAILED"]  # no second run: it would fail again
    assert "not counted as a restart" in (detail["trial"]["error_message"] or "")
    lines = [entry.log for entry in client.stream_trial_logs(trial_id)]
    assert any("manifest unknown" in line for line in lines), lines


def test_a_failed_setup_ends_a_command_in_error(world: World) -> None:
    client = world.cluster.client()
    cmd = client.create_command({"entrypoint": ["true"], "environment": {"image": "no/such:image"}},
                                world.context).command
    order = world.cpu.order(task_id=f"command-{cmd.id}")
    world.cpu.client.allocation_exited(order.allocation_id, agent_id="cpu-box", exit_code=None, setup_failed=True)
    ended = world.cluster.wait_for(lambda: (c := client.get_command(cmd.id).command).state == "TERMINATED" and c,
                                   what="the command to end")
    assert ended.result == "ERROR", ended


def test_a_run_the_policy_no_longer_allows_does_not_start(world: World) -> None:
    """A config stored before the policy (or before Stalwart honoured bind_mounts) is checked when a run starts."""
    client = world.cluster.client()
    exp_id = create(world.cluster, BASE_CONFIG.format(name="stored-before"), world.context, activate=False)
    with sqlite3.connect(world.cluster.home / "master.db") as db:
        (raw,) = db.execute("SELECT config FROM experiments WHERE id = ?", (exp_id,)).fetchone()
        config = json.loads(raw)
        config["bind_mounts"] = [{"host_path": "/", "container_path": "/host"}]
        db.execute("UPDATE experiments SET config = ? WHERE id = ?", (json.dumps(config), exp_id))
    client.experiment_action(exp_id, "activate")

    def failed() -> bool:
        world.cpu.poll(0.2)  # the start order is made (and refused) when the agent asks for its orders
        return client.get_experiment(exp_id).experiment.state.value == "ERROR"

    world.cluster.wait_for(failed, timeout=60, what="the experiment to fail")
    assert all(order.trial_id != first_trial(world.cluster, exp_id) for order in world.cpu.taken.values())
    trial_id = first_trial(world.cluster, exp_id)
    detail = client.get(f"/trials/{trial_id}")
    assert detail["trial"]["restarts"] == 0 and [r["exit_reason"] for r in detail["runs"]] == ["SETUP_FAILED"]
    lines = [entry.log for entry in client.stream_trial_logs(trial_id)]
    assert any("refused to start this task's container: bind_mounts[0].host_path: / " in line for line in lines)
