"""The Python SDK on a real cluster: the grid workflow of examples/sdk from Python, a trial that loads another
experiment's checkpoint through `determined.experimental.client`, editing, archiving and deleting."""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import torch

from integration.helpers import REPO
from stalwart.api.errors import ConfigError, InvalidRequest, InvalidStateError, MasterUnavailable, NotFoundError
from stalwart.api.states import ExperimentState
from stalwart.cli.local_cluster import log_in_local_admin
from stalwart.experimental import (
    Checkpoint,
    CheckpointSortBy,
    Experiment,
    OrderBy,
    Trial,
    _master,
    client,
    metric_rows,
    metrics as metrics_module,
    metrics_frame,
)

pytestmark = pytest.mark.integration

EXAMPLE = REPO / "examples" / "sdk"
DIGITS = REPO / "examples" / "digits"

# A Determined Core API trial that saves a small state dict as a checkpoint and validates once.
SAVE_TRIAL = """
import determined as det
import torch

with det.core.init() as ctx:
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
        torch.save({"weight": torch.arange(6.0).reshape(2, 3), "bias": torch.ones(2)}, path / "state.pt")
    ctx.train.report_validation_metrics(1, {"loss": 0.5})
    print("SAVED", uuid, flush=True)
"""

# A trial that loads ANOTHER experiment's checkpoint, as Determined's users do: no login, the trial's own credentials.
LOAD_TRIAL = """
import os
import determined as det
import torch
from determined.experimental import client

uuid = det.get_cluster_info().trial.hparams["source_checkpoint"]
ckpt = client.get_checkpoint(uuid)
path = ckpt.download(os.path.join("downloaded", uuid))
state = torch.load(os.path.join(path, "state.pt"))
model = torch.nn.Linear(3, 2)
model.load_state_dict(state)
print("LOADED", uuid, "from experiment", client.get_trial(ckpt.trial_id).experiment_id,
      "sum", float(model.weight.sum()), flush=True)
"""


@pytest.fixture
def cluster(cluster, monkeypatch):
    """The shared cluster, its home as this process's STALWART_HOME: the SDK (here, and in the example scripts run
    from here) finds the admin's session in the home's auth file, as it finds the one `stalwart up` keeps."""
    monkeypatch.setenv("STALWART_HOME", str(cluster.home))
    return cluster


def _context(tmp_path: pathlib.Path, name: str, script: str) -> pathlib.Path:
    ctx = tmp_path / name
    ctx.mkdir()
    (ctx / "main.py").write_text(textwrap.dedent(script))
    return ctx


def _config(name: str, **hparams: object) -> dict:
    return {"name": name, "entrypoint": "python3 main.py", "hyperparameters": dict(hparams),
            "searcher": {"name": "single", "metric": "loss", "max_length": 1}, "max_restarts": 0}


