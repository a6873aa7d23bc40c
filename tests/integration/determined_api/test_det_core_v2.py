"""The real package's `core_v2` (determined==0.38.1, detached mode) outside any cluster reports to a Stalwart master
through its Determined listener: the experiment, trial, metrics, checkpoint and printed lines it reports appear in
`stalwart e describe`, its external ids find the same experiment and trial again, and a user who may not edit an
experiment cannot report to it (issue 34, acceptance 5).

The script runs with the real package's interpreter (tests/det_client.py) as a laptop's would: DET_MASTER the
listener, DET_USER/DET_PASS a user of the master; its checkpoints go to a directory of the test's own."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import uuid

import httpx
import pytest

import det_client
from det_cluster import DetMaster

pytestmark = pytest.mark.integration

PASSWORD = "Core-v2-pass"
SCRIPT = '''
import os, sys
from determined import core
from determined.experimental import core_v2

ids = {"external_experiment_id": os.environ.get("EXP_ID"), "external_trial_id": os.environ.get("TRIAL_ID")}
if os.environ.get("OLD_FORM"):  # 0.37's form, still what many scripts use
    kw = {"defaults": core_v2.DefaultConfig(name="det-core-v2", hparams={"lr": 0.01},
                                            checkpoint_storage=os.environ["CKPT_DIR"]),
          "unmanaged": core_v2.UnmanagedConfig(**ids)}
else:
    kw = {"config": core_v2.Config(name="det-core-v2", hparams={"lr": 0.01}, labels=["laptop"],
                                   checkpoint_storage=os.environ["CKPT_DIR"], **ids)}
# no TensorBoard: its writer needs torch or tensorflow, which this environment has not
core_v2.init(tensorboard_mode=core.TensorboardMode.MANUAL, **kw)
start = 0
if core_v2.info.latest_checkpoint:
    with core_v2.checkpoint.restore_path(core_v2.info.latest_checkpoint) as path:
        start = int((path / "step").read_text())
for step in range(start + 1, start + 4):
    core_v2.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
core_v2.train.report_validation_metrics(steps_completed=start + 3, metrics={"validation_loss": 0.5 / (start + 3)})
with core_v2.checkpoint.store_path({"steps_completed": start + 3}) as (path, storage_id):
    (path / "step").write_text(str(start + 3))
print(f"experiment {core_v2.info.trial.experiment_id} trial {core_v2.info.trial.trial_id} reached {start + 3}",
      flush=True)
if os.environ.get("FAIL"):
    raise RuntimeError("the script failed on purpose")
core_v2.close()
'''
REACHED = re.compile(r"experiment (\d+) trial (\d+) reached (\d+)")


def _user(det_master: DetMaster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    det_master.make_user(name, PASSWORD)
    return name


def _run(det_master: DetMaster, tmp_path: pathlib.Path, user: str, **env: str) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    environment = det_client.env(det_master.det_url, tmp_path / "det-config", DET_USER=user, DET_PASS=PASSWORD,
                                 CKPT_DIR=str(tmp_path / "checkpoints"), **env)
    return subprocess.run([det_client.python(), str(script)], env=environment, capture_output=True, text=True,
                          timeout=180, cwd=tmp_path)


def _reached(res: subprocess.CompletedProcess[str]) -> tuple[int, int, int]:
    found = REACHED.search(res.stdout)
    assert found is not None, res.stdout + res.stderr
    exp_id, trial_id, step = (int(g) for g in found.groups())
    return exp_id, trial_id, step


def _describe(det_master: DetMaster, exp_id: int) -> tuple[dict, str]:
    """`stalwart e describe ID --metrics`, as JSON and as the table a user reads."""
    as_json = det_master.cli("e", "describe", str(exp_id), "--metrics", "--json")
    assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    table = det_master.cli("e", "describe", str(exp_id), "--metrics")
    assert table.returncode == 0, table.stdout + table.stderr
    return json.loads(as_json.stdout), table.stdout


def _steps(described: dict, group: str) -> list[int]:
    return [r["steps_completed"] for r in described["metrics"] if r["group"] == group]


def test_a_core_v2_script_reports_metrics_and_a_checkpoint_that_stalwart_describes(det_master, tmp_path):
    user = _user(det_master, "cv")
    res = _run(det_master, tmp_path, user)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    exp_id, trial_id, _ = _reached(res)
    described, table = _describe(det_master, exp_id)
    exp = described["experiment"]
    assert (exp["name"], exp["owner"], exp["state"], exp["labels"]) == ("det-core-v2", user, "COMPLETED", ["laptop"])
    [trial] = described["trials"]
    assert (trial["id"], trial["state"], trial["hparams"]) == (trial_id, "COMPLETED", {"lr": 0.01})
    assert _steps(described, "training") == [1, 2, 3]
    assert [r["metrics"] for r in described["metrics"] if r["group"] == "validation"] == [{"validation_loss": 0.5 / 3}]
    with det_master.client() as c:
        [ckpt] = c.get(f"/trials/{trial_id}/checkpoints")["checkpoints"]
        log_text = "\n".join(line.get("log") or "" for line in c.stream_lines(f"/trials/{trial_id}/logs"))
    assert (ckpt["state"], ckpt["steps_completed"]) == ("COMPLETED", 3)
    assert ckpt["uuid"] in table  # the metrics table shows the checkpoint at its step
    assert (tmp_path / "checkpoints" / ckpt["uuid"] / "step").read_text() == "3"
    assert f"experiment {exp_id} trial {trial_id} reached 3" in log_text  # its printed line, shipped to the trial


def test_external_ids_find_the_same_experiment_and_trial_and_resume_it(det_master, tmp_path):
    user = _user(det_master, "cx")
    ids = {"EXP_ID": f"sweep-{uuid.uuid4().hex}", "TRIAL_ID": "lr-0.01", "OLD_FORM": "1"}
    first = _run(det_master, tmp_path, user, **ids)
    assert first.returncode == 0, first.stdout + first.stderr
    second = _run(det_master, tmp_path, user, **ids)
    assert second.returncode == 0, second.stdout + second.stderr
    exp_id, trial_id, step = _reached(second)
    assert (exp_id, trial_id) == _reached(first)[:2] and step == 6  # resumed from its checkpoint at step 3
    described, _ = _describe(det_master, exp_id)
    [trial] = described["trials"]
    assert (trial["state"], trial["runs"]) == ("COMPLETED", 2)
    assert _steps(described, "training") == [1, 2, 3, 4, 5, 6]


def test_a_failing_script_ends_its_trial_in_error(det_master, tmp_path):
    res = _run(det_master, tmp_path, _user(det_master, "cf"), FAIL="1")
    assert res.returncode != 0 and "the script failed on purpose" in res.stderr
    exp_id, _, _ = _reached(res)
    described, _ = _describe(det_master, exp_id)
    assert [t["state"] for t in described["trials"]] == ["ERROR"]
    assert described["experiment"]["state"] == "ERROR"


def test_a_user_who_may_not_edit_the_experiment_can_neither_join_nor_report_to_it(det_master, tmp_path):
    owner, other = _user(det_master, "co"), _user(det_master, "cn")
    external = f"private-{uuid.uuid4().hex}"
    res = _run(det_master, tmp_path / "owner", owner, EXP_ID=external)
    assert res.returncode == 0, res.stdout + res.stderr
    exp_id, trial_id, _ = _reached(res)
    refused = _run(det_master, tmp_path / "other", other, EXP_ID=external)
    assert refused.returncode != 0 and "lacks edit_experiments" in refused.stderr, refused.stderr
    with httpx.Client(base_url=det_master.det_url, timeout=30) as http:
        token = http.post("/api/v1/auth/login", json={"username": other, "password": PASSWORD}).json()["token"]
        report = {"group": "training", "metrics": {"trialId": trial_id, "trialRunId": 1, "stepsCompleted": 9,
                                                   "metrics": {"avgMetrics": {"loss": 0.0}}}}
        answer = http.post(f"/api/v1/trials/{trial_id}/metrics", json=report,
                           headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["reason"] == "PermissionDenied"
    described, _ = _describe(det_master, exp_id)
    assert 9 not in _steps(described, "training")


def test_bad_detached_calls_get_a_4xx_in_determineds_shape_never_a_5xx(det_master):
    headers = {"Authorization": f"Bearer {det_master.admin_token}"}
    calls = [
        ("POST", "/api/v1/trials", {"hparams": {}}, 400, "experimentId"),
        ("PUT", "/api/v1/trials", {"createTrialRequest": {"experimentId": 1}}, 400, "externalTrialId"),
        ("POST", "/api/v1/checkpoints", {"uuid": str(uuid.uuid4()), "taskId": "not-a-trial", "metadata": {},
                                         "resources": {}}, 400, "taskId"),
        ("PATCH", "/api/v1/trials/987654", {"state": "STATE_PAUSED"}, 400, "state"),
        ("POST", "/api/v1/trials/987654/metrics", "[1, 2]", 400, ""),
    ]
    for method, path, body, status, names in calls:
        content = body if isinstance(body, str) else json.dumps(body)
        answer = httpx.request(method, det_master.det_url + path, headers=headers, content=content, timeout=60)
        assert answer.status_code == status, (method, path, answer.status_code, answer.text)
        error = answer.json()["error"]
        assert error["reason"] == "InvalidArgument" and names in error["error"], (method, path, error)
