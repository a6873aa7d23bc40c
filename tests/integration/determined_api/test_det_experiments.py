"""The real `det` 0.38.1 creates, lists, describes, waits for, pauses, activates and kills experiments on a Stalwart
master's Determined listener, and reads their trials and context: the same experiments Stalwart's own API serves.

A short run of the digits example (40 batches) goes the whole way with `det`; a slowed one is paused, activated and
killed; the wire's corners the CLI does not reach (paging, validateOnly, projectId, a bad context,
another user's experiment) are called as Determined's client calls them, and answer in its shapes.
"""

from __future__ import annotations

import base64
import io
import json
import pathlib
import re
import tarfile
import time
import uuid
from typing import Any

import httpx
import pytest
import yaml

from det_cluster import DetMaster

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[3]
DIGITS = REPO / "examples" / "digits"


def digits_config(directory: pathlib.Path, name: str, batches: int = 40, batch_sleep: float = 0.0) -> pathlib.Path:
    """The digits example's config, shortened (validation and a checkpoint every 20 batches), as a file."""
    cfg = yaml.safe_load((DIGITS / "const.yaml").read_text())
    cfg["name"] = name
    cfg["searcher"]["max_length"] = {"batches": batches}
    cfg["min_validation_period"] = {"batches": 20}
    cfg["hyperparameters"]["batch_sleep"] = batch_sleep
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def created_id(done: Any) -> int:
    found = re.search(r"Created experiment (\d+)", done.stdout)
    assert done.returncode == 0 and found, done.stdout + done.stderr
    return int(found.group(1))


def clean(done: Any) -> str:
    """What a `det` command printed, asserting it did not end in a traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    return str(done.stdout)


@pytest.fixture(scope="module")
def admin_dir(det_master: DetMaster, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A `det` config directory logged in as the admin."""
    config_dir = tmp_path_factory.mktemp("det-admin")
    done = det_master.det(config_dir, "user", "login", "admin", stdin="\n")
    assert done.returncode == 0, done.stdout + done.stderr
    return config_dir


