"""Experiment rows as Determined's `Experiment` message (det-wire.md §3.2): the translation the Determined listener's
experiment handlers answer with, public for its other handlers (detached mode) to answer the same shape.

`experiments_of(conn, rows)` is the entry point: it reads what the rows alone do not say (their trials, project and
workspace, owners' ids, job, live runs, checkpoints) in a few queries for the whole page, then `experiment_of`
translates one row. States are Determined's `STATE_*` names; an ACTIVE experiment shows as QUEUED, STARTING or
RUNNING by its live runs, as the real master does (its enrichExperimentState). The config is the merged one with its
secrets hidden, as Stalwart's own describe shows it; `originalConfig` the stored YAML text, its secrets masked too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from stalwart.api.models.determined.experiments import Experiment, ExperimentStateName, JobSummary
from stalwart.api.states import AllocationState as A
from stalwart.config import secrets
from stalwart.master.determined_api.wire import rfc3339
from stalwart.master.queries import (
    allocations as allocation_rows,
    checkpoints as checkpoint_rows,
    jobs as job_rows,
    trials as trial_rows,
    users as user_rows,
    workspaces as wq,
)
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.scheduling import jobs as queue
from stalwart.master.service import Master

ACTIVE_SUBSTATES: dict[str, str] = {A.RUNNING.value: "STATE_RUNNING", A.ASSIGNED.value: "STATE_STARTING",
                                    A.PENDING.value: "STATE_QUEUED"}
"""What a live run's state makes an ACTIVE experiment or trial (Determined's substates of ACTIVE)."""
SUBSTATE_ORDER = ("STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING")
KEPT_CHECKPOINTS = ("COMPLETED", "PARTIALLY_DELETED")
"""The checkpoint states counted in an experiment's or trial's checkpoint count and size."""


def active_substate(run_states: Iterable[str]) -> str:
    """The most advanced substate of ACTIVE that these live runs give (QUEUED when there are none)."""
    found = [ACTIVE_SUBSTATES.get(s, "STATE_QUEUED") for s in run_states]
    return max(found, key=SUBSTATE_ORDER.index, default="STATE_QUEUED")


def state_name(state: str, run_states: Iterable[str] = ()) -> str:
    """A Stalwart experiment or trial state as Determined's enum value: `STATE_` and the same name, but ACTIVE
    becomes the substate its live runs give."""
    return active_substate(run_states) if state == "ACTIVE" else f"STATE_{state}"


def checkpoint_totals(rows: Iterable[Mapping[Any, Any]]) -> tuple[int, int]:
    """How many of these checkpoints are kept, and their bytes (the sum of their resources)."""
    kept = [r for r in rows if r["state"] in KEPT_CHECKPOINTS]
    return len(kept), sum(int(v) for r in kept for v in (r["resources"] or {}).values())


@dataclass
class ExperimentFacts:
    """What a page of experiment rows needs beyond the rows themselves, read once for the page."""

    places: dict[int, Row] = field(default_factory=dict)  # experiment id -> its project and workspace
    trial_ids: dict[int, list[int]] = field(default_factory=dict)
    user_ids: dict[str, int] = field(default_factory=dict)  # username -> id
    project_owners: dict[int, str | None] = field(default_factory=dict)  # project id -> who made it
    jobs: dict[int, Row] = field(default_factory=dict)  # experiment id -> its job
    run_states: dict[int, list[str]] = field(default_factory=dict)  # experiment id -> its live runs' states
    checkpoints: dict[int, tuple[int, int]] = field(default_factory=dict)  # experiment id -> (count, bytes)


def load_facts(conn: Conn, rows: list[Row]) -> ExperimentFacts:
    """The facts `experiment_of` needs about `rows`."""
    ids = [int(r["id"]) for r in rows]
    facts = ExperimentFacts(places=wq.places_of_experiments(conn, ids),
                            user_ids={u["username"]: int(u["id"]) for u in user_rows.all_users(conn)})
    for project_id in {int(r["project_id"]) for r in rows}:
        project = wq.project(conn, project_id)
        facts.project_owners[project_id] = project["created_by"] if project is not None else None
    wanted = set(ids)
    for run in allocation_rows.live_with_experiment(conn):
        if run["experiment_id"] in wanted:
            facts.run_states.setdefault(int(run["experiment_id"]), []).append(str(run["state"]))
    for exp_id in ids:
        facts.trial_ids[exp_id] = trial_rows.ids_of_experiment(conn, exp_id)
        job = job_rows.of_entity(conn, queue.EXPERIMENT, exp_id)
        if job is not None:
            facts.jobs[exp_id] = job
        facts.checkpoints[exp_id] = checkpoint_totals(checkpoint_rows.of_experiment(conn, exp_id))
    return facts


def experiment_of(row: Row, facts: ExperimentFacts) -> Experiment:
    """One experiment row as Determined's Experiment message (every field, as the real master emits them)."""
    exp_id = int(row["id"])
    cfg: dict[str, Any] = row["config"]
    searcher = cfg.get("searcher") or {}
    place = facts.places.get(exp_id)
    job = facts.jobs.get(exp_id)
    pool = job["resource_pool"] if job is not None else (cfg.get("resources") or {}).get("resource_pool") or ""
    count, size = facts.checkpoints.get(exp_id, (0, 0))
    owner_of_project = facts.project_owners.get(int(row["project_id"]))
    trial_ids = facts.trial_ids.get(exp_id, [])
    return Experiment(
        id=exp_id, name=row["name"], description=row["description"] or "", labels=list(row["labels"] or []),
        startTime=rfc3339(row["created_at"]) or "", endTime=rfc3339(row["ended_at"]),
        state=_experiment_state(state_name(row["state"], facts.run_states.get(exp_id, ()))),
        archived=bool(row["archived"]), numTrials=len(trial_ids), trialIds=trial_ids, displayName="",
        userId=facts.user_ids.get(row["owner"], 0), username=row["owner"], resourcePool=pool,
        searcherType=str(searcher.get("name") or ""), searcherMetric=str(searcher.get("metric") or ""),
        hyperparameters=cfg.get("hyperparameters") or {}, notes=row.get("notes") or "",
        jobId=job["id"] if job is not None else "", forkedFrom=None, progress=row["progress"],
        projectId=int(row["project_id"]), projectName=place["project"] if place is not None else "",
        workspaceId=int(place["workspace_id"]) if place is not None else 0,
        workspaceName=place["workspace"] if place is not None else "", parentArchived=False,
        config=secrets.redact(cfg), originalConfig=secrets.redact_text(row["config_text"], cfg),
        projectOwnerId=facts.user_ids.get(owner_of_project or "", 0), checkpointSize=str(size),
        checkpointCount=count, unmanaged=bool(row.get("unmanaged")),
    )


