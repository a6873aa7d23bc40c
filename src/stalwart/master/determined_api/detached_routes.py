"""The Determined listener's handlers for the real package's detached mode (`core_v2` outside any cluster).

Determined's core_v2 makes (or finds by its external id) a detached experiment and a trial, starts a run of it, and
reports metrics, checkpoints, heartbeats and its printed lines as the logged-in user. Each handler calls what
Stalwart's own detached routes and a run's reporting routes call (master/detached, experiments.intake, logs); the
run a report is filed under is the trial's detached run (detached_views.run_of), not a token's."""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from starlette.concurrency import run_in_threadpool

from stalwart.api import permissions as P
from stalwart.api.determined_routes import DET_BY_KEY
from stalwart.api.errors import InvalidRequest
from stalwart.api.models.detached import MAX_EXTERNAL_TRIAL_ID
from stalwart.api.models.determined.detached import (
    CreateTrialRequest,
    GetMasterResponse,
    PatchTrialRequest,
    PutExperimentResponse,
    PutTrialRequest,
    ReportCheckpointRequest,
    ReportTrialMetricsRequest,
    RunPrepareForReportingRequest,
    RunPrepareForReportingResponse,
    StartTrialRequest,
    StartTrialResponse,
    TaskLogsRequest,
    TrialResponse,
)
from stalwart.api.models.determined.experiments import CreateExperimentRequest, CreateExperimentResponse, Experiment
from stalwart.api.models.determined.wire import Empty
from stalwart.config.source import read_source
from stalwart.master import log_policies
from stalwart.master.allocations import env
from stalwart.master.detached import experiments as detached_experiments, runs as detached_runs
from stalwart.master.determined_api import detached_views as dv
from stalwart.master.determined_api.auth_routes import DETERMINED_VERSION
from stalwart.master.determined_api.experiment_views import experiments_of
from stalwart.master.experiments import intake
from stalwart.master.experiments.intake import MetricsWriter
from stalwart.master.identity import authz
from stalwart.master.logs import store_rows
from stalwart.master.queries import experiments as experiment_rows
from stalwart.master.routes.common import IdPath, identity, master, owner_of_new
from stalwart.master.routes.contract import route
from stalwart.master.service import Master, now
from stalwart.master.workspaces import placement

router = APIRouter()
T = "/api/v1/trials"
MAX_EXTERNAL_EXPERIMENT_ID = 256
ExternalId = Annotated[str, Path(min_length=1, max_length=MAX_EXTERNAL_EXPERIMENT_ID,
                                 description="the script's external_experiment_id")]
ENDS = {"STATE_COMPLETED": "COMPLETED", "STATE_ERROR": "ERROR"}
"""The trial states a detached script's run ends with (PatchTrial), as the run's end (detached.runs.end_run)."""
BEATS = ("STATE_RUNNING", "STATE_ACTIVE")
"""The trial states a running script reports as it starts: a heartbeat."""


@route(router, "GET", "/api/v1/master", table=DET_BY_KEY)
async def get_master(request: Request) -> GetMasterResponse:
    m = master(request)
    return GetMasterResponse(version=DETERMINED_VERSION, masterId=m.cluster_id, clusterId=m.cluster_id,
                             clusterName="", telemetryEnabled=False, hasCustomLogo=False, strictJobQueueControl=False,
                             rbacEnabled=authz.mode(m) == authz.RBAC, userManagementEnabled=True, featureSwitches=[])


# --- the experiment -------------------------------------------------------------------------------------------

def _config_text(payload: CreateExperimentRequest) -> str:
    """The detached experiment's config: YAML text, and nothing only a managed experiment has."""
    if payload.modelDefinition or payload.parentId is not None or payload.template or payload.validateOnly:
        raise InvalidRequest("a detached experiment (unmanaged: true) takes no modelDefinition, parentId, template "
                             "or validateOnly: its script runs outside the cluster")
    if payload.projectId is not None:
        raise InvalidRequest("projectId: a detached experiment's project is named in its config (workspace and "
                             "project): leave projectId out")
    if not (payload.config or "").strip():
        raise InvalidRequest("config: required, the experiment config as YAML text")
    return str(payload.config)


