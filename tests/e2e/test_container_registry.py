"""Images from a private registry, end to end (issue 28, acceptance 3): the test registry (Debian's
docker-registry with basic auth on loopback) holds the image; a Docker agent pulls it with the experiment's
`registry_auth` when `force_pull_image` is set. A wrong password ends the allocation with the registry's message
and uses up no restart. The password is in no log, `e config`, `e describe --json`, API answer or UI page.
"""

from __future__ import annotations

import httpx
import pytest
import yaml
from container_trials import container_cluster, trial_config, trial_context

from integration.helpers import create, logs, wait_state
from trial_images import image_only_image, push_image

pytestmark = pytest.mark.integration


def _config(ref: str, registry, password: str) -> str:
    cfg = yaml.safe_load(trial_config(ref, max_restarts=2))
    cfg["environment"].update(force_pull_image=True, registry_auth={
        "username": registry.username, "password": password, "serveraddress": registry.host})
    return yaml.safe_dump(cfg)


def _everything_shown(c, exp_id: int, trial_id: int) -> str:
    """What a user or the logs can see of the experiment: CLI output, API answers, the UI's page and its data."""
    shown = [c.cli("e", "config", str(exp_id)).stdout, c.cli("e", "describe", str(exp_id), "--json").stdout,
             c.cli("trial", "logs", str(trial_id)).stdout]
    api = c.client()
    shown += [str(api.get(f"/experiments/{exp_id}")), str(api.get(f"/trials/{trial_id}")),
              str(api.get(f"/ui/experiments/{exp_id}")), str(logs(c, trial_id))]
    headers = {"Authorization": f"Bearer {c.admin_token}"}
    shown.append(httpx.get(f"{c.url}/experiments/{exp_id}", headers=headers, cookies={"stalwart_session": str(
        c.admin_token)}).text)
    shown += [c.log("master.log"), c.log("agent-0.log")]
    return "\n".join(shown)


def test_a_forced_pull_with_credentials_then_a_wrong_password(tmp_path, docker_url, registry):
    ref = push_image(docker_url, registry, image_only_image([docker_url]), "team/image-only:pull")
    wrong = "not-" + registry.password
    with container_cluster(tmp_path / "home", "docker", docker_url) as c:
        good = create(c, _config(ref, registry, registry.password), trial_context(tmp_path))
        d = wait_state(c, good, {"COMPLETED", "ERROR"}, timeout=180)
        good_trial = d["trials"][0]["id"]
        text = "\n".join(line["log"] for line in logs(c, good_trial))
        assert d["experiment"]["state"] == "COMPLETED", text[-3000:]
        assert f"pulled {ref}" in text  # the pull's progress is in the task's log

        bad = create(c, _config(ref, registry, wrong), trial_context(tmp_path))
        d = wait_state(c, bad, {"COMPLETED", "ERROR"}, timeout=180)
        assert d["experiment"]["state"] == "ERROR"
        bad_trial = d["trials"][0]["id"]
        trial = c.client().get(f"/trials/{bad_trial}")
        assert [r["exit_reason"] for r in trial["runs"]] == ["SETUP_FAILED"]  # no restart used: it would fail again
        text = "\n".join(line["log"] for line in logs(c, bad_trial))
        assert ref in text and ("unauthorized" in text.lower() or "authentication" in text.lower()), text[-3000:]

        for exp_id, trial_id in ((good, good_trial), (bad, bad_trial)):
            shown = _everything_shown(c, exp_id, trial_id)
            assert registry.password not in shown and wrong not in shown
