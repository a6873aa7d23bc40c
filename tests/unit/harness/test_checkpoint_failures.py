"""A checkpoint save that fails half-way leaves nothing in storage: the user's code raising, or an upload failing."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from stalwart import core
from stalwart.storage import StorageManager, directory_resources


def test_store_path_whose_body_raises_leaves_no_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("STALWART_INFO_FILE", raising=False)
    storage = tmp_path / "ckpts"
    with core.init(checkpoint_storage=str(storage)) as ctx:
        with pytest.raises(RuntimeError, match="disk full"), \
                ctx.checkpoint.store_path({"steps_completed": 1}) as (path, _uuid):
            (path / "model.pt").write_bytes(b"half of the weights")
            raise RuntimeError("disk full")
        assert list(storage.iterdir()) == []
        with ctx.checkpoint.store_path({"steps_completed": 2}) as (path, uuid):  # the next save still works
            (path / "model.pt").write_bytes(b"weights")
        assert [p.name for p in storage.iterdir()] == [uuid]


def test_an_upload_failing_half_way_leaves_no_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("STALWART_INFO_FILE", raising=False)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a.bin", "b.bin", "c.bin"):
        (src / name).write_bytes(b"x" * 100)
    storage = tmp_path / "ckpts"
    copied = []

    def selector(name: str) -> bool:  # the copy of the second file fails
        if copied:
            raise OSError(28, "No space left on device")
        copied.append(name)
        return True

    with core.init(checkpoint_storage=str(storage)) as ctx:
        with pytest.raises(OSError, match="No space left"):
            ctx.checkpoint.upload(src, {"steps_completed": 1}, selector=selector)
        assert copied and list(storage.iterdir()) == []


class _CopyingStorage(StorageManager):
    """A storage backend that copies into a directory (the base class's scratch-then-upload path); the copy
    can be told to fail after its first file, as a remote upload failing half-way would."""

    def __init__(self, root: pathlib.Path, fail_after_first: bool) -> None:
        self.root = root
        self.fail_after_first = fail_after_first

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        dst = self.root / storage_id
        dst.mkdir(parents=True)
        for i, item in enumerate(sorted(src.iterdir())):
            if i and self.fail_after_first:
                raise ConnectionError("upload interrupted")
            shutil.copy2(item, dst / item.name)

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        shutil.copytree(self.root / storage_id, dst, dirs_exist_ok=True)

    def delete(self, storage_id: str) -> None:
        shutil.rmtree(self.root / storage_id, ignore_errors=True)

    def list(self, storage_id: str) -> dict[str, int]:
        return directory_resources(self.root / storage_id)


@pytest.mark.parametrize("fail", [False, True])
def test_the_scratch_then_upload_path_cleans_up_both_sides(tmp_path, fail):
    root, scratch = tmp_path / "remote", tmp_path / "scratch"
    storage = _CopyingStorage(root, fail_after_first=fail)
    try:
        with storage.store_path("ckpt-1", scratch) as path:
            (path / "a").write_text("1")
            (path / "b").write_text("2")
    except ConnectionError:
        assert fail
    assert list(scratch.iterdir()) == []
    assert storage.list("ckpt-1") == ({} if fail else {"a": 1, "b": 1})
    assert [p.name for p in root.iterdir()] == ([] if fail else ["ckpt-1"])
