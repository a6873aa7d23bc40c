"""The container keys of the configs (issue 28): the master's `task_container_defaults` and
`task_container_policy` (their checks at master start, a pool's merged over the cluster's), the submit-time
policy, and the experiment config's container keys (honoured now, not warned about; `pod_spec` still is)."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.container_defaults import DEFAULT_SHM_SIZE, byte_size, merge_over
from stalwart.config.container_policy import ContainerPolicy, engine_socket_refusal, refusals, require_allowed
from stalwart.config.experiment import load_experiment_config
from stalwart.config.master import parse_master_config

GIB = 1024**3

MASTER = {
    "task_container_defaults": {
        "image": {"cpu": "cluster/cpu:1", "cuda": "cluster/cuda:1"},
        "shm_size_bytes": "2G",
        "environment_variables": {"cpu": ["A=cluster", "B=cluster"], "cuda": ["A=cluster-cuda"]},
        "add_capabilities": ["SYS_PTRACE"],
        "bind_mounts": [{"host_path": "/srv/data", "container_path": "/data"},
                        {"host_path": "/srv/models", "container_path": "/models", "read_only": True}],
        "devices": [{"host_path": "/dev/fuse", "container_path": "/dev/fuse"}],
        "registry_auth": {"username": "admin", "password": "cluster-pw", "serveraddress": "registry.local:5000"},
        "cpu_pod_spec": {"spec": {}},  # Determined's, accepted and not used
    },
    "task_container_policy": {"allowed_host_paths": ["/srv/allowed/"], "allowed_devices": ["/dev/fuse"]},
    "resource_pools": [
        {"pool_name": "default"},
        {"pool_name": "gpu",
         "task_container_defaults": {
             "image": {"cuda": "pool/cuda:2"}, "network_mode": "bridge",
             "environment_variables": {"cuda": ["A=pool"]}, "add_capabilities": ["NET_ADMIN"],
             "bind_mounts": [{"host_path": "/pool/data", "container_path": "/data"}],
             "registry_auth": {"username": "pool-user", "password": "pool-pw"}},
         "task_container_policy": {"allowed_capabilities": ["cap_sys_ptrace"]}},
    ],
}


def test_a_pools_defaults_override_the_clusters_key_by_key() -> None:
    cfg = parse_master_config(MASTER)
    cluster, gpu = cfg.container_defaults("default"), cfg.container_defaults("gpu")
    assert (cluster.image_for("cpu"), cluster.image_for("cuda"), cluster.image_for("rocm")) == (
        "cluster/cpu:1", "cluster/cuda:1", None)
    assert (gpu.image_for("cpu"), gpu.image_for("cuda")) == ("cluster/cpu:1", "pool/cuda:2")
    assert (cluster.network_mode, gpu.network_mode) == ("host", "bridge")  # host unless a section says otherwise
    assert cluster.shm_size_bytes == gpu.shm_size_bytes == 2 * GIB
    assert gpu.variables_for("cuda") == ("A=pool",) and gpu.variables_for("cpu") == ("A=cluster", "B=cluster")
    assert gpu.add_capabilities == ("NET_ADMIN", "SYS_PTRACE")  # joined
    # the pool's mounts, then the cluster's whose container_path the pool does not use
    assert [m["host_path"] for m in gpu.bind_mounts] == ["/pool/data", "/srv/models"]
    assert gpu.registry_auth is not None and gpu.registry_auth["password"] == "pool-pw"  # replaced whole
    assert gpu.registry_auth.get("serveraddress") is None
    assert cfg.container_defaults("no-such-pool") == cluster  # a pool the config does not name: the cluster's
    assert parse_master_config({}).container_defaults("default").shm_size_bytes == DEFAULT_SHM_SIZE


def test_the_admins_registry_password_is_in_no_repr() -> None:
    cfg = parse_master_config(MASTER)
    shown = repr(cfg) + repr(cfg.container_defaults("default")) + repr(cfg.container_defaults("gpu"))
    assert "cluster-pw" not in shown and "pool-pw" not in shown
    auth = cfg.container_defaults("default").registry_auth
    assert auth is not None and (auth["username"], auth["password"]) == ("admin", "cluster-pw")


def test_merge_over_leaves_both_sections_as_they_were() -> None:
    cluster = {"bind_mounts": [{"host_path": "/a", "container_path": "/x"}], "force_pull_image": True}
    pool = {"bind_mounts": [{"host_path": "/b", "container_path": "/y"}], "force_pull_image": False}
    merged = merge_over(cluster, pool)
    assert [m["host_path"] for m in merged["bind_mounts"]] == ["/b", "/a"]
    assert merged["force_pull_image"] is False
    assert len(cluster["bind_mounts"]) == 1 and len(pool["bind_mounts"]) == 1


def test_the_policy_of_a_pool_replaces_the_clusters_key_by_key() -> None:
    cfg = parse_master_config(MASTER)
    default, gpu = cfg.container_policy("default"), cfg.container_policy("gpu")
    assert default == ContainerPolicy("default", ("/srv/allowed",), (), ("/dev/fuse",))
    assert gpu == ContainerPolicy("gpu", ("/srv/allowed",), ("SYS_PTRACE",), ("/dev/fuse",))
    assert parse_master_config({}).container_policy(None) == ContainerPolicy("default")  # nothing allowed


@pytest.mark.parametrize(("section", "key", "problem"), [
    ({"network_mode": "overlay"}, "task_container_defaults.network_mode", "expected one of host, bridge, none"),
    ({"shm_size_bytes": "lots"}, "task_container_defaults.shm_size_bytes", "expected a size in bytes"),
    ({"shm_size_bytes": 0}, "task_container_defaults.shm_size_bytes", "greater than 0"),
    ({"image": 5}, "task_container_defaults.image", "expected an image name or a map"),
    ({"bind_mounts": [{"host_path": "/", "container_path": "/host"}]},
     "task_container_defaults.bind_mounts[0].host_path", "/ is the host's whole file system"),
    ({"bind_mounts": [{"host_path": "/var/run", "container_path": "/r"}]},
     "task_container_defaults.bind_mounts[0].host_path", "holds the container engine's socket"),
    ({"environment_variables": ["NOVALUE"]}, "task_container_defaults.environment_variables[0]", "NAME=VALUE"),
    ({"imagez": "x"}, "task_container_defaults.imagez", "did you mean 'image'"),
])
def test_a_bad_default_stops_the_master_naming_its_key(section: dict[str, object], key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_master_config({"task_container_defaults": section})
    assert key in raised.value.message and problem in raised.value.message, raised.value.message


def test_a_bad_pool_section_is_named_by_its_pool_index() -> None:
    with pytest.raises(ConfigError, match=r"resource_pools\[1\]\.task_container_policy\.allowed_host_paths\[0\]: "
                                          r"expected an absolute path"):
        parse_master_config({"resource_pools": [{"pool_name": "a"}, {
            "pool_name": "b", "task_container_policy": {"allowed_host_paths": ["data"]}}]})


def test_a_wrong_registry_password_type_is_never_echoed() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_master_config({"task_container_defaults": {"registry_auth": {"password": 98765431}}})
    text = raised.value.full_message()
    assert "task_container_defaults.registry_auth.password: expected a string" in text
    assert "98765431" not in text
    with pytest.raises(ConfigError) as again:
        load_experiment_config({"entrypoint": "python3 t.py", "searcher": {"name": "single", "metric": "m"},
                                "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp"},
                                "environment": {"registry_auth": {"registrytoken": 24681357}}})
    assert "environment.registry_auth.registrytoken" in again.value.full_message()
    assert "24681357" not in again.value.full_message()


@pytest.mark.parametrize(("host_path", "refused"), [
    ("/", True), ("//", True), ("/var/run/docker.sock", True), ("/run/docker.sock", True), ("/run/podman", True),
    ("/run/podman/podman.sock", True), ("/run/user/1000/podman/podman.sock", True), ("/var", True),
    ("/run", True), ("/srv/../var/run", True), ("/home/ann", False), ("/srv/data", False), ("/runner", False),
])
def test_the_engine_socket_and_root_are_never_mounted(host_path: str, refused: bool) -> None:
    assert (engine_socket_refusal(host_path) is not None) is refused


def _config(mounts: tuple[str, ...] | list[str] = (), caps: tuple[str, ...] | list[str] = (),
            devices: tuple[str, ...] | list[str] = ()) -> dict[str, object]:
    return {"bind_mounts": [{"host_path": p, "container_path": f"/m{i}"} for i, p in enumerate(mounts)],
            "environment": {"add_capabilities": list(caps)},
            "resources": {"devices": [{"host_path": d, "container_path": d} for d in devices]}}


def test_the_policy_allows_paths_under_its_host_paths_only() -> None:
    policy = ContainerPolicy("p", allowed_host_paths=("/srv/allowed",))
    assert refusals(_config(["/srv/allowed", "/srv/allowed/sub/dir"]), policy) == []
    found = refusals(_config(["/srv/allowedx", "/srv/allowed/../secret", "/"]), policy)
    assert [f.split(":")[0] for f in found] == ["bind_mounts[0].host_path", "bind_mounts[1].host_path",
                                                "bind_mounts[2].host_path"]
    assert "resource pool 'p' allows /srv/allowed" in found[0]
    assert "task_container_policy.allowed_host_paths" in found[0]
    assert found[2].startswith("bind_mounts[2].host_path: / is the host's whole file system")
    assert "whatever the policy" in found[2]


def test_nothing_is_allowed_by_default() -> None:
    found = refusals(_config(["/data"], ["SYS_ADMIN"], ["/dev/fuse"]), ContainerPolicy("default"))
    assert [f.split(":")[0] for f in found] == ["bind_mounts[0].host_path", "environment.add_capabilities[0]",
                                                "resources.devices[0].host_path"]
    assert all("allows none" in f for f in found), found
    assert "allowed_capabilities" in found[1] and "allowed_devices" in found[2]


def test_capabilities_and_devices_on_the_allow_list_pass() -> None:
    policy = ContainerPolicy("gpu", allowed_capabilities=("SYS_PTRACE",), allowed_devices=("/dev/fuse",))
    assert refusals(_config(caps=["CAP_SYS_PTRACE", "sys_ptrace"], devices=["/dev/fuse"]), policy) == []
    assert len(refusals(_config(caps=["NET_ADMIN"], devices=["/dev/sda"]), policy)) == 2


def test_require_allowed_is_a_400_naming_the_first_key() -> None:
    with pytest.raises(ConfigError) as raised:
        require_allowed(_config(["/", "/data"]), ContainerPolicy("default"))
    assert raised.value.http_status == 400
    assert raised.value.message.startswith("bind_mounts[0].host_path: / ")
    assert raised.value.details[0].startswith("bind_mounts[1].host_path: /data ")


def test_sizes_read_as_docker_reads_them() -> None:
    assert [byte_size(v) for v in (5, "128M", "128Mi", "1.5G", "512KiB", "10 gb")] == [
        5, 128 * 1024**2, 128 * 1024**2, int(1.5 * GIB), 512 * 1024, 10 * GIB]
    assert byte_size("lots") is None and byte_size(-1) is None


def test_container_keys_are_honoured_and_pod_spec_is_warned_about() -> None:
    result = load_experiment_config({
        "entrypoint": "python3 t.py", "searcher": {"name": "single", "metric": "m"},
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp"},
        "environment": {"image": {"cpu": "a", "gpu": "b"}, "force_pull_image": True, "ports": {"tb": 6006},
                        "registry_auth": {"username": "u", "password": "p"}, "add_capabilities": ["SYS_PTRACE"],
                        "environment_variables": {"cpu": ["X=1"], "cuda": ["X=2"]},
                        "pod_spec": {"spec": {"hostNetwork": True}}},
        "bind_mounts": [{"host_path": "/data", "container_path": "/data", "propagation": "rslave"}],
        "resources": {"shm_size": "1G", "devices": [{"host_path": "/dev/fuse", "container_path": "/dev/fuse"}]},
    })
    assert [w.split(":")[0] for w in result.warnings] == ["environment.pod_spec"]
    assert "Kubernetes only" in result.warnings[0]
    assert result.config["environment"]["image"] == {"cpu": "a", "cuda": "b", "rocm": None}
    assert result.config["resources"]["devices"][0]["mode"] == "mrw"
