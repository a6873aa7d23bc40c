"""The Kubernetes resource manager's master config keys (config/kubernetes.py): Determined's names read, engine
keys refused under another type."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.master import parse_master_config


def test_determineds_kubernetes_keys_are_read():
    cfg = parse_master_config({"resource_manager": {
        "type": "kubernetes", "default_namespace": "ml", "max_slots_per_pod": 4, "slot_type": "gpu",
        "slot_resource_requests": {"cpu": 2}, "master_service_name": "stalwart-master",
        "default_scheduler": "coscheduler", "determined_master_port": 8080, "kubeconfig": "/etc/kube.yaml"},
        "resource_pools": [{"pool_name": "a100", "kubernetes_namespace": "ml-a100"}]})
    k = cfg.kubernetes
    assert cfg.resource_manager == "kubernetes" and cfg.pools[0].kubernetes_namespace == "ml-a100"
    assert (k.default_namespace, k.max_slots_per_pod, k.slot_type, k.cpu_request) == ("ml", 4, "cuda", 2.0)
    assert (k.master_service_name, k.default_scheduler, k.master_port, k.kubeconfig) == (
        "stalwart-master", "coscheduler", 8080, "/etc/kube.yaml")


@pytest.mark.parametrize(("rm", "message"), [
    ({"type": "agent", "default_namespace": "ml"},
     "resource_manager.default_namespace: is a key of the Kubernetes resource manager; it needs "
     "`resource_manager.type: kubernetes`"),
    ({"type": "kubernetes", "gres_supported": False},
     "resource_manager.gres_supported: is a key of the Slurm resource manager"),
    ({"type": "kubernetes", "max_slots_per_pod": 0}, "resource_manager.max_slots_per_pod"),
])
def test_keys_of_another_engine_or_bad_values_are_refused(rm, message):
    with pytest.raises(ConfigError) as err:
        parse_master_config({"resource_manager": rm})
    assert message in str(err.value) + str(getattr(err.value, "details", ""))


def test_keys_both_engines_read_are_taken_by_either():
    for kind in ("slurm", "kubernetes"):
        cfg = parse_master_config({"resource_manager": {"type": kind, "slot_type": "cpu", "job_start_timeout": 30}})
        assert getattr(cfg, kind).slot_type == "cpu"
