"""The Determined listener's handlers for experiments and their trials (det-wire.md §2.1-2.6).

Each calls what Stalwart's own route for the same thing calls (master/routes/experiments.py: create, the actions,
model_def), so the same checks, limits and domain functions run; `experiment_views` and `trial_views` translate the
rows into Determined's messages. Listing pages as Determined does (`experiments_window`: its GetExperiments rules,
limit 0 meaning 100 and -1 everything; `wire.page` elsewhere)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Query, Request
from pydantic import ValidationError

from stalwart.api import permissions as P
from stalwart.api.determined_routes import DET_BY_KEY
from stalwart.api.determined_routes.experiments import ACTIONS
from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.experiments import (
    CreateExperimentRequest,
    CreateExperimentResponse,
    GetExperimentResponse,
    GetExperimentsResponse,
    GetModelDefResponse,
)
from stalwart.api.models.determined.trials import (
    GetExperimentTrialsResponse,
    GetTrialResponse,
    GetTrialWorkloadsResponse,
)
from stalwart.api.models.determined.wire import Empty, Pagination
from stalwart.api.models.experiments import CreateExperiment
from stalwart.master.determined_api import detached_routes, trial_views
from stalwart.master.determined_api.experiment_views import empty_experiment, experiments_of, job_summary_of
from stalwart.master.determined_api.model_definition import context_archive
from stalwart.master.determined_api.wire import page
from stalwart.master.identity import authz
from stalwart.master.queries import (
    experiments as experiment_rows,
    trials as trial_rows,
    users as user_rows,
    workspaces as wq,
)
from stalwart.master.routes import experiments as stalwart_experiments
from stalwart.master.routes.common import IdPath, identity, master
from stalwart.master.routes.contract import route
from stalwart.master.service import Master

router = APIRouter()
E = "/api/v1/experiments"
T = "/api/v1/trials"

Names = Annotated[list[str] | None, Query(max_length=1000)]
Int32 = Annotated[int, Query(ge=-(2**31), le=2**31 - 1)]


def _project_config(m: Master, config_text: str, project_id: int | None) -> str:
    """The config placed in Determined's `projectId` (0 or none: where the config says). A config that names
    another workspace or project is refused: one place per experiment."""
    if not project_id:
        return config_text
    with m.db.begin() as conn:
        project = wq.project(conn, project_id)
    if project is None:
        raise InvalidRequest(f"projectId: there is no project {project_id} (see `stalwart project list`)")
    try:
        cfg = yaml.safe_load(config_text)
    except yaml.YAMLError as err:
        raise InvalidRequest(f"config: not valid YAML: {err}") from None
    if not isinstance(cfg, dict):
        raise InvalidRequest("config: the experiment config must be a YAML mapping")
    place = (project["workspace_name"], project["name"])
    named = (cfg.get("workspace"), cfg.get("project"))
    if any(named) and named != place:
        raise InvalidRequest(f"projectId: project {project_id} is {place[1]!r} of workspace {place[0]!r}, but the "
                             f"config names workspace {named[0]!r}, project {named[1]!r}: give one of them")
    if any(named) or project_id == wq.UNCATEGORIZED_PROJECT:
        return config_text
    cfg["workspace"], cfg["project"] = place
    return yaml.safe_dump(cfg, sort_keys=False)


def _stalwart_request(payload: CreateExperimentRequest, config_text: str, archive: bytes) -> CreateExperiment:
    try:
        return CreateExperiment(config=config_text, context=base64.b64encode(archive).decode(),
                                activate=payload.activate is not False, validate_only=bool(payload.validateOnly),
                                parent_id=payload.parentId, template=payload.template or None)
    except ValidationError as err:
        raise InvalidRequest("; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                       for e in err.errors())) from None


@route(router, "POST", E, table=DET_BY_KEY)
async def create(request: Request, payload: CreateExperimentRequest) -> CreateExperimentResponse:
    """`det e create CONFIG DIR [--paused]`: the context made into a .tgz, then Stalwart's own create."""
    if payload.unmanaged:  # core_v2 outside the cluster (detached_routes)
        return await detached_routes.create_unmanaged(request, payload)
    if not (payload.config or "").strip():
        raise InvalidRequest("config: required, the experiment config as YAML text")
    m = master(request)
    config_text = await asyncio.to_thread(_project_config, m, payload.config or "", payload.projectId)
    archive = await asyncio.to_thread(context_archive, payload.modelDefinition or [])
    created = await stalwart_experiments.create(request, _stalwart_request(payload, config_text, archive))
    if created.experiment is None:  # validateOnly: the real master answers an empty experiment
        return CreateExperimentResponse(experiment=empty_experiment(), config=None, warnings=[])
    with m.db.begin() as conn:
        experiment = experiments_of(conn, [experiment_rows.get(conn, created.experiment.id)])[0]
    return CreateExperimentResponse(experiment=experiment, config=experiment.config, warnings=[])


