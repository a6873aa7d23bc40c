"""The searcher interface: events in, actions out; no I/O and no clock, snapshot and restore."""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters; `length` is its target in the configured unit."""

    request_id: str
    hparams: dict
    seed: int
    length: int | None


@dataclass(frozen=True)
class Stop:
    """Stop a running trial gracefully (it checkpoints and completes)."""

    request_id: str


@dataclass(frozen=True)
class Shutdown:
    """The search is over; `failure` ends the experiment in ERROR."""

    failure: bool = False
    reason: str = ""


Action = Union[Create, Stop, Shutdown]


class TrialExit(str, enum.Enum):
    COMPLETED = "completed"
    ERRORED = "errored"
    CANCELED = "canceled"
    INVALID_HP = "invalid_hp"
    USER_REQUESTED_STOP = "user_requested_stop"


class SearchMethod(abc.ABC):
    """One experiment's search. Every event method returns the actions it causes."""

    @abc.abstractmethod
    def initial_operations(self) -> list[Action]: ...

    @abc.abstractmethod
    def on_validation_completed(self, request_id: str, metrics: dict, steps_completed: int) -> list[Action]:
        """A trial reported validation `metrics` (the whole dict, so time metrics such as `batches` are there)."""

    @abc.abstractmethod
    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]: ...

    @abc.abstractmethod
    def progress(self, trial_progress: dict[str, float]) -> float:
        """Overall progress 0..1 given each trial's own progress 0..1."""

    @abc.abstractmethod
    def snapshot(self) -> dict: ...

    @abc.abstractmethod
    def restore(self, snapshot: dict) -> None: ...
