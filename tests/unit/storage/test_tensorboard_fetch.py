"""A TensorBoard task's copy of the event files (harness/tensorboard_fetch.py), from shared_fs and from S3 (moto's S3
server, started once per run by tests/storage_servers.py): runs named `exp-<id>/trial-<id>`, only the trials asked
for, only what changed on each sync, a grown file's new bytes appended, and a storage that fails reported without
its credentials."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Callable

import pytest

from stalwart.harness.tensorboard_fetch import Fetcher, shown_of
from stalwart.storage import make_storage
from storage_servers import Emulator


def _storage_config(kind: str, tmp_path: pathlib.Path, storage_emulator: Callable[[str], Emulator]) -> dict:
    if kind == "shared_fs":
        return {"type": "shared_fs", "host_path": str(tmp_path / "store")}
    pytest.importorskip("s3fs", reason="the s3 backend needs s3fs: pip install -e '.[cloud]'")
    return storage_emulator("s3").checkpoint_storage(f"tbfetch/{uuid.uuid4().hex[:12]}")


def _put(storage, tmp_path: pathlib.Path, exp_id: int, trial_id: int, name: str, data: bytes) -> None:
    local = tmp_path / "src" / f"{exp_id}-{trial_id}-{name}"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(data)
    storage.put_tensorboard([(local, name)], exp_id, trial_id)


@pytest.mark.parametrize("kind", ["shared_fs", "s3"])
def test_runs_are_named_by_experiment_and_trial_and_only_changes_are_brought(
        kind: str, tmp_path: pathlib.Path, storage_emulator: Callable[[str], Emulator]) -> None:
    config = _storage_config(kind, tmp_path, storage_emulator)
    storage = make_storage(config)
    _put(storage, tmp_path, 7, 1, "events.out.a", b"first")
    _put(storage, tmp_path, 7, 2, "sub/events.out.b", b"other trial")
    _put(storage, tmp_path, 8, 3, "events.out.c", b"other experiment")
    section = {"experiment_ids": [7, 8], "trial_ids": [], "storages": {"7": config, "8": config}}
    root = tmp_path / "tb"
    fetcher = Fetcher(root, shown_of(section))
    assert fetcher.sync() == 3
    assert (root / "exp-7" / "trial-1" / "events.out.a").read_bytes() == b"first"
    assert (root / "exp-7" / "trial-2" / "sub" / "events.out.b").read_bytes() == b"other trial"
    assert (root / "exp-8" / "trial-3" / "events.out.c").read_bytes() == b"other experiment"
    assert fetcher.sync() == 0

    _put(storage, tmp_path, 7, 1, "events.out.a", b"first and more")  # an event file grows
    assert fetcher.sync() == 1
    assert (root / "exp-7" / "trial-1" / "events.out.a").read_bytes() == b"first and more"
    _put(storage, tmp_path, 7, 1, "events.out.a", b"new")  # rewritten shorter: copied whole
    assert fetcher.sync() == 1
    assert (root / "exp-7" / "trial-1" / "events.out.a").read_bytes() == b"new"

    only = Fetcher(tmp_path / "tb-trial", shown_of({"experiment_ids": [7], "trial_ids": [2],
                                                     "storages": {"7": config}}))
    assert only.sync() == 1 and (tmp_path / "tb-trial" / "exp-7" / "trial-2" / "sub" / "events.out.b").is_file()


def test_an_unreachable_storage_is_reported_without_its_credentials(tmp_path: pathlib.Path, capsys) -> None:
    pytest.importorskip("s3fs", reason="the s3 backend needs s3fs: pip install -e '.[cloud]'")
    config = {"type": "s3", "bucket": "b", "endpoint_url": "http://127.0.0.1:9", "access_key": "AKIDTOPSECRET",
              "secret_key": "s3cr3t-never-printed"}
    fetcher = Fetcher(tmp_path / "tb", shown_of({"experiment_ids": [5], "storages": {"5": config}}))
    assert fetcher.sync() == 0
    err = capsys.readouterr().err
    assert "experiment 5" in err and "s3cr3t-never-printed" not in err and "AKIDTOPSECRET" not in err
