"""The Determined listener's routes for experiments and their trials: create, list, describe, pause, kill.

Each entry has the permission and scope of the master's own route for the same thing (api/routes_table.py)."""

from __future__ import annotations

from stalwart.api import permissions as P
from stalwart.api.determined_routes.declare import d
from stalwart.api.models.determined import experiments as ex, trials as tr, wire
from stalwart.api.routes_table import BAD, BODY, LIST, NF, STATE, USER, RouteSpec

E = "/api/v1/experiments"
T = "/api/v1/trials"
ACTIONS = ("pause", "activate", "kill", "cancel", "archive", "unarchive")
"""The experiment actions Determined's client posts to `/api/v1/experiments/{id}/ACTION` (no body, answer `{}`)."""

ROUTES: tuple[RouteSpec, ...] = (
    d("POST", E, USER, ex.CreateExperimentResponse, BAD, request=ex.CreateExperimentRequest,
      permission=P.CREATE_EXPERIMENTS, scope=BODY),
    d("GET", E, USER, ex.GetExperimentsResponse, BAD, permission=P.VIEW_EXPERIMENTS, scope=LIST),
    d("GET", E + "/{exp_id}", USER, ex.GetExperimentResponse, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    *(d("POST", f"{E}/{{exp_id}}/{action}", USER, wire.Empty, BAD, NF, STATE, permission=P.EDIT_EXPERIMENTS)
      for action in ACTIONS),
    d("GET", E + "/{exp_id}/trials", USER, tr.GetExperimentTrialsResponse, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    d("GET", E + "/{exp_id}/model_def", USER, ex.GetModelDefResponse, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    d("GET", T + "/{trial_id}", USER, tr.GetTrialResponse, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    d("GET", T + "/{trial_id}/workloads", USER, tr.GetTrialWorkloadsResponse, BAD, NF,
      permission=P.VIEW_EXPERIMENTS),
)
