"""Checkpoints in an object store (S3, GCS, Azure Blob) through an fsspec file system, as `<prefix>/<uuid>/<path>`.

Files go up and come down one at a time, each streamed by the fsspec library in chunks (multipart or resumable
uploads for large files), so a checkpoint is never whole in memory; a backend may send files up its own way
instead (`put`: S3's go through boto3's threaded transfer manager, `cloud.s3_storage`). Each file is retried when
the store is unreachable or asks to try again. A checkpoint's objects are exactly those under `<prefix>/<uuid>/`:
deleting `abc` leaves `abcd` alone.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pathlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from stalwart.api.errors import InvalidRequest, NotFoundError, StalwartError
from stalwart.storage.base import StorageManager, tensorboard_file, tensorboard_key
from stalwart.storage.errors import Location, StorageError, problem_kind

T = TypeVar("T")
ATTEMPTS = 2  # per file, on top of the library's own retries (botocore, gcsfs and azure-core each retry a request)
BACKOFF_SECONDS = 0.5
DELETE_BATCH = 1000  # S3's most keys per DeleteObjects call


class ObjectStoreStorage(StorageManager):
    """A StorageManager over an fsspec file system `fs`, rooted at `<bucket>/<prefix>`; `put_options` and
    `get_options` are the library's own arguments of `put_file` (adlfs refuses to overwrite a blob unless told to)
    and `get_file` (s3fs: how a large object comes down); `put(local path, "<bucket>/<key>")`, when given, sends a
    file up instead of `put_file`."""

    def __init__(self, fs: Any, location: Location, put_options: dict[str, Any] | None = None,
                 get_options: dict[str, Any] | None = None, put: Callable[[str, str], None] | None = None) -> None:
        self.fs = fs
        self._put = put or functools.partial(fs.put_file, **dict(put_options or {}))
        self.location = location
        self.get_options = dict(get_options or {})
        self.root = "/".join(part for part in (location.bucket, location.prefix.strip("/")) if part)

    def __repr__(self) -> str:  # never the file system's repr: it can hold credentials
        return f"{type(self).__name__}({self.location.describe()})"

    def _key(self, storage_id: str) -> str:
        if not storage_id or "/" in storage_id or storage_id in (".", ".."):
            raise InvalidRequest(f"invalid checkpoint id {storage_id!r}")
        return f"{self.root}/{storage_id}"

    @contextlib.contextmanager
    def _explained(self, action: str) -> Iterator[None]:
        """Errors of the store as StorageErrors that say what to check; our own errors pass unchanged."""
        try:
            yield
        except StalwartError:
            raise
        except Exception as err:
            raise self.location.error(err, action) from None  # the cause may carry secrets: not chained

    def _retried(self, call: Callable[[], T]) -> T:
        for attempt in range(ATTEMPTS):
            try:
                return call()
            except Exception as err:
                if attempt == ATTEMPTS - 1 or problem_kind(err) != "unreachable":
                    raise
            time.sleep(BACKOFF_SECONDS * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    # -- the interface ------------------------------------------------------------------------------------------

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        """Every file under `src`, one object each (empty directories have no object and do not come back)."""
        key = self._key(storage_id)
        with self._explained(f"upload of checkpoint {storage_id}"):
            for rel, local in _files(pathlib.Path(src)):
                self._retried(functools.partial(self._put, str(local), f"{key}/{rel}"))

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        objects = self._objects(storage_id, f"download of checkpoint {storage_id}")
        if not objects:
            self._missing(storage_id)
        dst = pathlib.Path(dst)
        dst.mkdir(parents=True, exist_ok=True)
        with self._explained(f"download of checkpoint {storage_id}"):
            for rel, (remote, _size) in objects.items():
                target = dst / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                self._retried(functools.partial(self.fs.get_file, remote, str(target), **self.get_options))

    def delete(self, storage_id: str) -> None:
        """Remove every object of the checkpoint (none left is not an error); a failure raises."""
        remotes = [remote for remote, _size in self._objects(storage_id, f"delete of checkpoint {storage_id}")
                   .values()]
        self._remove(remotes, f"delete of checkpoint {storage_id}")

    def list(self, storage_id: str) -> dict[str, int]:
        """Relative path -> size of each object, and each directory above one ('dir/' -> 0), as shared_fs lists."""
        out: dict[str, int] = {}
        for rel, (_remote, size) in self._objects(storage_id, f"listing of checkpoint {storage_id}").items():
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                out["/".join(parts[:depth]) + "/"] = 0
            out[rel] = size
        return dict(sorted(out.items()))

    def exists(self, storage_id: str) -> bool:
        return bool(self._objects(storage_id, f"lookup of checkpoint {storage_id}"))

    # -- TensorBoard files: objects under `<prefix>/tensorboard/experiment/<id>/trial/<id>/` ----------------------

    def put_tensorboard(self, files: Sequence[tuple[pathlib.Path, str]], experiment_id: int, trial_id: int) -> None:
        """Each file streamed from disk (in parts when large), replacing its object."""
        key = f"{self.root}/{tensorboard_key(experiment_id, trial_id)}"
        with self._explained(f"upload of the TensorBoard files of trial {trial_id}"):
            for local, rel in files:
                remote = f"{key}/{tensorboard_file(rel)}"
                self._retried(functools.partial(self._put, str(local), remote))

    def list_tensorboard(self, experiment_id: int) -> dict[str, int]:
        key = f"{self.root}/{tensorboard_key(experiment_id)}"
        found = self._under(key, f"listing of the TensorBoard files of experiment {experiment_id}")
        return {rel: size for rel, (_remote, size) in found.items()}

    def delete_tensorboard(self, experiment_id: int) -> None:
        action = f"delete of the TensorBoard files of experiment {experiment_id}"
        remotes = [remote for remote, _size in self._under(f"{self.root}/{tensorboard_key(experiment_id)}", action)
                   .values()]
        self._remove(remotes, action)

    # -- helpers ------------------------------------------------------------------------------------------------

    def _objects(self, storage_id: str, action: str) -> dict[str, tuple[str, int]]:
        """Relative path -> (object path, size) of every object under `<prefix>/<uuid>/`."""
        return self._under(self._key(storage_id), action)

    def _under(self, key: str, action: str) -> dict[str, tuple[str, int]]:
        """Relative path -> (object path, size) of every object under `key/`."""
        with self._explained(action):
            found = self._retried(lambda: self.fs.find(key + "/", detail=True))
        out: dict[str, tuple[str, int]] = {}
        for path, info in sorted(found.items()):
            path = str(path).lstrip("/")
            if not path.startswith(key + "/") or path.endswith("/") or info.get("type") == "directory":
                continue
            out[path[len(key) + 1:]] = (path, int(info.get("size") or 0))
        return out

    def _remove(self, remotes: Sequence[str], action: str) -> None:
        with self._explained(action):
            for start in range(0, len(remotes), DELETE_BATCH):
                batch = remotes[start:start + DELETE_BATCH]
                self._retried(functools.partial(self.fs.rm, batch))

    def _missing(self, storage_id: str) -> None:
        """Raise NotFoundError for a checkpoint with no objects (a StorageError when the bucket itself is gone)."""
        with self._explained(f"download of checkpoint {storage_id}"):
            bucket_there = self.fs.exists(self.location.bucket)
        if not bucket_there:
            raise self.location.missing_bucket()
        raise NotFoundError(f"checkpoint {storage_id} is not in storage at {self.location.describe()}")


def _files(src: pathlib.Path) -> Iterator[tuple[str, pathlib.Path]]:
    """(relative path, local path) of every file under `src`, sorted; a dangling link is an error."""
    for dirpath, dirnames, filenames in os.walk(src, followlinks=True):
        dirnames.sort()
        for name in sorted(filenames):
            local = pathlib.Path(dirpath) / name
            if not local.is_file():
                raise StorageError(f"cannot upload {local}: it is not a readable file (a dangling link?)")
            yield local.relative_to(src).as_posix(), local
