"""The storage conformance suite (stalwart.testing.storage_conformance) over every backend: shared_fs on a local
directory, and s3, gcs and azure against their emulators (moto's S3 server, gcp-storage-emulator, Azurite),
each started once per run by tests/storage_servers.py."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Callable

import pytest

from stalwart.storage import StorageManager, make_storage
from stalwart.testing.storage_conformance import CHECKS, NotApplicable
from storage_servers import Emulator

BACKENDS = ["shared_fs", "s3", "gcs", "azure"]


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
            storage_emulator: Callable[[str], Emulator]) -> StorageManager:
    if request.param == "shared_fs":
        return make_storage({"type": "shared_fs", "host_path": str(tmp_path / "shared")})
    emulator = storage_emulator(request.param)
    for name, value in emulator.environment().items():
        monkeypatch.setenv(name, value)
    return make_storage(emulator.checkpoint_storage(prefix=f"conformance/{uuid.uuid4().hex[:12]}"))


@pytest.mark.parametrize("check", list(CHECKS))
def test_conformance(storage: StorageManager, check: str, tmp_path: pathlib.Path) -> None:
    try:
        CHECKS[check](storage, tmp_path / "scratch")
    except NotApplicable as reason:
        pytest.skip(str(reason))
