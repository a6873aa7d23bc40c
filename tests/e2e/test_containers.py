"""Trials and commands in containers, end to end (issue 28): real master, agents with the Docker or Podman
runtime (the test servers of container_servers.py), images built offline (trial_images.py).

* A trial that imports a package only its image has completes under Docker and Podman, and fails with an
  ImportError under the process runtime (acceptance 2).
* The digits example completes in an image that has Python and torch but no Stalwart (acceptance 2).
* `cmd run` with an image runs in it (acceptance 6).
* Killing, pausing and an agent's kill -9 leave no container of Stalwart's, in Docker and in Podman (acceptance 4, 5).
"""

from __future__ import annotations

import time

import pytest
import yaml
from container_trials import container_cluster, stalwart_containers, trial_config, trial_context

from integration.helpers import DIGITS, create, first_trial, logs, wait_state
from trial_images import MARKER, image_only_image, torch_image

pytestmark = pytest.mark.integration


def _log_text(c, trial_id: int) -> str:
    return "\n".join(line["log"] for line in logs(c, trial_id))


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_a_package_only_the_image_has_is_there_in_its_container(runtime, request, tmp_path):
    engine_url = request.getfixturevalue(f"{runtime}_url")
    image = image_only_image([engine_url])
    with container_cluster(tmp_path / "home", runtime, engine_url) as c:
        exp_id = create(c, trial_config(image), trial_context(tmp_path))
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=180)
        text = _log_text(c, d["trials"][0]["id"])
        assert d["experiment"]["state"] == "COMPLETED", text[-3000:] + c.log("agent-0.log")[-3000:]
        assert f"MARKER {MARKER}" in text
        assert stalwart_containers(engine_url, c) == []  # removed at its end


def test_under_the_process_runtime_the_image_is_not_used_and_the_import_fails(tmp_path, docker_url):
    image = image_only_image([docker_url])
    with container_cluster(tmp_path / "home", "process", None) as c:
        exp_id = create(c, trial_config(image), trial_context(tmp_path))
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=180)
        assert d["experiment"]["state"] == "ERROR"
        text = _log_text(c, d["trials"][0]["id"])
        assert "ModuleNotFoundError: No module named 'stalwart_image_only'" in text
        assert f"{image} is not used" in text  # the agent said why


@pytest.mark.timeout(600)  # the first test to need the torch image builds it (minutes under CI's load)
def test_the_digits_example_runs_in_an_image_without_stalwart(tmp_path, docker_url):
    image = torch_image(docker_url)
    cfg = yaml.safe_load((DIGITS / "const.yaml").read_text())
    cfg["searcher"]["max_length"] = {"batches": 100}
    cfg["min_validation_period"] = {"batches": 50}
    cfg["environment"] = {"image": image}
    with container_cluster(tmp_path / "home", "docker", docker_url) as c:
        exp_id = create(c, yaml.safe_dump(cfg), DIGITS)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=240)
        trial_id = d["trials"][0]["id"]
        assert d["experiment"]["state"] == "COMPLETED", _log_text(c, trial_id)[-4000:]
        ckpts = c.client().get(f"/trials/{trial_id}/checkpoints")["checkpoints"]
        assert ckpts, "the trial saved no checkpoint through the mounted storage"


def test_a_command_with_an_image_runs_in_it(tmp_path, docker_url):
    image = image_only_image([docker_url])
    with container_cluster(tmp_path / "home", "docker", docker_url) as c:
        res = c.cli("cmd", "run", "--config", f"environment.image={image}",
                    "python3", "-c", "import stalwart_image_only as m; print('CMD', m.MARKER)", timeout=180)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"CMD {MARKER}" in res.stdout


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_kill_pause_and_an_agents_death_leave_no_container(runtime, request, tmp_path):
    engine_url = request.getfixturevalue(f"{runtime}_url")
    image = image_only_image([engine_url])
    sleeper = trial_context(tmp_path, "import time\nprint('up', flush=True)\ntime.sleep(600)\n")
    with container_cluster(tmp_path / "home", runtime, engine_url) as c:
        for ending in ("kill", "pause", "agent kill -9"):
            exp_id = create(c, trial_config(image, preemption_timeout=1), sleeper)  # it never checks: killed at 1 s
            trial_id = first_trial(c, exp_id)
            c.wait_for(lambda trial_id=trial_id: "up" in _log_text(c, trial_id), timeout=120, what="the trial up")
            assert len(stalwart_containers(engine_url, c)) == 1
            if ending == "kill":
                c.cli("e", "kill", str(exp_id), check=True)
            elif ending == "pause":
                c.cli("e", "pause", str(exp_id), check=True)
            else:
                c.kill_agent(0)
                deadline = time.monotonic() + 10
                while stalwart_containers(engine_url, c) and time.monotonic() < deadline:
                    time.sleep(0.25)
                assert stalwart_containers(engine_url, c) == [], "the dead agent's container outlived it by 10 s"
            c.wait_for(lambda: stalwart_containers(engine_url, c) == [], timeout=30,
                       what=f"no container after {ending}")
            if ending == "agent kill -9":
                c.start_agent(0)
            c.cli("e", "kill", str(exp_id))
