"""A distributed trial across two Docker agents (issue 28, acceptance 4): Determined's distributed PyTorchTrial
example, unchanged, in an image with torch and no Stalwart; one slot on each agent, gloo DDP over the host's
network. It completes; paused, it stops both containers and, activated, resumes from its checkpoint; nothing of
Stalwart's is left in the engine.
"""

from __future__ import annotations

import pytest
import yaml
from container_trials import container_cluster, stalwart_containers

from integration.helpers import REPO, checkpoints, create, experiment, first_trial, live_run, metrics, wait_state
from trial_images import torch_image

pytestmark = pytest.mark.integration

EXAMPLE = REPO / "examples" / "distributed"


@pytest.mark.timeout(600)  # the first test to need the torch image builds it (minutes under CI's load)
def test_two_docker_agents_train_one_trial_and_resume_it_after_a_pause(tmp_path, docker_url):
    cfg = yaml.safe_load((EXAMPLE / "distributed.yaml").read_text())
    cfg["hyperparameters"]["batch_sleep"] = 0.4  # time to pause between the first report (10) and the end (40)
    cfg["environment"] = {"image": torch_image(docker_url)}
    with container_cluster(tmp_path / "home", "docker", docker_url, agents=2) as c:
        exp_id = create(c, yaml.safe_dump(cfg), EXAMPLE)
        trial_id = first_trial(c, exp_id)
        c.wait_for(lambda: metrics(c, trial_id, "training"), timeout=180, what="a first training report")
        run = live_run(c, trial_id)
        assert run is not None and run["slots"] == 2
        assert len(stalwart_containers(docker_url, c)) == 2  # one per agent
        c.cli("e", "pause", str(exp_id), check=True)
        c.wait_for(lambda: experiment(c, exp_id)["trials"][0]["state"] == "PAUSED" and live_run(c, trial_id) is None,
                   timeout=120, what="both workers to stop")
        assert stalwart_containers(docker_url, c) == []
        paused_at = max(ck["steps_completed"] for ck in checkpoints(c, trial_id))
        assert 0 < paused_at < 40
        c.cli("e", "activate", str(exp_id), check=True)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=240)
        assert d["experiment"]["state"] == "COMPLETED", c.log("agent-0.log")[-3000:] + c.log("agent-1.log")[-3000:]
        second = [m["steps_completed"] for m in metrics(c, trial_id, "training") if m["trial_run_id"] == 2]
        assert second and min(second) == paused_at + 10  # resumed from the checkpoint, not from 0
        assert stalwart_containers(docker_url, c) == []
