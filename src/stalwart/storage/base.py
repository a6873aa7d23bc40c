"""The storage interface every checkpoint backend implements."""

from __future__ import annotations

import abc
import contextlib
import os
import pathlib
import shutil
import tempfile
from collections.abc import Iterator, Sequence

from stalwart.api.errors import InvalidRequest


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


def tensorboard_key(experiment_id: int, trial_id: int | None = None) -> str:
    """Where a trial's (or, without `trial_id`, an experiment's) TensorBoard files go, relative to the storage root:
    `tensorboard/experiment/<id>/trial/<id>`, Determined's layout."""
    key = f"tensorboard/experiment/{int(experiment_id)}"
    return key if trial_id is None else f"{key}/trial/{int(trial_id)}"


def tensorboard_file(rel: str) -> str:
    """A file's path under a trial's TensorBoard directory, checked: relative, no '..', no empty part."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise InvalidRequest(f"invalid TensorBoard file path {rel!r}: a relative path without '.' or '..' parts")
    return rel


class StorageManager(abc.ABC):
    """Stores checkpoint directories under a storage id (the checkpoint uuid), and the trials' TensorBoard files
    under `tensorboard_key` (the `*_tensorboard` methods, which a backend that keeps none need not have)."""

    @abc.abstractmethod
    def upload(self, src: pathlib.Path, storage_id: str) -> None: ...

    @abc.abstractmethod
    def download(self, storage_id: str, dst: pathlib.Path) -> None: ...

    @abc.abstractmethod
    def delete(self, storage_id: str) -> None: ...

    @abc.abstractmethod
    def list(self, storage_id: str) -> dict[str, int]: ...

    def put_tensorboard(self, files: Sequence[tuple[pathlib.Path, str]], experiment_id: int, trial_id: int) -> None:
        """Copy each (local file, path under the trial's TensorBoard directory), replacing what is there."""
        raise NotImplementedError(f"{type(self).__name__} keeps no TensorBoard files")

    def list_tensorboard(self, experiment_id: int) -> dict[str, int]:
        """Path under `tensorboard/experiment/<id>/` -> size of each TensorBoard file of the experiment."""
        raise NotImplementedError(f"{type(self).__name__} keeps no TensorBoard files")

    def delete_tensorboard(self, experiment_id: int) -> None:
        """Remove every TensorBoard file of the experiment (none there is not an error; a failure raises)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no TensorBoard files")

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
