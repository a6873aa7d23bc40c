"""`Model` and `ModelVersion`: the model registry in the SDK, in Determined's shape.

    model = client.create_model("mnist", description="digits", labels=["cnn"])
    version = model.register_version(exp.top_checkpoint().uuid)
    path = client.get_model("mnist").get_version().checkpoint.download()

A model is looked up by its name or id; its versions are numbered 1, 2, ... in the order they were registered, and
each points at one checkpoint (an SDK `Checkpoint`, so `.download(path)` fetches its files). Attributes are those
of the last answer of the master; `reload()` refreshes them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.models import registry as wire
from stalwart.client import Client
from stalwart.experimental.checkpoint import Checkpoint, OrderBy


class ModelSortBy(enum.Enum):
    """What `get_models` sorts by."""

    NAME = "name"
    DESCRIPTION = "description"
    CREATION_TIME = "creation_time"
    LAST_UPDATED_TIME = "last_updated_time"
    NUM_VERSIONS = "num_versions"
    WORKSPACE = "workspace"


ModelOrderBy = OrderBy
"""Determined's name for the order of `get_models`."""


class _Described:
    """What a model and a version share: a name, notes, labels and metadata, each changed through `_edit` (the
    master's answer replaces every attribute); `reload` fetches the master's current values."""

    metadata: dict[str, Any]

    def reload(self) -> None:
        raise NotImplementedError

    def _edit(self, **fields: Any) -> None:
        raise NotImplementedError

    def set_name(self, name: str) -> None:
        self._edit(name=_text("name", name))

    def set_notes(self, notes: str) -> None:
        self._edit(notes=_text("notes", notes))

    def set_labels(self, labels: Iterable[str]) -> None:
        self._edit(labels=_labels(labels))

    def add_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge these keys into the metadata (a key given replaces the one there)."""
        self.reload()
        self._edit(metadata={**self.metadata, **_mapping(metadata)})

    def remove_metadata(self, keys: Iterable[str]) -> None:
        self.reload()
        gone = set(_keys(keys))
        self._edit(metadata={k: v for k, v in self.metadata.items() if k not in gone})


class ModelVersion(_Described):
    """One version of a model: `model_version` (also `version`) is its number, `checkpoint` the checkpoint it
    points at."""

    def __init__(self, client: Client, data: wire.ModelVersion) -> None:
        self._client = client
        self._hydrate(data)

    def _hydrate(self, data: wire.ModelVersion) -> None:
        self.model_version_id = data.id
        self.model_version = data.version
        self.model_id = data.model_id
        self.model_name = data.model_name
        self.name = data.name
        self.comment = data.comment
        self.notes = data.notes
        self.labels = list(data.labels)
        self.metadata: dict[str, Any] = dict(data.metadata)
        self.username = data.username
        self.registration_time = data.creation_time
        self.last_updated_time = data.last_updated_time
        self.experiment_id = data.experiment_id
        self.trial_id = data.trial_id
        self.checkpoint = Checkpoint._from_model(self._client, data.checkpoint)

    @property
    def version(self) -> int:
        return self.model_version

    def reload(self) -> None:
        self._hydrate(self._client.get_model_version(self.model_id, self.model_version))

    def _edit(self, **fields: Any) -> None:
        self._hydrate(self._client.edit_model_version(self.model_id, self.model_version, **fields))

    def set_comment(self, comment: str) -> None:
        self._edit(comment=_text("comment", comment))

    def delete(self) -> None:
        """Remove this version from its model (the checkpoint stays, under its experiment's GC policy)."""
        self._client.delete_model_version(self.model_id, self.model_version)

    def __repr__(self) -> str:
        return f"ModelVersion(model_name={self.model_name!r}, model_version={self.model_version}, " \
               f"checkpoint={self.checkpoint.uuid!r})"


class Model(_Described):
    """A model of the registry: its name, description, labels, metadata, notes, workspace, and its versions."""

    def __init__(self, client: Client, data: wire.Model) -> None:
        self._client = client
        self._hydrate(data)

    def _hydrate(self, data: wire.Model) -> None:
        self.model_id = data.id
        self.name = data.name
        self.description = data.description
        self.labels = list(data.labels)
        self.metadata: dict[str, Any] = dict(data.metadata)
        self.notes = data.notes
        self.workspace_id = data.workspace_id
        self.workspace_name = data.workspace
        self.username = data.username
        self.creation_time = data.creation_time
        self.last_updated_time = data.last_updated_time
        self.archived = data.archived
        self.num_versions = data.num_versions

    @property
    def id(self) -> int:
        return self.model_id

    def reload(self) -> None:
        self._hydrate(self._client.get_model(self.model_id))

    def register_version(self, checkpoint_uuid: str | Checkpoint, *, name: str | None = None,
                         comment: str | None = None) -> ModelVersion:
        """Register a COMPLETED checkpoint (its uuid, or a `Checkpoint`) as this model's next version."""
        uuid = checkpoint_uuid.uuid if isinstance(checkpoint_uuid, Checkpoint) else checkpoint_uuid
        if not isinstance(uuid, str) or not uuid.strip():
            raise InvalidRequest(f"checkpoint_uuid: expected a checkpoint uuid, got {checkpoint_uuid!r}")
        made = self._client.register_version(self.model_id, uuid.strip(), name=name, comment=comment)
        self.num_versions = max(self.num_versions, made.version)
        return ModelVersion(self._client, made)

    def get_version(self, version: int | None = -1) -> ModelVersion:
        """Version number `version`; the latest one when None (or -1, Determined's default). A model without
        versions, or a number it does not have: NotFoundError."""
        if version is None or version == -1:
            versions = self._client.list_model_versions(self.model_id)
            if not versions:
                raise NotFoundError(f"model {self.name!r} has no versions yet: register one with "
                                    f"model.register_version(checkpoint_uuid)")
            return ModelVersion(self._client, max(versions, key=lambda v: v.version))
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidRequest(f"version: expected a version number >= 1 (or None for the latest), got {version!r}")
        return ModelVersion(self._client, self._client.get_model_version(self.model_id, version))

    def get_versions(self, order_by: OrderBy = OrderBy.DESC) -> list[ModelVersion]:
        """Every version, newest first (or oldest first with `OrderBy.ASC`)."""
        found = sorted(self._client.list_model_versions(self.model_id), key=lambda v: v.version,
                       reverse=order_by.value == "DESC")
        return [ModelVersion(self._client, v) for v in found]

    list_versions = get_versions
    """Determined's newer name of `get_versions`."""

    def _edit(self, **fields: Any) -> None:
        self._hydrate(self._client.edit_model(self.model_id, **fields))

    def set_description(self, description: str) -> None:
        self._edit(description=_text("description", description))

    def move_to_workspace(self, workspace_name: str) -> None:
        self._edit(workspace_id=self._client.workspace_by_name(workspace_name).id)

    def archive(self) -> None:
        self._hydrate(self._client.archive_model(self.model_id))

    def unarchive(self) -> None:
        self._hydrate(self._client.unarchive_model(self.model_id))

    def delete(self) -> None:
        """Delete the model and its versions (their checkpoints stay, under their experiments' GC policies)."""
        self._client.delete_model(self.model_id)

    def __repr__(self) -> str:
        return f"Model(name={self.name!r}, model_id={self.model_id}, workspace={self.workspace_name!r})"


def sort_models(models: list[Model], sort_by: ModelSortBy, order_by: OrderBy) -> list[Model]:
    if not isinstance(sort_by, ModelSortBy):
        raise InvalidRequest(f"sort_by: expected a ModelSortBy, got {sort_by!r}")
    if not isinstance(order_by, OrderBy):
        raise InvalidRequest(f"order_by: expected OrderBy.ASC or OrderBy.DESC, got {order_by!r}")
    attr = {ModelSortBy.WORKSPACE: "workspace_name"}.get(sort_by, sort_by.value)
    return sorted(models, key=lambda m: (getattr(m, attr), m.model_id), reverse=order_by.value == "DESC")


def _text(what: str, value: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequest(f"{what}: expected a string, got {value!r}")
    return value


def _labels(labels: Iterable[str]) -> list[str]:
    given = [labels] if isinstance(labels, str) else list(labels)
    if isinstance(labels, str) or not all(isinstance(x, str) for x in given):
        raise InvalidRequest(f"labels: expected a list of strings, got {labels!r}")
    return given


def _mapping(metadata: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(metadata, dict):
        raise InvalidRequest(f"metadata: expected a dict, got {metadata!r}")
    return metadata


def _keys(keys: Iterable[str]) -> list[str]:
    if isinstance(keys, str):
        return [keys]
    return list(keys)
