"""Helpers for the searcher tests: expanded configs, and a seeded driver of event streams."""

from __future__ import annotations

import copy
import json
import random

import yaml

from stalwart.config import load_experiment_config
from stalwart.searcher import Create, Pause, Resume, Shutdown, Stop, TrialExit, make_search_method

BASE = {
    "entrypoint": "python3 train.py",
    "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp"},
    "reproducibility": {"experiment_seed": 7},
}

# Names the config package may not know yet (the searchers added here); for those the searcher
# section is kept as written (the searchers apply their own defaults).
NEW_NAMES = ("asha_promotion", "hyperband", "pbt", "optuna")


def expand(text_or_dict, **searcher_overrides) -> dict:
    """The expanded config, as the master gets it from `load_experiment_config(...).config`."""
    raw = yaml.safe_load(text_or_dict) if isinstance(text_or_dict, str) else copy.deepcopy(text_or_dict)
    raw = {**copy.deepcopy(BASE), **raw}
    raw["searcher"] = {**raw["searcher"], **searcher_overrides}
    searcher = raw["searcher"]
    if searcher["name"] in NEW_NAMES:
        placeholder = {**raw, "searcher": {"name": "random", "metric": searcher.get("metric", "loss"), "max_trials": 1}}
        try:
            config = load_experiment_config({**raw}).config
        except Exception:
            config = load_experiment_config(placeholder).config
            config["searcher"] = copy.deepcopy(searcher)
    else:
        config = load_experiment_config(raw).config
    # The config package is asked to leave stop_once null when it is not set (0.38 ASHA is
    # stop-based; only an explicit `stop_once: false` selects promotions). Emulate that here.
    if "stop_once" not in searcher and "stop_once" in config["searcher"]:
        config["searcher"]["stop_once"] = None
    return config


def roundtrip(snapshot: dict) -> dict:
    """A snapshot after a trip through JSON (as the master stores it); strict JSON only."""
    return json.loads(json.dumps(snapshot, allow_nan=False))


class Driver:
    """Plays trials against a searcher: answers its actions with a seeded stream of events.

    `step()` picks a random running trial and makes it either validate at its next length (a
    random metric) or exit (mostly COMPLETED at its target; sometimes ERRORED / INVALID_HP /
    CANCELED). Every event and the actions it caused are recorded.
    """

    def __init__(self, search, seed: int, *, metric: str = "loss", time_metric: str = "batches",
                 p_fail: float = 0.05, p_invalid: float = 0.05, p_cancel: float = 0.02) -> None:
        self.search = search
        self.rng = random.Random(seed)
        self.metric = metric
        self.time_metric = time_metric
        self.p_fail, self.p_invalid, self.p_cancel = p_fail, p_invalid, p_cancel
        self.running: dict[str, dict] = {}  # rid -> {target, step}
        self.paused: dict[str, dict] = {}
        self.done = False
        self.events: list[tuple] = []
        self.actions: list = []
        self.created: list[Create] = []
        self.milestones = sorted(set(search.milestones()))
        self._apply(search.initial_operations())

    def _apply(self, actions) -> None:
        self.actions.append(actions)
        for action in actions:
            if isinstance(action, Create):
                self.created.append(action)
                start = 0
                if action.checkpoint_from is not None:
                    parent = self.running.get(action.checkpoint_from) or self.paused.get(action.checkpoint_from)
                    start = parent["step"] if parent else 0
                self.running[action.request_id] = {"target": action.length or 100, "step": start}
            elif isinstance(action, Pause):
                if action.request_id in self.running:
                    self.paused[action.request_id] = self.running.pop(action.request_id)
            elif isinstance(action, Resume):
                trial = self.paused.pop(action.request_id, None) or self.running.get(action.request_id)
                if trial is not None:
                    trial["target"] = action.length
                    self.running[action.request_id] = trial
            elif isinstance(action, Stop):
                self.paused.pop(action.request_id, None)
                if action.request_id in self.running:
                    self.running[action.request_id]["stopping"] = True
            elif isinstance(action, Shutdown):
                self.done = True

    def event(self, kind: str, rid: str, *args):
        if kind == "validation":
            metrics, steps = args
            actions = self.search.on_validation_completed(rid, metrics, steps)
        else:
            (how,) = args
            actions = self.search.on_trial_exited(rid, how)
        self.events.append((kind, rid, *args))
        self._apply(actions)
        return actions

    def step(self) -> bool:
        if self.done or not self.running:
            return False
        rid = self.rng.choice(sorted(self.running, key=int))
        trial = self.running[rid]
        roll = self.rng.random()
        if trial.get("stopping") or trial["step"] >= trial["target"]:
            self.running.pop(rid)
            self.event("exit", rid, TrialExit.COMPLETED)
            return True
        if roll < self.p_invalid:
            self.running.pop(rid)
            self.event("exit", rid, TrialExit.INVALID_HP)
            return True
        if roll < self.p_invalid + self.p_fail:
            self.running.pop(rid)
            self.event("exit", rid, TrialExit.ERRORED)
            return True
        if roll < self.p_invalid + self.p_fail + self.p_cancel:
            self.running.pop(rid)
            self.event("exit", rid, TrialExit.CANCELED)
            return True
        nexts = [m for m in self.milestones if m > trial["step"]] + [trial["target"]]
        trial["step"] = min(n for n in nexts if n > trial["step"]) if any(n > trial["step"] for n in nexts) \
            else trial["target"]
        metrics = {self.metric: round(self.rng.random(), 6), self.time_metric: trial["step"]}
        self.event("validation", rid, metrics, trial["step"])
        return True

    def run(self, max_steps: int = 5000) -> Driver:
        for _ in range(max_steps):
            if not self.step():
                break
        return self


