"""What the cloud backends say when the bucket is missing, the credentials are refused or the endpoint does not
answer (against the emulators of tests/storage_servers.py): the backend, the bucket and what to check, never the
secret."""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Callable

import pytest

from stalwart.api.errors import ConfigError
from stalwart.storage import StorageError, make_storage
from stalwart.testing import free_port
from storage_servers import AZURITE_ACCOUNT, Emulator


def _one_file(tmp_path: pathlib.Path) -> pathlib.Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "weights.bin").write_bytes(b"w" * 100)
    return src


def test_an_s3_bucket_that_does_not_exist_is_named_with_what_to_check(
        storage_emulator: Callable[[str], Emulator], tmp_path: pathlib.Path) -> None:
    config = storage_emulator("s3").checkpoint_storage(prefix="errors") | {"bucket": "no-such-bucket"}
    storage = make_storage(config)
    with pytest.raises(StorageError) as err:
        storage.upload(_one_file(tmp_path), str(uuid.uuid4()))
    message = str(err.value)
    assert "s3 bucket 'no-such-bucket'" in message and "does not exist" in message
    assert "checkpoint_storage.bucket" in message and config["secret_key"] not in message
    with pytest.raises(StorageError, match="no-such-bucket.*does not exist"):
        storage.download(str(uuid.uuid4()), tmp_path / "down")


def test_an_s3_endpoint_that_does_not_answer_names_endpoint_url(
        storage_emulator: Callable[[str], Emulator], tmp_path: pathlib.Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    config = storage_emulator("s3").checkpoint_storage(prefix="errors") | {"endpoint_url": dead}
    with pytest.raises(StorageError) as err:
        make_storage(config).upload(_one_file(tmp_path), str(uuid.uuid4()))
    message = str(err.value)
    assert "did not answer" in message and f"endpoint_url ({dead})" in message
    assert config["secret_key"] not in message


def test_an_azure_key_azurite_refuses_is_reported_without_the_key(
        storage_emulator: Callable[[str], Emulator], tmp_path: pathlib.Path) -> None:
    emulator = storage_emulator("azure")
    wrong_key = "V3JvbmdLZXlXcm9uZ0tleVdyb25nS2V5V3JvbmdLZXk="
    config = emulator.checkpoint_storage(prefix="") | {
        "connection_string": f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={wrong_key};"
                             f"BlobEndpoint={emulator.endpoint}/{AZURITE_ACCOUNT};"}
    with pytest.raises(StorageError) as err:
        make_storage(config).upload(_one_file(tmp_path), str(uuid.uuid4()))
    message = str(err.value)
    assert "azure container 'stalwart-tests'" in message and "credentials were refused" in message
    assert "connection_string" in message and wrong_key not in message


def test_an_azure_container_that_does_not_exist_is_named(
        storage_emulator: Callable[[str], Emulator], tmp_path: pathlib.Path) -> None:
    config = storage_emulator("azure").checkpoint_storage(prefix="") | {"container": "no-such-container"}
    with pytest.raises(StorageError, match="azure container 'no-such-container'.*does not exist"):
        make_storage(config).upload(_one_file(tmp_path), str(uuid.uuid4()))


def test_a_gcs_bucket_that_does_not_exist_is_named(storage_emulator: Callable[[str], Emulator],
                                                    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emulator = storage_emulator("gcs")
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emulator.endpoint)
    config = emulator.checkpoint_storage(prefix="errors") | {"bucket": "no-such-bucket"}
    with pytest.raises(StorageError, match="gcs bucket 'no-such-bucket'.*does not exist"):
        make_storage(config).download(str(uuid.uuid4()), tmp_path / "down")


def test_an_unknown_storage_type_names_the_ones_there_are() -> None:
    with pytest.raises(ConfigError, match="expected one of shared_fs, directory, s3, gcs, azure; got 'ftp'"):
        make_storage({"type": "ftp"})
