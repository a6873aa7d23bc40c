"""The `environment` section: images, per-accelerator environment variables, ports, capabilities."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stalwart.config._schema import (
    Field,
    Problems,
    any_map,
    boolean,
    check_section,
    integer,
    join,
    list_of,
    map_of,
    section,
    string,
    type_name,
    unknown_key_message,
)

# Accelerator kinds that may carry their own image / variables; `gpu` is an alias of `cuda`.
SLOT_KINDS = ("cpu", "cuda", "rocm")
_SLOT_KEYS = ("cpu", "cuda", "gpu", "rocm")


def _per_slot(value: Mapping[str, Any], path: str, problems: Problems, item: Any) -> dict[str, Any]:
    """Check a `{cpu, cuda|gpu, rocm}` map; return it keyed by SLOT_KINDS (gpu folded into cuda)."""
    out: dict[str, Any] = {kind: None for kind in SLOT_KINDS}
    for key, given in value.items():
        if key not in _SLOT_KEYS:
            problems.add(join(path, key), unknown_key_message(key, list(_SLOT_KEYS)))
            continue
        if given is None:
            continue
        checked = item(given, join(path, key), problems)
        kind = "cuda" if key == "gpu" else key
        if isinstance(out[kind], list) and isinstance(checked, list):
            out[kind] = out[kind] + checked
        else:
            out[kind] = checked
    return out


def check_image(value: Any, path: str, problems: Problems) -> Any:
    """A single image name, or one per accelerator kind; returned as a `{cpu, cuda, rocm}` map."""
    if isinstance(value, str):
        return {kind: value for kind in SLOT_KINDS}
    if isinstance(value, Mapping):
        return _per_slot(value, path, problems, string(nonempty=True))
    wanted = "an image name or a map of cpu/cuda/rocm images"
    problems.add(path, f"expected {wanted}, got {type_name(value)}")
    return value


def _env_entry(value: Any, path: str, problems: Problems) -> Any:
    if not isinstance(value, str) or "=" not in value or value.startswith("="):
        problems.add(path, f"expected NAME=VALUE, got {type_name(value)}")
    return value


_ENV_LIST = list_of(_env_entry)


def check_environment_variables(value: Any, path: str, problems: Problems) -> Any:
    """`[NAME=VAL, ...]` or `{cpu: [...], cuda: [...], rocm: [...]}`; returned in the map form."""
    if isinstance(value, list):
        checked = _ENV_LIST(value, path, problems)
        return {kind: list(checked) for kind in SLOT_KINDS}
    if isinstance(value, Mapping):
        out = _per_slot(value, path, problems, _ENV_LIST)
        return {kind: out[kind] or [] for kind in SLOT_KINDS}
    wanted = "a list of NAME=VALUE strings or a map of such lists"
    problems.add(path, f"expected {wanted}, got {type_name(value)}")
    return {kind: [] for kind in SLOT_KINDS}


def empty_environment_variables() -> dict[str, Any]:
    return {kind: [] for kind in SLOT_KINDS}


_PORT = integer(minimum=1, maximum=65535)
_STR = Field(string())



def _secret_text(value: Any, path: str, problems: Problems) -> Any:
    """A string that is a secret: a wrong one is named by its type only, never shown."""
    if not isinstance(value, str):
        kind = "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else "a " + type(
            value).__name__
        problems.add(path, f"expected a string, got {kind} (its value is a secret and is not shown)")
    return value


_SECRET = Field(_secret_text)
# Docker's auth config; `password`, `auth`, `identitytoken` and `registrytoken` are secrets (config/secrets.py)
REGISTRY_AUTH_SPEC: dict[str, Field] = {
    "username": _STR,
    "password": _SECRET,
    "auth": _SECRET,
    "email": _STR,
    "serveraddress": _STR,
    "identitytoken": _SECRET,
    "registrytoken": _SECRET,
}

_PROXY_PORT = {
    "proxy_port": Field(_PORT, required=True),
    "proxy_tcp": Field(boolean(), default=False),
    "unauthenticated": Field(boolean(), default=False),
    "default_service_id": Field(boolean(), default=False),
}

ENVIRONMENT_SPEC: dict[str, Field] = {
    "image": Field(check_image),
    "environment_variables": Field(
        check_environment_variables, default=empty_environment_variables
    ),
    "force_pull_image": Field(boolean(), default=False),
    "registry_auth": Field(section(REGISTRY_AUTH_SPEC)),
    "add_capabilities": Field(list_of(string()), default=list),
    "drop_capabilities": Field(list_of(string()), default=list),
    "pod_spec": Field(any_map()),
    "proxy_ports": Field(list_of(section(_PROXY_PORT)), default=list),
    "ports": Field(map_of(_PORT), default=dict),
}


def check_environment(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    return check_section(value, path, ENVIRONMENT_SPEC, problems)
