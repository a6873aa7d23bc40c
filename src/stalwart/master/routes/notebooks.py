"""/api/v1/notebooks: start JupyterLab as a task, list, describe and kill notebooks (the task routes,
/api/v1/tasks/..., give their logs; the proxy, /proxy/notebook-<id>/, serves them to their owner)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from stalwart.api.models.notebooks import CreateNotebook, NotebookEnvelope, NotebookList
from stalwart.api.models.tasks import Command
from stalwart.master.routes.common import IdPath, master, owner_of_new
from stalwart.master.routes.contract import route
from stalwart.master.service import Master
from stalwart.master.tasks import listing, notebooks, starting

router = APIRouter(prefix="/api/v1", tags=["notebooks"])

KIND = "notebook"
ShowAll = Annotated[bool, Query(alias="all", description="also the notebooks that have ended")]


def _describe(m: Master, notebook_id: int) -> Command:
    return Command.model_validate(listing.describe(m, notebook_id, KIND))


def _warnings(m: Master, notebook: Command) -> list[str]:
    slots = ((notebook.config or {}).get("resources") or {}).get("slots", 1)
    if notebook.resource_pool is None or not isinstance(slots, int):
        return []
    with m.db.begin() as conn:
        warning = notebooks.slots_warning(conn, slots, notebook.resource_pool)
    return [warning] if warning else []


@route(router, "POST", "/notebooks")
async def create(request: Request, payload: CreateNotebook) -> NotebookEnvelope:
    """config: the task's (no entrypoint); context: base64 .tgz of its directory (optional); template; owner."""
    m = master(request)
    owner = owner_of_new(request, payload.owner)
    notebook_id = await starting.start(m, request.state.identity, owner, starting.config_of(payload.config),
                                       template=payload.template, context=payload.context or None, kind=KIND,
                                       shape=notebooks.shape)
    notebook = _describe(m, notebook_id)
    return NotebookEnvelope(notebook=notebook, warnings=_warnings(m, notebook))


@route(router, "GET", "/notebooks")
async def list_notebooks(request: Request, show_all: ShowAll = False) -> NotebookList:
    """The notebooks of the workspaces the caller may view tasks in."""
    found = listing.visible(master(request), request.state.identity, show_all=show_all, kind=KIND)
    return NotebookList(notebooks=[Command.model_validate(t) for t in found])


@route(router, "GET", "/notebooks/{notebook_id}")
async def describe(request: Request, notebook_id: IdPath) -> NotebookEnvelope:
    return NotebookEnvelope(notebook=_describe(master(request), notebook_id))


@route(router, "POST", "/notebooks/{notebook_id}/kill")
async def kill(request: Request, notebook_id: IdPath) -> NotebookEnvelope:
    found = listing.kill(master(request), notebook_id, KIND, request.state.identity.username)
    return NotebookEnvelope(notebook=Command.model_validate(found))
