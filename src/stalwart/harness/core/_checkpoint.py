"""CheckpointContext: write checkpoints straight to storage and register their metadata with the master."""

from __future__ import annotations

import contextlib
import enum
import json
import pathlib
import shutil
import uuid
from typing import Any, Iterator

from stalwart.client import Client
from stalwart.harness.core._distributed import DistributedContext
from stalwart.storage import StorageManager, directory_resources


class DownloadMode(enum.Enum):
    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


METADATA_FILE = "metadata.json"


class CheckpointContext:
    def __init__(self, storage: StorageManager, dist: DistributedContext, client: Client | None = None,
                 trial_id: int | None = None) -> None:
        self._storage = storage
        self._dist = dist
        self._client = client
        self._trial_id = trial_id

    # -- writing ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def store_path(self, metadata: dict | None = None, *, shard: bool = False) -> Iterator[tuple[pathlib.Path, str]]:
        """Yield (directory, storage_id); on success the checkpoint is stored and reported."""
        if shard:
            raise NotImplementedError("sharded checkpoints need several ranks; not available in this release")
        if self._dist.rank != 0:
            raise RuntimeError("only the chief (rank 0) writes checkpoints unless shard=True")
        storage_id = str(uuid.uuid4())
        with self._storage.store_path(storage_id) as path:
            yield pathlib.Path(path), storage_id
            self._write_metadata(pathlib.Path(path), metadata or {})
        self._report(storage_id, metadata or {})

    def upload(self, ckpt_dir: str | pathlib.Path, metadata: dict | None = None, *, shard: bool = False,
               selector=None) -> str:
        if shard:
            raise NotImplementedError("sharded checkpoints need several ranks; not available in this release")
        src = pathlib.Path(ckpt_dir)
        if not src.is_dir():
            raise FileNotFoundError(f"checkpoint directory {src} does not exist")
        with self.store_path(metadata) as (path, storage_id):
            for item in src.iterdir():
                rel = item.name
                if selector is not None and not selector(rel):
                    continue
                if item.is_dir():
                    shutil.copytree(item, path / rel, dirs_exist_ok=True)
                else:
                    shutil.copy2(item, path / rel)
        return storage_id

    @staticmethod
    def _write_metadata(path: pathlib.Path, metadata: dict) -> None:
        (path / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True, default=str))

    def _report(self, storage_id: str, metadata: dict) -> None:
        if self._client is None:
            return
        if "steps_completed" not in metadata:
            raise ValueError("checkpoint metadata must include 'steps_completed' so the trial can resume from it")
        resources = directory_resources(self._storage_dir(storage_id))
        self._client.post("/checkpoints", {
            "uuid": storage_id, "trial_id": self._trial_id, "resources": resources, "metadata": metadata,
        })

    def _storage_dir(self, storage_id: str) -> pathlib.Path:
        with self._storage.restore_path(storage_id) as path:
            return pathlib.Path(path)

    # -- reading ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def restore_path(self, storage_id: str, download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
                     *, selector=None) -> Iterator[pathlib.Path]:
        with self._storage.restore_path(storage_id) as path:
            yield pathlib.Path(path)

    def download(self, storage_id: str, ckpt_dir: str | pathlib.Path,
                 download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload, *, selector=None) -> None:
        self._storage.download(storage_id, pathlib.Path(ckpt_dir))

    def get_metadata(self, storage_id: str) -> dict[str, Any]:
        with self._storage.restore_path(storage_id) as path:
            meta = pathlib.Path(path) / METADATA_FILE
            return json.loads(meta.read_text()) if meta.exists() else {}

    def delete(self, storage_id: str) -> None:
        self._storage.delete(storage_id)
