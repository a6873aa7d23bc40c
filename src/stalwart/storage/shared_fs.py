"""`shared_fs` checkpoint storage: a directory every agent and the master can see."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.storage.base import StorageManager, directory_resources, tensorboard_file, tensorboard_key


class SharedFSStorage(StorageManager):
    """Checkpoints as sub-directories of one directory: `host_path`, or `storage_path` (relative: under it)."""

    def __init__(self, host_path: str, storage_path: str | None = None) -> None:
        base = pathlib.Path(host_path)
        if storage_path:
            sp = pathlib.Path(storage_path)
            base = sp if sp.is_absolute() else base / sp
        self.base = base

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> SharedFSStorage:
        return cls(cfg["host_path"], cfg.get("storage_path"))

    def _dir(self, storage_id: str) -> pathlib.Path:
        if not storage_id or "/" in storage_id or storage_id in (".", ".."):
            raise InvalidRequest(f"invalid checkpoint id {storage_id!r}")
        return self.base / storage_id

    @contextlib.contextmanager
    def store_path(self, storage_id: str, scratch: pathlib.Path | None = None) -> Iterator[pathlib.Path]:
        """Write straight into the shared directory: no copy needed. A block that raises leaves nothing behind."""
        path = self._dir(storage_id)
        path.mkdir(parents=True, exist_ok=True)
        try:
            yield path
        except BaseException:
            self.delete(storage_id)  # a half-written checkpoint nobody will register, or ever delete
            raise

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, scratch: pathlib.Path | None = None) -> Iterator[pathlib.Path]:
        path = self._dir(storage_id)
        if not path.is_dir():
            raise NotFoundError(f"checkpoint {storage_id} is not in storage at {self.base}")
        yield path

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        dst = self._dir(storage_id)
        if pathlib.Path(src).resolve() == dst.resolve():
            return
        shutil.copytree(src, dst, dirs_exist_ok=True)

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        src = self._dir(storage_id)
        if not src.is_dir():
            raise NotFoundError(f"checkpoint {storage_id} is not in storage at {self.base}")
        shutil.copytree(src, dst, dirs_exist_ok=True)

    def delete(self, storage_id: str) -> None:
        """Remove the checkpoint's files. Files already gone are not an error; a file that cannot be removed
        raises, so that no caller marks a checkpoint deleted while its files are still there."""
        path = self._dir(storage_id)
        if not path.exists():
            return
        shutil.rmtree(path)

    def list(self, storage_id: str) -> dict[str, int]:
        return directory_resources(self._dir(storage_id))

    def exists(self, storage_id: str) -> bool:
        return os.path.isdir(self._dir(storage_id))

    # -- TensorBoard files: `<base>/tensorboard/experiment/<id>/trial/<id>/` (the harness writes there directly) --

    def put_tensorboard(self, files: Sequence[tuple[pathlib.Path, str]], experiment_id: int, trial_id: int) -> None:
        root = self.base / tensorboard_key(experiment_id, trial_id)
        for local, rel in files:
            target = root / tensorboard_file(rel)
            if pathlib.Path(local).resolve() == target.resolve():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local, target)

    def list_tensorboard(self, experiment_id: int) -> dict[str, int]:
        root = self.base / tensorboard_key(experiment_id)
        return {rel: size for rel, size in directory_resources(root).items() if not rel.endswith("/")}

    def delete_tensorboard(self, experiment_id: int) -> None:
        path = self.base / tensorboard_key(experiment_id)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
