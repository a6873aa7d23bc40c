"""Determined-shaped SDK calls on a real cluster (issue 33, acceptance 6): `list_trials` is a list and
`iter_trials` an iterator, the deprecated checkpoint and metric methods, `download_code`, the log filters Determined
has, and `list_experiments`' positional filters."""

from __future__ import annotations

import tarfile
import time

import pytest

from stalwart.api.states import ExperimentState
from stalwart.experimental import client

pytestmark = pytest.mark.integration

SAVE_TRIAL = """
import determined as det

with det.core.init() as ctx:
    with ctx.checkpoint.store_path({"steps_completed": 1}) as (path, uuid):
        (path / "state.txt").write_text("saved")
    ctx.train.report_validation_metrics(1, {"loss": 0.5})
    print("SAVED", uuid, flush=True)
"""
CONFIG = {"name": "sdk-shape", "entrypoint": "python3 main.py", "max_restarts": 0,
          "searcher": {"name": "single", "metric": "loss", "max_length": 1}}


def test_a_determined_script_runs_against_stalwarts_sdk(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("STALWART_HOME", str(cluster.home))
    sdk = client.Determined(master=cluster.url)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "main.py").write_text(SAVE_TRIAL)
    exp = sdk.create_experiment(CONFIG, tmp_path / "code")
    assert exp.wait(interval=0.2) is ExperimentState.COMPLETED
    trials = exp.list_trials()
    assert len(trials) == 1 and [t.id for t in exp.get_trials()] == [trials[0].id]
    assert next(exp.iter_trials(limit=1)).id == trials[0].id and list(exp.iter_trials(limit=0)) == []
    trial = trials[0]
    assert trial.get_experiment().id == exp.id
    best = exp.top_n_checkpoints(1)
    assert [c.uuid for c in best] == [trial.top_checkpoint().uuid] == [trial.select_checkpoint(latest=True).uuid]
    assert [c.uuid for c in trial.get_checkpoints()] == [best[0].uuid]
    assert [type(m).__name__ for m in trial.stream_validation_metrics()] == ["ValidationMetrics"]
    saved = list(trial.iter_logs(timestamp_before=time.time() + 3600, search_text="SAVED", tail=5))
    assert len(saved) == 1 and best[0].uuid in saved[0]
    with tarfile.open(exp.download_code(tmp_path / "downloaded")) as archive:
        assert any(name.endswith("main.py") for name in archive.getnames())
    assert exp.workspace_id is not None and exp.project_id is not None
    assert [e.id for e in sdk.list_experiments(None, client.OrderBy.ASCENDING, [exp.id])] == [exp.id]
    assert [e.id for e in sdk.list_experiments(users=[exp.owner, "nobody"])] == [exp.id]
    assert sdk.list_experiments(experiment_ids=[exp.id + 1000]) == []
    assert sdk.get_session_username() == exp.owner
