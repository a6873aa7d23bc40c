"""/api/v1/master: the master's identity (cluster id, version, URL), open to anyone."""

from __future__ import annotations

from fastapi import APIRouter, Request

import stalwart
from stalwart.api.models.cluster import MasterInfo
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route

router = APIRouter(prefix="/api/v1/master", tags=["cluster"])


@route(router, "GET")
async def info(request: Request) -> MasterInfo:
    m = master(request)
    return MasterInfo(cluster_id=m.cluster_id, version=stalwart.__version__, url=m.settings.url)
