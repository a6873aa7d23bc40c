"""/api/v1/models: the model registry's models and their versions (docs/model-registry.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from stalwart.api.models.common import MAX_ID, Empty
from stalwart.api.models.registry import (
    CreateModel,
    Model,
    ModelEnvelope,
    ModelList,
    ModelVersion,
    ModelVersionEnvelope,
    ModelVersionList,
    PatchModel,
    PatchModelVersion,
    RegisterVersion,
)
from stalwart.master.queries.rows import Row
from stalwart.master.registry import models, versions
from stalwart.master.routes.common import identity, master
from stalwart.master.routes.contract import route

router = APIRouter(prefix="/api/v1/models", tags=["model registry"])

ModelPath = Annotated[str, Path(min_length=1, max_length=256, description="a model's name, or its id (all digits)")]
VersionPath = Annotated[int, Path(ge=1, le=2**31 - 1, description="a version's number within its model")]
Archived = Annotated[bool | None, Query(description="only archived (true) or unarchived (false) models")]
NameQuery = Annotated[str | None, Query(max_length=256, description="only models whose name contains this")]
LabelQuery = Annotated[str | None, Query(max_length=256, description="only models with this label")]
WorkspaceQuery = Annotated[int | None, Query(ge=0, le=MAX_ID, description="only models of this workspace")]



def _model(row: Row) -> ModelEnvelope:
    return ModelEnvelope(model=Model.model_validate(models.view(row)))


@route(router, "POST")
async def create(request: Request, payload: CreateModel) -> ModelEnvelope:
    """A new model, owned by the caller, in the workspace named (create_model_registry there)."""
    return _model(models.create(master(request), identity(request), payload.model_dump()))


@route(router, "GET")
async def list_models(request: Request, archived: Archived = None, name: NameQuery = None, label: LabelQuery = None,
                      workspace_id: WorkspaceQuery = None) -> ModelList:
    """The models the caller may see (view_model_registry on their workspace)."""
    rows = models.listing(master(request), identity(request), archived=archived, name=name, label=label,
                          workspace_id=workspace_id)
    return ModelList(models=[Model.model_validate(models.view(r)) for r in rows])


@route(router, "GET", "/{model_name}")
async def describe(request: Request, model_name: ModelPath) -> ModelEnvelope:
    m = master(request)
    with m.db.begin() as conn:
        return _model(models.get(conn, model_name))


@route(router, "PATCH", "/{model_name}")
async def patch(request: Request, model_name: ModelPath, payload: PatchModel) -> ModelEnvelope:
    return _model(models.change(master(request), identity(request), model_name, payload.model_dump()))


@route(router, "DELETE", "/{model_name}")
async def delete(request: Request, model_name: ModelPath) -> Empty:
    """The model and its versions; their checkpoints stay with their experiments."""
    models.delete(master(request), model_name)
    return Empty()


@route(router, "POST", "/{model_name}/archive")
async def archive(request: Request, model_name: ModelPath) -> ModelEnvelope:
    return _model(models.set_archived(master(request), model_name, True))


@route(router, "POST", "/{model_name}/unarchive")
async def unarchive(request: Request, model_name: ModelPath) -> ModelEnvelope:
    return _model(models.set_archived(master(request), model_name, False))


# -- versions --------------------------------------------------------------------------------------------
def _version(view: dict[str, object]) -> ModelVersionEnvelope:
    return ModelVersionEnvelope(model_version=ModelVersion.model_validate(view))


@route(router, "POST", "/{model_name}/versions")
async def register_version(request: Request, model_name: ModelPath, payload: RegisterVersion) -> ModelVersionEnvelope:
    """A COMPLETED checkpoint the caller may view, as the model's next version."""
    return _version(versions.register(master(request), identity(request), model_name, payload.model_dump()))


@route(router, "GET", "/{model_name}/versions")
async def list_versions(request: Request, model_name: ModelPath) -> ModelVersionList:
    found = versions.listing(master(request), model_name)
    return ModelVersionList(model_versions=[ModelVersion.model_validate(v) for v in found])


@route(router, "GET", "/{model_name}/versions/{version_num}")
async def describe_version(request: Request, model_name: ModelPath, version_num: VersionPath) -> ModelVersionEnvelope:
    return _version(versions.describe(master(request), model_name, version_num))


@route(router, "PATCH", "/{model_name}/versions/{version_num}")
async def patch_version(request: Request, model_name: ModelPath, version_num: VersionPath,
                        payload: PatchModelVersion) -> ModelVersionEnvelope:
    return _version(versions.change(master(request), model_name, version_num, payload.model_dump()))


@route(router, "DELETE", "/{model_name}/versions/{version_num}")
async def delete_version(request: Request, model_name: ModelPath, version_num: VersionPath) -> Empty:
    versions.delete(master(request), model_name, version_num)
    return Empty()
