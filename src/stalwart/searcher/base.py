"""The searcher interface: events in, actions out; no I/O and no clock, snapshot and restore.

A search method is a pure state machine. The master feeds it events (`initial_operations`,
`on_validation_completed`, `on_trial_exited`) and carries out the actions each call returns, in
order. Every random draw comes from one `random.Random` seeded by
`reproducibility.experiment_seed`, and `snapshot()` captures that generator's state too, so:

* the same config and seed give the same trials, and
* `restore(snapshot())` on a freshly built searcher gives identical next actions.

Actions
-------
`Create`, `Stop` and `Shutdown` are what every searcher uses. `Pause` and `Resume` are used by the
searchers that hold trials at a boundary and continue some of them later (`asha_promotion`,
`hyperband`, `pbt`, `custom`); `Create.checkpoint_from` is used by `pbt` (exploit) and
`Create.checkpoint_uuid` by `custom` (a warm start from a stored checkpoint).

The contract with the master, per action:

* `Create(request_id, hparams, seed, length, checkpoint_from=None, checkpoint_uuid=None)`: insert a
  trial. `length` is the target the trial trains to, in the searcher's unit (absolute: a trial that
  starts from a checkpoint at step s trains `length - s` more). With `checkpoint_from=R`, the trial
  starts from the latest completed checkpoint of the trial with request id R (its step count
  included); it must not be scheduled while R still has a live allocation, so that R's checkpoint
  at its round boundary is the one used.
* `Stop(request_id)`: graceful stop; the trial checkpoints and ends COMPLETED. For a trial that is
  paused (held by a `Pause` and not resumed) the master finishes it COMPLETED without running it.
  Searchers treat a stopped paused trial as closed at once and ignore any later exit event for it.
* `Pause(request_id)`: the trial reached a boundary and must wait. The master requests
  preemption of its live allocation (the trial checkpoints and exits 0) and holds the trial: it is
  not scheduled again until a `Resume`, and the exit of that run is NOT reported to the searcher.
* `Resume(request_id, length)`: raise the trial's target to `length` and let it run again from its
  latest checkpoint. If it is still running out the run that a `Pause` preempted (a `Pause` and a
  `Resume` in the same batch is the common case), the master lets that run end and re-queues it,
  exactly as after a preemption.
* `Shutdown(failure, reason, cancel=False)`: the search is over. `failure` ends the experiment in
  ERROR, `cancel` (only a custom searcher asks for it) ends it CANCELED, otherwise COMPLETED. A search
  whose trials have all exited ends with `SearchMethod.end_of_search`: a failure when every one errored.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import Any

from stalwart.config import SearcherSettings


@dataclass(frozen=True)
class Create:
    """Create a trial with these hyperparameters; `length` is its (absolute) target in the searcher's unit.

    `checkpoint_from`: the request id of a trial whose latest checkpoint this trial starts from
    (PBT's exploit step). `checkpoint_uuid`: a stored checkpoint to start from (custom searchers).
    """

    request_id: str
    hparams: dict[str, Any]
    seed: int
    length: int | None
    checkpoint_from: str | None = None
    checkpoint_uuid: str | None = None


@dataclass(frozen=True)
class Stop:
    """Stop a trial gracefully (it checkpoints and completes); a paused trial is completed as it is."""

    request_id: str


@dataclass(frozen=True)
class Pause:
    """Hold a trial at a boundary: preempt it (it checkpoints and exits) and keep it until `Resume`."""

    request_id: str


@dataclass(frozen=True)
class Resume:
    """Continue a paused trial from its latest checkpoint until it reaches `length`."""

    request_id: str
    length: int


@dataclass(frozen=True)
class Shutdown:
    """The search is over; `failure` ends the experiment in ERROR, `cancel` in CANCELED."""

    failure: bool = False
    reason: str = ""
    cancel: bool = False


Action = Create | Stop | Pause | Resume | Shutdown


class TrialExit(str, enum.Enum):
    """How a trial's life ended, as the master reports it to `on_trial_exited`."""

    COMPLETED = "completed"  # ended on its own, or after a Stop
    ERRORED = "errored"  # failed more than max_restarts times
    CANCELED = "canceled"  # killed by a user
    INVALID_HP = "invalid_hp"  # user code raised InvalidHP
    USER_REQUESTED_STOP = "user_requested_stop"  # user code asked to stop early


class SearchMethod(abc.ABC):
    """One experiment's search. Every event method returns the actions it causes."""

    # The typed settings it was built from (`make_search_method` sets them; None for one built by hand).
    settings: SearcherSettings | None = None
    # The reason `end_of_search` gives when every trial errored (`single` names its one trial).
    failure_reason = "every trial failed"

    def end_of_search(self, exited: int, errored: int) -> Shutdown:
        """The `Shutdown` once every trial has exited: a failure (`failure_reason`) when each of the `exited` trials
        (those that count: an INVALID_HP one a searcher replaces does not) errored, else the search completed."""
        failed = exited > 0 and errored == exited
        return Shutdown(failure=failed, reason=self.failure_reason if failed else "")

    @abc.abstractmethod
    def initial_operations(self) -> list[Action]:
        """The first actions; calling it again (e.g. after a restore) returns []."""

    @abc.abstractmethod
    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        """A trial reported validation `metrics` (the whole dict, so time metrics such as `batches` are there)."""

    @abc.abstractmethod
    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        """A trial's life ended (not called for the run a `Pause` ended)."""

    @abc.abstractmethod
    def progress(self, trial_progress: dict[str, float]) -> float:
        """Overall progress 0..1 given each trial's own progress 0..1."""

    @abc.abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """The whole state as a JSON-serialisable dict (random generator included)."""

    @abc.abstractmethod
    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a `snapshot()` into a searcher freshly built from the same config."""

    def milestones(self) -> list[int]:
        """Lengths at which this searcher makes decisions (rung lengths); simulators validate there."""
        return []
