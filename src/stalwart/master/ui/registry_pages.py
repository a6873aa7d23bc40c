"""The model registry's HTML pages: the models list, a model (description, labels, metadata, notes, versions) and
a version (its checkpoint, linked to the experiment and trial it came from, and to its files' download).

Each page shows only what the caller may see: the route's check (view_model_registry on the model's workspace)
runs first, and the models list keeps the workspaces where the caller holds that permission. Page models come from
ui/registry_models.py; templates name the model `rm` and the version `mv` (pages.render takes `model` and `version`
itself).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from stalwart.api import permissions as P
from stalwart.api.errors import NotFoundError, StalwartError
from stalwart.master.identity import authz
from stalwart.master.routes.common import master
from stalwart.master.routes.contract import route
from stalwart.master.ui import pages, registry_models
from stalwart.master.ui.viewer import viewer_of

router = APIRouter(tags=["ui"])

ModelName = Annotated[str, Path(description="a model's name, or its id")]
VersionNum = Annotated[str, Path(description="a version's number: 1, 2, ...")]


def may_view_models(request: Request) -> registry_models.Visible:
    """May the caller see the models of a workspace? Pages leave out, or answer 404 for, the others."""
    seen = authz.viewable_workspaces(master(request), request.state.identity, P.VIEW_MODEL_REGISTRY)
    return lambda workspace_id: seen is None or workspace_id in seen


def _number(raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < 2**31:
        raise NotFoundError(f"version {raw[:40]!r} not found: versions are numbered 1, 2, ...")
    return int(raw)


@route(router, "GET", "/models")
async def models_page(request: Request) -> Response:
    """The models the caller may see, by name; `?archived=true` also the archived ones."""
    archived = request.query_params.get("archived", "") == "true"
    found = registry_models.models_page(master(request), may_view_models(request), archived=archived)
    return pages.render("models.html", title="Models", page="models", viewer=viewer_of(request), **found)


@route(router, "GET", "/models/{model_name}")
async def model_page(request: Request, model_name: ModelName) -> Response:
    """One model: its fields and its versions, newest first."""
    try:
        found = registry_models.model_page(master(request), may_view_models(request), model_name)
    except StalwartError as err:
        return pages.error_page(err.http_status, err.message, err.details, viewer=viewer_of(request))
    return pages.render("model.html", title=f"{found['model']['name']} · model", page="model",
                        viewer=viewer_of(request), rm=found["model"], versions=found["versions"])


@route(router, "GET", "/models/{model_name}/versions/{version_num}")
async def version_page(request: Request, model_name: ModelName, version_num: VersionNum) -> Response:
    """One version of a model: its checkpoint and where it came from."""
    try:
        found = registry_models.version_page(master(request), may_view_models(request), model_name,
                                             _number(version_num))
    except StalwartError as err:
        return pages.error_page(err.http_status, err.message, err.details, viewer=viewer_of(request))
    title = f"{found['model']['name']} version {found['version']['version']} · model"
    return pages.render("model_version.html", title=title, page="model-version", viewer=viewer_of(request),
                        rm=found["model"], mv=found["version"], files=found["files"])