def _experiment_state(name: str) -> ExperimentStateName:
    """`name` checked against Determined's enum (an unknown value would stop its client in its decoder)."""
    for value in get_args(ExperimentStateName):
        if value == name:
            return cast(ExperimentStateName, value)
    return "STATE_UNSPECIFIED"


def experiments_of(conn: Conn, rows: list[Row]) -> list[Experiment]:
    """Experiment rows as Determined's messages, in the same order."""
    facts = load_facts(conn, rows)
    return [experiment_of(row, facts) for row in rows]


def empty_experiment() -> Experiment:
    """The zero Experiment (every field its proto default): what a validateOnly create answers."""
    return Experiment(
        id=0, name="", description="", labels=[], startTime="1970-01-01T00:00:00Z", endTime=None,
        state="STATE_UNSPECIFIED", archived=False, numTrials=0, trialIds=[], displayName="", userId=0, username="",
        resourcePool="", searcherType="", searcherMetric="", hyperparameters={}, notes="", jobId="", forkedFrom=None,
        progress=None, projectId=0, projectName="", workspaceId=0, workspaceName="", parentArchived=False, config={},
        originalConfig="", projectOwnerId=0, checkpointSize="0", checkpointCount=0, unmanaged=False)


def job_summary_of(m: Master, row: Row) -> JobSummary | None:
    """Where a live experiment's job is in its pool's queue (None once it has ended, or has no job)."""
    if row["state"] in ("COMPLETED", "CANCELED", "ERROR"):
        return None
    listed = queue.list_jobs(m)
    for job in listed:
        if job["type"] == queue.EXPERIMENT and job["entity_id"] == row["id"]:
            ahead = sum(1 for other in listed if other["resource_pool"] == job["resource_pool"]
                        and other["queue_position"] < job["queue_position"])
            return JobSummary(state=_job_state(str(job["state"])), jobsAhead=ahead)
    return None


def _job_state(state: str) -> Any:
    return {"QUEUED": "STATE_QUEUED", "SCHEDULED": "STATE_SCHEDULED",
            "SCHEDULED_BACKFILLED": "STATE_SCHEDULED_BACKFILLED"}.get(state, "STATE_UNSPECIFIED")
