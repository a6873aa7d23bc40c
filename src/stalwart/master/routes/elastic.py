"""Elastic pools (docs/elastic-agents.md): a pool's cloud instances and the provisioner's last decisions."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Request

from stalwart.api.models.elastic import PoolInstances
from stalwart.master.provisioning import describe
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route

router = APIRouter(prefix="/api/v1", tags=["resource pools"])
PoolPath = Annotated[str, Path(min_length=1, max_length=128, description="a resource pool's name")]


@route(router, "GET", "/resource-pools/{pool}/instances")
async def pool_instances(request: Request, pool: PoolPath) -> PoolInstances:
    """The pool's instances (starting, running, idle, terminating, and the last ended ones, each with its reason)
    and the provisioner's last decisions."""
    return await asyncio.to_thread(describe.pool_instances, master(request), pool)
