"""config/secrets.py for checkpoint storage (issue 29): s3's secret_key and azure's connection_string and credential
are hidden wherever a config or a storage section leaves the master, kept through a fork while the storage's
endpoint and key id stay, refused as a bare placeholder, and masked in error text."""

from __future__ import annotations

import pytest

from stalwart.api.errors import ConfigError
from stalwart.config import secrets
from stalwart.config.experiment import load_experiment_config

S3_SECRET = "s3-secret-Zq81xLw0"
AZ_CONN = "DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=a3pLm9==;BlobEndpoint=http://127.0.0.1:10000/dev"
S3 = {"type": "s3", "bucket": "b", "access_key": "AKIA1", "secret_key": S3_SECRET, "endpoint_url": "http://moto:5000",
      "prefix": "p"}
AZURE = {"type": "azure", "container": "c", "connection_string": AZ_CONN}
CONFIG = """name: x
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 1}}
"""


def test_each_storage_secret_is_hidden_in_a_config_and_a_bare_section() -> None:
    config = {"checkpoint_storage": S3, "tensorboard_storage": AZURE}
    shown = secrets.redact(config)
    assert shown["checkpoint_storage"]["secret_key"] == secrets.PLACEHOLDER
    assert shown["checkpoint_storage"]["access_key"] == "AKIA1" and shown["checkpoint_storage"]["bucket"] == "b"
    assert shown["tensorboard_storage"]["connection_string"] == secrets.PLACEHOLDER
    assert S3_SECRET not in repr(shown) and AZ_CONN not in repr(shown)
    assert config["checkpoint_storage"]["secret_key"] == S3_SECRET  # the stored one is unchanged
    assert secrets.redact_storage(AZURE) == {**AZURE, "connection_string": secrets.PLACEHOLDER}
    with_credential = {"type": "azure", "container": "c", "account_url": "http://a", "credential": "cred-77x"}
    assert secrets.redact_storage(with_credential)["credential"] == secrets.PLACEHOLDER
    assert secrets.redact_storage({"type": "shared_fs", "host_path": "/x"}) == {"type": "shared_fs", "host_path": "/x"}
    assert secrets.redact_storage(None) is None
    assert secrets.storage_secret_values(S3) == [S3_SECRET]
    assert set(secrets.secret_values(config)) == {S3_SECRET, AZ_CONN}  # what the master masks in task logs


def test_a_checked_config_hides_its_secret_and_the_text_shown_too() -> None:
    text = CONFIG + f"checkpoint_storage: {{type: s3, bucket: b, secret_key: {S3_SECRET}}}  # mine\n"
    config = load_experiment_config(text).config
    assert config["checkpoint_storage"]["secret_key"] == S3_SECRET
    shown = secrets.redact_text(text, config)
    assert S3_SECRET not in shown and secrets.PLACEHOLDER in shown
    plain = CONFIG + "# storage from the workspace's default\n"
    defaulted = load_experiment_config(plain, master_defaults={"checkpoint_storage": S3}).config
    assert defaulted["checkpoint_storage"]["secret_key"] == S3_SECRET
    assert secrets.redact_text(plain, defaulted) == plain  # the text holds no secret: kept as written


def test_a_fork_keeps_the_secret_while_it_goes_to_the_same_place() -> None:
    parent = {"checkpoint_storage": S3}
    again = secrets.restore(secrets.redact(parent), parent, "experiment 3")
    assert again == parent
    moved = secrets.redact(parent)
    moved["checkpoint_storage"]["endpoint_url"] = "http://evil.example.com"
    with pytest.raises(ConfigError, match=r"checkpoint_storage\.secret_key: .*checkpoint_storage\.endpoint_url "
                                          r"stays the same") as refused:
        secrets.restore(moved, parent, "experiment 3")
    assert S3_SECRET not in refused.value.full_message()
    other_key = secrets.redact(parent)
    other_key["checkpoint_storage"]["access_key"] = "AKIA2"
    with pytest.raises(ConfigError, match="access_key stays the same"):
        secrets.restore(other_key, parent, "experiment 3")
    with pytest.raises(ConfigError, match="no parent"):
        secrets.restore(secrets.redact(parent), None, "")


def test_a_workspace_default_keeps_its_secret_given_the_placeholder() -> None:
    shown = secrets.redact_storage(AZURE)
    assert secrets.restore_storage(shown, AZURE, "workspace w") == AZURE
    assert secrets.restore_storage({**AZURE, "connection_string": "new"}, AZURE, "workspace w")["connection_string"] \
        == "new"
    with pytest.raises(ConfigError, match="a new workspace has none to keep"):
        secrets.restore_storage(shown, None, "a new workspace")
    assert secrets.restore_storage(None, AZURE, "workspace w") is None


def test_a_parent_without_its_storage_secrets_keeps_the_rest() -> None:
    registry = {"username": "ann", "password": "registry-pw-1"}
    parent = {"checkpoint_storage": S3, "tensorboard_storage": AZURE, "environment": {"registry_auth": registry}}
    stripped = secrets.without_storage_secrets(parent)
    assert "secret_key" not in stripped["checkpoint_storage"] and stripped["checkpoint_storage"]["bucket"] == "b"
    assert "connection_string" not in stripped["tensorboard_storage"]
    assert stripped["environment"]["registry_auth"] == registry and parent["checkpoint_storage"] == S3
    with pytest.raises(ConfigError, match="has none to keep"):
        secrets.restore(secrets.redact(parent), stripped, "experiment 3 (of ann)")


def test_error_text_is_masked() -> None:
    text = f"403 for key AKIA1 signed with {S3_SECRET}; connection {AZ_CONN}"
    shown = secrets.masked(text, [S3_SECRET, AZ_CONN])
    assert S3_SECRET not in shown and AZ_CONN not in shown and shown.count(secrets.PLACEHOLDER) == 2
    assert secrets.masked("nothing here", []) == "nothing here"
