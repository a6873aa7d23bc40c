"""/api/v1/tensorboards: start a TensorBoard over experiments or trials, list, describe and kill them (the task
routes, /api/v1/tasks/..., give their logs)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from stalwart.api.models.tasks import Command
from stalwart.api.models.tensorboards import CreateTensorboard, TensorboardEnvelope, TensorboardList
from stalwart.master.routes.common import IdPath, master, owner_of_new
from stalwart.master.routes.contract import route
from stalwart.master.service import Master
from stalwart.master.tasks import listing, starting, tensorboards

router = APIRouter(prefix="/api/v1", tags=["tensorboards"])

ShowAll = Annotated[bool, Query(alias="all", description="also the TensorBoards that have ended")]


def _describe(m: Master, tb_id: int) -> TensorboardEnvelope:
    return TensorboardEnvelope(tensorboard=Command.model_validate(listing.describe(m, tb_id, tensorboards.KIND)))


@route(router, "POST", "/tensorboards")
async def create(request: Request, payload: CreateTensorboard) -> TensorboardEnvelope:
    """experiment_ids or trial_ids: what it shows (the caller must view each experiment); config: the task's."""
    m = master(request)
    owner = owner_of_new(request, payload.owner)
    tb_id = await tensorboards.start(m, request.state.identity, owner, starting.config_of(payload.config),
                                     exp_ids=payload.experiment_ids, trial_ids=payload.trial_ids,
                                     template=payload.template)
    return _describe(m, tb_id)


@route(router, "GET", "/tensorboards")
async def list_tensorboards(request: Request, show_all: ShowAll = False) -> TensorboardList:
    """The TensorBoards of the workspaces the caller may view tasks in."""
    found = listing.visible(master(request), request.state.identity, show_all=show_all, kind=tensorboards.KIND)
    return TensorboardList(tensorboards=[Command.model_validate(t) for t in found])


@route(router, "GET", "/tensorboards/{tensorboard_id}")
async def describe(request: Request, tensorboard_id: IdPath) -> TensorboardEnvelope:
    return _describe(master(request), tensorboard_id)


@route(router, "POST", "/tensorboards/{tensorboard_id}/kill")
async def kill(request: Request, tensorboard_id: IdPath) -> TensorboardEnvelope:
    found = listing.kill(master(request), tensorboard_id, tensorboards.KIND, request.state.identity.username)
    return TensorboardEnvelope(tensorboard=Command.model_validate(found))
