"""`custom`: run a user's search method written for Determined's custom searcher API (0.20-0.37).

The user subclasses `SearchMethod` (Determined's `det.searcher.SearchMethod`; the same shape is
provided here as `UserSearchMethod`) and implements `initial_operations(state)`,
`on_trial_created(state, request_id)`, `on_validation_completed(state, request_id, metric,
train_length)`, `on_trial_closed(state, request_id)`, `on_trial_exited_early(state, request_id,
exited_reason)`, `progress(state)`, and optionally `save_method_state(path)` /
`load_method_state(path)`. Each hook returns a list of operations: `Create(request_id, hparams,
checkpoint)`, `ValidateAfter(request_id, length)`, `Close(request_id)`, `Progress(value)`,
`Shutdown(cancel=False, failure=False)`. Operations are recognised by class name and attributes,
so Determined's own classes (or a `determined.searcher` shim) work as well as the ones here.

The master loads the user's class from the context in its own process, instantiates it, and
builds `CustomSearch(user_method, config)`; the adapter is then used like any search method.

Mapping to Stalwart actions:

* `Create` + the first `ValidateAfter` for it -> `Create(rid, hparams, seed, length)` (the seed is
  drawn from the experiment's generator; `rid` is `str(request_id)`; a `checkpoint` with a `uuid`
  becomes `Create.checkpoint_uuid`); `on_trial_created` is called right after, and its operations
  are applied in the same batch.
* A trial trains to its length. The validation whose time (`metrics[unit]`, `steps_completed` for
  batches) reaches it completes the operation: `on_validation_completed(state, request_id,
  metric, length)` is called with the raw searcher metric. If the user then (or earlier) asked for
  a longer `ValidateAfter`, the adapter answers `Pause` + `Resume(rid, length)`; otherwise `Pause`
  (the trial waits, like a 0.37 trial without an operation) until a `ValidateAfter` arrives.
  Validations before the target are not passed on (0.37 only reported completed operations).
* `Close` -> `Stop`. A paused trial is closed at once and `on_trial_closed` is called
  immediately; a running one is called back when it exits.
* Trial exits: COMPLETED / USER_REQUESTED_STOP -> `on_trial_closed`; ERRORED -> `ERRORED`,
  CANCELED -> `USER_CANCELED`, INVALID_HP -> `INVALID_HP` via `on_trial_exited_early`, followed by
  `on_trial_closed` (as the 0.37 master sent `trialClosed` after `trialExitedEarly`).
* `Progress(x)` is remembered; `progress()` calls the user's `progress(state)` (falling back to the
  last `Progress`). `Shutdown(cancel, failure)` -> `Shutdown(failure, reason, cancel)`.

Snapshot: the adapter's bookkeeping, the `SearcherState`, and the user's method state: when the
user defines `save_method_state`, it is called with a path in a fresh temporary directory and
whatever it writes there (a file or a tree) is kept base64-encoded in the snapshot; `restore`
writes it back and calls `load_method_state` with the same kind of path. This file round trip is
the only I/O of the searcher package, and it exists because the 0.37 API is path-based.
"""

from __future__ import annotations

import base64
import enum
import os
import pathlib
import tempfile
import uuid
from collections.abc import Mapping
from typing import Any

from stalwart.api.metric_values import NON_FINITE
from stalwart.config.searcher_settings import CustomSettings
from stalwart.searcher._common import MetricReader, SearchContext, clamp_progress
from stalwart.searcher.base import (
    Action,
    Create as CreateAction,
    Pause,
    Resume,
    SearchMethod,
    Shutdown as ShutdownAction,
    Stop,
    TrialExit,
)

# -- the user-facing API (Determined 0.37's shapes) -----------------------------------------------


class ExitedReason(enum.Enum):
    ERRORED = "ERRORED"
    USER_CANCELED = "USER_CANCELED"
    INVALID_HP = "INVALID_HP"


class Operation:
    """Base of the operations a user search method returns."""


class Create(Operation):
    def __init__(self, request_id: Any, hparams: dict[str, Any], checkpoint: Any = None) -> None:
        self.request_id = request_id
        self.hparams = hparams
        self.checkpoint = checkpoint

    @classmethod
    def new(cls, hparams: dict[str, Any], checkpoint: Any = None) -> Create:
        """A Create with a fresh request id (uuid4 uses os.urandom: for user code only)."""
        return cls(uuid.uuid4(), hparams, checkpoint)