def det_api(master: DetMaster, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
    """A call to the Determined listener as Determined's client makes it (no content type on a body)."""
    headers = {"Authorization": f"Bearer {token or master.admin_token}"}
    if "json" in kw:
        kw["content"] = json.dumps(kw.pop("json"))
    return httpx.request(method, master.det_url + path, headers=headers, timeout=120, **kw)


def v1_files(directory: pathlib.Path) -> list[dict[str, Any]]:
    """A directory as Determined's client sends it: v1File entries, mtime as a string."""
    out = []
    for path in sorted(directory.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        is_dir = path.is_dir()
        out.append({"path": path.relative_to(directory).as_posix(), "type": 53 if is_dir else 48,
                    "content": "" if is_dir else base64.b64encode(path.read_bytes()).decode(),
                    "mtime": str(int(path.stat().st_mtime)), "mode": path.stat().st_mode & 0o7777, "uid": 0, "gid": 0})
    return out


def test_det_runs_the_digits_example_from_create_f_to_checkpoint_download(det_master, admin_dir, tmp_path):
    """Acceptance 1 of issue 34 in one run: `det e create -f` (its log stream ends when the trial does), list,
    describe, wait, list-trials, trial describe and logs, list-checkpoints, checkpoint download."""
    name = f"det-digits-{uuid.uuid4().hex[:6]}"
    followed = det_master.det(admin_dir, "e", "create", "-f", str(digits_config(tmp_path, name)), str(DIGITS),
                              timeout=300)
    exp_id = created_id(followed)
    assert "validation at steps_completed=40" in clean(followed)  # the trial's own lines, up to its end
    with det_master.client() as c:  # one experiment: Stalwart's own API shows what `det` made
        assert c.get_experiment(exp_id).experiment.name == name
    waited = det_master.det(admin_dir, "e", "wait", str(exp_id), "--polling-interval", "1", timeout=300)
    assert waited.returncode == 0, waited.stdout + waited.stderr  # `det e wait` exits 0 only on COMPLETED
    listed = clean(det_master.det(admin_dir, "e", "list"))
    row = next(line for line in listed.splitlines() if line.split("|")[0].strip() == str(exp_id))
    assert name in row and "COMPLETED" in row and "admin" in row and "100.0%" in row
    described = clean(det_master.det(admin_dir, "e", "describe", str(exp_id)))
    assert "COMPLETED" in described and "digits, example" in described
    workloads = described.split("Workloads:")[1]
    assert re.search(r"\|\s+20 \|", workloads) and re.search(r"\|\s+40 \|", workloads), described
    trials = clean(det_master.det(admin_dir, "e", "list-trials", str(exp_id)))
    assert re.search(r"COMPLETED .*\|\s+40$", trials, re.M), trials
    trial_id = int(trials.splitlines()[2].split("|")[0])
    shown = clean(det_master.det(admin_dir, "trial", "describe", str(trial_id)))
    assert "validation_accuracy" in shown
    as_json = json.loads(clean(det_master.det(admin_dir, "e", "describe", str(exp_id), "--json")))
    exp = as_json[0]["experiment"]
    assert exp["state"] == "STATE_COMPLETED" and exp["config"]["searcher"]["metric"] == "validation_accuracy"
    assert f"name: {name}" in exp["originalConfig"]  # the YAML text as sent
    assert exp["trialIds"] == [trial_id] and exp["numTrials"] == 1 and exp["checkpointCount"] == 2
    logs = clean(det_master.det(admin_dir, "trial", "logs", str(trial_id)))
    assert "validation at steps_completed=40" in logs, logs
    assert all(line.startswith("[20") and "|| " in line for line in logs.splitlines()[:-1]), logs
    _check_checkpoint_download(det_master, admin_dir, tmp_path, exp_id)


def _check_checkpoint_download(det_master: DetMaster, admin_dir: pathlib.Path, tmp_path: pathlib.Path,
                               exp_id: int) -> None:
    """`det e list-checkpoints --best 1` names the best checkpoint; `det checkpoint download` (through the master)
    gives exactly the files Stalwart stored for it."""
    best = clean(det_master.det(admin_dir, "e", "list-checkpoints", "--best", "1", str(exp_id)))
    uuid_ = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", best)
    assert uuid_, best
    out = tmp_path / "downloaded"
    clean(det_master.det(admin_dir, "checkpoint", "download", uuid_.group(0), "--mode", "master", "-o", str(out)))
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with det_master.client() as c, tarfile.open(fileobj=io.BytesIO(c.download_checkpoint(uuid_.group(0)))) as tar:
        want = {m.name.removeprefix("./"): tar.extractfile(m).read() for m in tar.getmembers()  # type: ignore[union-attr]
                if m.isfile()}
    assert "metadata.json" in want and len(want) > 1
    assert got == want


def test_det_downloads_the_model_definition_it_sent(det_master, admin_dir, tmp_path):
    name = f"det-def-{uuid.uuid4().hex[:6]}"
    exp_id = created_id(det_master.det(admin_dir, "e", "create", "--paused", str(digits_config(tmp_path, name)),
                                       str(DIGITS)))
    clean(det_master.det(admin_dir, "e", "download-model-def", str(exp_id), "--output-dir", str(tmp_path)))
    with tarfile.open(tmp_path / f"experiment_{exp_id}_model_def.tgz") as tar:
        stored = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert stored == {p.name: p.read_bytes() for p in DIGITS.iterdir() if p.is_file()}
    assert det_api(det_master, "POST", f"/api/v1/experiments/{exp_id}/kill").status_code == 200


def test_det_pauses_activates_and_kills_an_experiment(det_master, admin_dir, tmp_path):
    name = f"det-pak-{uuid.uuid4().hex[:6]}"
    cfg = digits_config(tmp_path, name, batches=2000, batch_sleep=0.05)
    exp_id = created_id(det_master.det(admin_dir, "e", "create", "--paused", str(cfg), str(DIGITS)))
    assert "PAUSED" in clean(det_master.det(admin_dir, "e", "list"))
    waited = det_master.det(admin_dir, "e", "wait", str(exp_id))  # Determined's client refuses to wait on PAUSED
    assert waited.returncode != 0 and "paused" in (waited.stdout + waited.stderr).lower()
    assert det_master.det(admin_dir, "e", "activate", str(exp_id)).returncode == 0
    state = ""
    deadline = time.monotonic() + 120
    while state != "STATE_RUNNING":  # an ACTIVE experiment shows its runs' state, as the real master's does
        assert time.monotonic() < deadline, f"experiment {exp_id} did not start: {state}"
        state = det_api(det_master, "GET", f"/api/v1/experiments/{exp_id}").json()["experiment"]["state"]
        assert state in ("STATE_QUEUED", "STATE_STARTING", "STATE_RUNNING"), state
        time.sleep(0.5)
    assert det_master.det(admin_dir, "e", "pause", str(exp_id)).returncode == 0
    with det_master.client() as c:
        assert c.get_experiment(exp_id).experiment.state == "PAUSED"
    assert det_master.det(admin_dir, "e", "kill", str(exp_id)).returncode == 0
    waited = det_master.det(admin_dir, "e", "wait", str(exp_id), "--polling-interval", "1", timeout=180)
    assert waited.returncode == 1, waited.stdout + waited.stderr  # ended, but not COMPLETED
    with det_master.client() as c:
        assert c.get_experiment(exp_id).experiment.state == "CANCELED"


def test_another_user_can_list_but_not_kill_an_admins_experiment(det_master, admin_dir, tmp_path):
    exp_id = created_id(det_master.det(admin_dir, "e", "create", "--paused",
                                       str(digits_config(tmp_path, f"det-perm-{uuid.uuid4().hex[:6]}")), str(DIGITS)))
    user = f"dp-{uuid.uuid4().hex[:8]}"
    det_master.make_user(user, "Pass-word-1")
    user_dir = tmp_path / "user"
    assert det_master.det(user_dir, "user", "login", user, stdin="Pass-word-1\n").returncode == 0
    assert str(exp_id) in clean(det_master.det(user_dir, "e", "list", "--all"))
    refused = det_master.det(user_dir, "e", "kill", str(exp_id))
    assert refused.returncode != 0 and "edit_experiments" in refused.stdout + refused.stderr
    with det_master.client() as c:
        assert c.get_experiment(exp_id).experiment.state == "PAUSED"
        assert "Traceback" not in refused.stderr
    assert det_master.det(admin_dir, "e", "kill", str(exp_id)).returncode == 0
    det_master.det(admin_dir, "e", "wait", str(exp_id), "--polling-interval", "1")
    assert det_api(det_master, "POST", f"/api/v1/experiments/{exp_id}/archive").status_code == 200
    assert str(exp_id) not in [line.split("|")[0].strip() for line in
                               clean(det_master.det(admin_dir, "e", "list")).splitlines()]


def test_experiment_lists_page_as_determineds_master_does(det_master):
    everything = det_api(det_master, "GET", "/api/v1/experiments", params={"limit": -1}).json()
    total = everything["pagination"]["total"]
    assert everything["pagination"]["endIndex"] == total == len(everything["experiments"])
    first = det_api(det_master, "GET", "/api/v1/experiments", params={"limit": 1, "offset": 0}).json()
    assert first["pagination"] == {"offset": 0, "limit": 1, "startIndex": 0, "endIndex": min(1, total),
                                   "total": total}
    only_count = det_api(det_master, "GET", "/api/v1/experiments", params={"limit": -2}).json()
    assert only_count["experiments"] == [] and only_count["pagination"]["total"] == total
    last = det_api(det_master, "GET", "/api/v1/experiments", params={"offset": -1}).json()
    assert [e["id"] for e in last["experiments"]] == [everything["experiments"][-1]["id"]] if total else True
    bad = det_api(det_master, "GET", "/api/v1/experiments", params={"sortBy": "SORT_BY_FORKED_FROM"})
    assert bad.status_code == 400 and "sortBy" in bad.json()["error"]["error"]


def test_create_answers_validate_only_project_and_bad_input_in_determineds_shapes(det_master, tmp_path):
    files = v1_files(DIGITS)
    config = digits_config(tmp_path, f"det-api-{uuid.uuid4().hex[:6]}").read_text()
    body = {"activate": False, "config": config, "modelDefinition": files, "parentId": None, "projectId": None,
            "template": None, "validateOnly": True}
    checked = det_api(det_master, "POST", "/api/v1/experiments", json=body)
    assert checked.status_code == 200 and checked.json()["experiment"]["id"] == 0, checked.text
    made = det_api(det_master, "POST", "/api/v1/experiments", json={**body, "validateOnly": False, "projectId": 1})
    assert made.status_code == 200, made.text
    exp = made.json()["experiment"]
    assert exp["state"] == "STATE_PAUSED" and exp["projectId"] == 1 and exp["originalConfig"] == config
    assert made.json()["config"]["searcher"]["name"] == "single" and exp["checkpointSize"] == "0"
    missing = det_api(det_master, "POST", "/api/v1/experiments", json={**body, "projectId": 999_999})
    assert missing.status_code == 400 and "projectId" in missing.json()["error"]["error"]
    outside = det_api(det_master, "POST", "/api/v1/experiments",
                      json={**body, "modelDefinition": [{**files[0], "path": "../escape.py"}]})
    assert outside.status_code == 400 and "inside the context" in outside.json()["error"]["error"]
    unknown_type = det_api(det_master, "POST", "/api/v1/experiments",
                           json={**body, "modelDefinition": [{**files[0], "type": 50}]})
    assert unknown_type.status_code == 400 and unknown_type.json()["error"]["reason"] == "InvalidArgument"
    trials = det_api(det_master, "GET", f"/api/v1/experiments/{exp['id']}/trials").json()
    count = len(trials["trials"])  # a paused experiment's trials wait, paused too
    assert trials["pagination"] == {"offset": 0, "limit": 0, "startIndex": 0, "endIndex": count, "total": count}
    assert all(t["state"] == "STATE_PAUSED" and t["totalCheckpointSize"] == "0" for t in trials["trials"])
    assert det_api(det_master, "GET", "/api/v1/experiments/999999").status_code == 404
    assert det_api(det_master, "POST", f"/api/v1/experiments/{exp['id']}/kill").status_code == 200
