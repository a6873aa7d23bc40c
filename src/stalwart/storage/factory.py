"""Pick the storage backend for a `checkpoint_storage` config section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.storage.base import StorageManager
from stalwart.storage.shared_fs import SharedFSStorage


def make_storage(cfg: Mapping[str, Any]) -> StorageManager:
    """The backend a `checkpoint_storage` section names (an empty one names none: an error)."""
    kind = (cfg or {}).get("type")
    if kind == "shared_fs":
        return SharedFSStorage.from_config(cfg)
    if kind == "directory":
        return SharedFSStorage(cfg["container_path"])
    raise ConfigError(
        f"checkpoint_storage.type: '{kind}' storage is not available in this build; use shared_fs or directory"
    )
