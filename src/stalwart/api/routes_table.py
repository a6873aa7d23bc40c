"""Every route of the master as data: method, path template, auth kind, request and response models, errors.

The route wiring (typed handlers, the OpenAPI document) reads this table; tests/unit/api/test_models.py
checks that it covers every route of `create_app(...)` and that real answers validate against it.
`response` is None where the body is not JSON (HTML pages, files, archives); `content_type` says what it is,
and `streaming` marks answers that stay open (NDJSON log follow, server-sent events).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel

from stalwart.api import permissions as P
from stalwart.api.auth_kinds import PATH_VALUES, AuthKind, PathValue, Scope
from stalwart.api.models import (
    agents,
    allocations,
    checkpoints,
    cluster,
    detached,
    elastic,
    experiments,
    jobs,
    notebooks,
    registry,
    searcher,
    series,
    shells,
    sso,
    tasks,
    templates,
    tensorboards,
    trials,
    ui,
    users,
    webhooks,
    workspaces,
)
from stalwart.api.models.common import Empty
from stalwart.api.models.errors import ErrorBody

JSON = "application/json"
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
HTML = "text/html"


@dataclass(frozen=True)
class RouteSpec:
    method: str
    path: str
    auth: AuthKind
    response: type[BaseModel] | None
    request: type[BaseModel] | None = None
    errors: tuple[int, ...] = ()
    content_type: str = JSON
    streaming: bool = False
    stream_item: type[BaseModel] | None = None
    also_content: tuple[str, ...] = ()  # other content types the 200 answer may have (chosen by a query value)
    also_auth: tuple[AuthKind, ...] = ()
    permission: P.Permission | None = None  # what a user route needs (api/permissions.py); None on other kinds
    error_model: type[BaseModel] = ErrorBody
    scope: Scope | None = None  # what a user route's permission is checked on (auth_kinds.Scope); None on others

    @property
    def path_values(self) -> tuple[str, ...]:
        """The names of the path's values, in order."""
        return tuple(re.findall(r"\{(\w+)", self.path))

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.path


OPEN, CLUSTER, ALLOC, USER = AuthKind.OPEN, AuthKind.CLUSTER, AuthKind.ALLOCATION, AuthKind.USER
PROXY = AuthKind.PROXY
PROXY_PATH = "/proxy/{task_id}/{path:path}"
PROXY_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
"""The task proxy's methods (and HEAD, with GET); "WEBSOCKET" names its WebSocket route in the table."""
WEBSOCKET = "WEBSOCKET"
UNREACHABLE = 502  # a task's service that does not answer
BAD, AUTH, NF, STATE, BIG, BUSY = 400, (401, 403), 404, 409, 413, 503
SLOW = 429  # a password check in the back-off of failed logins, or too many at once (identity/login_guard)
STATIC_TYPES = ("text/javascript", "text/css", "image/png", "image/svg+xml", "text/plain", "image/x-icon")
"""The content types of the web UI's static files (master/ui/pages.TYPES), beside application/octet-stream."""
E = "/api/v1/experiments"
T = "/api/v1/trials"
AL = "/api/v1/allocations"
WS = "/api/v1/workspaces"
PJ = "/api/v1/projects"
RP = "/api/v1/resource-pools"
MD = "/api/v1/models"
MV = MD + "/{model_name}/versions"
TP = "/api/v1/templates"


def _r(method: str, path: str, auth: AuthKind, response: type[BaseModel] | None, *errors: int | tuple[int, ...],
       **kw: object) -> RouteSpec:
    codes: list[int] = []
    for e in errors:
        codes.extend(e if isinstance(e, tuple) else (e,))
    if auth in (CLUSTER, ALLOC, USER):
        codes.extend(AUTH)
    if auth is USER and kw.get("permission") is None:
        raise ValueError(f"{method} {path}: a user route must name its permission (api/permissions.py)")
    if method in ("POST", "PATCH", "PUT"):
        codes.append(BIG)
    values = re.findall(r"\{(\w+)", path)
    unknown = [v for v in values if v not in PATH_VALUES]
    if unknown:
        raise ValueError(f"{method} {path}: path value(s) {unknown} name nothing api/auth_kinds.PATH_VALUES knows: say "
                         "what they name there (and in identity.authz how to find it)")
    if auth is USER:
        kw["scope"] = kw.get("scope") or _path_scope(method, path, values)
    return RouteSpec(method, path, auth, response, errors=tuple(sorted(set(codes))), **kw)  # type: ignore[arg-type]  # kw: RouteSpec's optional fields, by name


