"""The master config file: pools, the all-or-nothing pool scheduler override, the old format, errors by field."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config.master import SchedulerConfig, load_master_config, parse_master_config

FULL = """
port: 8099
db: {user: postgres, password: pw, host: db.local, port: 5433, name: stalwart}
checkpoint_storage: {type: shared_fs, host_path: /tmp/ckpts}
resource_manager:
  type: agent
  default_compute_resource_pool: gpu
  default_aux_resource_pool: cpu
  scheduler:
    type: priority
    fitting_policy: worst
    priority: {preemption: true, default_priority: 30}
resource_pools:
  - pool_name: gpu
    description: the GPU boxes
  - pool_name: cpu
    scheduler: {type: fair_share}
    task_container_defaults: {environment_variables: [A=1]}
"""


def test_full_config_and_pool_scheduler_inherits_nothing_from_the_cluster(tmp_path):
    path = tmp_path / "master.yaml"
    path.write_text(FULL)
    cfg = load_master_config(path)
    assert cfg.port == 8099 and cfg.db_url == "postgresql://postgres:pw@db.local:5433/stalwart"
    assert (cfg.default_compute_pool, cfg.default_aux_pool) == ("gpu", "cpu")
    assert cfg.pool("gpu").scheduler == SchedulerConfig("priority", "worst", True, 30)
    assert cfg.pool("gpu").description == "the GPU boxes"
    # the cpu pool's own section: fair_share with the code defaults, not worst fit/preemption/30
    assert cfg.pool("cpu").scheduler == SchedulerConfig("fair_share", "best", False, 42)
    # checked, and the variables given as one list hold for every slot type (config/container_defaults.py)
    assert cfg.pool("cpu").task_container_defaults == {"environment_variables": {k: ["A=1"] for k in ("cpu", "cuda",
                                                                                                     "rocm")}}


def test_defaults_and_the_old_top_level_scheduler_format():
    assert parse_master_config({}).pool_names == ["default"]
    assert parse_master_config({}).pool("default").scheduler == SchedulerConfig()
    old = parse_master_config({"scheduler": {"type": "fair_share", "fitting_policy": "worst"},
                               "provisioner": {"provider": "aws"}})
    assert old.pool_names == ["default"] and old.pool("default").scheduler.type == "fair_share"
    assert old.pool("default").scheduler.fitting_policy == "worst"


@pytest.mark.parametrize("data, message", [
    ({"resource_pools": [{"pool_name": "a"}, {"pool_name": "b", "scheduler": {"type": "fifo"}}]},
     "resource_pools[1].scheduler.type: expected one of priority, fair_share, got 'fifo'"),
    ({"resource_manager": {"scheduler": {"type": "round_robin"}}},
     "resource_manager.scheduler.type: round_robin was removed"),
    ({"resource_manager": {"default_compute_resource_pool": "gpu"}},
     "resource_manager.default_compute_resource_pool: 'gpu' is not one of the resource pools (default)"),
    ({"resource_pools": [{"pool_name": "a"}, {"pool_name": "a"}]},
     "resource_pools[1].pool_name: duplicate pool name 'a'"),
    ({"resource_manager": {"scheduler": {"priority": {"default_priority": 100}}}},
     "resource_manager.scheduler.priority.default_priority: expected an integer"),
    ({"schedular": {}}, "schedular: unknown key; did you mean 'scheduler'?"),
    ({"resource_pools": [{"description": "x"}]}, "resource_pools[0].pool_name: required"),
])
def test_invalid_configs_name_the_field(data, message):
    with pytest.raises(ConfigError) as err:
        parse_master_config(data)
    assert message in err.value.message


def test_master_run_refuses_a_bad_config_with_one_line(tmp_path):
    bad = tmp_path / "master.yaml"
    bad.write_text("resource_pools:\n  - pool_name: a\n  - pool_name: b\n    scheduler: {type: fifo}\n")
    res = subprocess.run([sys.executable, "-m", "stalwart.cli.main", "master", "run", "--config", str(bad),
                          "--home", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"Error: invalid master config {bad}: resource_pools[1].scheduler.type: expected one of priority, "
        "fair_share, got 'fifo'"]
    assert "Traceback" not in res.stderr
