"""The storage interface's default scratch: a backend that copies gets a temporary local directory that is
removed when the block ends, unless the caller names its own scratch directory (then it is kept)."""

from __future__ import annotations

import pathlib
import shutil

from stalwart.storage import StorageManager, directory_resources


class CopyingStorage(StorageManager):
    """A backend that keeps files elsewhere and copies them in and out, as an object store would."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root

    def upload(self, src: pathlib.Path, storage_id: str) -> None:
        shutil.copytree(src, self.root / storage_id)

    def download(self, storage_id: str, dst: pathlib.Path) -> None:
        shutil.copytree(self.root / storage_id, dst, dirs_exist_ok=True)

    def delete(self, storage_id: str) -> None:
        shutil.rmtree(self.root / storage_id, ignore_errors=True)

    def list(self, storage_id: str) -> dict[str, int]:
        return directory_resources(self.root / storage_id)


def test_store_and_restore_without_scratch_use_a_temporary_directory_removed_afterwards(tmp_path):
    storage = CopyingStorage(tmp_path / "remote")
    (tmp_path / "remote").mkdir()
    with storage.store_path("c1") as path:
        (path / "weights").write_text("x")
        written = path
    assert not written.exists() and not written.parent.exists()
    assert storage.list("c1") == {"weights": 1}
    with storage.restore_path("c1") as path:
        assert (path / "weights").read_text() == "x"
        restored = path
    assert not restored.parent.exists()


def test_a_scratch_directory_the_caller_names_is_kept(tmp_path):
    storage = CopyingStorage(tmp_path / "remote")
    (tmp_path / "remote").mkdir()
    with storage.store_path("c1") as path:
        (path / "weights").write_text("x")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with storage.restore_path("c1", scratch) as path:
        assert (path / "weights").read_text() == "x"
    assert (scratch / "c1" / "weights").exists()