def _digits_model() -> Any:
    spec = importlib.util.spec_from_file_location("sdk_test_digits_model", DIGITS / "model.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grid_workflow_from_python(cluster, tmp_path):
    """Acceptance 1: create a grid from Python, wait, list trials, metrics into a DataFrame, download the top
    checkpoint and load its state dict (the example script, then the same steps checked here)."""
    c = cluster
    run = subprocess.run([sys.executable, str(EXAMPLE / "grid_search.py"), "--master", c.url, "--batches", "100",
                          "--out", str(tmp_path / "example-best")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "loaded the best model" in run.stdout, run.stdout

    client.login(master=c.url)
    exp, trials = _grid_and_its_trials()
    frame = _metrics_of(trials)
    best = _checkpoints_ranked(exp, frame)
    best_trial = _best_model_loads(best, tmp_path)
    _logs_of(best_trial)
    _bad_input_gives_clear_errors(exp, trials, tmp_path)


def _grid_and_its_trials() -> tuple[Experiment, list[Trial]]:
    """The example's grid completed with its 4 trials, listed in both orders."""
    [exp] = client.list_experiments(labels=["sdk"])
    assert exp.wait(interval=0.2) is ExperimentState.COMPLETED
    assert exp.config and exp.config["searcher"]["name"] == "grid"

    trials = list(exp.list_trials())
    assert len(trials) == 4
    assert {(t.hparams or {})["learning_rate"] for t in trials} == {0.02, 0.1}
    assert {(t.hparams or {})["hidden"] for t in trials} == {32, 64}
    newest_first = list(exp.list_trials(order_by=OrderBy.DESC))
    assert [t.id for t in newest_first] == sorted((t.id for t in trials), reverse=True)
    return exp, trials


def _metrics_of(trials: list[Trial]) -> Any:
    """The trials' validation metrics in a DataFrame (returned), and their training metrics."""
    reports = list(client.iter_trials_metrics([t.id for t in trials], "validation"))
    frame = metrics_frame(reports)
    assert len(frame) == 4 and set(frame["trial_id"]) == {t.id for t in trials}
    assert {"steps_completed", "validation_accuracy", "validation_loss"} <= set(frame.columns)
    assert metric_rows(reports)[0]["group"] == "validation"
    assert list(trials[0].iter_metrics("training"))
    return frame


def _checkpoints_ranked(exp: Experiment, frame: Any) -> Checkpoint:
    """The experiment's checkpoints by its metric, by another metric either way, by trial; the top one returned."""
    best = exp.top_checkpoint()
    assert best.validation_metrics is not None
    assert best.validation_metrics["validation_accuracy"] == frame["validation_accuracy"].max()
    ranked = exp.list_checkpoints()
    assert ranked[0].uuid == best.uuid and len(ranked) >= 4
    by_loss = exp.list_checkpoints(sort_by="validation_loss", order_by=OrderBy.ASC, max_results=2)
    assert len(by_loss) == 2 and by_loss[0].validation_metrics and by_loss[1].validation_metrics
    assert by_loss[0].validation_metrics["validation_loss"] <= by_loss[1].validation_metrics["validation_loss"]
    assert exp.top_checkpoint(sort_by="validation_loss", smaller_is_better=True).uuid == by_loss[0].uuid
    worst = exp.top_checkpoint(sort_by="validation_loss", smaller_is_better=False)
    assert worst.validation_metrics and worst.validation_metrics["validation_loss"] == frame["validation_loss"].max()
    by_trial = exp.list_checkpoints(sort_by=CheckpointSortBy.TRIAL_ID, order_by=OrderBy.DESC)
    assert [ck.trial_id for ck in by_trial] == sorted((ck.trial_id for ck in by_trial), reverse=True)
    return best


def _best_model_loads(best: Checkpoint, tmp_path: pathlib.Path) -> Trial:
    """The top checkpoint downloads and its state dict gives the accuracy it was ranked by; its trial returned."""
    path = pathlib.Path(best.download(tmp_path / "best"))
    assert (path / "metadata.json").exists()
    digits = _digits_model()
    best_trial = client.get_trial(best.trial_id or 0)
    model = digits.make_model(int((best_trial.hparams or {})["hidden"]))
    model.load_state_dict(torch.load(path / "state.pt")["model"])
    _, (x_val, y_val) = digits.load_data()
    with torch.no_grad():
        accuracy = (model(x_val).argmax(1) == y_val).float().mean().item()
    assert accuracy == pytest.approx(best.validation_metrics["validation_accuracy"], abs=1e-4)
    return best_trial


def _logs_of(best_trial: Trial) -> None:
    lines = list(best_trial.logs())
    assert any("validation at steps_completed=100" in line for line in lines), lines[-20:]
    assert list(best_trial.logs(tail=1)) == lines[-1:]
    assert best_trial.list_checkpoints(max_results=1)[0].trial_id == best_trial.id


def _bad_input_gives_clear_errors(exp: Experiment, trials: list[Trial], tmp_path: pathlib.Path) -> None:
    """Bad input: clear errors, nothing created."""
    with pytest.raises(InvalidRequest, match="both set, or neither"):
        exp.list_checkpoints(sort_by="validation_loss")
    with pytest.raises(NotFoundError):
        client.get_experiment(999_999)
    with pytest.raises(InvalidRequest, match="no template named"):  # the master merges templates; none is named so
        client.create_experiment(exp.config, DIGITS, template="no-such-template")
    with pytest.raises(InvalidRequest, match="does not exist"):
        client.create_experiment(str(tmp_path / "missing.yaml"), DIGITS)
    with pytest.raises(ConfigError, match="malformed YAML"):
        client.create_experiment("searcher: [unclosed\n", DIGITS)
    with pytest.raises(InvalidRequest, match="group"):
        trials[0].iter_metrics("")
    assert len(client.list_experiments()) == 1


def test_trial_downloads_another_experiments_checkpoint(cluster, tmp_path):
    """Acceptance 2: inside a trial, `from determined.experimental import client` (no login) downloads and loads
    another experiment's checkpoint, and the trial completes."""
    c = cluster
    sdk = client.Stalwart(master=c.url)
    source = sdk.create_experiment(_config("sdk-source"), _context(tmp_path, "save", SAVE_TRIAL))
    assert source.wait(interval=0.2) is ExperimentState.COMPLETED
    [ckpt] = source.list_checkpoints()

    reader = sdk.create_experiment(_config("sdk-reader", source_checkpoint=ckpt.uuid),
                                   _context(tmp_path, "load", LOAD_TRIAL))
    state = reader.wait(interval=0.2)
    trial = reader.await_first_trial()
    lines = list(trial.logs())
    assert state is ExperimentState.COMPLETED, lines[-30:]
    assert f"LOADED {ckpt.uuid} from experiment {source.id} sum 15.0" in lines, lines[-30:]
    assert list(trial.logs(follow=True)) == lines  # the trial has ended: following stops at its last line


def test_edit_archive_and_delete(cluster, tmp_path):
    """Labels, notes, list filters, archive, checkpoint and experiment deletion (files removed from storage)."""
    c = cluster
    sdk = client.Stalwart(master=c.url)
    exp = sdk.create_experiment(_config("sdk-edit"), _context(tmp_path, "save", SAVE_TRIAL), activate=False)
    assert exp.state is ExperimentState.PAUSED
    with pytest.raises(InvalidStateError):  # refused until it has ended
        exp.delete()
    with pytest.raises(InvalidStateError, match="PAUSED"):
        exp.wait(interval=0.2)
    exp.activate()
    first = exp.await_first_trial(timeout=120)
    assert first.experiment_id == exp.id
    assert exp.wait(interval=0.2) is ExperimentState.COMPLETED

    exp.set_labels({"b", "a"})
    exp.add_label("c")
    exp.remove_label("b")
    exp.set_notes("seen by the SDK")
    exp.reload()
    assert exp.labels == {"a", "c"} and exp.notes == "seen by the SDK"
    assert [e.id for e in sdk.list_experiments(labels=["a", "c"])] == [exp.id]
    assert sdk.list_experiments(labels=["b"]) == []
    assert [e.id for e in sdk.list_experiments(states=[ExperimentState.COMPLETED])] == [exp.id]
    exp.archive()
    assert sdk.list_experiments() == []
    assert [e.id for e in sdk.list_experiments(include_archived=True)] == [exp.id]
    exp.unarchive()

    [ckpt] = exp.list_checkpoints()
    files = [p for p in c.home.rglob(ckpt.uuid) if p.is_dir()]
    assert files, f"checkpoint {ckpt.uuid} not found under {c.home}"
    ckpt.delete()
    assert not any(p.exists() for p in files)
    assert sdk.get_checkpoint(ckpt.uuid).state is not None and sdk.get_checkpoint(ckpt.uuid).state.value == "DELETED"
    with pytest.raises(InvalidStateError, match="DELETED"):
        sdk.get_checkpoint(ckpt.uuid).download(tmp_path / "gone")

    exp.delete()
    with pytest.raises(NotFoundError):
        sdk.get_experiment(exp.id)


def test_inside_a_task_the_sdk_sends_the_tasks_token_to_its_own_master_only(monkeypatch):
    monkeypatch.setenv("STALWART_MASTER", "http://10.0.0.5:8080/")
    monkeypatch.setenv("STALWART_ALLOCATION_TOKEN", "task-token")
    own = _master.resolve(None)
    assert (own.url, own.allocation_token) == ("http://10.0.0.5:8080", "task-token") and own.retry_for > 0
    other = _master.resolve("10.0.0.9:8080")
    assert (other.url, other.allocation_token, other.retry_for) == ("http://10.0.0.9:8080", None, 0.0)


# Training and validation reports at the same steps: read across groups, each steps value has two reports.
TWO_GROUPS_TRIAL = """
import determined as det

with det.core.init() as ctx:
    for s in range(1, 6):
        ctx.train.report_training_metrics(s, {"x": s, "v": float("nan")})
        ctx.train.report_validation_metrics(s, {"x": 10 + s, "v": float("nan")})
"""


def test_metrics_are_read_page_by_page_without_losing_reports_that_share_steps(cluster, tmp_path, monkeypatch):
    sdk = client.Stalwart(master=cluster.url)
    exp = sdk.create_experiment(_config("sdk-pages"), _context(tmp_path, "two-groups", TWO_GROUPS_TRIAL))
    assert exp.wait(interval=0.2) is ExperimentState.COMPLETED
    [trial] = exp.list_trials()
    monkeypatch.setattr(metrics_module, "PAGE", 3)  # pages end between the two reports of one step
    read = list(metrics_module.iter_trial_metrics(sdk._client, trial.id, None))
    assert sorted((r.steps_completed, r.metrics["x"]) for r in read) == sorted(
        [(s, s) for s in range(1, 6)] + [(s, 10 + s) for s in range(1, 6)])
    assert all(r.trial_id == trial.id and math.isnan(r.metrics["v"]) for r in read)


def test_without_a_configured_master_the_sdk_finds_the_local_cluster(cluster, tmp_path, monkeypatch):
    for name in ("STALWART_MASTER", "DET_MASTER", "STALWART_ALLOCATION_TOKEN", "DET_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("STALWART_HOME", str(home))
    record = {"url": cluster.url, "cluster_id": cluster.client().master_info().cluster_id}
    (home / "local-cluster.json").write_text(json.dumps(record))
    assert log_in_local_admin(cluster.url) is not None  # what `stalwart up` does: the admin's session, kept in home
    assert client.login().master == cluster.url
    assert client.list_experiments() == []
    (home / "local-cluster.json").write_text(json.dumps({**record, "cluster_id": "another-cluster"}))
    with pytest.raises(MasterUnavailable, match="stalwart up"):
        client.login()


def test_login_without_a_master_says_how_to_name_one(tmp_path, monkeypatch):
    for name in ("STALWART_MASTER", "DET_MASTER", "STALWART_ALLOCATION_TOKEN", "DET_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STALWART_HOME", str(tmp_path / "empty-home"))
    with pytest.raises(MasterUnavailable, match="STALWART_MASTER"):
        client.login()


# Prints a line per step and honours pause (preemption) by checkpointing; otherwise runs until killed.
STEPPING_TRIAL = """
import time
import determined as det

with det.core.init() as ctx:
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = int((path / "step").read_text())
    for step in range(start + 1, 100000):
        print("STEP", step, flush=True)
        time.sleep(0.1)
        if ctx.preempt.should_preempt():
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
                (path / "step").write_text(str(step))
            break
"""


def test_pause_activate_follow_logs_and_kill(cluster, tmp_path):
    """The lifecycle calls act on the master: pause checkpoints and stops the trial, activate resumes it from there,
    `logs(follow=True)` streams the running trial's lines, and killing the trial, then the experiment, ends them."""
    sdk = client.Stalwart(master=cluster.url)
    exp = sdk.create_experiment({**_config("sdk-control"), "searcher": {"name": "single", "metric": "loss",
                                                                        "max_length": 100000}},
                                _context(tmp_path, "stepping", STEPPING_TRIAL))
    trial = exp.await_first_trial(timeout=120)
    followed = trial.logs(follow=True)
    assert any("STEP 3" in line for line in followed)  # lines arrive while the trial runs
    exp.pause()
    cluster.wait_for(lambda: exp.list_checkpoints(), what="the pause's checkpoint", timeout=60)
    [paused_at] = exp.list_checkpoints()
    exp.reload()
    assert exp.state is ExperimentState.PAUSED
    exp.activate()
    cluster.wait_for(lambda: any(f"STEP {paused_at.steps_completed + 2}" in line
                                 for line in trial.iter_logs(search_text="STEP")),
                     what="the trial to resume after its checkpoint", timeout=60)
    exp.kill()
    assert exp.wait(interval=0.2, timeout=60) is ExperimentState.CANCELED
    steps = [int(line.split()[1]) for line in trial.iter_logs(search_text="STEP ")]
    resumed = steps[steps.index(paused_at.steps_completed) + 1]
    assert resumed == paused_at.steps_completed + 1, steps  # after activate it went on from the checkpoint
    with pytest.raises(InvalidStateError, match="CANCELED"):
        exp.pause()

    other = sdk.create_experiment({**_config("sdk-trial-kill"), "searcher": {"name": "single", "metric": "loss",
                                                                             "max_length": 100000}},
                                  _context(tmp_path, "stepping-2", STEPPING_TRIAL))
    doomed = other.await_first_trial(timeout=120)
    cluster.wait_for(lambda: any("STEP 1" in line for line in doomed.iter_logs()), what="the trial to run", timeout=60)
    doomed.kill()
    other.wait(interval=0.2, timeout=60)
    doomed.reload()
    other.reload()
    assert doomed.state.value == "CANCELED", doomed.state
    assert other.state is ExperimentState.COMPLETED  # a single-trial search ends when its trial does
