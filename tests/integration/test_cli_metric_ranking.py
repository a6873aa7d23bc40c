"""`describe --metrics` rows and the checkpoint ranking of `e download` / `t download --best`, on a real master.

A grid of two trials whose trial script reports a fixed plan of metrics and checkpoints (a list-valued metric, a NaN
validation, a checkpoint later deleted); the CLI's functions read them back through a real `stalwart.client.Client`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from integration.helpers import one_file_context_b64
from stalwart.cli.checkpoint_pick import rank_checkpoints
from stalwart.cli.metric_rows import metric_table
from stalwart.client import Client
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

SCRIPTED_TRIAL = """import json
from determined import core

PLANS = {
    1: [("training", 1, {"loss": 1.0}), ("training", 2, {"loss": 0.5, "hist": [1, 2]}),
        ("validation", 2, {"score": 0.7}), ("checkpoint", 2, None)],
    2: [("training", 2, {"loss": 0.4}), ("validation", 2, {"score": float("nan")}), ("checkpoint", 2, None),
        ("validation", 4, {"score": 0.9}), ("checkpoint", 4, None), ("checkpoint", 5, None),
        ("checkpoint", 6, None)],
}

with core.init() as ctx:
    for op in ctx.searcher.operations():
        for kind, steps, metrics in PLANS[ctx.info.trial.hparams["plan"]]:
            if kind == "training":
                ctx.train.report_training_metrics(steps, metrics)
            elif kind == "validation":
                ctx.train.report_validation_metrics(steps, metrics)
            else:
                with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, uuid):
                    (path / "state.json").write_text(json.dumps({"steps": steps}))
            op.report_progress(steps)
        op.report_completed(0.0)
"""
"""Plan 1: training at steps 1 and 2 (a list-valued metric at 2), validation 0.7 and a checkpoint at 2. Plan 2:
training at 2, validations NaN at 2 and 0.9 at 4, checkpoints at 2, 4, 5 (the test deletes it) and 6."""

CONFIG = {
    "name": "scripted-metrics",
    "entrypoint": "python3 scripted.py",
    "searcher": {"name": "grid", "metric": "score", "smaller_is_better": False, "max_length": 6},
    "hyperparameters": {"plan": {"type": "categorical", "vals": [1, 2]}},
    "max_restarts": 0,
    "checkpoint_storage": {"save_trial_latest": 10},  # keep every checkpoint
}


@dataclass(frozen=True)
class Reported:
    """The master's client, the trial id of each plan, and each checkpoint's uuid by (plan, steps)."""

    client: Client
    trials: dict[int, int]
    uuids: dict[tuple[int, int], str]

    def name(self, uuid: str) -> str:
        """A checkpoint uuid as "cPLAN-STEPS" (the step-5 one: "c2-gone")."""
        plan, steps = next(key for key, value in self.uuids.items() if value == uuid)
        return "c2-gone" if (plan, steps) == (2, 5) else f"c{plan}-{steps}"


def context_b64() -> str:
    return one_file_context_b64("scripted.py", SCRIPTED_TRIAL)


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reported]:
    with LocalTestCluster(tmp_path_factory.mktemp("metric-ranking")) as cluster, cluster.client() as client:
        created = client.create_experiment(yaml.safe_dump(CONFIG), context_b64()).experiment
        assert created is not None
        deadline = time.monotonic() + 120
        while not (detail := client.get_experiment(created.id)).experiment.state.terminal:
            assert time.monotonic() < deadline, "the scripted experiment did not end"
            time.sleep(0.2)
        assert detail.experiment.state.value == "COMPLETED", cluster.log("master.log")[-3000:]
        trials = {t.hparams["plan"]: t.id for t in detail.trials}
        plan_of = {trial_id: plan for plan, trial_id in trials.items()}
        uuids = {(plan_of[c.trial_id or 0], c.steps_completed or 0): c.uuid
                 for c in client.experiment_checkpoints(created.id).checkpoints}
        client.delete_checkpoints([uuids[(2, 5)]])
        yield Reported(client, trials, uuids)


def test_a_row_per_trial_and_step_with_training_columns_first_and_the_checkpoint_taken_there(
        reported: Reported) -> None:
    one, two = reported.trials[1], reported.trials[2]
    table = metric_table(reported.client, [one, two])
    assert table.columns == ["Trial", "Steps", "training.loss", "validation.score", "Checkpoint"]  # a list: no column
    rows = [[*row[:-1], reported.name(row[-1]) if row[-1] else None] for row in table.rows]
    expected: list[list[Any]] = [
        [one, 1, 1.0, None, None],
        [one, 2, 0.5, 0.7, "c1-2"],
        [two, 2, 0.4, "NaN", "c2-2"],
        [two, 4, None, 0.9, "c2-4"],
        [two, 5, None, None, "c2-gone"],
        [two, 6, None, None, "c2-6"],
    ]
    assert rows == sorted(expected, key=lambda row: (row[0], row[1]))  # by trial id (either plan may run first)
    assert {"trial_id": one, "group": "training", "steps_completed": 2, "metrics": {"loss": 0.5, "hist": [1, 2]}} \
        in [{k: p[k] for k in ("trial_id", "group", "steps_completed", "metrics")} for p in table.points]


def test_checkpoints_rank_by_their_validation_then_the_unvalidated_most_trained_first(reported: Reported) -> None:
    client = reported.client
    everything = [c for t in reported.trials.values() for c in client.trial_checkpoints(t).checkpoints]
    assert len(everything) == 5  # the DELETED one among them
    larger = rank_checkpoints(client, everything, "score", smaller_is_better=False)
    assert [(reported.name(s.checkpoint.uuid), s.value) for s in larger] == [
        ("c2-4", 0.9), ("c1-2", 0.7), ("c2-6", None), ("c2-2", None)]  # NaN ranks with no value; DELETED is out
    smaller = rank_checkpoints(client, everything, "score", smaller_is_better=True)
    assert [reported.name(s.checkpoint.uuid) for s in smaller][:2] == ["c1-2", "c2-4"]
    assert [s.value for s in rank_checkpoints(client, everything, None, smaller_is_better=True)] == [None] * 4
