"""The Determined listener's handlers for checkpoints and their files: an experiment's checkpoints (`det e
list-checkpoints [--best N]`, the SDK's `top_checkpoint()`), one checkpoint (`det checkpoint download`), and its
files as a tar.gz (`--mode master`, or `auto` when the client cannot reach the storage itself).

The reads are those of Stalwart's own checkpoint routes (`master.queries`), and the archive is Stalwart's own
download route's stream, so both APIs answer the same checkpoints with the same files.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from stalwart.api.determined_routes import DET_BY_KEY
from stalwart.api.errors import InvalidRequest
from stalwart.api.models.determined.checkpoints import (
    CheckpointState,
    GetCheckpointResponse,
    GetExperimentCheckpointsResponse,
    SortBy,
)
from stalwart.api.models.determined.logs import OrderBy
from stalwart.config import views as cviews
from stalwart.master.determined_api import checkpoint_views
from stalwart.master.determined_api.wire import page
from stalwart.master.queries import checkpoints as checkpoint_rows, experiments as experiment_rows, trials as trial_rows
from stalwart.master.routes import checkpoints as stalwart_checkpoints
from stalwart.master.routes.common import IdPath, master
from stalwart.master.routes.contract import route

router = APIRouter()

UuidPath = Annotated[str, Path(max_length=64, description="a checkpoint uuid")]
Int32 = Annotated[int, Query(ge=0, le=2**31 - 1)]
StatesQuery = Annotated[list[CheckpointState] | None, Query(max_length=6, description="only these states")]
MetricQuery = Annotated[str | None, Query(max_length=256, description="sort by this validation metric")]
ARCHIVE_TYPES = ("application/gzip", "application/x-gzip", "application/x-tar", "application/*", "*/*")
"""What `GET /checkpoints/{uuid}` may be asked for: it sends a tar.gz (a client that asks for plain tar, as the real
master also serves, reads it too: `tarfile` detects the compression)."""


@route(router, "GET", "/api/v1/experiments/{exp_id}/checkpoints", table=DET_BY_KEY)
async def experiment_checkpoints(request: Request, exp_id: IdPath, sortByAttr: SortBy | None = None,
                                 sortByMetric: MetricQuery = None, orderBy: OrderBy | None = None,
                                 offset: Int32 = 0, limit: Int32 = 0,
                                 states: StatesQuery = None) -> GetExperimentCheckpointsResponse:
    """Determined's GetExperimentCheckpoints: every state unless `states` says which, in the asked order (by
    SORT_BY_SEARCHER_METRIC: best first), one page of `limit` (0: all) from `offset`."""
    if sortByAttr not in (None, "SORT_BY_UNSPECIFIED") and sortByMetric:
        raise InvalidRequest("sortByAttr, sortByMetric: give one of them, not both")
    with master(request).db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        rows = checkpoint_rows.of_experiment(conn, exp_id)
        origin = checkpoint_views.origin_of(conn, exp, rows)
    wanted = set(states or [])
    ckpts = [c for c in (checkpoint_views.message(r, origin) for r in rows) if not wanted or c.state in wanted]
    ckpts = checkpoint_views.ordered(ckpts, sortByAttr, sortByMetric, orderBy,
                                     cviews.smaller_is_better(exp["config"]))
    chosen, pagination = page(len(ckpts), offset, limit)
    return GetExperimentCheckpointsResponse(checkpoints=ckpts[chosen], pagination=pagination)


@route(router, "GET", "/api/v1/checkpoints/{uuid}", table=DET_BY_KEY)
async def checkpoint(request: Request, uuid: UuidPath) -> GetCheckpointResponse:
    with master(request).db.begin() as conn:
        row = checkpoint_rows.get(conn, uuid)
        exp = experiment_rows.get(conn, trial_rows.get(conn, row["trial_id"])["experiment_id"])
        origin = checkpoint_views.origin_of(conn, exp, [row])
    return GetCheckpointResponse(checkpoint=checkpoint_views.message(row, origin))


@route(router, "GET", "/checkpoints/{uuid}", table=DET_BY_KEY)
async def checkpoint_files(request: Request, uuid: UuidPath) -> Response:
    """The checkpoint's files as a tar.gz whose members are relative to the checkpoint's root: Stalwart's own
    download (read from checkpoint storage by the master, streamed as it is written)."""
    accept = request.headers.get("accept", "*/*")
    asked = [part.split(";")[0].strip().lower() for part in accept.split(",")]
    if not any(kind in ARCHIVE_TYPES for kind in asked):
        raise InvalidRequest(f"Accept: {accept!r}: this master sends a checkpoint's files as application/gzip (a "
                             "tar.gz) only; ask for that")
    return await stalwart_checkpoints.download(request, uuid)