SORTS = {"SORT_BY_UNSPECIFIED": "id", "SORT_BY_ID": "id", "SORT_BY_NAME": "name", "SORT_BY_STATE": "state",
         "SORT_BY_START_TIME": "start_time", "SORT_BY_END_TIME": "end_time", "SORT_BY_PROGRESS": "progress"}
ACTIVE_NAMES = ("STATE_ACTIVE", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING")
STORED_STATES = ("PAUSED", "STOPPING_COMPLETED", "STOPPING_CANCELED", "STOPPING_ERROR", "STOPPING_KILLED",
                 "COMPLETED", "CANCELED", "ERROR")


def _stored_states(names: list[str] | None) -> tuple[str, ...] | None:
    """Determined's state names as the states Stalwart stores (its ACTIVE substates are ACTIVE); None: no filter.
    States Stalwart has no experiment in (DELETED, ...) match nothing."""
    if not names:
        return None
    out: list[str] = []
    for name in (p.strip() for v in names for p in v.split(",") if p.strip()):
        if name in ACTIVE_NAMES:
            out.append("ACTIVE")
        elif name.removeprefix("STATE_") in STORED_STATES:
            out.append(name.removeprefix("STATE_"))
        elif not name.startswith("STATE_"):
            raise InvalidRequest(f"states: unknown state {name!r}; use Determined's names, e.g. STATE_COMPLETED")
    return tuple(dict.fromkeys(out))


def experiments_window(total: int, offset: int, limit: int) -> tuple[slice, Pagination]:
    """GetExperiments' paging (the real master's runPagedBunExperimentsQuery): a negative offset counts from the
    end, limit 0 means 100, -1 everything and -2 none (only the pagination)."""
    start = total if offset > total or offset < -total else total + offset if offset < 0 else offset
    end = (start if limit == -2 else total if limit == -1 else min(start + 100, total) if limit == 0
           else min(start + limit, total) if limit > 0 else start)
    return slice(start, end), Pagination(offset=offset, limit=limit, startIndex=start, endIndex=end, total=total)


def _owners(conn: Any, users: list[str] | None, user_ids: list[int] | None) -> set[str] | None:
    if not users and not user_ids:
        return None
    names = {u for v in users or [] for u in v.split(",") if u}
    if user_ids:
        names |= {u["username"] for u in user_rows.all_users(conn) if u["id"] in set(user_ids)}
    return names


@route(router, "GET", E, table=DET_BY_KEY)
async def list_experiments(
        request: Request, archived: bool | None = None, limit: Int32 = 0, offset: Int32 = 0, users: Names = None,
        user_ids: Annotated[list[int] | None, Query(alias="userIds", max_length=1000)] = None, states: Names = None,
        name: Annotated[str | None, Query(max_length=512)] = None, labels: Names = None,
        sort_by: Annotated[str, Query(alias="sortBy", max_length=64)] = "SORT_BY_UNSPECIFIED",
        order_by: Annotated[str, Query(alias="orderBy", max_length=64)] = "ORDER_BY_UNSPECIFIED",
        project_id: Annotated[int, Query(alias="projectId", ge=0, le=2**31 - 1)] = 0) -> GetExperimentsResponse:
    """`det e list [--all]`: only the experiments of workspaces the caller may view, as Stalwart's own list."""
    if sort_by not in SORTS:
        raise InvalidRequest(f"sortBy: {sort_by!r} is not served; use one of {', '.join(SORTS)}")
    m = master(request)
    stored = _stored_states(states)
    with m.db.begin() as conn:
        owners = _owners(conn, users, user_ids)
        where = experiment_rows.ExperimentFilter(
            states=stored or (), labels=tuple(labels or ()), name=name or None, include_archived=archived is not False,
            owner=next(iter(owners)) if owners is not None and len(owners) == 1 else None,
            project_ids=_viewable_projects(m, conn, request, project_id))
        rows, _ = experiment_rows.page(conn, limit=2**31 - 1, offset=0, where=where, sort_by=SORTS[sort_by],
                                       descending=order_by == "ORDER_BY_DESC")
        rows = [r for r in rows if (archived is not True or r["archived"]) and (owners is None or r["owner"] in owners)]
        if stored == ():
            rows = []
        window, pagination = experiments_window(len(rows), offset, limit)
        return GetExperimentsResponse(experiments=experiments_of(conn, rows[window]), pagination=pagination)


def _viewable_projects(m: Master, conn: Any, request: Request, project_id: int) -> tuple[int, ...] | None:
    """The projects a list may show: `project_id`'s (0: every project), within the workspaces the caller may view."""
    viewable = authz.viewable_workspaces(m, identity(request), P.VIEW_EXPERIMENTS)
    projects = None if viewable is None else tuple(wq.project_ids_in(conn, viewable))
    if not project_id:
        return projects
    return (project_id,) if projects is None or project_id in projects else ()


@route(router, "GET", E + "/{exp_id}", table=DET_BY_KEY)
async def describe(request: Request, exp_id: IdPath) -> GetExperimentResponse:
    """`det e describe` and `det e wait` (polled): the experiment, its merged config and its place in the queue."""
    m = master(request)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
        experiment = experiments_of(conn, [row])[0]
    summary = await asyncio.to_thread(job_summary_of, m, row)
    return GetExperimentResponse(experiment=experiment, config=experiment.config, jobSummary=summary)


def _action(action: str) -> Callable[[Request, int], Awaitable[Empty]]:
    async def act(request: Request, exp_id: IdPath) -> Empty:
        await stalwart_experiments.act(request, exp_id, action)
        return Empty()

    act.__name__ = f"{action}_experiment"
    act.__doc__ = f"`det e {action} ID`: Stalwart's own {action} of the experiment."
    return act


for _name in ACTIONS:
    route(router, "POST", f"{E}/{{exp_id}}/{_name}", table=DET_BY_KEY)(_action(_name))


TRIAL_SORTS: dict[str, Callable[[Any], Any]] = {
    "SORT_BY_UNSPECIFIED": lambda t: t.id, "SORT_BY_ID": lambda t: t.id, "SORT_BY_START_TIME": lambda t: t.startTime,
    "SORT_BY_END_TIME": lambda t: (t.endTime is None, t.endTime or ""), "SORT_BY_STATE": lambda t: t.state,
    "SORT_BY_BATCHES_PROCESSED": lambda t: t.totalBatchesProcessed, "SORT_BY_RESTARTS": lambda t: t.restarts,
}


@route(router, "GET", E + "/{exp_id}/trials", table=DET_BY_KEY)
async def list_trials(request: Request, exp_id: IdPath, limit: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
                      offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0, states: Names = None,
                      sort_by: Annotated[str, Query(alias="sortBy", max_length=64)] = "SORT_BY_UNSPECIFIED",
                      order_by: Annotated[str, Query(alias="orderBy", max_length=64)] = "ORDER_BY_UNSPECIFIED",
                      ) -> GetExperimentTrialsResponse:
    """`det e list-trials`, `det e describe`, `det e create -f`: the experiment's trials, a page of them."""
    if sort_by not in TRIAL_SORTS:
        raise InvalidRequest(f"sortBy: {sort_by!r} is not served; use one of {', '.join(TRIAL_SORTS)}")
    m = master(request)
    with m.db.begin() as conn:
        experiment = experiment_rows.get(conn, exp_id)
        trials = trial_views.trials_of(conn, experiment, trial_rows.of_experiment(conn, exp_id))
    wanted = {p.strip() for v in states or [] for p in v.split(",") if p.strip()}
    trials = [t for t in trials if not wanted or t.state in wanted or
              ("STATE_ACTIVE" in wanted and t.state in ACTIVE_NAMES)]
    trials.sort(key=TRIAL_SORTS[sort_by], reverse=order_by == "ORDER_BY_DESC")
    window, pagination = page(len(trials), offset, limit)
    return GetExperimentTrialsResponse(trials=trials[window], pagination=pagination)


@route(router, "GET", E + "/{exp_id}/model_def", table=DET_BY_KEY)
async def model_def(request: Request, exp_id: IdPath) -> GetModelDefResponse:
    """`det e download-model-def`: the context .tgz, base64, as Stalwart's own route answers it."""
    return GetModelDefResponse(b64Tgz=(await stalwart_experiments.model_def(request, exp_id)).b64Tgz)


@route(router, "GET", T + "/{trial_id}", table=DET_BY_KEY)
async def describe_trial(request: Request, trial_id: IdPath) -> GetTrialResponse:
    m = master(request)
    with m.db.begin() as conn:
        row = trial_rows.get(conn, trial_id)
        experiment = experiment_rows.get(conn, row["experiment_id"])
        return GetTrialResponse(trial=trial_views.trials_of(conn, experiment, [row])[0])


WORKLOAD_FILTERS = {"FILTER_OPTION_UNSPECIFIED": ("training", "validation", "checkpoint"),
                    "FILTER_OPTION_CHECKPOINT": ("checkpoint",), "FILTER_OPTION_VALIDATION": ("validation",),
                    "FILTER_OPTION_CHECKPOINT_OR_VALIDATION": ("validation", "checkpoint")}


FilterQuery = Annotated[str, Query(alias="filter", max_length=64, description="Determined's FILTER_OPTION_*")]


@route(router, "GET", T + "/{trial_id}/workloads", table=DET_BY_KEY)
async def trial_workloads(request: Request, trial_id: IdPath, limit: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
                          offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
                          filter_option: FilterQuery = "FILTER_OPTION_UNSPECIFIED",
                          order_by: Annotated[str, Query(alias="orderBy", max_length=64)] = "ORDER_BY_UNSPECIFIED",
                          ) -> GetTrialWorkloadsResponse:
    """`det e describe`, `det trial describe`: the trial's reports and checkpoints by batch, a page of them."""
    if filter_option not in WORKLOAD_FILTERS:
        raise InvalidRequest(f"filter: {filter_option!r} is not one of {', '.join(WORKLOAD_FILTERS)}")
    m = master(request)
    with m.db.begin() as conn:
        trial_rows.get(conn, trial_id)
        found = trial_views.workloads_of(conn, trial_id)
    kinds = WORKLOAD_FILTERS[filter_option]
    found = [w for w in found if any(getattr(w, kind) is not None for kind in kinds)]
    if order_by == "ORDER_BY_DESC":
        found.reverse()
    window, pagination = page(len(found), offset, limit)
    return GetTrialWorkloadsResponse(workloads=found[window], pagination=pagination)
