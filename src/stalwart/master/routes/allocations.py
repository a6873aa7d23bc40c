"""/api/v1/allocations: preemption long-poll and ack, a task's server's port, a detached run's heartbeats and end (task
side); context, started, exited (agent side)."""

from __future__ import annotations

import base64
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from stalwart.api.errors import ForbiddenError, InvalidStateError, NotFoundError
from stalwart.api.models.allocations import Context, Exited, Preemption, ServiceStarted, Started, StartedAnswer
from stalwart.api.models.common import Empty
from stalwart.api.models.detached import EndDetachedRun
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import credentials
from stalwart.master.detached import runs as detached_runs
from stalwart.master.experiments import intake
from stalwart.master.identity import authz
from stalwart.master.queries import allocations as allocation_rows
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.service import Master
from stalwart.master.tasks import idle

router = APIRouter(prefix="/api/v1/allocations", tags=["allocations"])

AllocationPath = Annotated[str, Path(min_length=1, max_length=64, description="an allocation id")]
WaitSeconds = Annotated[float, Query(ge=0, le=3600, allow_inf_nan=False,
                                     description="seconds to wait for a preemption before answering (capped at 60)")]


def _own(request: Request, allocation_id: str) -> Master:
    """The master, once the caller's allocation token is this allocation's (the route checked the token)."""
    if request.state.allocation_id != allocation_id:
        raise ForbiddenError(f"this allocation token is not for allocation {allocation_id}")
    m = master(request)
    authz.require_live_allocation(m, allocation_id)
    return m


@route(router, "GET", "/{allocation_id}/signals/preemption")
async def preemption(request: Request, allocation_id: AllocationPath, timeout_seconds: WaitSeconds = 0
                     ) -> Preemption:
    m = _own(request, allocation_id)
    if intake.preemption_requested(m, allocation_id):
        return Preemption(preempt=True)
    await m.signals.wait(f"preempt:{allocation_id}", min(timeout_seconds, 60))
    return Preemption(preempt=intake.preemption_requested(m, allocation_id))


@route(router, "POST", "/{allocation_id}/signals/ack_preemption")
async def ack_preemption(request: Request, allocation_id: AllocationPath) -> Empty:
    intake.ack_preemption(_own(request, allocation_id), allocation_id)
    return Empty()


@route(router, "POST", "/{allocation_id}/service")
def service_started(request: Request, allocation_id: AllocationPath, payload: ServiceStarted) -> Empty:
    """The task's server answers on `port` of its agent: the proxy forwards to it from now on."""
    m = _own(request, allocation_id)
    with m.db.begin() as conn:
        alloc = allocation_rows.get(conn, allocation_id)
        if alloc["command_id"] is None:
            raise InvalidStateError(f"allocation {allocation_id} runs a trial: only tasks (notebooks, TensorBoards, "
                                    "shells, commands) serve through the master's proxy")
        allocation_rows.set_service_port(conn, allocation_id, payload.port)
    idle.note_activity(m, allocation_id)  # a server's idle time counts from when it answers, not from its start
    return Empty()


@route(router, "POST", "/{allocation_id}/activity")
def activity(request: Request, allocation_id: AllocationPath) -> Empty:
    """The task is in use now (a notebook's kernel runs, a shell has a session open): its idle timeout starts over.
    Traffic through the master's proxy counts by itself (tasks/idle.py)."""
    m = _own(request, allocation_id)
    with m.db.begin() as conn:
        if allocation_rows.get(conn, allocation_id)["command_id"] is None:
            raise InvalidStateError(f"allocation {allocation_id} runs a trial: only tasks have an idle timeout")
    idle.note_activity(m, allocation_id)
    return Empty()


@route(router, "POST", "/{allocation_id}/detached/heartbeat")
def detached_heartbeat(request: Request, allocation_id: AllocationPath) -> Empty:
    """A detached script's run is alive (master config detached_heartbeat_timeout; docs/detached.md)."""
    detached_runs.beat(_own(request, allocation_id), allocation_id)
    return Empty()


@route(router, "POST", "/{allocation_id}/detached/end")
def detached_end(request: Request, allocation_id: AllocationPath, payload: EndDetachedRun) -> Empty:
    """A detached script ends its run: its trial ends COMPLETED or in ERROR."""
    detached_runs.end_run(_own(request, allocation_id), allocation_id, payload.state, payload.message)
    return Empty()


@route(router, "GET", "/{allocation_id}/context")
async def context(request: Request, allocation_id: AllocationPath) -> Context:
    m = master(request)
    with m.db.begin() as conn:
        archive = allocation_rows.context_archive(conn, allocation_id)
    if archive is None:
        raise NotFoundError(f"no context for allocation {allocation_id}")
    return Context(b64Tgz=base64.b64encode(archive).decode())


@route(router, "POST", "/{allocation_id}/started")
async def started(request: Request, allocation_id: AllocationPath, payload: Started) -> StartedAnswer:
    credentials.check_body_agent(request.state.agent_id, payload.agent_id)
    return lifecycle.mark_started(master(request), payload.agent_id, allocation_id, payload.pid)


@route(router, "POST", "/{allocation_id}/exited")
async def exited(request: Request, allocation_id: AllocationPath, payload: Exited) -> Empty:
    credentials.check_body_agent(request.state.agent_id, payload.agent_id)
    m = master(request)
    lifecycle.mark_exited(m, payload.agent_id, allocation_id, payload.exit_code, agent_lost=payload.agent_lost,
                          setup_failed=payload.setup_failed)
    m.wake_scheduler()
    return Empty()
