"""`Checkpoint`: one checkpoint of a trial, to download (through the master) or delete; and how lists sort.

Determined's shape: `client.get_checkpoint(uuid).download(path)` returns the directory the files are in
(`checkpoints/<uuid>` by default), with a `metadata.json` holding the checkpoint's metadata.
"""

from __future__ import annotations

import enum
import json
import os
import pathlib
from collections.abc import Callable
from typing import Any

from stalwart.api.errors import InvalidRequest, InvalidStateError
from stalwart.api.metric_values import number
from stalwart.api.models import checkpoints as models
from stalwart.client import Client
from stalwart.context.stream_unpack import extract_stream
from stalwart.experimental.metrics import iter_trial_metrics


class CheckpointState(enum.Enum):
    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    PARTIALLY_DELETED = "PARTIALLY_DELETED"
    DELETED = "DELETED"
    ERROR = "ERROR"
    UNSPECIFIED = "UNSPECIFIED"


class CheckpointSortBy(enum.Enum):
    """A checkpoint attribute to sort by (a string `sort_by` names a validation metric instead)."""

    UUID = "UUID"
    TRIAL_ID = "TRIAL_ID"
    BATCH_NUMBER = "BATCH_NUMBER"
    END_TIME = "END_TIME"
    STATE = "STATE"
    SEARCHER_METRIC = "SEARCHER_METRIC"


class DownloadMode(enum.Enum):
    """How Determined fetches a checkpoint's files; Stalwart's SDK fetches them through the master in every mode
    (the files are the same)."""

    AUTO = "AUTO"
    DIRECT = "DIRECT"
    MASTER = "MASTER"


class OrderBy(enum.Enum):
    ASC = "ASC"
    DESC = "DESC"
    ASCENDING = "ASC"
    DESCENDING = "DESC"


DOWNLOADABLE = (CheckpointState.COMPLETED, CheckpointState.PARTIALLY_DELETED)


class Checkpoint:
    """A checkpoint. `validation_metrics` holds the trial's validation at the checkpoint's steps when the
    checkpoint came from a list (`list_checkpoints`), else None. Attributes are cached; `reload()` refreshes."""

    def __init__(self, client: Client, uuid: str) -> None:
        self._client = client
        self.uuid = uuid
        self.trial_id: int | None = None
        self.allocation_id: str | None = None
        self.steps_completed: int | None = None
        self.state: CheckpointState | None = None
        self.report_time: float | None = None
        self.resources: dict[str, int] | None = None
        self.metadata: dict[str, Any] | None = None
        self.storage: dict[str, Any] | None = None
        self.validation_metrics: dict[str, Any] | None = None

    @classmethod
    def _from_model(cls, client: Client, model: models.Checkpoint) -> Checkpoint:
        ckpt = cls(client, model.uuid)
        ckpt._hydrate(model)
        return ckpt

    def _hydrate(self, model: models.Checkpoint) -> None:
        self.trial_id = model.trial_id
        self.allocation_id = model.allocation_id
        self.steps_completed = model.steps_completed
        self.state = _state(model.state)
        self.report_time = model.report_time
        self.resources = model.resources
        self.metadata = model.metadata
        self.storage = model.storage

    def reload(self) -> None:
        self._hydrate(self._client.get_checkpoint(self.uuid).checkpoint)

    def download(self, path: str | os.PathLike[str] | None = None, mode: DownloadMode = DownloadMode.AUTO) -> str:
        """Fetch the checkpoint's files through the master (whatever the `mode`) into `path` (default
        `checkpoints/<uuid>`) and return that directory. Only COMPLETED or PARTIALLY_DELETED checkpoints have files
        to download."""
        if not isinstance(mode, DownloadMode):
            raise InvalidRequest(f"mode: expected a DownloadMode (AUTO, DIRECT or MASTER), got {mode!r}")
        if self.state is None:
            self.reload()
        if self.state not in DOWNLOADABLE:
            state = self.state.value if self.state else "unknown"
            raise InvalidStateError(f"checkpoint {self.uuid} is {state}: only COMPLETED or PARTIALLY_DELETED "
                                    f"checkpoints can be downloaded")
        target = pathlib.Path(path) if path is not None else pathlib.Path("checkpoints", self.uuid)
        if target.exists() and not target.is_dir():
            raise InvalidRequest(f"cannot download checkpoint {self.uuid} into {target}: it is not a directory")
        with self._client.open_checkpoint_download(self.uuid) as archive:  # extracted as it arrives
            extract_stream(archive, target, max_size=None, what=f"the archive of checkpoint {self.uuid}")
        metadata_file = target / "metadata.json"
        if not metadata_file.exists():
            metadata_file.write_text(json.dumps(self.metadata or {}, indent=2))
        return str(target)

    def write_metadata_file(self, path: str | os.PathLike[str]) -> None:
        """Write the checkpoint's metadata (as last fetched) into the JSON file `path`."""
        pathlib.Path(path).write_text(json.dumps(self.metadata or {}, indent=2))

    def delete(self) -> None:
        """Remove the checkpoint's files from storage; the master then marks it DELETED."""
        self._client.delete_checkpoints([self.uuid])
        self.state = CheckpointState.DELETED

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid!r}, trial_id={self.trial_id}, steps_completed={self.steps_completed})"


