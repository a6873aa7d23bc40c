"""The Determined listener's routes for trial logs: one NDJSON stream of `{"result": ...}` lines."""

from __future__ import annotations

from stalwart.api import permissions as P
from stalwart.api.determined_routes.declare import d
from stalwart.api.models.determined import logs
from stalwart.api.routes_table import BAD, NDJSON, NF, USER, RouteSpec

ROUTES: tuple[RouteSpec, ...] = (
    # a trial's lines (follow: until the trial is over), as Stalwart's GET /api/v1/trials/{trial_id}/logs reads them
    d("GET", "/api/v1/trials/{trial_id}/logs", USER, None, BAD, NF, content_type=NDJSON, streaming=True,
      permission=P.VIEW_EXPERIMENTS, stream_item=logs.TrialLogsLine),
)
