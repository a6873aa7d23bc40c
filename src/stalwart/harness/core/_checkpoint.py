"""CheckpointContext: write checkpoints straight to storage and register their metadata with the master."""

from __future__ import annotations

import contextlib
import enum
import json
import logging
import os
import pathlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from stalwart.client import Client
from stalwart.harness.core._distributed import DistributedContext
from stalwart.storage import SharedFSStorage, StorageManager

log = logging.getLogger("stalwart.core")


class DownloadMode(enum.Enum):
    LocalWorkersShareDownload = "LOCAL_WORKERS_SHARE_DOWNLOAD"
    NoSharedDownload = "NO_SHARED_DOWNLOAD"


METADATA_FILE = "metadata.json"

# A checkpoint's metadata (metadata.json): the user's keys, with steps_completed among them.
Metadata = dict[str, Any]


class CheckpointContext:
    """`core_context.checkpoint`: store checkpoints (by the chief, or sharded by every worker) and read them back."""

    def __init__(self, storage: StorageManager, dist: DistributedContext, client: Client | None = None,
                 trial_id: int | None = None) -> None:
        self._storage = storage
        self._dist = dist
        self._client = client
        self._trial_id = trial_id

    # -- writing ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def store_path(self, metadata: Metadata | None = None, *,
                   shard: bool = False) -> Iterator[tuple[pathlib.Path, str]]:
        """Yield (directory, storage_id); on success the checkpoint is stored and reported.

        shard=False: the chief alone calls it. shard=True: every worker calls it together, all write
        into the same checkpoint (each its own files), and their metadata dicts are merged.
        """
        if shard:
            with self._store_sharded(metadata) as found:
                yield found
            return
        self._chief_only("store_path")
        storage_id = str(uuid.uuid4())
        with self._storage.store_path(storage_id) as path:
            yield pathlib.Path(path), storage_id
            self._write_metadata(pathlib.Path(path), metadata or {})
        self._report(storage_id, metadata or {})

    def _chief_only(self, what: str) -> None:
        if self._dist.rank != 0:
            raise RuntimeError(f"checkpoint.{what}(shard=False) was called on rank {self._dist.rank}: only the chief "
                               f"(rank 0) may call it; guard it with `if distributed.rank == 0`, or call it with "
                               f"shard=True from every worker")

    @contextlib.contextmanager
    def _store_sharded(self, metadata: Metadata | None) -> Iterator[tuple[pathlib.Path, str]]:
        """Each rank writes its files into a scratch directory of its own, then stores them into the checkpoint:
        a rank that fails removes its own files only, never the other ranks' (`storage.store_path` would delete
        the whole checkpoint)."""
        storage_id = self._dist.broadcast(str(uuid.uuid4()) if self._dist.rank == 0 else "")  # the chief's id
        with _shard_scratch(self._storage) as path:
            yield path, storage_id
            merged = merge_metadata(self._dist.allgather(metadata or {}))  # also: every rank has written
            if self._dist.rank == 0:
                self._write_metadata(path, merged)
            files = shard_files(path)
            try:
                _put_shard(self._storage, path, storage_id)
            except BaseException:
                remove_shard(self._storage, storage_id, files)
                raise
        self._dist.allgather(None)  # every rank's files are in storage before the chief reports
        if self._dist.rank == 0:
            self._report(storage_id, merged)

    def upload(self, ckpt_dir: str | pathlib.Path | None, metadata: Metadata | None = None, *, shard: bool = False,
               selector: Callable[[str], bool] | None = None) -> str:
        """Copy `ckpt_dir` into a new checkpoint. shard=True: every worker calls it (ckpt_dir may be None)."""
        if not shard:
            self._chief_only("upload")
            if ckpt_dir is None:
                raise ValueError("checkpoint.upload(ckpt_dir=None) with shard=False would store nothing")
        src = None if ckpt_dir is None else pathlib.Path(ckpt_dir)
        if src is not None and not src.is_dir():
            raise FileNotFoundError(f"checkpoint directory {src} does not exist")
        # Workers sharing one directory (same device and inode) upload it once, from the lowest rank.
        ident = None if src is None else (src.stat().st_dev, src.stat().st_ino)
        idents = self._dist.allgather(ident) if shard else [ident]
        if shard and all(i is None for i in idents):
            raise ValueError("checkpoint.upload(shard=True) got ckpt_dir=None on every worker: nothing to store")
        mine = ident is not None and idents.index(ident) == (self._dist.rank if shard else 0)
        to_copy = src if mine else None
        with self.store_path(metadata, shard=shard) as (path, storage_id):
            if to_copy is not None:
                _copy_into(to_copy, path, selector)
        return storage_id

    @staticmethod
    def _write_metadata(path: pathlib.Path, metadata: Metadata) -> None:
        (path / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True, default=str))

    def _report(self, storage_id: str, metadata: Metadata) -> None:
        if self._client is None or self._trial_id is None:
            return
        if "steps_completed" not in metadata:
            raise ValueError("checkpoint metadata must include 'steps_completed' so the trial can resume from it")
        resources = self._storage.list(storage_id)
        self._client.register_checkpoint(self._trial_id, storage_id, resources=resources, metadata=metadata)

    # -- reading ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def restore_path(self, storage_id: str, download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload,
                     *, selector: Callable[[str], bool] | None = None) -> Iterator[pathlib.Path]:
        with self._storage.restore_path(storage_id) as path:
            yield pathlib.Path(path)

    def download(self, storage_id: str, ckpt_dir: str | pathlib.Path,
                 download_mode: DownloadMode = DownloadMode.LocalWorkersShareDownload, *,
                 selector: Callable[[str], bool] | None = None) -> None:
        self._storage.download(storage_id, pathlib.Path(ckpt_dir))

    def get_metadata(self, storage_id: str) -> Metadata:
        with self._storage.restore_path(storage_id) as path:
            meta = pathlib.Path(path) / METADATA_FILE
            found: Metadata = json.loads(meta.read_text()) if meta.exists() else {}
            return found

    def delete(self, storage_id: str) -> None:
        self._storage.delete(storage_id)


