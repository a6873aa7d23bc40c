"""/api/v1/checkpoints: registration by trials, describe, and download as a .tgz stream."""

from __future__ import annotations

import io
import tarfile

import sqlalchemy as sa
from fastapi import APIRouter, Request
from fastapi.responses import Response

from stalwart.api.errors import NotFoundError
from stalwart.db import tables as t
from stalwart.master import views
from stalwart.master.experiments import intake
from stalwart.master.routes.common import allocation_of, body, master
from stalwart.storage import make_storage

router = APIRouter(prefix="/api/v1/checkpoints", tags=["checkpoints"])


@router.post("")
async def report(request: Request) -> dict:
    m, allocation_id = allocation_of(request)
    row = intake.register_checkpoint(m, allocation_id, await body(request))
    return {"checkpoint": views.checkpoint(row)}


def _get(request: Request, uuid: str) -> dict:
    m = master(request)
    with m.db.begin() as conn:
        row = conn.execute(sa.select(t.checkpoints).where(t.checkpoints.c.uuid == uuid)).mappings().first()
    if row is None:
        raise NotFoundError(f"checkpoint {uuid} not found")
    return views.checkpoint(row)


@router.get("/{uuid}")
async def describe(request: Request, uuid: str) -> dict:
    return {"checkpoint": _get(request, uuid)}


@router.get("/{uuid}/download")
async def download(request: Request, uuid: str) -> Response:
    """The checkpoint's files as a .tgz, read by the master from checkpoint storage."""
    ckpt = _get(request, uuid)
    if ckpt["state"] != "COMPLETED":
        raise NotFoundError(f"checkpoint {uuid} is {ckpt['state']}; its files are gone")
    storage = make_storage(ckpt["storage"])
    buf = io.BytesIO()
    with storage.restore_path(uuid) as path, tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(path, arcname=".")
    return Response(buf.getvalue(), media_type="application/gzip")