def replay(search, events) -> list[list]:
    """Feed recorded events to a searcher; the actions of each."""
    out = []
    for kind, rid, *args in events:
        if kind == "validation":
            out.append(search.on_validation_completed(rid, *args))
        else:
            out.append(search.on_trial_exited(rid, *args))
    return out


def build(config: dict):
    return make_search_method(config)


# -- a toy search for the model-based samplers ---------------------------------------------------------

TOY_HP = {
    "x": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "y": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "k": {"type": "categorical", "vals": ["a", "b", "c"]},
    "fixed": 3,
}


def objective(hp, t):
    """A loss over TOY_HP with its optimum at x=0.8, y=0.2, k=c, that falls with training time t."""
    return (hp["x"] - 0.8) ** 2 + (hp["y"] - 0.2) ** 2 + (0.0 if hp["k"] == "c" else 0.3) + 1.0 / t


def run_search(sampler, seed=3, max_trials=80):
    """Aggressive ASHA over TOY_HP with `sampler`, one trial at a time reporting `objective` at every rung;
    the Create actions in order."""
    cfg = expand({"hyperparameters": TOY_HP, "reproducibility": {"experiment_seed": seed},
                  "searcher": {"name": "adaptive_asha", "metric": "loss", "max_trials": max_trials, "divisor": 3,
                               "mode": "aggressive", "max_time": 27, "time_metric": "batches",
                               "max_concurrent_trials": 4, "sampler": sampler}})
    s = build(cfg)
    created, live = [], []
    out = s.initial_operations()
    while True:
        for action in out:
            if isinstance(action, Create):
                created.append(action)
                live.append(action)
        if not live:
            break
        trial = live.pop(0)  # validates at every rung length until stopped, then exits
        out = []
        for t in s.milestones():
            step = s.on_validation_completed(trial.request_id, {"loss": objective(trial.hparams, t), "batches": t}, t)
            out += step
            if Stop(trial.request_id) in step:
                break
        out += s.on_trial_exited(trial.request_id, TrialExit.COMPLETED)
    return created
