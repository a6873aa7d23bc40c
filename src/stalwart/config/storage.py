"""The `checkpoint_storage` section: shared_fs, directory, s3, gcs and azure backends."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from stalwart.api.errors import ConfigError
from stalwart.config._schema import (
    Checker,
    Field,
    Problems,
    check_section,
    integer,
    string,
    type_name,
)

STORAGE_TYPES = ("shared_fs", "directory", "s3", "gcs", "azure")


def absolute_path() -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, str):
            problems.add(path, f"expected a string, got {type_name(value)}")
        elif not value.startswith("/"):
            problems.add(path, f"must be an absolute path, got {value!r}")
        return value

    return check


def _prefix() -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if not isinstance(value, str):
            problems.add(path, f"expected a string, got {type_name(value)}")
        elif ".." in value.split("/"):
            problems.add(path, f"must not contain '..', got {value!r}")
        return value

    return check


_GC_FIELDS = {
    "save_experiment_best": Field(integer(minimum=0), default=0),
    "save_trial_best": Field(integer(minimum=0), default=1),
    "save_trial_latest": Field(integer(minimum=0), default=1),
}
_TYPE = {"type": Field(string())}
_STR = Field(string())

_VARIANTS: dict[str, dict[str, Field]] = {
    "shared_fs": {
        "host_path": Field(absolute_path(), required=True),
        "storage_path": _STR,
        "propagation": Field(string(), default="rprivate"),
        "container_path": _STR,
        "checkpoint_path": _STR,
        "tensorboard_path": _STR,
    },
    "directory": {"container_path": Field(string(nonempty=True), required=True)},
    "s3": {
        "bucket": Field(string(nonempty=True), required=True),
        "access_key": _STR,
        "secret_key": _STR,
        "endpoint_url": _STR,
        "prefix": Field(_prefix()),
    },
    "gcs": {"bucket": Field(string(nonempty=True), required=True), "prefix": Field(_prefix())},
    "azure": {
        "container": Field(string(nonempty=True), required=True),
        "connection_string": _STR,
        "account_url": _STR,
        "credential": _STR,
    },
}


def check_checkpoint_storage(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    """Validate a storage config; return it with every field of its type present."""
    if not isinstance(value, Mapping):
        problems.add(path, f"expected a mapping, got {type_name(value)}")
        return {}
    kind = value.get("type")
    if kind is None:
        problems.add(f"{path}.type", f"required (one of {', '.join(STORAGE_TYPES)})")
        return dict(value)
    if kind not in _VARIANTS:
        wanted = ", ".join(STORAGE_TYPES)
        problems.add(f"{path}.type", f"expected one of {wanted}, got {type_name(kind)}")
        return dict(value)
    storage = check_section(value, path, {**_TYPE, **_VARIANTS[kind], **_GC_FIELDS}, problems)
    if kind == "shared_fs":
        _check_storage_path(storage, path, problems)
    elif kind == "azure":
        _check_azure(storage, path, problems)
    return storage


def validate_checkpoint_storage(value: Any, path: str) -> dict[str, Any]:
    """A storage config given on its own (a workspace's default, `path` naming where it came from), checked as an
    experiment's `checkpoint_storage` is: ConfigError naming the first bad field (all of them in `details`)."""
    problems = Problems()
    storage = check_checkpoint_storage(value, path, problems)
    if problems:
        first, *rest = problems.details
        raise ConfigError(f"invalid checkpoint storage: {first}", details=rest)
    return storage


def _check_storage_path(storage: dict[str, Any], path: str, problems: Problems) -> None:
    host, sub = storage.get("host_path"), storage.get("storage_path")
    if not isinstance(host, str) or not isinstance(sub, str):
        return
    full = posixpath.normpath(posixpath.join(host, sub))
    root = posixpath.normpath(host)
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        problems.add(f"{path}.storage_path", f"must be inside host_path {host!r}, got {sub!r}")


def _check_azure(storage: dict[str, Any], path: str, problems: Problems) -> None:
    has_conn = storage.get("connection_string") is not None
    has_url = storage.get("account_url") is not None
    if has_conn == has_url:
        problems.add(path, "azure needs exactly one of connection_string and account_url")
    if has_conn and storage.get("credential") is not None:
        problems.add(f"{path}.credential", "cannot be used with connection_string")
