"""A run's pods from its config over its pool's task_container_defaults (master/scheduling/k8s_submit.py): the pool's
defaults are merged over the cluster's as every task container's are (image per slot kind), and the pool's pod spec
and namespace are used unless the task or its workspace says otherwise."""

from __future__ import annotations

from stalwart.config.master import parse_master_config
from stalwart.master.scheduling import k8s_submit
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.rm import Gang

SPEC = {"spec": {"nodeSelector": {"pool": "a100"}}}


def master(tmp_path) -> Master:
    cfg = parse_master_config({
        "resource_manager": {"type": "kubernetes", "default_namespace": "ml"},
        "task_container_defaults": {"image": {"cuda": "reg/cluster-cuda:1", "cpu": "reg/cluster-cpu:1"}},
        "resource_pools": [{"pool_name": "a100", "kubernetes_namespace": "ml-a100",
                            "task_container_defaults": {"image": {"cpu": "reg/pool-cpu:2"}, "gpu_pod_spec": SPEC}},
                           {"pool_name": "plain"}]})
    return Master(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, cluster=cfg))


def test_the_pool_defaults_merge_over_the_clusters_per_slot_kind(tmp_path):
    m = master(tmp_path)
    run = k8s_submit.run_pods(m, Gang("a1", "j", "a100", 1), {})
    assert run.image == "reg/cluster-cuda:1"  # the pool names only a cpu image: the cluster's cuda one stays
    assert run.namespace == "ml-a100" and run.pod_spec == SPEC
    plain = k8s_submit.run_pods(m, Gang("a2", "j", "plain", 1), {}, workspace_namespace="team")
    assert (plain.namespace, plain.pod_spec) == ("team", {})
    own = k8s_submit.run_pods(m, Gang("a3", "j", "a100", 1), {"environment": {
        "image": {"cuda": "reg/mine:3"}, "pod_spec": {"spec": {"serviceAccountName": "me"}}}})
    assert own.image == "reg/mine:3" and own.pod_spec == {"spec": {"serviceAccountName": "me"}}
    m.db.dispose()
