"""The page models as the caller may see them, built the same way for a page's HTML, its JSON route and its live
stream: `builder` checks a page's id and query now and returns a function that builds its current model.

Page models say, per experiment, whether the caller may change it (`can_edit`: `identity.authz.allowed` with
`edit_experiments`), so the pages can disable what the master would refuse anyway; lists hold only what the caller
may view (`identity.authz.viewable_workspaces`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from fastapi import Request

from stalwart.api import permissions as P
from stalwart.api.errors import InvalidRequest
from stalwart.api.models.common import JsonObject
from stalwart.master.identity import authz
from stalwart.master.identity.sessions import Identity
from stalwart.master.queries import workspaces as workspace_queries
from stalwart.master.routes.common import master
from stalwart.master.series.index import MetricsIndex
from stalwart.master.service import Master
from stalwart.master.ui import models, trial_models, workspace_models

Page = Literal["experiments", "experiment", "trial", "cluster"]
ModelBuilder = Callable[[], JsonObject]
EXP_PARAMS = {"sort": str, "order": str, "limit": int, "offset": int}
"""The query values of the experiment page's model (its trials' sorting and paging)."""


def metrics_index(request: Request) -> MetricsIndex | None:
    """The app's metrics index, refreshed with what was written since (None: the UI runs without one)."""
    idx: MetricsIndex | None = getattr(request.app.state, "metrics_index", None)
    if idx is not None:
        idx.refresh()
    return idx


def builder(request: Request, page: Page, ident: int | None, params: dict[str, Any]) -> ModelBuilder:
    """A function that builds the current model of `page` (checked now, so errors come before streaming)."""
    m: Master = master(request)
    caller: Identity = request.state.identity
    if page == "experiments":
        scope = _experiment_scope(m, caller)
        return lambda: _with_can_edit(m, caller, models.experiments_page(m, metrics_index(request), workspaces=scope,
                                                                         **params))
    if page == "cluster":
        return lambda: _cluster_seen_by(m, caller, trial_models.cluster_page(m))
    if ident is None:
        raise InvalidRequest(f"id: required for page={page}")
    if page == "experiment":
        exp_params = {k: v for k, v in params.items() if k in EXP_PARAMS}
        return lambda: _with_can_edit(m, caller, models.experiment_page(m, metrics_index(request), ident,
                                                                        **exp_params))
    return lambda: trial_models.trial_page(m, metrics_index(request), ident)


def may_view(request: Request) -> workspace_models.Visible:
    """May the caller see a workspace (and its projects)? Pages leave out, or answer 404 for, the others."""
    seen = authz.viewable_workspaces(master(request), request.state.identity, P.VIEW_WORKSPACES)
    return lambda workspace_id: seen is None or workspace_id in seen


def _experiment_scope(m: Master, caller: Identity) -> set[int] | None:
    """The workspaces whose experiments `caller` may list (with roles, those where it has view_experiments);
    None: every one."""
    return authz.viewable_workspaces(m, caller, P.VIEW_EXPERIMENTS)


def _cluster_seen_by(m: Master, caller: Identity, model: JsonObject) -> JsonObject:
    """The cluster page as `caller` may see it: a slot busy with an experiment it may not view shows only that it
    is busy."""
    scope = _experiment_scope(m, caller)
    if scope is None:
        return model
    slots = [s for a in model["agents"] for s in a["slots_detail"] if s["experiment_id"] is not None]
    with m.db.begin() as conn:
        places = workspace_queries.workspaces_of_experiments(conn, sorted({s["experiment_id"] for s in slots}))
    for slot in slots:
        if places.get(slot["experiment_id"]) not in scope:
            slot.update(trial_id=None, experiment_id=None, experiment_name=None)
    return model


def _with_can_edit(m: Master, caller: Identity, model: JsonObject) -> JsonObject:
    """Mark each experiment of a page model with whether `caller` may pause, kill or archive it."""
    shown = [*model.get("experiments", ()), *([model["experiment"]] if "experiment" in model else [])]
    targets = authz.experiment_targets(m, shown)
    for exp in shown:
        exp["can_edit"] = authz.allowed(m, caller, P.EDIT_EXPERIMENTS, targets[int(exp["id"])])
    return model
