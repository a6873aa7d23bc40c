"""The Determined listener's routes for detached mode of the real package (core_v2 outside any cluster).

Determined's core_v2 makes its experiment and trial, starts a run and reports with its user's session, where
Stalwart's own detached scripts report with their run's token: each of these calls needs `experiments.edit` on the
trial's experiment (what starting a run there needs, docs/detached.md) and is filed under the trial's detached run.
The experiment itself is made by `POST /api/v1/experiments` with `unmanaged: true` (determined_routes.experiments)."""

from __future__ import annotations

from stalwart.api import permissions as P
from stalwart.api.determined_routes.declare import d
from stalwart.api.models.determined import detached as dm, experiments as ex, wire
from stalwart.api.routes_table import BAD, BODY, NF, OPEN, STATE, USER, RouteSpec

T = "/api/v1/trials"
EDIT = P.EDIT_EXPERIMENTS

ROUTES: tuple[RouteSpec, ...] = (
    # who the master is: core_v2 reads its cluster id
    d("GET", "/api/v1/master", OPEN, dm.GetMasterResponse),
    # the detached experiment by the script's external id (found again, or made)
    d("PUT", "/api/v1/experiments/by-external-id/{external_id:path}", USER, dm.PutExperimentResponse, BAD, NF, STATE,
      request=ex.CreateExperimentRequest, permission=P.CREATE_EXPERIMENTS, scope=BODY),
    # its trial (made, or found by its external id), a run of it, and what the script reports for it
    d("POST", T, USER, dm.TrialResponse, BAD, NF, STATE, request=dm.CreateTrialRequest, permission=EDIT, scope=BODY),
    d("PUT", T, USER, dm.TrialResponse, BAD, NF, STATE, request=dm.PutTrialRequest, permission=EDIT, scope=BODY),
    d("POST", T + "/{trial_id}/start", USER, dm.StartTrialResponse, BAD, NF, STATE, request=dm.StartTrialRequest,
      permission=EDIT),
    d("POST", "/api/v1/runs/start", USER, dm.RunPrepareForReportingResponse, BAD, NF, STATE,
      request=dm.RunPrepareForReportingRequest, permission=EDIT, scope=BODY),
    d("POST", T + "/{trial_id}/metrics", USER, wire.Empty, BAD, NF, STATE, request=dm.ReportTrialMetricsRequest,
      permission=EDIT),
    d("POST", "/api/v1/checkpoints", USER, wire.Empty, BAD, NF, STATE, request=dm.ReportCheckpointRequest,
      permission=EDIT, scope=BODY),
    d("PATCH", T + "/{trial_id}", USER, dm.TrialResponse, BAD, NF, STATE, request=dm.PatchTrialRequest,
      permission=EDIT),
    d("POST", "/task-logs", USER, wire.Empty, BAD, NF, STATE, request=dm.TaskLogsRequest, permission=EDIT,
      scope=BODY),
)
