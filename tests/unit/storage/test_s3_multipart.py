"""A file larger than two parts goes up to S3 (moto's S3 server, an emulator started once per run) as a
multipart upload, streamed from disk in parts, and comes back with identical bytes."""

from __future__ import annotations

import hashlib
import os
import pathlib
import uuid
from collections.abc import Callable

from stalwart.storage import ObjectStoreStorage, make_storage
from storage_servers import Emulator

BIG = 40 * 2**20 + 4099  # over two of the backend's 8 MiB parts: a multipart upload of six parts


def _sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(2**20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def test_a_big_file_goes_up_in_parts_and_comes_back_identical(storage_emulator: Callable[[str], Emulator],
                                                              tmp_path: pathlib.Path) -> None:
    emulator = storage_emulator("s3")
    storage = make_storage(emulator.checkpoint_storage(prefix=f"multipart/{uuid.uuid4().hex[:12]}"))
    assert isinstance(storage, ObjectStoreStorage)
    src = tmp_path / "src"
    src.mkdir()
    with (src / "model.bin").open("wb") as f:
        for _ in range(BIG // 2**20):
            f.write(os.urandom(2**20))
        f.write(os.urandom(BIG % 2**20))
    storage_id = str(uuid.uuid4())
    storage.upload(src, storage_id)
    info = storage.fs.info(f"{storage.root}/{storage_id}/model.bin")
    assert info["size"] == BIG
    etag = str(info.get("ETag") or info.get("etag"))
    assert etag.strip('"').endswith("-6"), f"not a six-part multipart upload: ETag {etag}"
    storage.download(storage_id, tmp_path / "down")
    assert _sha256(tmp_path / "down" / "model.bin") == _sha256(src / "model.bin")
    storage.delete(storage_id)
    assert storage.list(storage_id) == {}
