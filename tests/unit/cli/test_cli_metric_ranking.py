"""`describe --metrics` rows and the checkpoint ranking of `e download` / `t download --best`."""

from __future__ import annotations

from typing import cast

from fake_cli_client import FakeClient, checkpoint, point
from stalwart.cli.checkpoint_pick import rank_checkpoints
from stalwart.cli.metric_rows import metric_table
from stalwart.client import Client


def typed(fake: FakeClient) -> Client:
    """The stand-in where a Client is expected (it has the methods these functions call)."""
    return cast(Client, fake)


def two_trials() -> FakeClient:
    client = FakeClient()
    client.metrics = {
        1: [point("training", 1, loss=1.0), point("training", 2, loss=0.5, hist=[1, 2]),
            point("validation", 2, score=0.7)],
        2: [point("training", 2, loss=0.4), point("validation", 2, score="NaN"), point("validation", 4, score=0.9)],
    }
    client.checkpoints = {
        1: [checkpoint("c1-2", 1, 2)],
        2: [checkpoint("c2-2", 2, 2), checkpoint("c2-4", 2, 4), checkpoint("c2-gone", 2, 5, state="DELETED"),
            checkpoint("c2-6", 2, 6)],
    }
    return client


def test_a_row_per_trial_and_step_with_training_columns_first_and_the_checkpoint_taken_there() -> None:
    table = metric_table(typed(two_trials()), [1, 2])
    assert table.columns == ["Trial", "Steps", "training.loss", "validation.score", "Checkpoint"]
    assert table.rows == [
        [1, 1, 1.0, None, None],
        [1, 2, 0.5, 0.7, "c1-2"],
        [2, 2, 0.4, "NaN", "c2-2"],
        [2, 4, None, 0.9, "c2-4"],
        [2, 5, None, None, "c2-gone"],
        [2, 6, None, None, "c2-6"],
    ]
    assert {"trial_id": 1, "group": "training", "steps_completed": 2, "metrics": {"loss": 0.5, "hist": [1, 2]}} \
        in table.points  # JSON keeps every value, lists included


def test_checkpoints_rank_by_their_validation_then_the_unvalidated_most_trained_first() -> None:
    client = two_trials()
    everything = [c for cs in client.checkpoints.values() for c in cs]
    larger = rank_checkpoints(typed(client), everything, "score", smaller_is_better=False)
    assert [(s.checkpoint.uuid, s.value) for s in larger] == [
        ("c2-4", 0.9), ("c1-2", 0.7), ("c2-6", None), ("c2-2", None)]  # NaN ranks with no value; DELETED is out
    smaller = rank_checkpoints(typed(client), everything, "score", smaller_is_better=True)
    assert [s.checkpoint.uuid for s in smaller][:2] == ["c1-2", "c2-4"]
    assert [s.value for s in rank_checkpoints(typed(client), everything, None, smaller_is_better=True)] == [None] * 4
