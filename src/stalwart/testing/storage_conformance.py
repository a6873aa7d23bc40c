"""The storage conformance suite: what every checkpoint storage backend (shared_fs, s3, gcs, azure) must do.

Each check takes a backend and a local scratch directory and raises AssertionError when the backend falls short.
A test module runs every entry of `CHECKS` over every backend (tests/integration/test_storage_conformance.py):

    @pytest.mark.parametrize("check", sorted(CHECKS))
    def test_conformance(storage, check, tmp_path):
        CHECKS[check](storage, tmp_path)

Checks use fresh uuids, so backends may share a bucket with other tests. A check that does not apply to a backend
raises `NotApplicable` (the test module skips it, with the reason).
"""

from __future__ import annotations

import filecmp
import os
import pathlib
import random
import shutil
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from stalwart.api.errors import NotFoundError, StalwartError
from stalwart.storage import StorageManager, directory_resources

BIG_FILE_BYTES = 17 * 2**20 + 12345  # over two 8 MiB parts: multipart on S3, resumable on GCS
Check = Callable[[StorageManager, pathlib.Path], None]


class NotApplicable(Exception):
    """This check does not apply to this kind of backend (the message says why)."""


def checkpoint_tree(root: pathlib.Path, seed: int = 0, big: int = BIG_FILE_BYTES) -> pathlib.Path:
    """A checkpoint-like directory: nested directories, empty files, small files and one `big`-byte file."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "metadata.json").write_text('{"steps_completed": 10}')
    (root / "empty").write_bytes(b"")
    nested = root / "model" / "layers" / "deep"
    nested.mkdir(parents=True)
    (nested / "empty.bin").write_bytes(b"")
    (nested / "weights.pt").write_bytes(rng.randbytes(4096))
    (root / "model" / "config.yaml").write_text(f"seed: {seed}\n")
    (root / "optimizer state.bin").write_bytes(rng.randbytes(1000))  # a space in the name
    (root / "model" / "big.bin").write_bytes(rng.randbytes(big))
    return root


def assert_same_tree(expected: pathlib.Path, actual: pathlib.Path) -> None:
    """Both directories hold the same files with identical bytes."""
    want, got = directory_resources(expected), directory_resources(actual)
    assert got == want, f"files differ: expected {want}, got {got}"
    for rel, _size in want.items():
        if not rel.endswith("/"):
            assert filecmp.cmp(expected / rel, actual / rel, shallow=False), f"{rel}: bytes differ"


def _new_id() -> str:
    return str(uuid.uuid4())


def _absent(storage: StorageManager, storage_id: str, scratch: pathlib.Path) -> None:
    """Nothing of `storage_id` is stored: it lists nothing and cannot be downloaded."""
    assert _lists_nothing(storage, storage_id), f"{storage_id} still lists {storage.list(storage_id)}"
    try:
        storage.download(storage_id, scratch / f"absent-{storage_id}")
    except NotFoundError:
        return
    raise AssertionError(f"download of {storage_id}, which should not be stored, did not raise NotFoundError")


def _lists_nothing(storage: StorageManager, storage_id: str) -> bool:
    try:
        return not storage.list(storage_id)
    except (NotFoundError, FileNotFoundError):
        return True


# -- the checks ----------------------------------------------------------------------------------------------------


def round_trip(storage: StorageManager, scratch: pathlib.Path) -> None:
    """upload then download gives identical bytes; so do store_path then restore_path."""
    src = checkpoint_tree(scratch / "src")
    first = _new_id()
    storage.upload(src, first)
    storage.download(first, scratch / "down")
    assert_same_tree(src, scratch / "down")

    second = _new_id()
    with storage.store_path(second, scratch / "store") as path:
        shutil.copytree(src, path, dirs_exist_ok=True)
    with storage.restore_path(second, scratch / "restore") as path:
        assert_same_tree(src, path)


def list_sizes(storage: StorageManager, scratch: pathlib.Path) -> None:
    """list() gives each file's relative path and size (and 'dir/' -> 0 for each directory above a file)."""
    src = checkpoint_tree(scratch / "src", seed=1)
    storage_id = _new_id()
    storage.upload(src, storage_id)
    listed = storage.list(storage_id)
    assert listed == directory_resources(src), f"list: expected {directory_resources(src)}, got {listed}"
    assert listed["model/big.bin"] == BIG_FILE_BYTES and listed["empty"] == 0


def delete_removes_all_and_only_its_own(storage: StorageManager, scratch: pathlib.Path) -> None:
    """delete() removes every object of the checkpoint, and none of a sibling whose id it is a prefix of."""
    src = checkpoint_tree(scratch / "src", seed=2, big=2**20)
    doomed = _new_id()
    sibling = doomed + "d"  # `abc` vs `abcd`: a prefix match would take it too
    storage.upload(src, doomed)
    storage.upload(src, sibling)
    before = storage.list(sibling)
    storage.delete(doomed)
    _absent(storage, doomed, scratch)
    assert storage.list(sibling) == before, "deleting a checkpoint touched the one whose id it prefixes"
    storage.download(sibling, scratch / "sibling")
    assert_same_tree(src, scratch / "sibling")
    storage.delete(doomed)  # again: nothing left is not an error
    storage.delete(sibling)
    assert _lists_nothing(storage, sibling)


