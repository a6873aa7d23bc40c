"""config/secrets.py: a config's secrets hidden whenever it leaves the master, and a hidden secret kept (never the
placeholder saved) when a config comes back from a fork or a continue, only while it is sent where it was."""

from __future__ import annotations

import copy

import pytest
import yaml

from stalwart.api.errors import ConfigError
from stalwart.config import secrets

PW = "s3cret-registry-pw"
STORED = {
    "name": "x",
    "environment": {
        "image": {"cpu": "registry.local:5000/team/img:1", "cuda": "registry.local:5000/team/img:1", "rocm": None},
        "registry_auth": {"username": "ann", "password": PW, "auth": "YW5uOnMz", "email": None,
                          "serveraddress": "registry.local:5000", "identitytoken": None, "registrytoken": ""},
    },
}


def test_every_registry_secret_is_hidden_and_nothing_else() -> None:
    shown = secrets.redact(STORED)
    auth = shown["environment"]["registry_auth"]
    assert auth["password"] == auth["auth"] == secrets.PLACEHOLDER
    assert auth["identitytoken"] is None and auth["registrytoken"] == ""  # unset stays unset
    assert auth["username"] == "ann" and auth["serveraddress"] == "registry.local:5000"
    assert STORED["environment"]["registry_auth"]["password"] == PW  # the stored config is not changed
    assert PW not in repr(shown)
    assert secrets.redact({"name": "no secrets"}) == {"name": "no secrets"}


def test_the_secret_paths_and_values() -> None:
    assert "environment.registry_auth.password" in secrets.secret_paths()
    assert secrets.secret_values(STORED) == [PW, "YW5uOnMz"]
    assert secrets.secret_values(secrets.redact(STORED)) == []  # placeholders are no secrets
    assert secrets.has_secrets(STORED) and secrets.has_secrets(secrets.redact(STORED))
    assert not secrets.has_secrets({"environment": {"registry_auth": {"username": "u"}}})


def test_a_new_kind_of_secret_is_one_more_group(monkeypatch: pytest.MonkeyPatch) -> None:
    storage = secrets.SecretGroup("checkpoint_storage", ("secret_key",), ("checkpoint_storage.endpoint_url",))
    monkeypatch.setattr(secrets, "SECRET_GROUPS", (*secrets.SECRET_GROUPS, storage))
    config = {"checkpoint_storage": {"type": "s3", "secret_key": "k3y", "endpoint_url": "http://minio"}}
    assert secrets.redact(config)["checkpoint_storage"]["secret_key"] == secrets.PLACEHOLDER
    assert secrets.restore(secrets.redact(config), config, "experiment 1") == config


def test_the_text_shown_hides_the_secret_and_keeps_a_text_without_one() -> None:
    text = yaml.safe_dump(STORED) + "# a comment\n"
    shown = secrets.redact_text(text, STORED)
    assert PW not in shown and "YW5uOnMz" not in shown and secrets.PLACEHOLDER in shown
    assert yaml.safe_load(shown)["environment"]["registry_auth"]["username"] == "ann"
    plain = "name: x  # mine\n"
    assert secrets.redact_text(plain, {"name": "x"}) == plain


def test_a_fork_with_the_placeholder_keeps_the_parents_secret() -> None:
    forked = secrets.redact(STORED)
    forked["name"] = "the fork"
    restored = secrets.restore(forked, STORED, "experiment 7")
    assert restored["environment"]["registry_auth"]["password"] == PW
    assert restored["environment"]["registry_auth"]["auth"] == "YW5uOnMz"
    assert restored["name"] == "the fork"
    assert forked["environment"]["registry_auth"]["password"] == secrets.PLACEHOLDER  # its input is unchanged
    given = copy.deepcopy(forked)
    given["environment"]["registry_auth"].update(password="new-pw", auth=None)
    assert secrets.restore(given, STORED, "experiment 7")["environment"]["registry_auth"]["password"] == "new-pw"


def test_the_placeholder_is_never_saved_as_a_secret() -> None:
    with pytest.raises(ConfigError) as raised:
        secrets.restore(secrets.redact(STORED), None, "")
    assert raised.value.message.startswith("environment.registry_auth.password: '********' is how the master shows")
    assert "give the real value" in raised.value.message
    parent = copy.deepcopy(STORED)
    parent["environment"]["registry_auth"]["password"] = None
    with pytest.raises(ConfigError, match="experiment 3 has none to keep"):
        secrets.restore(secrets.redact(STORED), parent, "experiment 3")


@pytest.mark.parametrize(("key", "value"), [
    ("serveraddress", "evil.example.com"),
    ("username", "mallory"),
])
def test_a_kept_secret_is_never_sent_anywhere_new(key: str, value: str) -> None:
    forked = secrets.redact(STORED)
    forked["environment"]["registry_auth"][key] = value
    with pytest.raises(ConfigError, match=r"stays the same.*never sent anywhere new") as raised:
        secrets.restore(forked, STORED, "experiment 7")
    assert f"environment.registry_auth.{key}" in raised.value.message
    assert PW not in raised.value.full_message()


def test_a_kept_secret_does_not_follow_a_new_image() -> None:
    forked = secrets.redact(STORED)
    forked["environment"]["image"] = {"cpu": "evil.example.com/x", "cuda": "evil.example.com/x", "rocm": None}
    with pytest.raises(ConfigError, match="environment.image stays the same"):
        secrets.restore(forked, STORED, "experiment 7")
