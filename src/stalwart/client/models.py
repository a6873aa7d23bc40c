"""The model registry: models (create, list, get, change, archive, unarchive, delete) and their versions (register,
list, get, change, delete).

A model is named in paths by its name, or by its id (all digits); a version by its number (1, 2, ...).
"""

from __future__ import annotations

from typing import Any

from stalwart.api.models import common, registry as rg
from stalwart.client.endpoints import Api, body, endpoint

MD = "/api/v1/models"
MV = MD + "/{model_name}/versions"

LIST_MODELS = endpoint("GET", MD, rg.ModelList)
CREATE_MODEL = endpoint("POST", MD, rg.ModelEnvelope, rg.CreateModel)
GET_MODEL = endpoint("GET", MD + "/{model_name}", rg.ModelEnvelope)
PATCH_MODEL = endpoint("PATCH", MD + "/{model_name}", rg.ModelEnvelope, rg.PatchModel)
DELETE_MODEL = endpoint("DELETE", MD + "/{model_name}", common.Empty)
ARCHIVE_MODEL = endpoint("POST", MD + "/{model_name}/archive", rg.ModelEnvelope)
UNARCHIVE_MODEL = endpoint("POST", MD + "/{model_name}/unarchive", rg.ModelEnvelope)
REGISTER_VERSION = endpoint("POST", MV, rg.ModelVersionEnvelope, rg.RegisterVersion)
LIST_VERSIONS = endpoint("GET", MV, rg.ModelVersionList)
GET_VERSION = endpoint("GET", MV + "/{version_num}", rg.ModelVersionEnvelope)
PATCH_VERSION = endpoint("PATCH", MV + "/{version_num}", rg.ModelVersionEnvelope, rg.PatchModelVersion)
DELETE_VERSION = endpoint("DELETE", MV + "/{version_num}", common.Empty)

ModelRef = str | int
"""A model's name, or its id."""


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


class ModelsApi(Api):
    # -- models --------------------------------------------------------------------------------------
    def list_models(self, *, workspace_id: int | None = None, archived: bool | None = None,
                    name: str | None = None) -> list[rg.Model]:
        """The models the caller may view; only those of one workspace, archived or not, or whose name holds `name`
        when given (filters the master does not apply are applied here, so the answer is the same either way)."""
        params = _given(workspace_id=workspace_id, archived=None if archived is None else str(archived).lower(),
                        name=name)
        found = self.call(LIST_MODELS, params=params or None).models
        return [m for m in found if (workspace_id is None or m.workspace_id == workspace_id)
                and (archived is None or m.archived == archived)
                and (name is None or name.lower() in m.name.lower())]

    def create_model(self, name: str, *, description: str | None = None, labels: list[str] | None = None,
                     metadata: dict[str, Any] | None = None, notes: str | None = None,
                     workspace_id: int | None = None, workspace: str | None = None) -> rg.Model:
        """A new model in the workspace named by id or name (neither: the default workspace)."""
        fields = _given(name=name, description=description, labels=labels, metadata=metadata, notes=notes,
                        workspace_id=workspace_id, workspace=workspace)
        return self.call(CREATE_MODEL, json_body=body(rg.CreateModel, **fields)).model

    def get_model(self, model: ModelRef) -> rg.Model:
        return self.call(GET_MODEL, path={"model_name": model}).model

    def edit_model(self, model: ModelRef, *, name: str | None = None, description: str | None = None,
                   labels: list[str] | None = None, metadata: dict[str, Any] | None = None, notes: str | None = None,
                   workspace_id: int | None = None) -> rg.Model:
        """Change only the fields given (`metadata` replaces the whole mapping; `workspace_id` moves the model)."""
        fields = _given(name=name, description=description, labels=labels, metadata=metadata, notes=notes,
                        workspace_id=workspace_id)
        return self.call(PATCH_MODEL, path={"model_name": model}, json_body=body(rg.PatchModel, **fields)).model

    def archive_model(self, model: ModelRef) -> rg.Model:
        return self.call(ARCHIVE_MODEL, path={"model_name": model}, json_body={}).model

    def unarchive_model(self, model: ModelRef) -> rg.Model:
        return self.call(UNARCHIVE_MODEL, path={"model_name": model}, json_body={}).model

    def delete_model(self, model: ModelRef) -> None:
        """Delete a model and its versions (the checkpoints stay, under their experiments' GC policies)."""
        self.call(DELETE_MODEL, path={"model_name": model})

    # -- versions ------------------------------------------------------------------------------------
    def register_version(self, model: ModelRef, checkpoint_uuid: str, *, name: str | None = None,
                         comment: str | None = None, labels: list[str] | None = None,
                         metadata: dict[str, Any] | None = None, notes: str | None = None) -> rg.ModelVersion:
        """The checkpoint as the model's next version (1, 2, ...)."""
        fields = _given(checkpoint_uuid=checkpoint_uuid, name=name, comment=comment, labels=labels,
                        metadata=metadata, notes=notes)
        return self.call(REGISTER_VERSION, path={"model_name": model},
                         json_body=body(rg.RegisterVersion, **fields)).model_version

    def list_model_versions(self, model: ModelRef) -> list[rg.ModelVersion]:
        return self.call(LIST_VERSIONS, path={"model_name": model}).model_versions

    def get_model_version(self, model: ModelRef, version: int) -> rg.ModelVersion:
        return self.call(GET_VERSION, path={"model_name": model, "version_num": version}).model_version

    def edit_model_version(self, model: ModelRef, version: int, *, name: str | None = None,
                           comment: str | None = None, labels: list[str] | None = None,
                           metadata: dict[str, Any] | None = None, notes: str | None = None) -> rg.ModelVersion:
        """Change only the fields given (`metadata` replaces the whole mapping)."""
        fields = _given(name=name, comment=comment, labels=labels, metadata=metadata, notes=notes)
        return self.call(PATCH_VERSION, path={"model_name": model, "version_num": version},
                         json_body=body(rg.PatchModelVersion, **fields)).model_version

    def delete_model_version(self, model: ModelRef, version: int) -> None:
        self.call(DELETE_VERSION, path={"model_name": model, "version_num": version})