class ValidateAfter(Operation):
    def __init__(self, request_id: Any, length: int) -> None:
        self.request_id = request_id
        self.length = length


class Close(Operation):
    def __init__(self, request_id: Any) -> None:
        self.request_id = request_id


class Progress(Operation):
    def __init__(self, progress: float) -> None:
        self.progress = progress


class Shutdown(Operation):
    def __init__(self, cancel: bool = False, failure: bool = False) -> None:
        self.cancel = cancel
        self.failure = failure


class SearcherState:
    """What the user's hooks see, as in 0.37."""

    def __init__(self) -> None:
        self.failures: set[Any] = set()
        self.trial_progress: dict[str, Any] = {}
        self.trials_closed: set[Any] = set()
        self.trials_created: set[Any] = set()
        self.last_event_id = 0
        self.experiment_completed = False
        self.experiment_failed = False


class UserSearchMethod:
    """The base a user's search method derives from (Determined's `SearchMethod`)."""

    def initial_operations(self, searcher_state: SearcherState) -> list[Operation]:
        raise NotImplementedError

    def on_trial_created(self, searcher_state: SearcherState, request_id: Any) -> list[Operation]:
        return []

    def on_validation_completed(self, searcher_state: SearcherState, request_id: Any, metric: Any,
                                train_length: int) -> list[Operation]:
        return []

    def on_trial_closed(self, searcher_state: SearcherState, request_id: Any) -> list[Operation]:
        return []

    def on_trial_exited_early(self, searcher_state: SearcherState, request_id: Any,
                              exited_reason: ExitedReason) -> list[Operation]:
        return []

    def progress(self, searcher_state: SearcherState) -> float:
        return 0.0

    def save_method_state(self, path: pathlib.Path) -> None:
        pass

    def load_method_state(self, path: pathlib.Path) -> None:
        pass


# -- the adapter ----------------------------------------------------------------------------------

PENDING, RUNNING, AT_TARGET, PAUSED, CLOSED = "pending", "running", "at_target", "paused", "closed"


def _kind(op: Any) -> str:
    return type(op).__name__


def _encode_id(request_id: Any) -> list[Any]:
    if isinstance(request_id, uuid.UUID):
        return ["uuid", str(request_id)]
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        return ["int", str(request_id)]
    return ["str", str(request_id)]


def _decode_id(encoded: list[Any]) -> Any:
    kind, text = encoded
    if kind == "uuid":
        return uuid.UUID(text)
    if kind == "int":
        return int(text)
    return text


