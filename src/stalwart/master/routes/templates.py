"""/api/v1/templates: configuration templates (docs/templates.md): create, replace, list, describe, remove."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from stalwart.api.models.common import MAX_ID, Empty
from stalwart.api.models.templates import CreateTemplate, SetTemplate, Template, TemplateEnvelope, TemplateList
from stalwart.master.queries.rows import Row
from stalwart.master.routes.common import identity, master
from stalwart.master.routes.contract import route
from stalwart.master.templates import store

router = APIRouter(prefix="/api/v1/templates", tags=["templates"])

TemplatePath = Annotated[str, Path(min_length=1, max_length=256, description="a template's name")]
WorkspaceQuery = Annotated[int | None, Query(ge=0, le=MAX_ID, description="only the templates of this workspace")]



def _template(row: Row) -> TemplateEnvelope:
    return TemplateEnvelope(template=Template.model_validate(store.view(row)))


@route(router, "POST")
async def create(request: Request, payload: CreateTemplate) -> TemplateEnvelope:
    """A new template, owned by the caller, in the workspace named (edit_templates there); 409 if the name is
    taken."""
    return _template(store.create(master(request), identity(request), payload.model_dump()))


@route(router, "GET")
async def list_templates(request: Request, workspace_id: WorkspaceQuery = None) -> TemplateList:
    """The templates the caller may view (view_templates on their workspace), by name, secrets hidden."""
    rows = store.listing(master(request), identity(request), workspace_id)
    return TemplateList(templates=[Template.model_validate(store.view(r)) for r in rows])


@route(router, "GET", "/{template_name}")
async def describe(request: Request, template_name: TemplatePath) -> TemplateEnvelope:
    with master(request).db.begin() as conn:
        return _template(store.get(conn, template_name))


@route(router, "PUT", "/{template_name}")
async def replace(request: Request, template_name: TemplatePath, payload: SetTemplate) -> TemplateEnvelope:
    """A template's new config (and workspace, when given); what was created with it keeps its merged config."""
    return _template(store.replace(master(request), identity(request), template_name, payload.model_dump()))


@route(router, "DELETE", "/{template_name}")
async def remove(request: Request, template_name: TemplatePath) -> Empty:
    store.remove(master(request), template_name)
    return Empty()
