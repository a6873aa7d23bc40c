"""The storage interface every checkpoint backend implements."""

from __future__ import annotations

import abc
import contextlib
import os
import pathlib
import shutil
import tempfile
from collections.abc import Iterator


def directory_resources(path: str | os.PathLike[str]) -> dict[str, int]:
    """Relative path → size in bytes of every file under `path` (directories end with '/', size 0)."""
    root = pathlib.Path(path)
    out: dict[str, int] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir():
            out[rel + "/"] = 0
        elif p.is_file():
            out[rel] = p.stat().st_size
    return out


class StorageManager(abc.ABC):
    """Stores checkpoint directories under a storage id (the checkpoint uuid)."""

    @abc.abstractmethod
    def upload(self, src: pathlib.Path, storage_id: str) -> None: ...

    @abc.abstractmethod
    def download(self, storage_id: str, dst: pathlib.Path) -> None: ...

    @abc.abstractmethod
    def delete(self, storage_id: str) -> None: ...

    @abc.abstractmethod
    def list(self, storage_id: str) -> dict[str, int]: ...

    @contextlib.contextmanager
    def store_path(self, storage_id: str, scratch: pathlib.Path | None = None) -> Iterator[pathlib.Path]:
        """A directory to write a checkpoint into; it is uploaded when the block ends without error.

        The local copy is written under `scratch` (default: a new temporary directory) and goes either
        way; an upload that fails half-way is deleted from storage.
        """
        with _scratch_root(scratch) as root:
            path = root / storage_id
            path.mkdir(parents=True, exist_ok=True)
            try:
                yield path
                try:
                    self.upload(path, storage_id)
                except BaseException:
                    self.delete(storage_id)
                    raise
            finally:
                shutil.rmtree(path, ignore_errors=True)

    @contextlib.contextmanager
    def restore_path(self, storage_id: str, scratch: pathlib.Path | None = None) -> Iterator[pathlib.Path]:
        """A directory holding the checkpoint's files, downloaded under `scratch`.

        With a `scratch` the download stays there for the caller to remove; without one it goes into a
        new temporary directory that is removed when the block ends.
        """
        with _scratch_root(scratch) as root:
            path = root / storage_id
            self.download(storage_id, path)
            yield path


@contextlib.contextmanager
def _scratch_root(scratch: pathlib.Path | None) -> Iterator[pathlib.Path]:
    """`scratch` itself when given (the caller owns it), else a temporary directory removed afterwards."""
    if scratch is not None:
        yield scratch
        return
    with tempfile.TemporaryDirectory(prefix="stalwart-checkpoint-") as tmp:
        yield pathlib.Path(tmp)
