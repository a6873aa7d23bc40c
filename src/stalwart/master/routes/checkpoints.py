"""/api/v1/checkpoints: registration by trials, describe, download as a .tgz stream, and delete."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response, StreamingResponse

from stalwart.api import permissions as P
from stalwart.api.errors import NotFoundError
from stalwart.api.models.checkpoints import Checkpoint, CheckpointEnvelope, DeleteCheckpoints, RegisterCheckpoint
from stalwart.api.models.common import Empty
from stalwart.master import views
from stalwart.master.experiments import checkpoint_download, deleting, intake
from stalwart.master.identity import authz
from stalwart.master.queries import checkpoints as checkpoint_rows
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route

router = APIRouter(prefix="/api/v1/checkpoints", tags=["checkpoints"])

UuidPath = Annotated[str, Path(max_length=64, description="a checkpoint uuid")]


@route(router, "POST")
async def report(request: Request, payload: RegisterCheckpoint) -> CheckpointEnvelope:
    """A checkpoint the calling trial has written to storage (its allocation token was checked by `route`)."""
    row = intake.register_checkpoint(master(request), str(request.state.allocation_id), payload.model_dump())
    return CheckpointEnvelope(checkpoint=Checkpoint.model_validate(views.checkpoint(row)))


@route(router, "DELETE")
async def delete(request: Request, payload: DeleteCheckpoints) -> Empty:
    """Remove the checkpoints' files from storage and mark them DELETED (all uuids must exist, else nothing).
    Each must be the caller's (or the caller an admin): otherwise nothing is deleted."""
    authz.require_checkpoints(master(request), request.state.identity, P.DELETE_CHECKPOINTS, payload.uuids)
    await asyncio.to_thread(deleting.delete_checkpoints, master(request), payload.uuids)
    return Empty()


def _row(request: Request, uuid: str) -> dict[str, Any]:
    """The checkpoint's row as stored: its `storage` holds the secrets (`views.checkpoint` hides them)."""
    m = master(request)
    with m.db.begin() as conn:
        return dict(checkpoint_rows.get(conn, uuid))


@route(router, "GET", "/{uuid}")
async def describe(request: Request, uuid: UuidPath) -> CheckpointEnvelope:
    return CheckpointEnvelope(checkpoint=Checkpoint.model_validate(views.checkpoint(_row(request, uuid))))


@route(router, "GET", "/{uuid}/download")
async def download(request: Request, uuid: UuidPath) -> Response:
    """The checkpoint's files as a .tgz, read by the master from checkpoint storage and streamed as it is written
    (never whole in memory: `checkpoint_download`)."""
    row = _row(request, uuid)
    if row["state"] != "COMPLETED":
        raise NotFoundError(f"checkpoint {uuid} is {row['state']}; its files are gone")
    chunks = await asyncio.to_thread(checkpoint_download.open_stream, row["storage"], uuid)
    return StreamingResponse(chunks, media_type="application/gzip",
                             headers={"Content-Disposition": f'attachment; filename="checkpoint-{uuid}.tgz"'})
