"""/api/v1/experiments: create, list, describe, and the pause/activate/cancel/kill/archive/unarchive actions."""

from __future__ import annotations

import asyncio
import base64
import binascii

import sqlalchemy as sa
from fastapi import APIRouter, Request

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.db import tables as t
from stalwart.master import offload, views
from stalwart.master.experiments import experiments
from stalwart.master.routes.common import body, master
from stalwart.master.scheduling import fit
from stalwart.master.service import Master

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


def _check(m: Master, config: str, context: str) -> tuple[bytes, experiments.NewExperiment]:
    archive = _decode_context(context)
    return archive, experiments.check_experiment(m, config, archive, read_archive=offload.archive_names)


@router.post("")
async def create(request: Request) -> dict:
    """Body: {config: YAML text, context: base64 .tgz, activate: bool, validate_only: bool}."""
    m = master(request)
    data = await body(request)
    config = data.get("config")
    if not isinstance(config, str) or not config.strip():
        raise InvalidRequest("config: required, the experiment config as YAML text")
    context = data.get("context") or ""
    if not isinstance(context, str):
        raise InvalidRequest("context: expected a base64-encoded .tgz of the context directory")
    # Off the event loop: decoding a big context, and reading the archive (in a worker process, see offload).
    archive, checked = await asyncio.to_thread(_check, m, config, context)
    exp_id, warnings = experiments.create_experiment(
        m, config, archive,
        activate=bool(data.get("activate", True)),
        owner=str(data.get("owner") or "determined"),
        validate_only=bool(data.get("validate_only", False)),
        checked=checked,
    )
    if exp_id is None:
        return {"experiment": None, "warnings": warnings}
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.experiments, exp_id, "experiment")
        fits = fit.experiment_warnings(conn, row)
    return {"experiment": {**views.experiment(row), "warnings": fits}, "warnings": [*warnings, *fits]}


@router.get("")
async def list_experiments(request: Request, limit: int = 200, offset: int = 0) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        rows = conn.execute(
            sa.select(t.experiments).order_by(t.experiments.c.id.desc()).limit(limit).offset(offset)
        ).mappings().all()
        counts = dict(conn.execute(
            sa.select(t.trials.c.experiment_id, sa.func.count()).group_by(t.trials.c.experiment_id)
        ).all())
        total = conn.execute(sa.select(sa.func.count()).select_from(t.experiments)).scalar()
    return {"experiments": [views.experiment(r, counts) for r in rows], "total": total}


@router.get("/{exp_id}")
async def describe(request: Request, exp_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.experiments, exp_id, "experiment")
        trials = conn.execute(
            sa.select(t.trials).where(t.trials.c.experiment_id == exp_id).order_by(t.trials.c.id)
        ).mappings().all()
        summaries = views.trial_summaries(conn, [tr["id"] for tr in trials])
        best = views.best_validation(conn, row)
        fits = fit.experiment_warnings(conn, row)
    return {
        "experiment": {**views.experiment(row), "best_validation": best, "warnings": fits},
        "config": row["config"],
        "trials": [views.trial(tr, summaries.get(tr["id"])) for tr in trials],
    }


@router.post("/{exp_id}/{action}")
async def act(request: Request, exp_id: int, action: str) -> dict:
    if action not in ACTIONS:
        raise NotFoundError(f"unknown experiment action '{action}'; use one of {', '.join(sorted(ACTIONS))}")
    m = master(request)
    ACTIONS[action](m, exp_id)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.experiments, exp_id, "experiment")
    return {"experiment": views.experiment(row)}


@router.get("/{exp_id}/trials")
async def list_trials(request: Request, exp_id: int) -> dict:
    return {"trials": (await describe(request, exp_id))["trials"]}


@router.get("/{exp_id}/checkpoints")
async def list_checkpoints(request: Request, exp_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        Master.get_row(conn, t.experiments, exp_id, "experiment")
        rows = conn.execute(
            sa.select(t.checkpoints)
            .join(t.trials, t.trials.c.id == t.checkpoints.c.trial_id)
            .where(t.trials.c.experiment_id == exp_id)
            .order_by(t.checkpoints.c.report_time)
        ).mappings().all()
    return {"checkpoints": [views.checkpoint(r) for r in rows]}


@router.get("/{exp_id}/model_def")
async def model_def(request: Request, exp_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        archive = conn.execute(sa.select(t.contexts.c.archive).where(t.contexts.c.experiment_id == exp_id)).scalar()
    if archive is None:
        raise NotFoundError(f"experiment {exp_id} not found")
    return {"b64Tgz": base64.b64encode(archive).decode()}


@router.get("/{exp_id}/searcher/best_searcher_validation_metric")
async def best_validation(request: Request, exp_id: int) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        row = Master.get_row(conn, t.experiments, exp_id, "experiment")
        best = views.best_validation(conn, row)
    if best is None:
        raise NotFoundError(f"experiment {exp_id} has no validation of '{row['config']['searcher']['metric']}' yet")
    return {"metric": best["value"]}
