"""Acceptance 4: random pause/activate/preempt events against a running ASHA search never lose
checkpointed progress nor store a point twice; every run resumes where the last checkpoint was."""

from __future__ import annotations

import random
import time
from itertools import pairwise

import pytest
import yaml

from integration.helpers import create, digits_config, experiment, metrics, wait_state
from integration.sched_helpers import GANG, gang_config, runs
from stalwart.testing import LocalTestCluster

# 50 random events, each a CLI process or a new job, then the search's last trials: on a loaded 2-core
# machine with 4 test workers this took 303 s once, past the suite's default limit.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CONFIG = "resource_manager:\n  scheduler: {type: priority, priority: {preemption: true}}\n"
EVENTS = 50


def _asha() -> str:
    cfg = yaml.safe_load(digits_config(hyperparameters__batch_sleep=0.01))
    cfg["searcher"] = {"name": "adaptive_asha", "metric": "validation_accuracy", "smaller_is_better": False,
                       "max_trials": 4, "max_concurrent_trials": 2, "time_metric": "batches", "max_time": 300,
                       "max_rungs": 2, "mode": "aggressive"}
    cfg["hyperparameters"]["learning_rate"] = {"type": "log", "minval": -3.5, "maxval": -0.5}
    return yaml.safe_dump(cfg)


def _check_trial(c, trial: dict) -> None:
    for group in ("training", "validation"):
        points = metrics(c, trial["id"], group)
        steps = [p["steps_completed"] for p in points]
        assert steps == sorted(set(steps)), (group, steps)  # no duplicates
        runs = [p["trial_run_id"] for p in points]
        # a later run replaces everything after the checkpoint it started from and nothing before it
        assert runs == sorted(runs), (group, list(zip(steps, runs, strict=True)))
    vals = [p["steps_completed"] for p in metrics(c, trial["id"], "validation")]
    gaps = [b - a for a, b in pairwise([0, *vals])]
    assert vals and max(gaps) <= 100, vals  # one every 100 batches (and at the end): none lost to a preemption


def test_random_pause_activate_and_preemptions_keep_every_trials_metrics_consistent(tmp_path):
    rng = random.Random(20261122)
    with LocalTestCluster(tmp_path / "home", master_config=CONFIG, agents=2) as c:
        exp = create(c, _asha())
        c.wait_for(lambda: experiment(c, exp)["trials"], what="the first trial")
        paused, disabled, urgent = False, set(), []
        for _ in range(EVENTS):
            event = rng.choice(["pause", "preempt", "disable", "wait"])
            if paused:
                c.cli("e", "activate", str(exp), check=True)
                paused = False
            elif event == "pause":
                c.cli("e", "pause", str(exp), check=True)
                paused = True
            elif event == "preempt":
                urgent.append(create(c, gang_config("urgent", sleep=0.5, priority=1), GANG))
            elif event == "disable":
                agent = rng.choice(["agent-0", "agent-1"])
                if agent in disabled:
                    c.cli("agent", "enable", agent, check=True)
                    disabled.discard(agent)
                else:
                    c.cli("agent", "disable", agent, check=True)
                    disabled.add(agent)
            if experiment(c, exp)["experiment"]["state"] != "ACTIVE" and not paused:
                break
            time.sleep(rng.uniform(0.2, 0.6))
        if paused:
            c.cli("e", "activate", str(exp), check=True)
        for agent in disabled:
            c.cli("agent", "enable", agent, check=True)
        d = wait_state(c, exp, {"COMPLETED", "ERROR"}, timeout=400)
        assert d["experiment"]["state"] == "COMPLETED", d["experiment"]["error_message"]
        for u in urgent:
            assert wait_state(c, u, {"COMPLETED", "ERROR"})["experiment"]["state"] == "COMPLETED"
        preempted = 0
        for trial in d["trials"]:
            assert trial["restarts"] == 0
            _check_trial(c, trial)
            preempted += sum(r["exit_reason"] == "PREEMPTED" for r in runs(c, trial["id"]))
        assert preempted > 0, "the events should have interrupted at least one trial"
