"""A Core API checkpoint saved and restored through make_storage on S3 (moto's S3 server, an emulator started once
per run by tests/storage_servers.py), no cluster: the objects lie at `<prefix>/<uuid>/<relative path>`, restore and
download give the same bytes, and delete removes them."""

from __future__ import annotations

import os
import pathlib
import uuid
from collections.abc import Callable

import pytest

from stalwart import core
from storage_servers import S3_KEY, S3_SECRET, Emulator

s3fs = pytest.importorskip("s3fs", reason="the s3 backend needs s3fs: pip install -e '.[cloud]'")


def test_core_api_checkpoint_round_trip_through_s3(storage_emulator: Callable[[str], Emulator],
                                                   tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STALWART_INFO_FILE", raising=False)
    emulator = storage_emulator("s3")
    prefix = f"core/{uuid.uuid4().hex[:12]}"
    weights = os.urandom(3 * 2**20)
    with core.init(checkpoint_storage=emulator.checkpoint_storage(prefix)) as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 7}) as (path, storage_id):
            (path / "model").mkdir()
            (path / "model" / "weights.bin").write_bytes(weights)
            (path / "notes.txt").write_text("epoch 1")
        assert ctx.checkpoint.get_metadata(storage_id) == {"steps_completed": 7}
        with ctx.checkpoint.restore_path(storage_id) as restored:
            assert (restored / "model" / "weights.bin").read_bytes() == weights
            assert (restored / "notes.txt").read_text() == "epoch 1"
        ctx.checkpoint.download(storage_id, tmp_path / "downloaded")
        assert (tmp_path / "downloaded" / "model" / "weights.bin").read_bytes() == weights

        fs = s3fs.S3FileSystem(key=S3_KEY, secret=S3_SECRET, endpoint_url=emulator.endpoint, skip_instance_cache=True,
                               use_listings_cache=False)
        root = f"{emulator.bucket}/{prefix}/{storage_id}"
        assert sorted(fs.find(root)) == [f"{root}/metadata.json", f"{root}/model/weights.bin", f"{root}/notes.txt"]
        assert fs.info(f"{root}/model/weights.bin")["size"] == len(weights)
        ctx.checkpoint.delete(storage_id)
        assert fs.find(root) == []
