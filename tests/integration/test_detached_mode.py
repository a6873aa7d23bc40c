"""Detached mode (issue 33): a script outside any cluster reports as a trial through core_v2 (Determined's
`determined.experimental.core_v2`, "unmanaged" experiments), with its user's session.

One master (and an agent, for core_v2 inside a managed trial): the detached scripts run here as a laptop's would,
with Stalwart's `determined` on their path and the CLI's session of the master (`stalwart user login`). The
master's heartbeat timeout is 3 s so a killed script is ended quickly."""

from __future__ import annotations

import base64
import io
import os
import signal
import subprocess
import sys
import tarfile
import uuid

import httpx
import pytest
import yaml

from helpers_auth import as_user, bearer
from stalwart.harness.compat import COMPAT_PATH
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

SCRIPT = os.path.join(os.path.dirname(__file__), "detached", "train_detached.py")
HEARTBEAT_TIMEOUT_S = 3
EXPERIMENTS = "/api/v1/experiments"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    home = tmp_path_factory.mktemp("detached") / "home"
    config = yaml.safe_dump({"detached_heartbeat_timeout": HEARTBEAT_TIMEOUT_S})
    with LocalTestCluster(home, agents=1, master_config=config) as c:
        yield c


def _env(c: LocalTestCluster, tmp_path, **extra: str) -> dict[str, str]:
    env = {**c.env, "PYTHONPATH": str(COMPAT_PATH), "CKPT_DIR": str(tmp_path / "checkpoints")}
    env.update(extra)
    return env


def _run(c: LocalTestCluster, tmp_path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, SCRIPT], env=_env(c, tmp_path, **extra), capture_output=True, text=True,
                          timeout=120)


def _experiment_of(c: LocalTestCluster, name: str) -> dict:
    found = [e for e in c.client().get("/experiments?limit=100")["experiments"] if e["name"] == name]
    assert len(found) == 1, found
    return c.client().get(f"/experiments/{found[0]['id']}")


def _metrics(c: LocalTestCluster, trial_id: int, group: str) -> list[int]:
    rows = c.client().get(f"/trials/{trial_id}/metrics?group={group}")["metrics"]
    return [r["steps_completed"] for r in rows]


def _log_text(c: LocalTestCluster, trial_id: int) -> str:
    return "\n".join(line.get("log") or "" for line in c.client().stream_lines(f"/trials/{trial_id}/logs"))


def test_a_script_reports_and_closes_and_resumes_with_its_external_ids(master, tmp_path):
    ids = {"EXP_ID": f"exp-{uuid.uuid4().hex}", "TRIAL_ID": f"trial-{uuid.uuid4().hex[:8]}"}
    first = _run(master, tmp_path, **ids)
    assert first.returncode == 0, first.stderr
    detail = _experiment_of(master, "detached-test")
    exp = detail["experiment"]
    assert (exp["state"], exp["labels"]) == ("COMPLETED", ["laptop"])
    [trial] = detail["trials"]
    assert (trial["state"], trial["hparams"]) == ("COMPLETED", {"lr": 0.1})
    assert _metrics(master, trial["id"], "training") == [1, 2, 3, 4, 5]
    assert _metrics(master, trial["id"], "validation") == [5]
    [ckpt] = master.client().get(f"/trials/{trial['id']}/checkpoints")["checkpoints"]
    assert ckpt["state"] == "COMPLETED"
    assert f"detached trial {trial['id']} reached step 5" in _log_text(master, trial["id"])

    described = master.cli("e", "describe", str(exp["id"]), check=True).stdout
    assert "detached-test" in described and "COMPLETED" in described
    page = httpx.get(f"{master.url}/experiments/{exp['id']}", cookies={"stalwart_session": master.admin_token})
    assert page.status_code == 200 and "detached-test" in page.text

    again = _run(master, tmp_path, **ids)  # the same external ids: the same trial, resumed from its checkpoint
    assert again.returncode == 0, again.stderr
    detail = _experiment_of(master, "detached-test")
    [trial] = detail["trials"]
    assert (detail["experiment"]["state"], trial["state"], trial["runs"]) == ("COMPLETED", "COMPLETED", 2)
    assert _metrics(master, trial["id"], "training") == list(range(1, 11))


