"""The model registry: models (named, in a workspace) and their numbered versions, each pointing at a checkpoint.

Determined's nouns and field names (snake_case). A model is named in paths by its name, or by its id when the
path value is all digits (a model's name never is). docs/model-registry.md.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from stalwart.api.models.checkpoints import Checkpoint
from stalwart.api.models.common import Id, JsonObject, Request, Response, Timestamp, Uuid

ModelName = Annotated[str, Field(min_length=1, max_length=256, description="a model's name: unique on the cluster "
                                 "(case-insensitive), not blank, not all digits, no slashes")]
Label = Annotated[str, Field(min_length=1, max_length=256)]
Labels = Annotated[list[Label], Field(max_length=1000)]
Text = Annotated[str, Field(max_length=65_536)]
VersionName = Annotated[str, Field(max_length=256)]


class Model(Response):
    id: Id
    name: str
    description: str = ""
    labels: list[str] = Field(default_factory=list)
    metadata: JsonObject = Field(default_factory=dict)
    notes: str = ""
    workspace_id: Id
    workspace: str
    username: str | None = None  # the owner: who created it
    creation_time: Timestamp
    last_updated_time: Timestamp
    archived: bool = False
    num_versions: int = 0


class ModelEnvelope(Response):
    model: Model


class ModelList(Response):
    models: list[Model]


class CreateModel(Request):
    """POST /api/v1/models: in the workspace named by id or name; the default workspace (Uncategorized) when
    neither is given."""

    name: ModelName
    description: Text = ""
    labels: Labels = Field(default_factory=list)
    metadata: JsonObject = Field(default_factory=dict)
    notes: Text = ""
    workspace_id: Id | None = None
    workspace: str | None = Field(default=None, min_length=1, max_length=128)


class PatchModel(Request):
    """Only the fields given change; `workspace_id` moves the model (create_model_registry needed there too)."""

    name: ModelName | None = None
    description: Text | None = None
    labels: Labels | None = None
    metadata: JsonObject | None = None
    notes: Text | None = None
    workspace_id: Id | None = None


class ModelVersion(Response):
    id: Id
    model_id: Id
    model_name: str
    version: int = Field(ge=1, description="1, 2, ... per model, in the order they were registered")
    name: str = ""
    comment: str = ""
    labels: list[str] = Field(default_factory=list)
    metadata: JsonObject = Field(default_factory=dict)
    notes: str = ""
    username: str | None = None  # who registered it
    creation_time: Timestamp
    last_updated_time: Timestamp
    checkpoint: Checkpoint  # its storage redacted, as the checkpoint view redacts it
    experiment_id: Id | None = None
    trial_id: Id | None = None


class ModelVersionEnvelope(Response):
    model_version: ModelVersion


class ModelVersionList(Response):
    model_versions: list[ModelVersion]


class RegisterVersion(Request):
    """POST /api/v1/models/{model_name}/versions: a COMPLETED checkpoint the caller may view (view_experiments on
    its experiment); the model must not be archived."""

    checkpoint_uuid: Uuid
    name: VersionName | None = None
    comment: Text | None = None
    labels: Labels | None = None
    metadata: JsonObject | None = None
    notes: Text | None = None


class PatchModelVersion(Request):
    """Only the fields given change."""

    name: VersionName | None = None
    comment: Text | None = None
    labels: Labels | None = None
    metadata: JsonObject | None = None
    notes: Text | None = None
