"""TrainContext: report training / validation / any-group metrics, progress and early exits."""

from __future__ import annotations

import enum
import logging
import os
import pathlib
import tempfile
import time
from typing import Any

from stalwart.api.errors import NotFoundError
from stalwart.api.metric_values import encode_float, number
from stalwart.client import Client
from stalwart.harness.core._shipper import MetricShipper, Report
from stalwart.harness.core._tensorboard_sync import Mangler, Selector, TensorboardSync
from stalwart.harness.tensorboard import ScalarWriter

log = logging.getLogger("stalwart.core")


class TensorboardMode(enum.Enum):
    """AUTO: reported metrics are also written as TensorBoard scalars. MANUAL: only what the user writes."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


class EarlyExitReason(enum.Enum):
    """Why a trial ended before its searcher's length: reported with TrainContext.report_early_exit()."""

    INVALID_HP = "EXITED_REASON_INVALID_HP"
    USER_REQUESTED_STOP = "EXITED_REASON_USER_REQUESTED_STOP"


def check_metrics(metrics: object, where: str = "metrics") -> None:
    """Refuse metrics that are not a mapping of name to value, with an error that names them.

    NaN and +-Infinity are accepted, as Determined accepts them: they are sent and stored as the strings
    "NaN", "Infinity" and "-Infinity" (see `_plain`), and read back as those strings.
    """
    if not isinstance(metrics, dict):
        raise TypeError(f"{where} must be a dict of metric name to value, got {type(metrics).__name__}")


def _plain(value: object) -> object:
    """JSON-ready: numpy / torch scalars as Python numbers, non-finite floats as their wire strings."""
    item = getattr(value, "item", None)
    if item is not None and callable(item) and getattr(value, "ndim", 0) == 0:
        value = item()
    if isinstance(value, float):
        return encode_float(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _plain_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """A metrics dict JSON-ready (as `_plain` makes any dict)."""
    return {str(k): _plain(v) for k, v in metrics.items()}


def _default_tensorboard_dir() -> pathlib.Path:
    """Off-cluster (or with non-file storage): the trial's work dir, else a per-process temp dir, never the cwd."""
    workdir = os.environ.get("DET_WORKDIR")
    if workdir:
        return pathlib.Path(workdir) / "tensorboard"
    return pathlib.Path(tempfile.gettempdir()) / f"stalwart-tensorboard-{os.getpid()}"


class TrainContext:
    """On-cluster metrics reporting. Off-cluster, the same methods log locally (`client` is None)."""

    def __init__(self, client: Client | None, trial_id: int | None = None, run_id: int = 0,
                 experiment_id: int | None = None, tensorboard_path: pathlib.Path | None = None,
                 tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
                 tensorboard_sync: TensorboardSync | None = None) -> None:
        """`tensorboard_sync`: where the files of `tensorboard_path` go when it is not in storage itself."""
        self._client = client
        self._trial_id = trial_id
        self._run_id = run_id
        self._experiment_id = experiment_id
        self._tb = tensorboard_path or _default_tensorboard_dir()
        auto = TensorboardMode(tensorboard_mode) is TensorboardMode.AUTO
        self._tb_writer = ScalarWriter(self._tb) if tensorboard_path is not None and auto else None
        self._tb_sync = tensorboard_sync
        self._shipper: MetricShipper | None = None
        if client is not None:
            if trial_id is None:
                raise ValueError("a TrainContext that reports to the master needs the trial id")
            on_sent = self._write_tensorboard if self._tb_writer or self._tb_sync else None
            self._shipper = MetricShipper(client, trial_id, on_sent=on_sent)
            self._shipper.start()

    def _write_tensorboard(self, batch: list[Report]) -> None:
        """Acknowledged reports also go to TensorBoard event files, as `group/metric` scalars; then the files that
        changed go to storage (when they are not written there directly)."""
        if self._tb_writer is not None:
            for report in batch:
                group = report["group"]
                self._tb_writer.add_scalars(report["steps_completed"],
                                            {f"{group}/{k}": v for k, v in report["metrics"].items()})
        if self._tb_sync is not None:
            self._tb_sync.sync_quietly()

    def _report(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        if (not isinstance(steps_completed, int) or isinstance(steps_completed, bool)
                or not 0 <= steps_completed < 2**63):
            raise ValueError(f"steps_completed must be an integer in 0..{2**63 - 1}, got {steps_completed!r}")
        check_metrics(metrics)
        plain = _plain_metrics(metrics)
        if self._shipper is None:
            log.info("[%s] steps_completed=%d %s", group, steps_completed, plain)
            return
        self._shipper.put({"group": group, "steps_completed": steps_completed, "metrics": plain,
                           "trial_run_id": self._run_id, "report_time": time.time()})

    def report_training_metrics(self, steps_completed: int, metrics: dict[str, Any],
                                batch_metrics: list[dict[str, Any]] | None = None) -> None:
        if batch_metrics is not None:
            for i, m in enumerate(batch_metrics):
                check_metrics(m, f"batch_metrics[{i}]")
            metrics = {**metrics, "batch_metrics": batch_metrics}
        self._report("training", steps_completed, metrics)

    def report_validation_metrics(self, steps_completed: int, metrics: dict[str, Any]) -> None:
        self._report("validation", steps_completed, metrics)

    def report_metrics(self, group: str, steps_completed: int, metrics: dict[str, Any]) -> None:
        if not isinstance(group, str) or not group:
            raise ValueError("group must be a non-empty string such as 'training', 'validation' or 'inference'")
        self._report(group, steps_completed, metrics)

    def report_progress(self, progress: float) -> None:
        if not 0 <= float(progress) <= 1:
            raise ValueError(f"progress must be in 0..1, got {progress}")
        if self._client is not None and self._trial_id is not None:
            self._client.report_progress(self._trial_id, float(progress))

    def report_early_exit(self, reason: EarlyExitReason) -> None:
        if self._client is not None and self._trial_id is not None:
            self._client.report_early_exit(self._trial_id, EarlyExitReason(reason).value)

    def send_alert(self, title: str, description: str, level: str) -> None:
        """A CUSTOM webhook event through the master (docs/webhooks.md): the chief's; nothing on other ranks."""
        if self._client is not None and self._trial_id is not None:
            self._client.send_alert(self._trial_id, title, description, level)

    def get_experiment_best_validation(self) -> float | None:
        if self._client is None or self._experiment_id is None:
            return None
        self.flush()
        try:
            best = self._client.best_validation_metric(self._experiment_id)
        except NotFoundError:
            return None
        return number(best.metric)  # NaN and the infinities travel as strings

    def set_status(self, status: str) -> None:
        log.info("status: %s", status)

    def get_tensorboard_path(self) -> pathlib.Path:
        self._tb.mkdir(parents=True, exist_ok=True)
        return self._tb

    def upload_tensorboard_files(self, selector: Selector | None = None, mangler: Mangler | None = None) -> None:
        """Send the TensorBoard files that changed (those `selector` picks; `mangler(path, rank)` renames them) to
        checkpoint storage now. On shared_fs they are written there already."""
        if self._tb_sync is not None:
            self._tb_sync.sync(selector, mangler)

    def flush(self) -> None:
        if self._shipper is not None:
            self._shipper.flush()

    def close(self) -> None:
        if self._shipper is not None:
            self._shipper.close()
        if self._tb_writer is not None:
            self._tb_writer.close()
        if self._tb_sync is not None:
            self._tb_sync.sync_quietly()  # what the last reports and the trial's own writers left
