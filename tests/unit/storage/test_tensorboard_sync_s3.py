"""A trial's TensorBoard files synced to S3 (moto's S3 server, an emulator started once per run by
tests/storage_servers.py): each sync sends only the files that are new or changed, under
`<prefix>/tensorboard/experiment/<id>/trial/<id>/`, with `upload_tensorboard_files`' selector and mangler."""

from __future__ import annotations

import os
import pathlib
import uuid
from collections.abc import Callable

import pytest

from stalwart.harness.core._tensorboard_sync import TensorboardSync
from stalwart.storage import make_storage
from storage_servers import Emulator

pytest.importorskip("s3fs", reason="the s3 backend needs s3fs: pip install -e '.[cloud]'")


def test_only_new_or_changed_files_are_sent(storage_emulator: Callable[[str], Emulator],
                                            tmp_path: pathlib.Path) -> None:
    storage = make_storage(storage_emulator("s3").checkpoint_storage(f"tb/{uuid.uuid4().hex[:12]}"))
    root = tmp_path / "tensorboard"
    (root / "plugins").mkdir(parents=True)
    events = root / "events.out.tfevents.1.host.1"
    events.write_bytes(b"v1")
    profile = os.urandom(2**20 + 1)
    (root / "plugins" / "trace.pb").write_bytes(profile)
    sync = TensorboardSync(root, storage, experiment_id=41, trial_id=5)
    assert sync.sync() == 2
    assert sync.sync() == 0  # nothing changed: nothing sent
    events.write_bytes(b"v1 and v2")
    assert sync.sync() == 1
    assert storage.list_tensorboard(41) == {f"trial/5/{events.name}": 9, "trial/5/plugins/trace.pb": 2**20 + 1}

    (root / "extra.txt").write_text("user file")
    picked = sync.sync(selector=lambda p: p.suffix == ".txt", mangler=lambda p, rank: p.with_name(f"{p.name}#{rank}"))
    assert picked == 1 and "trial/5/extra.txt#0" in storage.list_tensorboard(41)
    storage.delete_tensorboard(41)
    assert storage.list_tensorboard(41) == {}


def test_a_missing_directory_sends_nothing(storage_emulator: Callable[[str], Emulator],
                                           tmp_path: pathlib.Path) -> None:
    storage = make_storage(storage_emulator("s3").checkpoint_storage(f"tb/{uuid.uuid4().hex[:12]}"))
    assert TensorboardSync(tmp_path / "never-made", storage, 1, 1).sync() == 0
