"""Images on Slurm (issue 30): with `container_run_type: podman` the one-shot agent inside each Slurm job runs its
task with issue 28's Podman launcher, in the experiment's `environment.image`. A real Slurm (tests/slurm_server.py,
partition `podman`) and a real Podman service and image (tests/container_servers.py, trial_images.py). The job
finds the engine and a shared harness-bundle cache through `agent_command` (`env CONTAINER_HOST=...`), as a site
whose nodes run Podman would configure it (docs/slurm.md)."""

from __future__ import annotations

import sys
import uuid

import pytest
import yaml
from container_trials import trial_config, trial_context
from slurm_trials import failure_details

from integration.helpers import create, first_trial, logs, wait_state
from stalwart.testing import LocalTestCluster
from trial_images import MARKER, image_only_image

pytestmark = pytest.mark.integration
PARTITION = "podman"  # its own (tests/slurm_server.py)


def test_an_image_runs_with_podman_inside_a_slurm_job(slurm_cluster, podman_url, tmp_path, monkeypatch):
    image = image_only_image([podman_url])
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf_path))
    bundles = tmp_path / "bundles"
    rm = {"type": "slurm", "slot_type": "cpu", "user_name": "root", "poll_interval": 0.5,
          "job_name_prefix": f"pod-{uuid.uuid4().hex[:8]}-", "container_run_type": "podman",
          "agent_command": ["env", f"CONTAINER_HOST={podman_url}", f"STALWART_HARNESS_BUNDLES={bundles}",
                            sys.executable, "-m", "stalwart.agent.slurm_job"]}
    config = yaml.safe_dump({"resource_manager": rm, "resource_pools": [{"pool_name": PARTITION}],
                             "security": {"allow_root_tasks": True}})
    with slurm_cluster.exclusive(PARTITION), LocalTestCluster(tmp_path / "home", agents=0,
                                                               master_config=config) as c:
        exp_id = create(c, trial_config(image, resources={"resource_pool": PARTITION}), trial_context(tmp_path))
        trial_id = first_trial(c, exp_id)
        described = wait_state(c, exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
        assert described["experiment"]["state"] == "COMPLETED", failure_details(c, trial_id)
        text = "\n".join(line["log"] for line in logs(c, trial_id))
        assert f"MARKER {MARKER}" in text, text[-3000:]  # a package only the image has: it ran in the image