async def _detached_experiment(request: Request, payload: CreateExperimentRequest,
                               external_id: str | None) -> tuple[Experiment, dict[str, Any]]:
    m = master(request)
    owner = owner_of_new(request, None)
    exp_id = await asyncio.to_thread(detached_experiments.create_or_find, m, identity(request), owner,
                                     _config_text(payload), external_id)
    with m.db.begin() as conn:
        [experiment] = experiments_of(conn, [experiment_rows.get(conn, exp_id)])
    return experiment, experiment.config


def _require_create(m: Master, request: Request, config_text: str) -> None:
    """experiments.create in the project the config names, as Determined's PutExperiment asks of every caller (one
    joining an existing experiment needs experiments.edit on it too: detached.experiments.create_or_find)."""
    source = read_source(config_text)
    for key in ("workspace", "project"):
        if not isinstance(source.get(key) or "", str):
            raise InvalidRequest(f"{key}: expected a name, got {source[key]!r}")
    with m.db.begin() as conn:
        project = placement.project_for(conn, source)
    authz.require(m, identity(request), P.CREATE_EXPERIMENTS, placement.target(project))


async def create_unmanaged(request: Request, payload: CreateExperimentRequest) -> CreateExperimentResponse:
    """`POST /api/v1/experiments` with `unmanaged: true` (experiment_routes hands it here): a new detached
    experiment, the caller its owner (experiments.create in the project its config names)."""
    experiment, config = await _detached_experiment(request, payload, None)
    return CreateExperimentResponse(experiment=experiment, config=config, warnings=[])


@route(router, "PUT", "/api/v1/experiments/by-external-id/{external_id:path}", table=DET_BY_KEY)
async def put_experiment(request: Request, external_id: ExternalId, payload: CreateExperimentRequest
                         ) -> PutExperimentResponse:
    """The detached experiment the script's external id names (experiments.edit on it; a finished one is active
    again), else a new one with that id (experiments.create in its config's project)."""
    if payload.unmanaged is False:
        raise InvalidRequest("unmanaged: only a detached experiment has an external id (give unmanaged: true)")
    _require_create(master(request), request, _config_text(payload))
    experiment, config = await _detached_experiment(request, payload, external_id)
    return PutExperimentResponse(experiment=experiment, config=config)


# --- its trial and a run of it --------------------------------------------------------------------------------

def _require_edit(m: Master, request: Request, exp_id: int) -> None:
    for target in authz.targets_of(m, [("exp_id", exp_id)]):
        authz.require(m, identity(request), P.EDIT_EXPERIMENTS, target)


def _require_edit_trial(m: Master, request: Request, trial_id: int) -> None:
    for target in authz.targets_of(m, [("trial_id", trial_id)]):
        authz.require(m, identity(request), P.EDIT_EXPERIMENTS, target)


async def _trial(request: Request, create: CreateTrialRequest | None, external_id: str | None) -> TrialResponse:
    m = master(request)
    if create is None or create.experimentId is None:
        raise InvalidRequest("experimentId: required, the detached experiment the trial belongs to")
    _require_edit(m, request, create.experimentId)
    row = await run_in_threadpool(detached_runs.create_or_find_trial, m, create.experimentId, create.hparams or {},
                                  external_id)
    with m.db.begin() as conn:
        return TrialResponse(trial=dv.trial_message(conn, int(row["id"])))


@route(router, "POST", T, table=DET_BY_KEY)
async def create_trial(request: Request, payload: CreateTrialRequest) -> TrialResponse:
    """A new trial of the detached experiment, with the hparams the script trains with."""
    return await _trial(request, payload, None)


@route(router, "PUT", T, table=DET_BY_KEY)
async def put_trial(request: Request, payload: PutTrialRequest) -> TrialResponse:
    """The experiment's trial `externalTrialId` names, else a new one with it."""
    if payload.externalTrialId is None:
        raise InvalidRequest(f"externalTrialId: required, the script's own id for the trial (at most "
                             f"{MAX_EXTERNAL_TRIAL_ID} characters)")
    return await _trial(request, payload.createTrialRequest, payload.externalTrialId)


@route(router, "POST", T + "/{trial_id}/start", table=DET_BY_KEY)
async def start_trial(request: Request, trial_id: IdPath, payload: StartTrialRequest) -> StartTrialResponse:
    """A run of the detached trial starts now (one its script left running ends first)."""
    if payload.trialId is not None and payload.trialId != trial_id:
        raise InvalidRequest(f"trialId: {payload.trialId} is not the trial of the path ({trial_id})")
    run = await run_in_threadpool(detached_runs.start_run, master(request), trial_id, payload.resume is not False)
    return StartTrialResponse(trialRunId=run.trial_run_id, stepsCompleted=run.steps_completed,
                              latestCheckpoint=run.latest_checkpoint)