def _path_scope(method: str, path: str, values: list[str]) -> Scope:
    """A user route's scope when its entry gives none: the objects its path names; a route naming none must say
    what its permission is checked on."""
    named = {PathValue.WORKSPACE_OBJECT, PathValue.ACCOUNT_OBJECT}
    if any(PATH_VALUES[v] in named for v in values):
        return Scope.PATH
    raise ValueError(f"{method} {path}: a user route whose path names no workspace or account object must give its "
                     "scope (auth_kinds.Scope: query, body, list, own or cluster)")


PATH, QUERY, BODY, LIST, OWN, CLUSTER_WIDE = (Scope.PATH, Scope.QUERY, Scope.BODY, Scope.LIST, Scope.OWN,
                                              Scope.CLUSTER)

ROUTES: tuple[RouteSpec, ...] = (
    # the master and its documents
    _r("GET", "/api/v1/master", OPEN, cluster.MasterInfo),
    _r("GET", "/api/v1/openapi.json", OPEN, None),
    _r("GET", "/docs/rest-api/", OPEN, None, content_type=HTML),
    _r("GET", "/ui/static/{version}/{path:path}", OPEN, None, NF, content_type="application/octet-stream",
       also_content=STATIC_TYPES),
    # the task proxy (routes/proxy.py): what crosses is the service's own; who may pass, proxy/target.py
    *(_r(method, PROXY_PATH, PROXY, None, AUTH, NF, STATE, UNREACHABLE, content_type="*/*")
      for method in PROXY_METHODS),
    _r(WEBSOCKET, PROXY_PATH, PROXY, None, AUTH, NF, STATE, content_type="*/*"),
    # experiments
    _r("POST", E, USER, experiments.CreatedExperiment, BAD, request=experiments.CreateExperiment,
       permission=P.CREATE_EXPERIMENTS, scope=BODY),
    _r("GET", E, USER, experiments.ExperimentList, BAD, permission=P.VIEW_EXPERIMENTS, scope=LIST),
    _r("GET", E + "/{exp_id}", USER, experiments.ExperimentDetail, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("PATCH", E + "/{exp_id}", USER, experiments.ExperimentEnvelope, BAD, NF, request=experiments.PatchExperiment,
       permission=P.EDIT_EXPERIMENTS),
    _r("DELETE", E + "/{exp_id}", USER, experiments.DeletedExperiment, BAD, NF, STATE,
       permission=P.DELETE_EXPERIMENTS),
    _r("POST", E + "/{exp_id}/continue", USER, experiments.ExperimentEnvelope, BAD, NF, STATE,
       permission=P.EDIT_EXPERIMENTS,
       request=experiments.ContinueExperiment),
    _r("POST", E + "/{exp_id}/{action}", USER, experiments.ExperimentEnvelope, BAD, NF, STATE,
       permission=P.EDIT_EXPERIMENTS),
    _r("GET", E + "/{exp_id}/trials", USER, experiments.TrialList, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    # detached trials (core_v2 outside the cluster; master/detached): the script's user makes and starts them, and
    # the run's token (like a managed run's) reports for it, beats and ends it
    _r("POST", E + "/{exp_id}/trials", USER, detached.DetachedTrial, BAD, NF, STATE,
       request=detached.CreateDetachedTrial, permission=P.EDIT_EXPERIMENTS),
    _r("POST", T + "/{trial_id}/runs", USER, detached.DetachedRun, BAD, NF, STATE, request=detached.StartDetachedRun,
       permission=P.EDIT_EXPERIMENTS),
    _r("POST", AL + "/{allocation_id}/detached/heartbeat", ALLOC, Empty, BAD, NF, STATE),
    _r("POST", AL + "/{allocation_id}/detached/end", ALLOC, Empty, BAD, NF, STATE, request=detached.EndDetachedRun),
    _r("GET", E + "/{exp_id}/checkpoints", USER, checkpoints.CheckpointList, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", E + "/{exp_id}/model_def", USER, experiments.ModelDef, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", E + "/{exp_id}/searcher/best_searcher_validation_metric", USER, experiments.BestMetric, BAD, NF,
       permission=P.VIEW_EXPERIMENTS, also_auth=(ALLOC,)),
    _r("PATCH", E + "/{exp_id}/job", USER, jobs.JobEnvelope, BAD, NF, request=jobs.UpdateJob, permission=P.EDIT_JOBS),
    _r("PATCH", E + "/{exp_id}/checkpoint-gc-policy", USER, experiments.GcPolicyChange, BAD, NF,
       request=experiments.ChangeGcPolicy, permission=P.EDIT_EXPERIMENTS),
    _r("PUT", E + "/{exp_id}/retain_logs", USER, Empty, BAD, NF, STATE, request=experiments.RetainLogs,
       permission=P.EDIT_EXPERIMENTS),
    _r("GET", E + "/{exp_id}/metrics/series", USER, series.ExperimentSeries, BAD, NF, BUSY,
       permission=P.VIEW_EXPERIMENTS,
       also_content=("application/octet-stream",)),
    # trials
    _r("GET", T + "/{trial_id}", USER, trials.TrialDetail, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("POST", T + "/{trial_id}/kill", USER, Empty, BAD, NF, STATE, permission=P.EDIT_EXPERIMENTS),
    _r("GET", T + "/{trial_id}/checkpoints", USER, checkpoints.CheckpointList, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", T + "/{trial_id}/metrics", USER, trials.MetricList, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", T + "/{trial_id}/logs", USER, None, BAD, NF, content_type=NDJSON, streaming=True,
       permission=P.VIEW_EXPERIMENTS,
       stream_item=trials.LogEntry),
    _r("GET", T + "/{trial_id}/metrics/series", USER, series.TrialSeries, BAD, NF, BUSY, permission=P.VIEW_EXPERIMENTS),
    # trials: calls from inside the trial
    _r("POST", T + "/{trial_id}/metrics", ALLOC, trials.Accepted, BAD, NF, STATE, request=trials.ReportMetrics),
    _r("POST", T + "/{trial_id}/progress", ALLOC, Empty, BAD, NF, STATE, request=trials.ReportProgress),
    _r("POST", T + "/{trial_id}/early_exit", ALLOC, Empty, BAD, NF, STATE, request=trials.ReportEarlyExit),
    _r("GET", T + "/{trial_id}/searcher/operation", ALLOC, trials.SearcherOperation, BAD, NF, STATE),
    _r("POST", "/api/v1/checkpoints", ALLOC, checkpoints.CheckpointEnvelope, BAD, NF, STATE,
       request=checkpoints.RegisterCheckpoint),
    _r("GET", AL + "/{allocation_id}/signals/preemption", ALLOC, allocations.Preemption, BAD, NF),
    _r("POST", AL + "/{allocation_id}/signals/ack_preemption", ALLOC, Empty, BAD, NF),
    _r("POST", AL + "/{allocation_id}/service", ALLOC, Empty, BAD, NF, STATE, request=allocations.ServiceStarted),
    _r("POST", AL + "/{allocation_id}/activity", ALLOC, Empty, BAD, NF, STATE),
    # allocations: agent side
    _r("GET", AL + "/{allocation_id}/context", CLUSTER, allocations.Context, BAD, NF),
    _r("POST", AL + "/{allocation_id}/started", CLUSTER, allocations.StartedAnswer, BAD, NF,
       request=allocations.Started),
    _r("POST", AL + "/{allocation_id}/exited", CLUSTER, Empty, BAD, NF, request=allocations.Exited),
    # checkpoints
    _r("DELETE", "/api/v1/checkpoints", USER, Empty, BAD, NF, STATE, BIG, request=checkpoints.DeleteCheckpoints,
       permission=P.DELETE_CHECKPOINTS, scope=BODY),
    _r("GET", "/api/v1/checkpoints/{uuid}", USER, checkpoints.CheckpointEnvelope, BAD, NF,
       permission=P.VIEW_EXPERIMENTS),
    _r("GET", "/api/v1/checkpoints/{uuid}/download", USER, None, BAD, NF, content_type="application/gzip",
       permission=P.VIEW_EXPERIMENTS),
    # model registry (docs/model-registry.md): a model is named by its name (or its id, all digits)
    _r("POST", MD, USER, registry.ModelEnvelope, BAD, NF, STATE, request=registry.CreateModel,
       permission=P.CREATE_MODEL_REGISTRY, scope=BODY),
    _r("GET", MD, USER, registry.ModelList, BAD, permission=P.VIEW_MODEL_REGISTRY, scope=LIST),
    _r("GET", MD + "/{model_name}", USER, registry.ModelEnvelope, BAD, NF, permission=P.VIEW_MODEL_REGISTRY),
    _r("PATCH", MD + "/{model_name}", USER, registry.ModelEnvelope, BAD, NF, STATE, request=registry.PatchModel,
       permission=P.EDIT_MODEL_REGISTRY),
    _r("DELETE", MD + "/{model_name}", USER, Empty, BAD, NF, permission=P.DELETE_MODEL_REGISTRY),
    _r("POST", MD + "/{model_name}/archive", USER, registry.ModelEnvelope, BAD, NF,
       permission=P.EDIT_MODEL_REGISTRY),
    _r("POST", MD + "/{model_name}/unarchive", USER, registry.ModelEnvelope, BAD, NF,
       permission=P.EDIT_MODEL_REGISTRY),
    _r("POST", MV, USER, registry.ModelVersionEnvelope, BAD, NF, STATE, request=registry.RegisterVersion,
       permission=P.EDIT_MODEL_REGISTRY),
    _r("GET", MV, USER, registry.ModelVersionList, BAD, NF, permission=P.VIEW_MODEL_REGISTRY),
    _r("GET", MV + "/{version_num}", USER, registry.ModelVersionEnvelope, BAD, NF, permission=P.VIEW_MODEL_REGISTRY),
    _r("PATCH", MV + "/{version_num}", USER, registry.ModelVersionEnvelope, BAD, NF, STATE,
       request=registry.PatchModelVersion, permission=P.EDIT_MODEL_REGISTRY),
    _r("DELETE", MV + "/{version_num}", USER, Empty, BAD, NF, permission=P.DELETE_MODEL_REGISTRY),
    # webhooks (docs/webhooks.md): a workspace's need edit_webhooks on it, the cluster's on the cluster; the listing
    # shows those the caller may manage; a trial's core.alert() queues its CUSTOM deliveries
    _r("POST", "/api/v1/webhooks", USER, webhooks.WebhookEnvelope, BAD, NF, request=webhooks.CreateWebhook,
       permission=P.EDIT_WEBHOOKS, scope=BODY),
    _r("GET", "/api/v1/webhooks", USER, webhooks.WebhookList, permission=P.EDIT_WEBHOOKS, scope=LIST),
    _r("DELETE", "/api/v1/webhooks/{webhook_id}", USER, Empty, BAD, NF, permission=P.EDIT_WEBHOOKS),
    _r("POST", "/api/v1/webhooks/{webhook_id}/test", USER, webhooks.TestDelivery, BAD, NF,
       permission=P.EDIT_WEBHOOKS),
    _r("POST", T + "/{trial_id}/alerts", ALLOC, webhooks.AlertQueued, BAD, NF, STATE, request=webhooks.Alert),
    # configuration templates (docs/templates.md): each in a workspace; answers hide their secrets; PUT replaces an
    # existing one (POST creates)
    _r("POST", TP, USER, templates.TemplateEnvelope, BAD, NF, STATE, request=templates.CreateTemplate,
       permission=P.EDIT_TEMPLATES, scope=BODY),
    _r("GET", TP, USER, templates.TemplateList, BAD, permission=P.VIEW_TEMPLATES, scope=LIST),
    _r("GET", TP + "/{template_name}", USER, templates.TemplateEnvelope, BAD, NF, permission=P.VIEW_TEMPLATES),
    _r("PUT", TP + "/{template_name}", USER, templates.TemplateEnvelope, BAD, NF, STATE,
       request=templates.SetTemplate, permission=P.EDIT_TEMPLATES),
    _r("DELETE", TP + "/{template_name}", USER, Empty, BAD, NF, permission=P.EDIT_TEMPLATES),
    # agents and slots
    _r("POST", "/api/v1/agents", CLUSTER, agents.Registered, BAD, STATE, request=agents.RegisterAgent),
    _r("GET", "/api/v1/agents/{agent_id}/actions", CLUSTER, agents.Actions, BAD, NF),
    _r("GET", "/api/v1/agents", USER, agents.AgentList, permission=P.VIEW_CLUSTER, scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/agents/{agent_id}/enable", USER, agents.AgentEnvelope, BAD, NF, permission=P.MANAGE_AGENTS,
       scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/agents/{agent_id}/disable", USER, agents.AgentEnvelope, BAD, NF,
       permission=P.MANAGE_AGENTS, scope=CLUSTER_WIDE,
       request=agents.DisableAgent),
    _r("GET", "/api/v1/agents/credentials", USER, agents.AgentCredentialList, permission=P.MANAGE_AGENTS,
       scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/agents/{agent_id}/revoke", USER, agents.RevokedAgentCredential, BAD, NF,
       permission=P.MANAGE_AGENTS, scope=CLUSTER_WIDE, request=agents.RevokeAgentCredential),
    _r("GET", "/api/v1/slots", USER, agents.SlotList, permission=P.VIEW_CLUSTER, scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/task/logs", CLUSTER, trials.Accepted, BAD, NF, STATE, request=agents.TaskLogs,
       also_auth=(ALLOC,)),
    # searcher
    _r("POST", "/api/v1/searcher/preview", USER, searcher.PreviewAnswer, BAD, request=searcher.PreviewRequest,
       permission=P.VIEW_CLUSTER, scope=CLUSTER_WIDE),
    # jobs
    _r("GET", "/api/v1/jobs", USER, jobs.JobList, BAD, permission=P.VIEW_CLUSTER, scope=LIST),
    _r("GET", "/api/v1/jobs/{job_id}", USER, jobs.JobEnvelope, BAD, NF, permission=P.VIEW_CLUSTER),
    _r("POST", "/api/v1/jobs/{job_id}/priority", USER, jobs.JobEnvelope, BAD, NF, STATE, request=jobs.SetPriority,
       permission=P.EDIT_JOBS),
    _r("POST", "/api/v1/jobs/{job_id}/weight", USER, jobs.JobEnvelope, BAD, NF, STATE, request=jobs.SetWeight,
       permission=P.EDIT_JOBS),
    _r("POST", "/api/v1/jobs/{job_id}/resource_pool", USER, jobs.JobEnvelope, BAD, NF, STATE, request=jobs.SetPool,
       permission=P.EDIT_JOBS),
    _r("PATCH", "/api/v1/jobs/{job_id}", USER, jobs.JobEnvelope, BAD, NF, STATE, request=jobs.UpdateJob,
       permission=P.EDIT_JOBS),
    _r("POST", "/api/v1/jobs/{job_id}/move", USER, jobs.JobList, BAD, NF, STATE, request=jobs.MoveJob,
       permission=P.EDIT_JOBS),
    _r("PATCH", "/api/v1/commands/{cmd_id}/job", USER, jobs.JobEnvelope, BAD, NF, request=jobs.UpdateJob,
       permission=P.EDIT_JOBS),
    # commands and tasks
    _r("POST", "/api/v1/commands", USER, tasks.CommandEnvelope, BAD, request=tasks.CreateCommand,
       permission=P.CREATE_COMMANDS, scope=BODY),
    _r("GET", "/api/v1/commands/{cmd_id}", USER, tasks.CommandEnvelope, BAD, NF, permission=P.VIEW_TASKS),
    _r("POST", "/api/v1/commands/{cmd_id}/kill", USER, tasks.CommandEnvelope, BAD, NF, STATE,
       permission=P.EDIT_COMMANDS),
    _r("GET", "/api/v1/tasks", USER, tasks.TaskList, BAD, permission=P.VIEW_TASKS, scope=LIST),
    _r("GET", "/api/v1/tasks/{task_id}", USER, tasks.TaskEnvelope, BAD, NF, permission=P.VIEW_TASKS),
    _r("GET", "/api/v1/tasks/{task_id}/logs", USER, None, BAD, NF, content_type=NDJSON, streaming=True,
       permission=P.VIEW_TASKS,
       stream_item=trials.LogEntry),
    # notebooks (tasks of kind notebook): JupyterLab, opened through the proxy by its owner alone
    _r("POST", "/api/v1/notebooks", USER, notebooks.NotebookEnvelope, BAD, NF, request=notebooks.CreateNotebook,
       permission=P.CREATE_COMMANDS, scope=BODY),
    _r("GET", "/api/v1/notebooks", USER, notebooks.NotebookList, BAD, permission=P.VIEW_TASKS, scope=LIST),
    _r("GET", "/api/v1/notebooks/{notebook_id}", USER, notebooks.NotebookEnvelope, BAD, NF, permission=P.VIEW_TASKS),
    _r("POST", "/api/v1/notebooks/{notebook_id}/kill", USER, notebooks.NotebookEnvelope, BAD, NF, STATE,
       permission=P.EDIT_COMMANDS),
    # TensorBoards (tasks of kind tensorboard): the caller must also view every experiment one shows
    _r("POST", "/api/v1/tensorboards", USER, tensorboards.TensorboardEnvelope, BAD, NF,
       request=tensorboards.CreateTensorboard, permission=P.CREATE_COMMANDS, scope=BODY),
    _r("GET", "/api/v1/tensorboards", USER, tensorboards.TensorboardList, BAD, permission=P.VIEW_TASKS, scope=LIST),
    _r("GET", "/api/v1/tensorboards/{tensorboard_id}", USER, tensorboards.TensorboardEnvelope, BAD, NF,
       permission=P.VIEW_TASKS),
    _r("POST", "/api/v1/tensorboards/{tensorboard_id}/kill", USER, tensorboards.TensorboardEnvelope, BAD, NF, STATE,
       permission=P.EDIT_COMMANDS),
    # shells (tasks of kind shell): an sshd reached through the proxy; its key is its owner's alone (the proxy's kind)
    _r("POST", "/api/v1/shells", USER, shells.ShellEnvelope, BAD, NF, request=shells.CreateShell,
       permission=P.CREATE_COMMANDS, scope=BODY),
    _r("GET", "/api/v1/shells", USER, shells.ShellList, BAD, permission=P.VIEW_TASKS, scope=LIST),
    _r("GET", "/api/v1/shells/{shell_id}", USER, shells.ShellEnvelope, BAD, NF, permission=P.VIEW_TASKS),
    _r("POST", "/api/v1/shells/{shell_id}/kill", USER, shells.ShellEnvelope, BAD, NF, STATE,
       permission=P.EDIT_COMMANDS),
    _r("GET", "/api/v1/shells/{shell_id}/key", PROXY, shells.ShellKey, AUTH, BAD, NF),
    # web UI: JSON page models (ETag'd, 304 on If-None-Match) and live updates
    _r("GET", "/api/v1/ui/experiments", USER, ui.ExperimentsPage, BAD, permission=P.VIEW_EXPERIMENTS, scope=LIST),
    _r("GET", "/api/v1/ui/experiments/{exp_id}", USER, ui.ExperimentPage, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", "/api/v1/ui/experiments/{exp_id}/hparams", USER, ui.HparamsView, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", "/api/v1/ui/trials/{trial_id}", USER, ui.TrialPage, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", "/api/v1/ui/trials/{trial_id}/logs", USER, ui.TrialLogs, BAD, NF, permission=P.VIEW_EXPERIMENTS),
    _r("GET", "/api/v1/ui/cluster", USER, ui.ClusterPage, permission=P.VIEW_CLUSTER, scope=LIST),
    _r("GET", "/api/v1/ui/status", USER, ui.IndexStatus, permission=P.VIEW_CLUSTER, scope=CLUSTER_WIDE),
    _r("GET", "/api/v1/ui/events", USER, None, BAD, NF, content_type=SSE, streaming=True,
       permission=P.VIEW_EXPERIMENTS, scope=QUERY),
    # web UI: HTML pages (errors are HTML pages too)
    *(_r("GET", p, USER, None, NF, content_type=HTML, permission=P.VIEW_EXPERIMENTS) for p in (
        "/experiments/{exp_id}", "/experiments/{exp_id}/trials/{trial_id}", "/trials/{trial_id}")),
    *(_r("GET", p, USER, None, NF, content_type=HTML, permission=P.VIEW_EXPERIMENTS, scope=LIST) for p in (
        "/", "/experiments")),
    *(_r("GET", p, USER, None, NF, content_type=HTML, permission=P.VIEW_CLUSTER, scope=LIST) for p in (
        "/cluster", "/jobs")),
    _r("GET", "/tasks", USER, None, NF, content_type=HTML, permission=P.VIEW_TASKS, scope=LIST),
    _r("GET", "/tasks/{task_id}", USER, None, NF, content_type=HTML, permission=P.VIEW_TASKS),
    _r("GET", "/audit", USER, None, NF, content_type=HTML, permission=P.VIEW_AUDIT, scope=CLUSTER_WIDE),
    # web UI: signing in and out (a form post; the answer is a redirect carrying the session cookie)
    _r("GET", "/login", OPEN, None, content_type=HTML),
    _r("POST", "/login", OPEN, None, BAD, SLOW, content_type=HTML),
    _r("POST", "/logout", USER, None, content_type=HTML, permission=P.SIGN_OUT, scope=OWN),
    # users, sessions and access tokens (Determined's login, me and logout shapes)
    _r("POST", "/api/v1/auth/login", OPEN, users.LoginAnswer, BAD, AUTH, SLOW, request=users.Login),
    _r("POST", "/api/v1/auth/logout", USER, Empty, permission=P.SIGN_OUT, scope=OWN),
    _r("GET", "/api/v1/me", USER, users.UserEnvelope, permission=P.VIEW_USERS, scope=OWN),
    _r("GET", "/api/v1/users", USER, users.UserList, permission=P.VIEW_USERS, scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/users", USER, users.UserEnvelope, BAD, STATE, request=users.CreateUser,
       permission=P.MANAGE_USERS, scope=CLUSTER_WIDE),
    _r("GET", "/api/v1/users/{username}", USER, users.UserEnvelope, BAD, NF, permission=P.VIEW_USERS),
    _r("PATCH", "/api/v1/users/{username}", USER, users.UserEnvelope, BAD, NF, STATE, request=users.PatchUser,
       permission=P.EDIT_OWN_ACCOUNT),
    _r("POST", "/api/v1/users/{username}/password", USER, Empty, BAD, NF, SLOW, request=users.SetPassword,
       permission=P.EDIT_OWN_ACCOUNT),
    _r("POST", "/api/v1/tokens", USER, users.CreatedToken, BAD, NF, request=users.CreateToken,
       permission=P.MANAGE_OWN_TOKENS, scope=BODY),
    _r("GET", "/api/v1/tokens", USER, users.TokenList, BAD, permission=P.MANAGE_OWN_TOKENS, scope=OWN),
    _r("DELETE", "/api/v1/tokens/{token_id}", USER, users.TokenEnvelope, BAD, NF, permission=P.MANAGE_OWN_TOKENS),
    # the audit log
    _r("GET", "/api/v1/audit", USER, users.AuditList, BAD, permission=P.VIEW_AUDIT, scope=CLUSTER_WIDE),
    # workspaces and projects
    _r("GET", WS, USER, workspaces.WorkspaceList, BAD, permission=P.VIEW_WORKSPACES, scope=LIST),
    _r("POST", WS, USER, workspaces.WorkspaceEnvelope, BAD, STATE, request=workspaces.CreateWorkspace,
       permission=P.CREATE_WORKSPACES, scope=CLUSTER_WIDE),
    _r("GET", WS + "/{workspace_id}", USER, workspaces.WorkspaceEnvelope, BAD, NF, permission=P.VIEW_WORKSPACES),
    _r("PATCH", WS + "/{workspace_id}", USER, workspaces.WorkspaceEnvelope, BAD, NF, STATE,
       request=workspaces.PatchWorkspace, permission=P.EDIT_WORKSPACES),
    _r("POST", WS + "/{workspace_id}/archive", USER, workspaces.WorkspaceEnvelope, BAD, NF, STATE,
       permission=P.EDIT_WORKSPACES),
    _r("POST", WS + "/{workspace_id}/unarchive", USER, workspaces.WorkspaceEnvelope, BAD, NF, STATE,
       permission=P.EDIT_WORKSPACES),
    _r("DELETE", WS + "/{workspace_id}", USER, Empty, BAD, NF, STATE, permission=P.DELETE_WORKSPACES),
    _r("GET", WS + "/{workspace_id}/projects", USER, workspaces.ProjectList, BAD, NF,
       permission=P.VIEW_WORKSPACES),
    _r("POST", WS + "/{workspace_id}/projects", USER, workspaces.ProjectEnvelope, BAD, NF, STATE,
       request=workspaces.CreateProject, permission=P.CREATE_PROJECTS),
    _r("GET", PJ + "/{project_id}", USER, workspaces.ProjectEnvelope, BAD, NF, permission=P.VIEW_WORKSPACES),
    _r("PATCH", PJ + "/{project_id}", USER, workspaces.ProjectEnvelope, BAD, NF, STATE,
       request=workspaces.PatchProject, permission=P.EDIT_PROJECTS),
    _r("POST", PJ + "/{project_id}/archive", USER, workspaces.ProjectEnvelope, BAD, NF, STATE,
       permission=P.EDIT_PROJECTS),
    _r("POST", PJ + "/{project_id}/unarchive", USER, workspaces.ProjectEnvelope, BAD, NF, STATE,
       permission=P.EDIT_PROJECTS),
    _r("DELETE", PJ + "/{project_id}", USER, Empty, BAD, NF, STATE, permission=P.DELETE_PROJECTS),
    _r("POST", E + "/{exp_id}/move", USER, experiments.ExperimentEnvelope, BAD, NF, STATE,
       request=workspaces.MoveExperiment, permission=P.EDIT_EXPERIMENTS),
    # resource pools (any signed-in user, as Determined), and the workspaces they are bound to
    _r("GET", RP, USER, workspaces.ResourcePoolList, permission=P.VIEW_CLUSTER, scope=CLUSTER_WIDE),
    _r("GET", RP + "/{pool}/workspace-bindings", USER, workspaces.PoolBindingList, BAD, NF,
       permission=P.VIEW_CLUSTER, scope=CLUSTER_WIDE),
    _r("GET", RP + "/{pool}/instances", USER, elastic.PoolInstances, NF, permission=P.VIEW_CLUSTER,
       scope=CLUSTER_WIDE),
    _r("POST", RP + "/{pool}/workspace-bindings", USER, workspaces.PoolBindingList, BAD, NF,
       request=workspaces.PoolBindings, permission=P.BIND_POOLS, scope=CLUSTER_WIDE),
    _r("DELETE", RP + "/{pool}/workspace-bindings", USER, workspaces.PoolBindingList, BAD, NF,
       request=workspaces.PoolBindings, permission=P.BIND_POOLS, scope=CLUSTER_WIDE),
    # user groups
    _r("GET", "/api/v1/groups", USER, workspaces.GroupList, permission=P.VIEW_USERS, scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/groups", USER, workspaces.GroupEnvelope, BAD, NF, STATE, request=workspaces.CreateGroup,
       permission=P.MANAGE_GROUPS, scope=CLUSTER_WIDE),
    _r("GET", "/api/v1/groups/{group_name}", USER, workspaces.GroupEnvelope, BAD, NF, permission=P.VIEW_USERS,
       scope=CLUSTER_WIDE),
    _r("DELETE", "/api/v1/groups/{group_name}", USER, Empty, BAD, NF, permission=P.MANAGE_GROUPS,
       scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/groups/{group_name}/members", USER, workspaces.GroupEnvelope, BAD, NF,
       request=workspaces.GroupMembers, permission=P.MANAGE_GROUPS, scope=CLUSTER_WIDE),
    _r("DELETE", "/api/v1/groups/{group_name}/members", USER, workspaces.GroupEnvelope, BAD, NF,
       request=workspaces.GroupMembers, permission=P.MANAGE_GROUPS, scope=CLUSTER_WIDE),
    # roles (rbac)
    _r("GET", "/api/v1/rbac/roles", USER, workspaces.RoleList, permission=P.VIEW_ROLES, scope=CLUSTER_WIDE),
    _r("GET", "/api/v1/rbac/roles/{role}", USER, workspaces.RoleEnvelope, BAD, NF, permission=P.VIEW_ROLES,
       scope=CLUSTER_WIDE),
    _r("GET", "/api/v1/rbac/assignments", USER, workspaces.RoleAssignmentList, BAD, NF, permission=P.VIEW_ROLES,
       scope=CLUSTER_WIDE),
    _r("POST", "/api/v1/rbac/assignments", USER, workspaces.RoleAssignmentList, BAD, NF, STATE,
       request=workspaces.AssignRole, permission=P.ASSIGN_ROLES, scope=BODY),
    _r("POST", "/api/v1/rbac/unassignments", USER, workspaces.RoleAssignmentList, BAD, NF,
       request=workspaces.AssignRole, permission=P.ASSIGN_ROLES, scope=BODY),
    _r("GET", "/api/v1/rbac/my-permissions", USER, workspaces.MyPermissions, permission=P.VIEW_ROLES, scope=OWN),
    # tasks as their owners' OS users: a user's link to an OS user (set_agent_user: admins only)
    _r("POST", "/api/v1/users/{username}/agent-user", USER, users.UserEnvelope, BAD, NF,
       request=users.LinkAgentUser, permission=P.SET_AGENT_USER),
    _r("DELETE", "/api/v1/users/{username}/agent-user", USER, users.UserEnvelope, BAD, NF,
       permission=P.SET_AGENT_USER),
    # single sign-on (OpenID Connect, docs/sso.md): the browser's round trip through the provider, and the CLI's
    # trade of its one-time code for a session
    _r("GET", "/oidc/login", OPEN, None, BAD, AUTH, content_type=HTML),
    _r("GET", "/oidc/callback", OPEN, None, BAD, AUTH, content_type=HTML),
    _r("GET", "/api/v1/auth/oidc", OPEN, sso.SsoInfo),
    _r("POST", "/api/v1/auth/oidc/token", OPEN, users.LoginAnswer, BAD, AUTH, request=sso.SsoCodeExchange),
    # web UI: workspaces and projects (HTML pages; a project's experiments come from GET /api/v1/ui/experiments)
    _r("GET", "/workspaces", USER, None, NF, content_type=HTML, permission=P.VIEW_WORKSPACES, scope=LIST),
    *(_r("GET", p, USER, None, NF, content_type=HTML, permission=P.VIEW_WORKSPACES) for p in (
        "/workspaces/{workspace_id}", "/projects/{project_id}")),
    # ui: model registry (HTML pages: the models list, a model, one of its versions)
    _r("GET", "/models", USER, None, NF, content_type=HTML, permission=P.VIEW_MODEL_REGISTRY, scope=LIST),
    *(_r("GET", p, USER, None, NF, content_type=HTML, permission=P.VIEW_MODEL_REGISTRY) for p in (
        "/models/{model_name}", "/models/{model_name}/versions/{version_num}")),
)

BY_KEY: dict[tuple[str, str], RouteSpec] = {r.key: r for r in ROUTES}


def lookup(method: str, path: str, table: dict[tuple[str, str], RouteSpec] = BY_KEY) -> RouteSpec:
    """The entry of one route in `table` (this one by default); KeyError names the route when the table lacks it."""
    try:
        return table[(method.upper(), path)]
    except KeyError:
        raise KeyError(f"no route table entry for {method.upper()} {path}") from None


declare = _r  # how another route table (api/determined_routes/) declares its entries, with this table's checks
