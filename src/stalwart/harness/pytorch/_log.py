"""The PyTorch harness's progress lines (batches trained, validations, checkpoints) at INFO, in Determined's format.

Determined's harness says what it is doing as it trains, so a trial's log shows it; these are our own
lines of the same kind. `make_visible()` prints them when the program configured no logging at all (a
legacy Trial class, or a script that never calls `logging.basicConfig`), in `LOG_FORMAT`, the format
`determined.LOG_FORMAT` gives trial code (harness/compat/determined)."""

from __future__ import annotations

import logging
import numbers
from typing import Any

from stalwart.harness.pytorch._units import Epoch, TrainUnit

LOG_FORMAT = "%(levelname)s: [%(process)s] %(name)s: %(message)s"  # the same as determined.LOG_FORMAT
log = logging.getLogger("stalwart.pytorch")
SHOWN = 8  # metrics named in one line; the rest are counted


def make_visible() -> None:
    """Print this harness's INFO lines on stderr when neither the program nor anyone else configured logging."""
    if logging.getLogger().handlers or log.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def length_text(unit: TrainUnit) -> str:
    kind = "epoch" if isinstance(unit, Epoch) else "batch"
    return f"{unit.value} {kind}{'' if unit.value == 1 else 'es' if kind == 'batch' else 's'}"


def metrics_text(metrics: dict[str, Any]) -> str:
    """`name=value` for the numeric metrics (not the `batches`/`epochs` counters), 4 significant digits."""
    parts = [f"{k}={v:.4g}" for k, v in metrics.items()
             if k not in ("batches", "epochs") and isinstance(v, numbers.Real) and not isinstance(v, bool)]
    more = len(parts) - SHOWN
    return " ".join(parts[:SHOWN]) + (f" (+{more} more)" if more > 0 else "")


def starting(max_length: TrainUnit, validation: TrainUnit, checkpoint: TrainUnit, policy: str, batches_trained: int,
             workers: int) -> None:
    def every(unit: TrainUnit) -> str | None:
        return None if not isinstance(unit.value, int) or unit.value >= 2**62 else f"every {length_text(unit)}"

    at = f"resuming after batch {batches_trained}" if batches_trained else "starting at batch 0"
    log.info("training for %s, %s on %d worker%s; validation %s; checkpoint %s, checkpoint_policy %s",
             length_text(max_length), at, workers, "" if workers == 1 else "s", every(validation) or "at the end",
             every(checkpoint) or "at the end", policy)


def trained(batches: int, records: int | None, seconds: float, total: int, target: TrainUnit,
            metrics: dict[str, Any]) -> None:
    rate = f"{batches / seconds:.1f} batches/s" if seconds > 0 else "instant"
    if records and seconds > 0:
        rate += f", {records / seconds:.0f} records/s"
    log.info("trained %d batch%s in %.2f s (%s); %d batches done of %s: %s", batches, "" if batches == 1 else "es",
             seconds, rate, total, length_text(target), metrics_text(metrics) or "no metrics")


def validated(batches_trained: int, seconds: float, metrics: dict[str, Any]) -> None:
    log.info("validation after batch %d took %.2f s: %s", batches_trained, seconds,
             metrics_text(metrics) or "no metrics")


def checkpointed(uuid: str, batches_trained: int, seconds: float) -> None:
    log.info("checkpoint %s saved after batch %d (%.2f s)", uuid, batches_trained, seconds)


def finished(batches_trained: int, reason: str) -> None:
    log.info("training %s after batch %d", reason, batches_trained)