def missing_download_is_a_clear_error(storage: StorageManager, scratch: pathlib.Path) -> None:
    """Downloading an id that was never stored raises NotFoundError naming the id."""
    missing = _new_id()
    try:
        storage.download(missing, scratch / "missing")
    except NotFoundError as err:
        assert missing in str(err), f"the error does not name the checkpoint: {err}"
        return
    raise AssertionError("downloading a checkpoint that does not exist did not raise NotFoundError")


def failed_block_leaves_nothing(storage: StorageManager, scratch: pathlib.Path) -> None:
    """A store_path block that raises stores nothing, and the error reaches the caller."""
    storage_id = _new_id()
    try:
        with storage.store_path(storage_id, scratch / "store") as path:
            checkpoint_tree(path, seed=3, big=2**16)
            raise _Boom("the training step failed while writing the checkpoint")
    except _Boom:
        pass
    else:
        raise AssertionError("store_path swallowed the block's error")
    _absent(storage, storage_id, scratch)


class _Boom(Exception):
    pass


def failed_upload_leaves_nothing(storage: StorageManager, scratch: pathlib.Path) -> None:
    """An upload that fails half-way (a file that cannot be read, after others went up) leaves no object."""
    if type(storage).store_path is not StorageManager.store_path:
        raise NotApplicable(f"{type(storage).__name__} writes checkpoints in place: there is no upload to fail")
    storage_id = _new_id()
    try:
        with storage.store_path(storage_id, scratch / "store") as path:
            checkpoint_tree(path, seed=4, big=2**20)
            os.symlink(scratch / "does-not-exist", path / "model" / "m-dangling")  # read after model/big.bin
    except (StalwartError, OSError):
        pass
    else:
        raise AssertionError("an upload of an unreadable file did not fail")
    _absent(storage, storage_id, scratch)


def concurrent_uploads(storage: StorageManager, scratch: pathlib.Path) -> None:
    """Uploads of different ids at the same time each store exactly their own files."""
    trees = {_new_id(): checkpoint_tree(scratch / f"src{n}", seed=10 + n, big=2**20 + n) for n in range(4)}
    with ThreadPoolExecutor(len(trees)) as pool:
        for done in [pool.submit(storage.upload, src, storage_id) for storage_id, src in trees.items()]:
            done.result()
    for storage_id, src in trees.items():
        assert storage.list(storage_id) == directory_resources(src)
        storage.download(storage_id, scratch / f"down-{storage_id}")
        assert_same_tree(src, scratch / f"down-{storage_id}")


def tensorboard_files(storage: StorageManager, scratch: pathlib.Path) -> None:
    """A trial's TensorBoard files go under `tensorboard/experiment/<id>/trial/<id>/`, a re-sent file replaces its
    copy, and the experiment's delete removes them all, and nothing of experiment <id>0 or of a checkpoint."""
    experiment = random.randrange(10**6, 10**7)  # the suite may share a bucket with other runs
    events = scratch / "tb" / "events.out.tfevents.1.host.1"
    events.parent.mkdir(parents=True)
    events.write_bytes(b"first")
    plugin = checkpoint_tree(scratch / "tb-plugin", seed=3, big=2**20 + 3) / "model" / "big.bin"
    storage.put_tensorboard([(events, events.name), (plugin, "plugins/profile/big.bin")], experiment, 7)
    storage.put_tensorboard([(events, events.name)], experiment * 10, 1)
    checkpoint = _new_id()
    storage.upload(checkpoint_tree(scratch / "ckpt", big=10), checkpoint)
    events.write_bytes(b"first and more")  # the event file grew: sent again, it replaces the copy
    storage.put_tensorboard([(events, events.name)], experiment, 7)
    storage.put_tensorboard([(events, events.name)], experiment, 8)
    want = {f"trial/7/{events.name}": 14, "trial/7/plugins/profile/big.bin": 2**20 + 3, f"trial/8/{events.name}": 14}
    assert storage.list_tensorboard(experiment) == want, storage.list_tensorboard(experiment)
    storage.delete_tensorboard(experiment)
    assert storage.list_tensorboard(experiment) == {}
    storage.delete_tensorboard(experiment)  # nothing left: not an error
    assert storage.list_tensorboard(experiment * 10) == {f"trial/1/{events.name}": 5}
    assert storage.list(checkpoint), "deleting TensorBoard files removed a checkpoint"
    storage.delete_tensorboard(experiment * 10)
    storage.delete(checkpoint)


CHECKS: dict[str, Check] = {
    check.__name__: check
    for check in (round_trip, list_sizes, delete_removes_all_and_only_its_own, missing_download_is_a_clear_error,
                  failed_block_leaves_nothing, failed_upload_leaves_nothing, concurrent_uploads,
                  tensorboard_files)
}
