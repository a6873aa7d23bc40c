"""Stalwart's checkpoint rows as Determined's `Checkpoint` messages, and their order in an experiment's list.

A message carries more than its row: the experiment's config (with `checkpoint_storage` where the files really are,
its secrets hidden: the client copies a shared_fs checkpoint straight from there), the trial's hparams, and the
training and validation metrics reported at the checkpoint's steps, the searcher's metric among them
(det-wire.md §2.8, §2.9). `origin_of` reads all of that for a set of checkpoints of one experiment at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stalwart.api.models.determined.checkpoints import (
    Checkpoint,
    CheckpointState,
    CheckpointTrainingMetadata,
    Metrics,
    SortBy,
)
from stalwart.api.models.determined.logs import OrderBy
from stalwart.config import secrets, views as cviews
from stalwart.master.determined_api.wire import rfc3339
from stalwart.master.experiments.gc_selection import is_number
from stalwart.master.queries import metrics as metric_rows, trials as trial_rows
from stalwart.master.queries.rows import Conn
from stalwart.master.views import RowLike

STATE_OF: dict[str, CheckpointState] = {
    "ACTIVE": "STATE_ACTIVE", "COMPLETED": "STATE_COMPLETED", "ERROR": "STATE_ERROR", "DELETED": "STATE_DELETED",
    "PARTIALLY_DELETED": "STATE_PARTIALLY_DELETED",
}
STATE_ORDER = ("STATE_UNSPECIFIED", "STATE_ACTIVE", "STATE_COMPLETED", "STATE_ERROR", "STATE_DELETED",
               "STATE_PARTIALLY_DELETED")  # the proto's numbers: SORT_BY_STATE sorts by them


@dataclass(frozen=True)
class Origin:
    """What the messages of some checkpoints of one experiment need beyond their rows."""

    exp_id: int
    config: dict[str, Any]  # the experiment's config, secrets hidden
    hparams: dict[int, dict[str, Any]]  # by trial id
    training: dict[tuple[int, int], dict[str, Any]]  # metrics by (trial id, steps)
    validation: dict[tuple[int, int], dict[str, Any]]


def task_id(trial_id: int) -> str:
    """A trial's task id, as the listener's trial messages give it (trial_views)."""
    return f"trial-{trial_id}"


def origin_of(conn: Conn, exp_row: RowLike, rows: Sequence[RowLike]) -> Origin:
    """Reads what the messages of `rows` (checkpoints of the experiment `exp_row`) need."""
    trial_ids = sorted({int(r["trial_id"]) for r in rows})
    hparams = dict(trial_rows.hparams_of_experiment(conn, exp_row["id"], only=trial_ids)) if trial_ids else {}
    validation = {(int(v["trial_id"]), int(v["steps_completed"])): v["metrics"]
                  for v in (metric_rows.validations_of_trials(conn, trial_ids) if trial_ids else [])}
    training: dict[tuple[int, int], dict[str, Any]] = {}
    for r in rows:
        key = (int(r["trial_id"]), int(r["steps_completed"]))
        if key not in training:
            found = metric_rows.metrics_at(conn, key[0], "training", key[1])
            if found is not None:
                training[key] = found
    return Origin(exp_row["id"], secrets.redact(exp_row["config"]), {k: v or {} for k, v in hparams.items()},
                  training, validation)


def searcher_value(config: RowLike, validation: RowLike | None) -> float | None:
    """The searcher metric's validation value, when the trial reported a number for it."""
    name = cviews.searcher_metric(config)
    value = None if validation is None or name is None else validation.get(name)
    return float(value) if isinstance(value, (int, float)) and is_number(value) else None


def message(row: RowLike, origin: Origin) -> Checkpoint:
    """One checkpoint row as Determined's message; its metadata always says `steps_completed`."""
    trial_id, steps = int(row["trial_id"]), int(row["steps_completed"])
    storage = secrets.redact_storage(row["storage"]) or {}
    config = {**origin.config,
              "checkpoint_storage": {**(origin.config.get("checkpoint_storage") or {}), **storage}}
    training, validation = origin.training.get((trial_id, steps)), origin.validation.get((trial_id, steps))
    meta = CheckpointTrainingMetadata(
        trialId=trial_id, experimentId=origin.exp_id, experimentConfig=config, hparams=origin.hparams.get(trial_id, {}),
        trainingMetrics=None if training is None else Metrics(avgMetrics=training, batchMetrics=[]),
        validationMetrics=None if validation is None else Metrics(avgMetrics=validation, batchMetrics=[]))
    value = searcher_value(origin.config, validation)
    if value is not None:
        meta.searcherMetric = value
    out = Checkpoint(
        uuid=row["uuid"], taskId=task_id(trial_id), reportTime=rfc3339(row["report_time"]),
        resources={path: str(int(size)) for path, size in (row["resources"] or {}).items()},
        metadata={**(row["metadata"] or {}), "steps_completed": steps},
        state=STATE_OF.get(row["state"], "STATE_UNSPECIFIED"), training=meta)
    if row["allocation_id"] is not None:
        out.allocationId = row["allocation_id"]
    return out


def _by_attr(sort_by: SortBy) -> Callable[[Checkpoint], Any]:
    """The sort key of a plain attribute (the real master's tie-break: report time)."""
    keys: dict[str, Callable[[Checkpoint], Any]] = {
        "SORT_BY_UUID": lambda c: c.uuid,
        "SORT_BY_BATCH_NUMBER": lambda c: (c.metadata["steps_completed"], c.reportTime or ""),
        "SORT_BY_END_TIME": lambda c: c.reportTime or "",
        "SORT_BY_STATE": lambda c: STATE_ORDER.index(c.state),
    }
    return keys.get(sort_by, lambda c: (c.training.trialId, c.reportTime or ""))


def _by_value(ckpts: list[Checkpoint], value: Callable[[Checkpoint], float | None],
              descending: bool) -> list[Checkpoint]:
    """Those with a value by it (report time on ties), then those without, whatever the order."""
    scored = [c for c in ckpts if value(c) is not None]
    scored.sort(key=lambda c: (value(c), c.reportTime or ""), reverse=descending)
    return scored + [c for c in ckpts if value(c) is None]


def validation_value(name: str) -> Callable[[Checkpoint], float | None]:
    def value(c: Checkpoint) -> float | None:
        got = c.training.validationMetrics.avgMetrics.get(name) if c.training.validationMetrics else None
        return float(got) if isinstance(got, (int, float)) and is_number(got) else None

    return value


def ordered(ckpts: list[Checkpoint], sort_by: SortBy | None, sort_by_metric: str | None, order_by: OrderBy | None,
            smaller_is_better: bool) -> list[Checkpoint]:
    """The real master's order: SORT_BY_SEARCHER_METRIC with no `orderBy` is best first (by the searcher's
    `smaller_is_better`), checkpoints with no value for the metric last; `sortByMetric` names a validation metric."""
    descending = order_by == "ORDER_BY_DESC"
    if sort_by_metric:
        return _by_value(ckpts, validation_value(sort_by_metric), descending)
    if sort_by == "SORT_BY_SEARCHER_METRIC":
        if order_by in (None, "ORDER_BY_UNSPECIFIED"):
            descending = not smaller_is_better
        return _by_value(ckpts, lambda c: c.training.searcherMetric, descending)
    return sorted(ckpts, key=_by_attr(sort_by or "SORT_BY_UNSPECIFIED"), reverse=descending)