@contextlib.contextmanager
def _shard_scratch(storage: StorageManager) -> Iterator[pathlib.Path]:
    """Where one rank writes its shard: beside the checkpoints on a file system backend (its files then move into
    place, no copy), else a local temporary directory (then uploaded). Removed afterwards."""
    where = None
    if isinstance(storage, SharedFSStorage):
        storage.base.mkdir(parents=True, exist_ok=True)
        where = str(storage.base)
    with tempfile.TemporaryDirectory(prefix=".stalwart-shard-", dir=where) as scratch:
        yield pathlib.Path(scratch)


def _put_shard(storage: StorageManager, shard: pathlib.Path, storage_id: str) -> None:
    """One rank's files into checkpoint `storage_id`, beside the other ranks'."""
    if not isinstance(storage, SharedFSStorage):
        storage.upload(shard, storage_id)
        return
    root = storage.base / storage_id
    root.mkdir(exist_ok=True)
    for item in sorted(shard.rglob("*")):
        target = root / item.relative_to(shard)
        if item.is_dir() and not item.is_symlink():
            target.mkdir(exist_ok=True)
        else:
            os.replace(item, target)


def shard_files(shard: pathlib.Path) -> list[str]:
    """The files of one rank's shard (relative paths), directories left out."""
    return sorted(p.relative_to(shard).as_posix() for p in shard.rglob("*") if p.is_symlink() or not p.is_dir())


def remove_shard(storage: StorageManager, storage_id: str, files: list[str]) -> None:
    """Remove `files` (one rank's shard) from checkpoint `storage_id` after storing them failed, leaving the other
    ranks' files. On a file system backend (shared_fs, directory) each of them goes; the object-store backends
    offer no single-file delete through StorageManager yet: their part stays, logged."""
    if not isinstance(storage, SharedFSStorage):
        log.warning("checkpoint %s: this rank's upload failed; its files %s may remain in storage", storage_id, files)
        return
    root = storage.base / storage_id
    for rel in files:
        try:
            (root / rel).unlink(missing_ok=True)
        except OSError as err:
            log.warning("checkpoint %s: could not remove %s of this rank's failed shard: %s", storage_id, rel, err)


def _copy_into(src: pathlib.Path, dst: pathlib.Path, selector: Callable[[str], bool] | None) -> None:
    """Copy `src`'s tree into `dst`. As in Determined, `selector` gets each path relative to `src` (a directory's
    with a trailing "/") and a file it picks brings its parent directories along."""
    if selector is None:
        shutil.copytree(src, dst, dirs_exist_ok=True)
        return
    for item in sorted(src.rglob("*")):
        rel = item.relative_to(src).as_posix()
        if item.is_dir() and not item.is_symlink():
            if selector(rel + "/"):
                (dst / rel).mkdir(parents=True, exist_ok=True)
        elif selector(rel):
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item, dst / rel)


def merge_metadata(parts: list[Metadata]) -> Metadata:
    """One metadata dict from every worker's: nested dicts merge; any other key must agree across workers."""
    merged: Metadata = {}
    for rank, part in enumerate(parts):
        _merge_into(merged, part, rank, "")
    return merged


def _merge_into(merged: Metadata, part: Metadata, rank: int, where: str) -> None:
    for key, value in part.items():
        name = f"{where}{key}"
        if isinstance(value, dict) and isinstance(merged.get(key, {}), dict):
            _merge_into(merged.setdefault(key, {}), value, rank, f"{name}.")
        elif key in merged and merged[key] != value:
            raise ValueError(f"sharded checkpoint metadata conflict: rank {rank} sets {name}={value!r} but an earlier "
                             f"rank set {merged[key]!r}; give each rank its own keys or the same value")
        else:
            merged[key] = value
