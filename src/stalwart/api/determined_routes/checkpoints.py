"""The Determined listener's routes for checkpoints: an experiment's, one by uuid, and its files as a tar.gz."""

from __future__ import annotations

from stalwart.api import permissions as P
from stalwart.api.determined_routes.declare import d
from stalwart.api.models.determined import checkpoints
from stalwart.api.routes_table import BAD, NF, USER, RouteSpec

ROUTES: tuple[RouteSpec, ...] = (
    # the same reads as Stalwart's GET /api/v1/experiments/{exp_id}/checkpoints, /api/v1/checkpoints/{uuid} and
    # /api/v1/checkpoints/{uuid}/download, with the same permission
    d("GET", "/api/v1/experiments/{exp_id}/checkpoints", USER, checkpoints.GetExperimentCheckpointsResponse, BAD, NF,
      permission=P.VIEW_EXPERIMENTS),
    d("GET", "/api/v1/checkpoints/{uuid}", USER, checkpoints.GetCheckpointResponse, BAD, NF,
      permission=P.VIEW_EXPERIMENTS),
    # not under /api/v1 (the real master's echo route): `det checkpoint download --mode master` reads the tar.gz
    d("GET", "/checkpoints/{uuid}", USER, None, BAD, NF, content_type="application/gzip",
      permission=P.VIEW_EXPERIMENTS),
)
