"""/api/v1/experiments: create, list (filtered, sorted), describe, edit, delete, continue, change the checkpoint GC
policy, and the pause/activate/cancel/kill/archive/unarchive actions."""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models.checkpoints import Checkpoint, CheckpointList
from stalwart.api.models.common import Empty
from stalwart.api.models.experiments import (
    BestMetric,
    ChangeGcPolicy,
    ContinueExperiment,
    CreatedExperiment,
    CreateExperiment,
    DeletedExperiment,
    Experiment,
    ExperimentDetail,
    ExperimentEnvelope,
    ExperimentList,
    GcPolicyChange,
    KeptCheckpoint,
    ModelDef,
    OrderBy,
    PatchExperiment,
    RetainLogs,
    SortBy,
    TrialList,
)
from stalwart.api.models.trials import Trial
from stalwart.api.states import ExperimentState
from stalwart.config import secrets, views as config_views
from stalwart.master import offload, views
from stalwart.master.detached import experiments as detached_experiments
from stalwart.master.experiments import continuing, deleting, editing, experiments, gc_policy_change, warm_start
from stalwart.master.experiments.gc_selection import Policy
from stalwart.master.identity import authz
from stalwart.master.queries import (
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    trials as trial_rows,
    workspaces as wq,
)
from stalwart.master.routes.common import IdPath, Limit, Offset, master, owner_of_new
from stalwart.master.routes.contract import route
from stalwart.master.scheduling import fit
from stalwart.master.service import Master
from stalwart.master.templates import expansion
from stalwart.master.workspaces import placement

router = APIRouter(prefix="/api/v1/experiments", tags=["experiments"])

ACTIONS = {
    "pause": experiments.pause,
    "activate": experiments.activate,
    "unpause": experiments.activate,
    "cancel": experiments.cancel,
    "kill": experiments.kill,
    "archive": experiments.archive,
    "unarchive": experiments.unarchive,
}


