"""`determined.workload`: the units of work a legacy TrialController is driven through (Determined 0.37/0.38).

A `Stream` yields `(Workload, response_func)` pairs; the controller does the workload and calls
`response_func` exactly once with its `Response`: a metrics dict, or `InvalidHP()` when the workload was
cancelled by an invalid hyperparameter. What each kind's dict holds is read by
`determined.layers.WorkloadSequencer` (RUN_STEP: `{"metrics": {"avg_metrics", "batch_metrics"},
"stop_requested"}`; COMPUTE_VALIDATION_METRICS: `{"metrics": {"validation_metrics"}, "stop_requested"}`;
CHECKPOINT_MODEL: anything, e.g. `{"uuid": ...}`, plus `"stop_requested"`).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterator
from typing import Any, Union


class Workload:
    """One step of work for a TrialController: train `num_batches`, validate, or checkpoint."""

    @enum.unique
    class Kind(enum.Enum):
        RUN_STEP = 1
        COMPUTE_VALIDATION_METRICS = 2
        CHECKPOINT_MODEL = 3

    def __init__(self, kind: Workload.Kind, e_id: int, t_id: int, s_id: int, num_batches: int,
                 total_batches_processed: int) -> None:
        self.kind = kind
        self.experiment_id = e_id
        self.trial_id = t_id
        self.step_id = s_id
        self.num_batches = num_batches
        self.total_batches_processed = total_batches_processed

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.kind, self.experiment_id, self.trial_id, self.step_id))

    def __repr__(self) -> str:
        batches = f" ({self.num_batches} Batches)" if self.kind is Workload.Kind.RUN_STEP else ""
        return f"<{self.kind.name}{batches}: ({self.experiment_id},{self.trial_id},{self.step_id})>"

    def __json__(self) -> dict[str, Any]:
        return vars(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Workload:
        kind = data.get("kind")
        if not isinstance(kind, str) or kind not in Workload.Kind.__members__:
            raise ValueError(f"workload kind {kind!r} is not one of {list(Workload.Kind.__members__)}")
        return Workload(Workload.Kind[kind], data["experiment_id"], data["trial_id"], data["step_id"],
                        data["num_batches"], data["total_batches_processed"])


Metrics = dict[str, Any]
"""The metrics dicts of responses."""


class InvalidHP:
    """The response to a workload cancelled because the trial raised InvalidHP."""


Response = Union[Metrics, InvalidHP]  # noqa: UP007 - a module-level alias users import, as Determined spells it
ResponseFunc = Callable[[Response], None]
Stream = Iterator[tuple[Workload, ResponseFunc]]


class Source(metaclass=abc.ABCMeta):
    """A layer that yields the workloads (and their response functions) for the layer below it."""

    @abc.abstractmethod
    def __iter__(self) -> Stream:
        """The `(workload, response_func)` pairs, in order."""


class WorkloadResponseInterceptor:
    """Sends prepared workloads and keeps the controller's response, for tests written as workload generators."""

    def __init__(self) -> None:
        self._response: Response | None = None

    def _respond(self, resp: Response) -> None:
        if self._response is not None:
            raise RuntimeError("the TrialController called the response function twice for one workload")
        self._response = resp

    def send(self, workload: Workload) -> Stream:
        self._response = None
        yield workload, self._respond

    def result(self) -> Response:
        if self._response is None:
            raise RuntimeError("the TrialController did not call the response function")
        out, self._response = self._response, None
        return out

    def metrics_result(self) -> Metrics:
        if self._response is None:
            raise RuntimeError("the TrialController did not call the response function")
        if not isinstance(self._response, dict):
            raise TypeError("unexpected InvalidHP response: the workload was cancelled")
        return self._response


def ignore_workload_response(*_: Any) -> None:
    """A response function that drops the response."""


def train_workload(step_id: int, exp_id: int = 1, trial_id: int = 1, num_batches: int = 1,
                   total_batches_processed: int = 0) -> Workload:
    return Workload(Workload.Kind.RUN_STEP, exp_id, trial_id, step_id, num_batches, total_batches_processed)


def validation_workload(step_id: int = 1, exp_id: int = 1, trial_id: int = 1,
                        total_batches_processed: int = 0) -> Workload:
    return Workload(Workload.Kind.COMPUTE_VALIDATION_METRICS, exp_id, trial_id, step_id, 0, total_batches_processed)


def checkpoint_workload(step_id: int = 1, exp_id: int = 1, trial_id: int = 1,
                        total_batches_processed: int = 0) -> Workload:
    return Workload(Workload.Kind.CHECKPOINT_MODEL, exp_id, trial_id, step_id, 0, total_batches_processed)
