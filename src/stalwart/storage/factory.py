"""Pick the storage backend for a `checkpoint_storage` config section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.storage.base import StorageManager
from stalwart.storage.cloud import azure_storage, gcs_storage, s3_storage
from stalwart.storage.shared_fs import SharedFSStorage

_CLOUD = {"s3": s3_storage, "gcs": gcs_storage, "azure": azure_storage}


def make_storage(cfg: Mapping[str, Any]) -> StorageManager:
    """The backend a `checkpoint_storage` section names (an empty one names none: an error)."""
    kind = (cfg or {}).get("type")
    if kind == "shared_fs":
        return SharedFSStorage.from_config(cfg)
    if kind == "directory":
        return SharedFSStorage(cfg["container_path"])
    if isinstance(kind, str) and kind in _CLOUD:
        return _CLOUD[kind](cfg)
    raise ConfigError(f"checkpoint_storage.type: expected one of shared_fs, directory, s3, gcs, azure; got {kind!r}")