class CustomSearch(SearchMethod):
    """Wraps a user's search method object (Determined's custom searcher API)."""

    def __init__(self, user_method: Any, config: Mapping[str, Any], *, experiment_seed: int | None = None) -> None:
        from stalwart.config import searcher_settings, views

        settings = searcher_settings(config)  # the config's typed settings: `unit` and `metric` as checked there
        if not isinstance(settings, CustomSettings):
            raise TypeError(f"CustomSearch needs a custom searcher config, got searcher.name {settings.name!r}")
        seed = views.experiment_seed(config) if experiment_seed is None else experiment_seed
        self.settings = settings
        self.user = user_method
        self.ctx = SearchContext(seed)
        self.reader = MetricReader(settings.metric, True, settings.unit)
        self.state = SearcherState()
        self.trials: dict[str, dict[str, Any]] = {}  # rid -> {id, status, target, queue}
        self.last_progress = 0.0
        self.started = False
        self.shutdown = False

    # -- applying user operations -------------------------------------------------------------

    def _call(self, hook: str, *args: Any) -> list[Action]:
        self.state.last_event_id += 1
        ops = getattr(self.user, hook)(self.state, *args)
        return self._apply(list(ops or []))

    def _apply(self, ops: list[Any]) -> list[Action]:
        actions: list[Action] = []
        created_at: dict[str, int] = {}  # rid -> index of its Create in `actions`
        follow_ups: list[str] = []
        for op in ops:
            kind = _kind(op)
            if kind == "Create":
                rid = str(op.request_id)
                if rid in self.trials:
                    continue
                checkpoint = getattr(op, "checkpoint", None)
                ck_uuid = getattr(checkpoint, "uuid", checkpoint) if checkpoint is not None else None
                self.trials[rid] = {"id": _encode_id(op.request_id), "status": PENDING, "target": None, "queue": []}
                self.state.trials_created.add(op.request_id)
                created_at[rid] = len(actions)
                actions.append(CreateAction(rid, dict(op.hparams), self.ctx.trial_seed(), None,
                                            checkpoint_uuid=None if ck_uuid is None else str(ck_uuid)))
                follow_ups.append(rid)
            elif kind == "ValidateAfter":
                actions += self._validate_after(str(op.request_id), int(op.length), created_at, actions)
            elif kind == "Close":
                actions += self._close(str(op.request_id))
            elif kind == "Progress":
                self.last_progress = clamp_progress(float(op.progress))
            elif kind == "Shutdown":
                if not self.shutdown:
                    self.shutdown = True
                    self.state.experiment_completed = True
                    failure = bool(getattr(op, "failure", False))
                    self.state.experiment_failed = failure
                    actions.append(ShutdownAction(failure=failure, cancel=bool(getattr(op, "cancel", False)),
                                                  reason="the custom search method shut the search down"))
            else:
                raise TypeError(f"custom searcher returned an unknown operation {op!r}")
        for rid in follow_ups:
            trial = self.trials[rid]
            if trial["status"] == PENDING:
                trial["status"] = RUNNING
            actions += self._call("on_trial_created", _decode_id(trial["id"]))
        return actions

    def _validate_after(self, rid: str, length: int, created_at: dict[str, int], actions: list[Any]) -> list[Action]:
        trial = self.trials.get(rid)
        if trial is None or trial["status"] == CLOSED:
            return []
        if trial["status"] == PENDING and trial["target"] is None and rid in created_at:
            trial["target"] = length
            old = actions[created_at[rid]]
            actions[created_at[rid]] = CreateAction(old.request_id, old.hparams, old.seed, length,
                                                    checkpoint_uuid=old.checkpoint_uuid)
            return []
        if trial["status"] == PAUSED:
            trial["status"] = RUNNING
            trial["target"] = length
            return [Resume(rid, length)]
        if trial["status"] == AT_TARGET:
            trial["status"] = RUNNING
            trial["target"] = length
            return [Pause(rid), Resume(rid, length)]
        if trial["target"] is None:  # created earlier without a length
            trial["target"] = length
            return [Resume(rid, length)]
        trial["queue"].append(length)
        return []

    def _close(self, rid: str) -> list[Action]:
        trial = self.trials.get(rid)
        if trial is None or trial["status"] == CLOSED:
            return []
        was = trial["status"]
        trial["status"] = CLOSED
        actions: list[Action] = [Stop(rid)]
        if was == PAUSED:
            trial["exited"] = True
            request_id = _decode_id(trial["id"])
            self.state.trials_closed.add(request_id)
            actions += self._call("on_trial_closed", request_id)
        return actions

    # -- events -------------------------------------------------------------------------------

    def initial_operations(self) -> list[Action]:
        if self.started:
            return []
        self.started = True
        self.state.last_event_id += 1
        return self._apply(list(self.user.initial_operations(self.state) or []))

    def on_validation_completed(self, request_id: str, metrics: dict[str, Any], steps_completed: int) -> list[Action]:
        trial = self.trials.get(request_id)
        if trial is None or trial["status"] != RUNNING or trial["target"] is None or self.shutdown:
            return []
        time = self.reader.time(metrics, steps_completed)
        metric = metrics.get(self.reader.metric)
        if isinstance(metric, str) and metric in NON_FINITE:
            metric = NON_FINITE[metric]  # stored as "NaN"/"Infinity"; the user's method gets a float, as in Determined
        if time is None or time < trial["target"] or metric is None:
            return []
        trial["status"] = AT_TARGET
        length = trial["target"]
        if trial["queue"]:
            next_length = trial["queue"].pop(0)
            trial["status"] = RUNNING
            trial["target"] = next_length
            actions: list[Action] = [Pause(request_id), Resume(request_id, next_length)]
        else:
            actions = []
        actions += self._call("on_validation_completed", _decode_id(trial["id"]), metric, length)
        if trial["status"] == AT_TARGET:
            trial["status"] = PAUSED
            actions.append(Pause(request_id))
        return actions

    def on_trial_exited(self, request_id: str, how: TrialExit) -> list[Action]:
        trial = self.trials.get(request_id)
        if trial is None or trial.get("exited"):
            return []
        if trial["status"] == PAUSED and how in (TrialExit.COMPLETED, TrialExit.USER_REQUESTED_STOP):
            return []  # the run a Pause ended (not reported by the master; tolerated)
        trial["exited"] = True
        trial["status"] = CLOSED
        user_id = _decode_id(trial["id"])
        actions: list[Action] = []
        reason = {TrialExit.ERRORED: ExitedReason.ERRORED, TrialExit.CANCELED: ExitedReason.USER_CANCELED,
                  TrialExit.INVALID_HP: ExitedReason.INVALID_HP}.get(how)
        if reason is not None:
            self.state.failures.add(user_id)
            actions += self._call("on_trial_exited_early", user_id, reason)
        self.state.trials_closed.add(user_id)
        actions += self._call("on_trial_closed", user_id)
        return actions

    def progress(self, trial_progress: dict[str, float]) -> float:
        if self.shutdown:
            return 1.0
        for rid, value in trial_progress.items():
            trial = self.trials.get(rid)
            if trial is not None:
                self.state.trial_progress[_decode_id(trial["id"])] = value
        method = getattr(self.user, "progress", None)
        if method is None:
            return self.last_progress
        try:
            return clamp_progress(method(self.state))
        except NotImplementedError:
            return self.last_progress

    # -- state --------------------------------------------------------------------------------

    def _save_user_state(self) -> dict[str, Any] | None:
        save = getattr(self.user, "save_method_state", None)
        if save is None:
            return None
        with tempfile.TemporaryDirectory(prefix="stalwart-searcher-") as tmp:
            path = pathlib.Path(tmp) / "method_state"
            save(path)
            if not path.exists():
                return None
            if path.is_file():
                return {"file": base64.b64encode(path.read_bytes()).decode()}
            files = {}
            for root, _, names in os.walk(path):
                for name in names:
                    full = pathlib.Path(root) / name
                    files[str(full.relative_to(path))] = base64.b64encode(full.read_bytes()).decode()
            return {"dir": files}

    def _load_user_state(self, saved: Mapping[str, Any] | None) -> None:
        load = getattr(self.user, "load_method_state", None)
        if load is None or saved is None:
            return
        with tempfile.TemporaryDirectory(prefix="stalwart-searcher-") as tmp:
            path = pathlib.Path(tmp) / "method_state"
            if "file" in saved:
                path.write_bytes(base64.b64decode(saved["file"]))
            else:
                for rel, data in saved["dir"].items():
                    target = path / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(base64.b64decode(data))
            load(path)

    def snapshot(self) -> dict[str, Any]:
        s = self.state
        ids = [t["id"] for t in self.trials.values()]
        by_user = {str(_decode_id(i)): i for i in ids}

        def enc(values: Any) -> list[Any]:
            return [by_user.get(str(v), _encode_id(v)) for v in values]

        return {
            "kind": "CustomSearch",
            "ctx": self.ctx.snapshot(),
            "trials": [[rid, t["id"], t["status"], t["target"], t["queue"], bool(t.get("exited"))]
                       for rid, t in self.trials.items()],
            "state": {
                "failures": enc(s.failures), "trials_closed": enc(s.trials_closed),
                "trials_created": enc(s.trials_created),
                "trial_progress": [[by_user.get(str(k), _encode_id(k)), v] for k, v in s.trial_progress.items()],
                "last_event_id": s.last_event_id, "experiment_completed": s.experiment_completed,
                "experiment_failed": s.experiment_failed,
            },
            "last_progress": self.last_progress,
            "flags": [self.started, self.shutdown],
            "method_state": self._save_user_state(),
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.ctx.restore(snapshot["ctx"])
        self.trials = {str(rid): {"id": list(i), "status": status, "target": target, "queue": list(queue),
                                  "exited": bool(exited)}
                       for rid, i, status, target, queue, exited in snapshot["trials"]}
        st = snapshot["state"]
        self.state = SearcherState()
        self.state.failures = {_decode_id(i) for i in st["failures"]}
        self.state.trials_closed = {_decode_id(i) for i in st["trials_closed"]}
        self.state.trials_created = {_decode_id(i) for i in st["trials_created"]}
        self.state.trial_progress = {_decode_id(k): float(v) for k, v in st["trial_progress"]}
        self.state.last_event_id = int(st["last_event_id"])
        self.state.experiment_completed = bool(st["experiment_completed"])
        self.state.experiment_failed = bool(st["experiment_failed"])
        self.last_progress = float(snapshot["last_progress"])
        self.started, self.shutdown = (bool(x) for x in snapshot["flags"])
        self._load_user_state(snapshot.get("method_state"))
