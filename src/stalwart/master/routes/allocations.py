"""/api/v1/allocations: preemption long-poll and ack (trial side); context, started, exited (agent side)."""

from __future__ import annotations

import base64

import sqlalchemy as sa
from fastapi import APIRouter, Request

from stalwart.api.errors import ForbiddenError, NotFoundError
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.experiments import intake
from stalwart.master.routes.common import agent_only, allocation_of, body

router = APIRouter(prefix="/api/v1/allocations", tags=["allocations"])


def _own(request: Request, allocation_id: str):
    m, caller = allocation_of(request)
    if caller != allocation_id:
        raise ForbiddenError(f"this allocation token is not for allocation {allocation_id}")
    return m


@router.get("/{allocation_id}/signals/preemption")
async def preemption(request: Request, allocation_id: str, timeout_seconds: float = 0) -> dict:
    m = _own(request, allocation_id)
    if intake.preemption_requested(m, allocation_id):
        return {"preempt": True}
    await m.signals.wait(f"preempt:{allocation_id}", min(max(timeout_seconds, 0), 60))
    return {"preempt": intake.preemption_requested(m, allocation_id)}


@router.post("/{allocation_id}/signals/ack_preemption")
async def ack_preemption(request: Request, allocation_id: str) -> dict:
    intake.ack_preemption(_own(request, allocation_id), allocation_id)
    return {}


@router.get("/{allocation_id}/context")
async def context(request: Request, allocation_id: str) -> dict:
    m = agent_only(request)
    with m.db.begin() as conn:
        archive = conn.execute(
            sa.select(t.contexts.c.archive)
            .join(t.trials, t.trials.c.experiment_id == t.contexts.c.experiment_id)
            .join(t.allocations, t.allocations.c.trial_id == t.trials.c.id)
            .where(t.allocations.c.id == allocation_id)
        ).scalar()
        if archive is None:
            archive = conn.execute(
                sa.select(t.commands.c.archive)
                .join(t.allocations, t.allocations.c.command_id == t.commands.c.id)
                .where(t.allocations.c.id == allocation_id)
            ).scalar()
    if archive is None:
        raise NotFoundError(f"no context for allocation {allocation_id}")
    return {"b64Tgz": base64.b64encode(archive).decode()}


@router.post("/{allocation_id}/started")
async def started(request: Request, allocation_id: str) -> dict:
    m = agent_only(request)
    data = await body(request)
    return lifecycle.mark_started(m, str(data.get("agent_id")), allocation_id, data.get("pid"))


@router.post("/{allocation_id}/exited")
async def exited(request: Request, allocation_id: str) -> dict:
    m = agent_only(request)
    data = await body(request)
    code = data.get("exit_code")
    lifecycle.mark_exited(m, str(data.get("agent_id")), allocation_id, code if isinstance(code, int) else None,
                       agent_lost=data.get("agent_lost") is True)
    m.wake_scheduler()
    return {}