@route(router, "POST", "/api/v1/runs/start", table=DET_BY_KEY)
async def prepare_for_reporting(request: Request, payload: RunPrepareForReportingRequest
                                ) -> RunPrepareForReportingResponse:
    """The script is about to report for its trial: its checkpoints are recorded with the experiment's storage."""
    m = master(request)
    _require_edit_trial(m, request, payload.runId)
    with m.db.begin() as conn:
        dv.run_of(conn, payload.runId)
    return RunPrepareForReportingResponse()


@route(router, "PATCH", T + "/{trial_id}", table=DET_BY_KEY)
def patch_trial(request: Request, trial_id: IdPath, payload: PatchTrialRequest) -> TrialResponse:
    """A heartbeat of the trial's running script (no state, or RUNNING as it starts), or the end of its run
    (COMPLETED, ERROR)."""
    m = master(request)
    if payload.state is not None and payload.state not in BEATS and payload.state not in ENDS:
        raise InvalidRequest(f"state: {payload.state}; a detached script reports STATE_RUNNING as it starts and "
                             "STATE_COMPLETED or STATE_ERROR as it ends (leave it out for a heartbeat)")
    with m.db.begin() as conn:
        run_id = str(dv.run_of(conn, trial_id)["id"])
    if payload.state in ENDS:
        detached_runs.end_run(m, run_id, ENDS[payload.state], None)
    else:
        detached_runs.beat(m, run_id)
    with m.db.begin() as conn:
        return TrialResponse(trial=dv.trial_message(conn, trial_id))


# --- its reports ------------------------------------------------------------------------------------------------

@route(router, "POST", T + "/{trial_id}/metrics", table=DET_BY_KEY)
async def report_metrics(request: Request, trial_id: IdPath, payload: ReportTrialMetricsRequest) -> Empty:
    """One report of the trial's metrics, through the master's metric intake (group commit when the master's writer
    is at hand, else a commit of its own)."""
    m = master(request)
    rows = dv.metric_rows_of(trial_id, payload)
    with m.db.begin() as conn:
        intake.caller_allocation(conn, str(dv.run_of(conn, trial_id)["id"]), trial_id)
    writer: MetricsWriter | None = getattr(request.app.state, "metrics_writer", None)
    if writer is not None:
        await writer.submit(rows)
    else:
        done = asyncio.get_running_loop().create_future()
        MetricsWriter(m).commit([(rows, done)])
        await done
    return Empty()


@route(router, "POST", "/api/v1/checkpoints", table=DET_BY_KEY)
async def report_checkpoint(request: Request, payload: ReportCheckpointRequest) -> Empty:
    """A checkpoint the script has stored, recorded for the trial its taskId names (on the loop, as Stalwart's own
    checkpoint report is: the state it changes stays serialized)."""
    m = master(request)
    trial_id = dv.trial_of_task(payload.taskId, "taskId")
    _require_edit_trial(m, request, trial_id)
    with m.db.begin() as conn:
        run_id = str(dv.run_of(conn, trial_id)["id"])
    intake.register_checkpoint(m, run_id, dv.checkpoint_body(trial_id, payload))
    return Empty()


@route(router, "POST", "/task-logs", table=DET_BY_KEY)
async def task_logs(request: Request, payload: TaskLogsRequest) -> Empty:
    """Lines the script printed, filed under its trial's latest detached run (the last ones arrive as it ends)."""
    m = master(request)
    by_trial: dict[int, list[Any]] = {}
    for i, entry in enumerate(payload.root):
        by_trial.setdefault(dv.trial_of_task(entry.task_id, f"[{i}].task_id"), []).append(entry)
    for trial_id, entries in by_trial.items():
        _require_edit_trial(m, request, trial_id)
        with m.db.begin() as conn:
            run_id = str(dv.run_of(conn, trial_id, live=False)["id"])
        store = functools.partial(store_rows, m.db, dv.log_rows_of(entries, now()), run_id,
                                  functools.partial(env.secrets_of, m), functools.partial(log_policies.watch, m))
        if m.db.is_sqlite:  # on the loop, as the master's own log intake does (one SQLite writer at a time)
            store()
        else:
            await run_in_threadpool(store)
    return Empty()
