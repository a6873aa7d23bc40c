"""Secrets inside stored configs: which keys hold them, a copy with each one hidden, and keeping hidden ones.

A config leaves the master (API answers, `e config`, the UI, a trial's environment and its info file's
`trial.config`, a custom searcher) only as `redact(config)`: every secret that is set reads `PLACEHOLDER`. A
storage section on its own (a checkpoint's `storage`, a workspace's default) leaves it as `redact_storage`. Two
places get a secret: the agent that pulls an image (the start order's `container.registry_auth`), and the trial
that writes checkpoints (its info file's `checkpoint_storage`, a file only the task reads).

A config that comes back with the placeholder (a fork of an experiment shown redacted, a continue) keeps the
stored secret of its parent (`restore`), but only while the keys that say where the secret is sent
(`SecretGroup.bound_to`) are the parent's: a config never makes the master send a kept secret somewhere new. A
placeholder with no stored secret behind it is refused (the placeholder is never saved as a secret).

To hide another kind of secret, add a `SecretGroup` to `SECRET_GROUPS`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from stalwart.api.errors import ConfigError
from stalwart.config.source import read_source

PLACEHOLDER = "********"
"""What a hidden secret reads as (the same mask as the master's task logs)."""


@dataclass(frozen=True)
class SecretGroup:
    """A section of a config that holds secrets.

    `path`: where the section is (dotted); `secrets`: its keys that are secrets; `bound_to`: dotted paths (from
    the config's top) that say where the secrets are sent: a placeholder keeps the stored secret only while
    each of them is unchanged."""

    path: str
    secrets: tuple[str, ...]
    bound_to: tuple[str, ...] = ()


STORAGE_SECRETS = ("secret_key", "connection_string", "credential")
"""The secret keys of a storage section: s3's `secret_key`, azure's `connection_string` and `credential` (gcs has
none: its credentials come from the environment, as Determined's)."""

_STORAGE_BOUND_TO = ("type", "endpoint_url", "access_key", "account_url")
"""A storage secret is kept only while these say the same: where it is sent, and whose key it is."""

STORAGE_SECTIONS = ("checkpoint_storage", "tensorboard_storage")

SECRET_GROUPS: tuple[SecretGroup, ...] = (
    SecretGroup(
        "environment.registry_auth",
        ("password", "auth", "identitytoken", "registrytoken"),
        ("environment.registry_auth.serveraddress", "environment.registry_auth.username", "environment.image"),
    ),
    *(SecretGroup(section, STORAGE_SECRETS, tuple(f"{section}.{key}" for key in _STORAGE_BOUND_TO))
      for section in STORAGE_SECTIONS),
)


def _lookup(config: Any, dotted: str) -> Any:
    value = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _is_set(value: Any) -> bool:
    return value is not None and value != ""


def secret_paths() -> list[str]:
    """Every dotted key that holds a secret ('environment.registry_auth.password', ...)."""
    return [f"{group.path}.{key}" for group in SECRET_GROUPS for key in group.secrets]


def secret_values(config: Mapping[str, Any]) -> list[str]:
    """The secrets `config` holds (not placeholders), e.g. to mask them in logs."""
    values = (_lookup(config, path) for path in secret_paths())
    return [str(v) for v in values if _is_set(v) and v != PLACEHOLDER]


def has_secrets(config: Mapping[str, Any]) -> bool:
    """Whether any secret key of `config` is set (to a secret or to the placeholder)."""
    return any(_is_set(_lookup(config, path)) for path in secret_paths())


def redact(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `config` with every secret that is set replaced by PLACEHOLDER (`config` is unchanged)."""
    out = copy.deepcopy(dict(config))
    for _group, section, key in _secret_slots(out):
        if _is_set(section.get(key)):
            section[key] = PLACEHOLDER
    return out


def _secret_slots(config: dict[str, Any]) -> Iterator[tuple[SecretGroup, dict[str, Any], str]]:
    """(group, its section in `config`, secret key) for every group whose section `config` has: where a secret
    of `config` is, or would be, kept."""
    for group in SECRET_GROUPS:
        section = _lookup(config, group.path)
        if isinstance(section, dict):
            for key in group.secrets:
                yield group, section, key


def redact_storage(storage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A storage section on its own (a checkpoint's `storage`, a workspace's default) with its secrets hidden."""
    if storage is None:
        return None
    return dict(redact({"checkpoint_storage": storage})["checkpoint_storage"])


def restore_storage(storage: Mapping[str, Any] | None, stored: Mapping[str, Any] | None,
                    where: str) -> dict[str, Any] | None:
    """A storage section given on its own (`where`: whose, for errors) with each PLACEHOLDER replaced by the secret
    `stored` (what it replaces; None: nothing) holds, under the rules of `restore`."""
    if storage is None:
        return None
    return dict(restore({"checkpoint_storage": storage}, {"checkpoint_storage": stored or {}}, where)
                ["checkpoint_storage"])


def storage_secret_values(storage: Mapping[str, Any] | None) -> list[str]:
    """The secrets a storage section holds (not placeholders)."""
    return secret_values({"checkpoint_storage": storage}) if storage else []


def without_storage_secrets(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `config` whose storage sections hold no secret (a parent whose storage credentials a fork may not
    keep: they would reach the forker's code, in its trials)."""
    out = copy.deepcopy(dict(config))
    for section in STORAGE_SECTIONS:
        storage = out.get(section)
        if isinstance(storage, dict):
            for key in STORAGE_SECRETS:
                storage.pop(key, None)
    return out


def masked(text: str, values: list[str]) -> str:
    """`text` with each of `values` (secrets) replaced by PLACEHOLDER: an error message fit for a log or an answer."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, PLACEHOLDER)
    return text


def redact_text(text: str, config: Mapping[str, Any]) -> str:
    """The YAML text a config was given as, fit to show: unchanged when `config` (its parsed form) holds no
    secret, else the text's keys written again with the secrets hidden (its comments and layout are lost)."""
    if not has_secrets(config):
        return text
    source = read_source(text)
    if not has_secrets(source):  # the secret came from a default (a workspace's storage), not from the text
        return text
    return yaml.safe_dump(redact(source), sort_keys=False)


def restore(config: Mapping[str, Any], parent: Mapping[str, Any] | None, parent_name: str) -> dict[str, Any]:
    """`config` with each PLACEHOLDER replaced by the secret `parent` (what it was forked or continued from,
    named `parent_name` in errors; None: nothing) stores at the same key.

    ConfigError (400) naming the key when there is no stored secret to keep, or when a key the secret is bound
    to changed (the stored secret would go somewhere new)."""
    out = copy.deepcopy(dict(config))
    for group, section, key in _secret_slots(out):
        if section.get(key) == PLACEHOLDER:
            section[key] = _kept(group, key, out, parent, parent_name)
    return out


def _kept(group: SecretGroup, key: str, config: Mapping[str, Any], parent: Mapping[str, Any] | None,
          parent_name: str) -> str:
    where = f"{group.path}.{key}"
    stored = _lookup(parent, where) if parent is not None else None
    if not _is_set(stored) or stored == PLACEHOLDER:
        whose = f"{parent_name} has none to keep" if parent is not None else "this config has no parent to take it from"
        raise ConfigError(f"{where}: '{PLACEHOLDER}' is how the master shows a hidden secret, and {whose}: "
                          "give the real value")
    for bound in group.bound_to:
        if _lookup(config, bound) != _lookup(parent, bound):
            raise ConfigError(f"{where}: '{PLACEHOLDER}' keeps {parent_name}'s hidden value only while {bound} "
                              f"stays the same, and it changed: give the real value (the kept secret is never "
                              "sent anywhere new)")
    return str(stored)