def test_the_sdk_sees_a_detached_experiment(master, tmp_path):
    done = _run(master, tmp_path, OLD_FORM="1")
    assert done.returncode == 0, done.stderr
    assert "'DefaultConfig' class have been deprecated" in done.stderr
    exp_id = _experiment_of(master, "detached-old-form")["experiment"]["id"]
    probe = ("from stalwart.experimental import client\n"
             f"exp = client.get_experiment({exp_id})\n"
             "trials = exp.list_trials()\n"
             "print(exp.state.value, len(trials), trials[0].hparams, len(exp.list_checkpoints()))\n")
    out = subprocess.run([sys.executable, "-c", probe], env=master.env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["COMPLETED", "1", "{'lr':", "0.1}", "1"], out.stderr


def test_a_failing_script_ends_its_trial_in_error_at_once(master, tmp_path):
    failed = _run(master, tmp_path, FAIL="1", EXP_ID=f"fails-{uuid.uuid4().hex}")
    assert failed.returncode == 1 and "the script failed on purpose" in failed.stderr
    detail = _find_by_external_run(master)
    [trial] = detail["trials"]
    assert (detail["experiment"]["state"], trial["state"]) == ("ERROR", "ERROR")
    assert "RuntimeError: the script failed on purpose" in _log_text(master, trial["id"])


def _find_by_external_run(c: LocalTestCluster) -> dict:
    newest = c.client().get("/experiments?limit=1&sort_by=id&order_by=desc")["experiments"][0]
    return c.client().get(f"/experiments/{newest['id']}")


def _hanging_script(c: LocalTestCluster, tmp_path, **extra: str) -> tuple[subprocess.Popen[str], int]:
    """A script that reported, then sleeps instead of closing; and its trial's id."""
    proc = subprocess.Popen([sys.executable, SCRIPT], env=_env(c, tmp_path, HANG="1", **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # printed once its checkpoint is stored
    if "reached step 5" not in line:
        proc.kill()
        raise AssertionError(proc.communicate()[1])
    return proc, int(line.split()[2])


def test_a_killed_script_is_ended_after_the_heartbeat_timeout(master, tmp_path):
    proc, trial_id = _hanging_script(master, tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    trial = master.wait_for(lambda: (t := master.client().get(f"/trials/{trial_id}")["trial"])["state"] == "ERROR"
                            and t, timeout=HEARTBEAT_TIMEOUT_S + 30, what="the trial ended after its timeout")
    assert "heartbeats" in trial["error_message"]
    assert "no heartbeat from the detached script for 3 s" in _log_text(master, trial_id)


def test_killing_a_detached_experiment_cancels_its_running_trial(master, tmp_path):
    proc, trial_id = _hanging_script(master, tmp_path, KEEP_NONE="1")
    try:
        exp_id = master.client().get(f"/trials/{trial_id}")["trial"]["experiment_id"]
        master.cli("e", "kill", str(exp_id), check=True)
        detail = master.wait_for(lambda: (d := master.client().get(f"/experiments/{exp_id}"))["experiment"]["state"]
                                 == "CANCELED" and d, timeout=30, what="the killed experiment's end")
        assert [t["state"] for t in detail["trials"]] == ["CANCELED"]
        # the master leaves a detached experiment's checkpoints alone, though their GC policy keeps none
        [ckpt] = master.client().get(f"/trials/{trial_id}/checkpoints")["checkpoints"]
        assert ckpt["state"] == "COMPLETED" and any((tmp_path / "checkpoints").iterdir())
    finally:
        proc.kill()
        proc.wait()


def test_a_detached_experiment_takes_no_entrypoint_pause_or_foreign_editor(master):
    with httpx.Client(base_url=master.url, headers=bearer(master.admin_token)) as admin:
        refused = admin.post(EXPERIMENTS, json={"config": "name: x\nentrypoint: python3 train.py\n",
                                                "unmanaged": True})
        assert refused.status_code == 400 and "leave entrypoint out" in refused.text
        alone = admin.post(EXPERIMENTS, json={"config": "name: x\n", "external_experiment_id": "e1"})
        assert alone.status_code == 400 and "unmanaged: true" in alone.text
        made = admin.post(EXPERIMENTS, json={"config": "name: kept\n", "unmanaged": True,
                                             "external_experiment_id": "shared-id"})
        assert made.status_code == 200, made.text
        exp_id = made.json()["experiment"]["id"]
        paused = admin.post(f"{EXPERIMENTS}/{exp_id}/pause")
        assert paused.status_code == 409 and "detached" in paused.text
        assert admin.post("/api/v1/users", json={"username": "mallory", "password": "Mallory-pass-1"}).is_success
    with httpx.Client(base_url=master.url) as mallory:
        as_user(mallory, "mallory", "Mallory-pass-1")
        foreign = mallory.post(EXPERIMENTS, json={"config": "name: theirs\n", "unmanaged": True,
                                                  "external_experiment_id": "shared-id"})
        assert foreign.status_code == 403, foreign.text
        assert mallory.post(f"{EXPERIMENTS}/{exp_id}/trials", json={"hparams": {}}).status_code == 403


def test_core_v2_inside_a_managed_trial(master):
    config = ("name: managed-core-v2\nentrypoint: python3 train_managed.py\n"
              "searcher: {name: single, metric: loss, max_length: {batches: 3}}\n")
    reply = master.client().post("/experiments", {"config": config, "context": _context_b64("train_managed.py")})
    exp_id = reply["experiment"]["id"]
    detail = master.wait_for(lambda: (d := master.client().get(f"/experiments/{exp_id}"))["experiment"]["state"]
                             in ("COMPLETED", "ERROR") and d, timeout=120, what="the managed trial's end")
    [trial] = detail["trials"]
    assert (detail["experiment"]["state"], trial["state"]) == ("COMPLETED", "COMPLETED"), _log_text(master, trial["id"])
    assert _metrics(master, trial["id"], "training") == [1, 2, 3]
    assert "tensorboard /" in _log_text(master, trial["id"])


def _context_b64(name: str) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(os.path.join(os.path.dirname(SCRIPT), name), arcname=name)
    return base64.b64encode(buf.getvalue()).decode()
