"""Helpers for the scheduling tests: the tiny gang trial's config, jobs, live allocations."""

from __future__ import annotations

import pathlib

import yaml

GANG = pathlib.Path(__file__).parent / "gang"


def gang_config(name: str = "gang", slots: int = 1, sleep: float = 0, fail_rank: int = -1, max_restarts: int = 0,
                preemption_timeout: int = 3600, **resources) -> str:
    """The gang script ignores preemption signals: it is killed at `preemption_timeout` and re-queued."""
    return yaml.safe_dump({
        "preemption_timeout": preemption_timeout,
        "name": name, "entrypoint": "python3 gang.py",
        "hyperparameters": {"sleep": sleep, "fail_rank": fail_rank},
        "searcher": {"name": "single", "metric": "x", "max_length": {"batches": 1}},
        "resources": {"slots_per_trial": slots, **resources}, "max_restarts": max_restarts,
    })


def jobs(cluster) -> list[dict]:
    return cluster.client().get("/jobs")["jobs"]


def job_of(cluster, exp_id: int) -> dict | None:
    return next((j for j in jobs(cluster) if j["type"] == "EXPERIMENT" and j["entity_id"] == exp_id), None)


def runs(cluster, trial_id: int) -> list[dict]:
    return cluster.client().get(f"/trials/{trial_id}")["runs"]