def _decode_context(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest("context: expected a base64-encoded .tgz of the context directory") from None


def _check(m: Master, config: str, context: str, storage: dict[str, Any] | None = None,
           parent: tuple[str, dict[str, Any]] | None = None) -> tuple[bytes, experiments.NewExperiment]:
    archive = _decode_context(context)
    return archive, experiments.check_experiment(m, config, archive, read_archive=offload.archive_names,
                                                 checkpoint_storage=storage, parent=parent)


def _parent(m: Master, request: Request, parent_id: int | None) -> tuple[str, dict[str, Any]] | None:
    """The experiment a new one is forked from (its name and stored config), which the caller may view; its hidden
    secrets are kept where the new config shows them as the placeholder."""
    if parent_id is None:
        return None
    try:
        with m.db.begin() as conn:
            row = experiment_rows.get(conn, parent_id)
    except NotFoundError:
        raise InvalidRequest(f"parent_id: there is no experiment {parent_id} to fork from") from None
    authz.require(m, request.state.identity, P.VIEW_EXPERIMENTS, authz.experiment_targets(m, [dict(row)])[parent_id])
    if row["owner"] != request.state.identity.username:  # its trials get the storage credentials: the owner's only
        return (f"experiment {parent_id} (of {row['owner']}: only its owner's forks keep its storage credentials)",
                secrets.without_storage_secrets(row["config"]))
    return f"experiment {parent_id}", row["config"]


@route(router, "POST")
async def create(request: Request, payload: CreateExperiment) -> CreatedExperiment:
    """Validate the config and context; unless validate_only, store the experiment and (by default) start it."""
    m = master(request)
    owner = owner_of_new(request, payload.owner)
    if not payload.config.strip():
        raise InvalidRequest("config: required, the experiment config as YAML text")
    detached_experiments.check_unmanaged_request(payload.unmanaged, payload.external_experiment_id)
    if payload.unmanaged:
        return await _create_detached(request, payload, owner)
    parent = _parent(m, request, payload.parent_id)
    # a template is merged under the config once, here: the merged config is what the experiment stores
    config_text = expansion.expand_text(m, request.state.identity, payload.template, payload.config)
    # Off the event loop: decoding a big context, and reading the archive (in a worker process, see offload).
    archive, checked = await asyncio.to_thread(_check, m, config_text, payload.context, None, parent)
    with m.db.begin() as conn:  # where it goes: the config's workspace and project, and a pool usable there
        project = placement.project_for(conn, checked.config)
        storage = placement.checkpoint_storage_of(conn, project)
    if storage is not None and not checked.names_storage:  # the workspace's storage is its default: check again
        experiments.discard(checked)
        archive, checked = await asyncio.to_thread(_check, m, config_text, payload.context, storage, parent)
    with m.db.begin() as conn:
        authz.require(m, request.state.identity, P.CREATE_EXPERIMENTS, placement.target(project))
        resources = checked.config.get("resources") or {}
        checked.pool = placement.pool_for(conn, project, resources.get("resource_pool"), checked.pool,
                                          config_views.slots_per_trial(checked.config))
    _check_warm_start(m, request, checked)
    exp_id, warnings = experiments.create_experiment(
        m, config_text, archive,
        activate=payload.activate,
        owner=owner,
        validate_only=payload.validate_only,
        checked=checked,
        project_id=project["id"],
    )
    if exp_id is None:
        return CreatedExperiment(experiment=None, warnings=warnings)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
        fits = fit.experiment_warnings(conn, row)
    return CreatedExperiment(experiment=Experiment.model_validate({**views.experiment(row), "warnings": fits}),
                             warnings=[*warnings, *fits])


async def _create_detached(request: Request, payload: CreateExperiment, owner: str) -> CreatedExperiment:
    """A detached experiment (docs/detached.md), or the one its external id names: nothing to check in a context."""
    if payload.context or payload.parent_id is not None or payload.template is not None or payload.validate_only:
        raise InvalidRequest("a detached experiment (unmanaged: true) takes no context, parent_id, template or "
                             "validate_only: its script runs outside the cluster")
    m = master(request)
    exp_id = await asyncio.to_thread(detached_experiments.create_or_find, m, request.state.identity, owner,
                                     payload.config, payload.external_experiment_id)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
    return CreatedExperiment(experiment=Experiment.model_validate(views.experiment(row)), warnings=[])


def _check_warm_start(m: Master, request: Request, checked: experiments.NewExperiment) -> None:
    """A config that starts its trials from a stored checkpoint (searcher.source_trial_id or source_checkpoint_uuid)
    must name a completed one the caller may view (400, 403; the checked experiment is let go). A source trial's
    experiment is checked first: who may not view it learns nothing of its checkpoints."""
    try:
        trial_id = (checked.config.get("searcher") or {}).get("source_trial_id")
        if trial_id is not None:
            with m.db.begin() as conn:
                source_trial = authz.FINDERS["trial_id"].find(conn, int(trial_id))
            if source_trial is not None:
                authz.require(m, request.state.identity, P.VIEW_EXPERIMENTS, source_trial)
        uuid = warm_start.check(m, checked.config)
        if uuid is not None:
            authz.require_checkpoints(m, request.state.identity, P.VIEW_EXPERIMENTS, [uuid])
    except BaseException:
        experiments.discard(checked)
        raise


Values = Annotated[list[str] | None, Query(max_length=100, description="repeat the key, or separate with commas")]
NameQuery = Annotated[str | None, Query(max_length=512, description="a substring of the name (any case)")]
PlaceQuery = Annotated[str | None, Query(max_length=128, description="a workspace's (or project's) name")]
OwnerQuery = Annotated[str | None, Query(max_length=128, description="only this owner's experiments")]


def _split(values: list[str] | None) -> tuple[str, ...]:
    """`?x=a&x=b` and `?x=a,b` alike: the non-empty values, each once, in order."""
    parts = (p.strip() for v in values or [] for p in v.split(","))
    return tuple(dict.fromkeys(p for p in parts if p))


def _states(values: list[str] | None) -> tuple[str, ...]:
    states = tuple(s.upper() for s in _split(values))
    known = {s.value for s in ExperimentState}
    for state in states:
        if state not in known:
            raise InvalidRequest(f"states: unknown experiment state '{state}'; use any of {', '.join(sorted(known))}")
    return states


@route(router, "GET")
async def list_experiments(request: Request, limit: Limit = 200, offset: Offset = 0, states: Values = None,
                           labels: Values = None, name: NameQuery = None, include_archived: bool = False,
                           owner: OwnerQuery = None, sort_by: SortBy = "id", order_by: OrderBy = "desc",
                           workspace: PlaceQuery = None, project: PlaceQuery = None) -> ExperimentList:
    """Filters and sorting run in SQL: any of `states`, all of `labels`, `name` a substring, archived experiments
    only with include_archived (Determined's `e list --all`), only those of a `workspace` (and `project` in it).
    In rbac mode, only the experiments of workspaces the caller may view."""
    m = master(request)
    with m.db.begin() as conn:
        projects = _listed_projects(m, conn, request.state.identity, workspace, project)
        where = experiment_rows.ExperimentFilter(states=_states(states), labels=_split(labels), name=name or None,
                                                 include_archived=include_archived, owner=owner, project_ids=projects)
        rows, total = experiment_rows.page(conn, limit=limit, offset=offset, where=where, sort_by=sort_by,
                                           descending=order_by == "desc")
        counts = trial_rows.counts_by_experiment(conn)
        places = wq.places_of_experiments(conn, [r["id"] for r in rows])
    return ExperimentList(experiments=[Experiment.model_validate(_placed(views.experiment(r, counts), places))
                                       for r in rows], total=total)


def _listed_projects(m: Master, conn: Any, ident: Any, workspace: str | None,
                     project: str | None) -> tuple[int, ...] | None:
    """The projects a list may show: those the filters name, within the workspaces the caller may view."""
    if project is not None and workspace is None:
        raise InvalidRequest("project: give the workspace too (?workspace=W&project=P)")
    viewable = authz.viewable_workspaces(m, ident, P.VIEW_EXPERIMENTS)
    if workspace is None:
        return None if viewable is None else tuple(wq.project_ids_in(conn, viewable))
    ws = wq.workspace_by_name(conn, workspace)
    if ws is None:
        raise InvalidRequest(f"workspace: no workspace named {workspace!r} (see `stalwart workspace list`)")
    if viewable is not None and ws["id"] not in viewable:
        return ()
    if project is None:
        return tuple(wq.project_ids_in(conn, {ws["id"]}))
    pj = wq.project_by_name(conn, ws["id"], project)
    if pj is None:
        raise InvalidRequest(f"project: workspace {workspace} has no project named {project!r}")
    return (pj["id"],)


def _placed(view: dict[str, Any], places: dict[int, Any]) -> dict[str, Any]:
    place = places.get(view["id"])
    if place is not None:
        view.update(workspace=place["workspace"], project=place["project"])
    return view


@route(router, "GET", "/{exp_id}")
async def describe(request: Request, exp_id: IdPath) -> ExperimentDetail:
    m = master(request)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
        trials = trial_rows.of_experiment(conn, exp_id)
        summaries = views.trial_summaries(conn, [tr["id"] for tr in trials])
        best = views.best_validation(conn, row)
        fits = fit.experiment_warnings(conn, row)
        placed = _placed(views.experiment(row), wq.places_of_experiments(conn, [exp_id]))
    return ExperimentDetail(
        experiment=Experiment.model_validate({**placed, "best_validation": best, "warnings": fits}),
        config=secrets.redact(row["config"]),  # its secrets hidden (config/secrets.py)
        trials=[Trial.model_validate(views.trial(tr, summaries.get(tr["id"]))) for tr in trials],
    )


@route(router, "PATCH", "/{exp_id}")
async def patch(request: Request, exp_id: IdPath, payload: PatchExperiment) -> ExperimentEnvelope:
    """Only the fields the body names change (labels: the whole list)."""
    m = master(request)
    editing.patch_experiment(m, exp_id, {k: getattr(payload, k) for k in payload.model_fields_set})
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
    return ExperimentEnvelope(experiment=Experiment.model_validate(views.experiment(row)))


@route(router, "DELETE", "/{exp_id}")
async def delete(request: Request, exp_id: IdPath) -> DeletedExperiment:
    """A finished experiment: its checkpoints' and TensorBoard files leave storage, then its rows go (409 while it
    runs). Checkpoints other experiments use stay; the answer lists them with the reason."""
    done = await asyncio.to_thread(deleting.delete_experiment, master(request), exp_id)
    return DeletedExperiment(deleted_checkpoints=done.checkpoints,
                             kept_checkpoints=[KeptCheckpoint(uuid=k.uuid, reason=k.reason) for k in done.kept])


@route(router, "POST", "/{exp_id}/continue")  # before /{exp_id}/{action}, which would take "continue" as an action
async def continue_(request: Request, exp_id: IdPath, payload: ContinueExperiment) -> ExperimentEnvelope:
    """Determined's `e continue`: a finished single-trial experiment trains its trial further."""
    m = master(request)
    await asyncio.to_thread(continuing.continue_experiment, m, exp_id, payload.overrides)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
    return ExperimentEnvelope(experiment=Experiment.model_validate(views.experiment(row)))


@route(router, "POST", "/{exp_id}/{action}")
async def act(request: Request, exp_id: IdPath, action: str) -> ExperimentEnvelope:
    if action not in ACTIONS:
        raise NotFoundError(f"unknown experiment action '{action}'; use one of {', '.join(sorted(ACTIONS))}")
    m = master(request)
    if action in ("pause", "activate"):
        with m.db.begin() as conn:
            detached_experiments.refuse_unmanaged(conn, exp_id, action)
    ACTIONS[action](m, exp_id)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
    return ExperimentEnvelope(experiment=Experiment.model_validate(views.experiment(row)))


@route(router, "GET", "/{exp_id}/trials")
async def list_trials(request: Request, exp_id: IdPath) -> TrialList:
    return TrialList(trials=(await describe(request, exp_id)).trials)


@route(router, "GET", "/{exp_id}/checkpoints")
async def list_checkpoints(request: Request, exp_id: IdPath) -> CheckpointList:
    m = master(request)
    with m.db.begin() as conn:
        experiment_rows.get(conn, exp_id)
        rows = checkpoint_rows.of_experiment(conn, exp_id)
    return CheckpointList(checkpoints=[Checkpoint.model_validate(views.checkpoint(r)) for r in rows])


@route(router, "GET", "/{exp_id}/model_def")
async def model_def(request: Request, exp_id: IdPath) -> ModelDef:
    m = master(request)
    with m.db.begin() as conn:
        archive = experiment_rows.context_archive(conn, exp_id)
    if archive is None:
        raise NotFoundError(f"experiment {exp_id} not found")
    return ModelDef(b64Tgz=base64.b64encode(archive).decode())


@route(router, "GET", "/{exp_id}/searcher/best_searcher_validation_metric")
async def best_validation(request: Request, exp_id: IdPath) -> BestMetric:
    m = master(request)
    with m.db.begin() as conn:
        row = experiment_rows.get(conn, exp_id)
        best = views.best_validation(conn, row)
    if best is None:
        raise NotFoundError(f"experiment {exp_id} has no validation of '{row['config']['searcher']['metric']}' yet")
    return BestMetric(metric=best["value"])


@route(router, "PUT", "/{exp_id}/retain_logs")
async def retain_logs(request: Request, exp_id: IdPath, payload: RetainLogs) -> Empty:
    """Determined's `e set log-retention`: the ended experiment's trials keep their logs `num_days` days after they
    end (-1: forever), overriding the master's retention_policy (docs/logs.md)."""
    editing.set_log_retention(master(request), exp_id, payload.num_days)
    return Empty()


@route(router, "PATCH", "/{exp_id}/checkpoint-gc-policy")
async def change_gc_policy(request: Request, exp_id: IdPath, payload: ChangeGcPolicy) -> GcPolicyChange:
    """Determined's `e set gc-policy`: with dry_run, what the policy would delete and keep; otherwise it becomes the
    experiment's policy and its checkpoints beyond it leave storage (files, then rows marked DELETED)."""
    policy = Policy(payload.save_experiment_best, payload.save_trial_best, payload.save_trial_latest)
    act = gc_policy_change.preview if payload.dry_run else gc_policy_change.apply
    done = await asyncio.to_thread(act, master(request), exp_id, policy)
    return gc_policy_change.answer(done, policy, payload.dry_run)