def _state(text: str) -> CheckpointState:
    try:
        return CheckpointState(text)
    except ValueError:
        return CheckpointState.UNSPECIFIED


SortBy = str | CheckpointSortBy


def listed(client: Client, found: list[models.Checkpoint]) -> list[Checkpoint]:
    """Checkpoints of a list, each with its trial's validation metrics at its steps (one request per trial)."""
    ckpts = [Checkpoint._from_model(client, m) for m in found]
    for trial_id in sorted({c.trial_id for c in ckpts if c.trial_id is not None}):
        by_steps = {r.steps_completed: r.metrics for r in iter_trial_metrics(client, trial_id, "validation")}
        for c in ckpts:
            if c.trial_id == trial_id and c.steps_completed is not None:
                c.validation_metrics = by_steps.get(c.steps_completed)
    return ckpts


def check_order(sort_by: SortBy | None, order_by: OrderBy | None, max_results: int | None) -> None:
    """The arguments of a checkpoint list, checked before anything is fetched."""
    if (sort_by is None) != (order_by is None):
        raise InvalidRequest("sort_by and order_by must be either both set, or neither")
    if sort_by is not None and not isinstance(sort_by, (str, CheckpointSortBy)):
        raise InvalidRequest(f"sort_by: expected a CheckpointSortBy or a validation metric name, got {sort_by!r}")
    if order_by is not None and not isinstance(order_by, OrderBy):
        raise InvalidRequest(f"order_by: expected OrderBy.ASC or OrderBy.DESC, got {order_by!r}")
    if max_results is not None and max_results < 0:
        raise InvalidRequest(f"max_results: expected an integer >= 0, got {max_results}")


def sort_checkpoints(ckpts: list[Checkpoint], sort_by: SortBy | None, order_by: OrderBy | None, *,
                     searcher_metric: str | None, smaller_is_better: bool,
                     max_results: int | None) -> list[Checkpoint]:
    """Determined's order: `sort_by` and `order_by` both given or neither; neither means the searcher metric,
    best first. Checkpoints without the metric come last whatever the order."""
    check_order(sort_by, order_by, max_results)
    if sort_by is None or sort_by is CheckpointSortBy.SEARCHER_METRIC:
        if searcher_metric is None:
            raise InvalidRequest("the experiment's searcher has no metric: give sort_by (a validation metric name)")
        if order_by is None:
            order_by = OrderBy.ASC if smaller_is_better else OrderBy.DESC
        sort_by = searcher_metric
    assert order_by is not None  # both given, or set above
    key = _metric_key(sort_by) if isinstance(sort_by, str) else _ATTRIBUTE_KEYS[sort_by]
    descending = order_by.value == "DESC"
    present = [c for c in ckpts if key(c) is not None]
    missing = [c for c in ckpts if key(c) is None]
    ordered = sorted(present, key=key, reverse=descending) + missing
    return ordered[:max_results] if max_results is not None else ordered


def _metric_key(name: str) -> Callable[[Checkpoint], Any]:
    def key(c: Checkpoint) -> float | None:
        value = number((c.validation_metrics or {}).get(name))
        return None if value is None or value != value else value  # NaN sorts with the missing ones

    return key


_ATTRIBUTE_KEYS: dict[CheckpointSortBy, Callable[[Checkpoint], Any]] = {
    CheckpointSortBy.UUID: lambda c: c.uuid,
    CheckpointSortBy.TRIAL_ID: lambda c: c.trial_id,
    CheckpointSortBy.BATCH_NUMBER: lambda c: c.steps_completed,
    CheckpointSortBy.END_TIME: lambda c: c.report_time,
    CheckpointSortBy.STATE: lambda c: c.state.value if c.state else None,
}
