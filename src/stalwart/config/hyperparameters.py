"""The `hyperparameters` section: const/int/double/log/categorical leaves inside nested groups."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

from stalwart.api.errors import ConfigError
from stalwart.config._schema import (
    Field,
    Problems,
    anything,
    check_section,
    integer,
    is_number,
    join,
    list_of,
    number,
    type_name,
)

HP_TYPES = ("const", "int", "double", "log", "categorical")

_COUNT = Field(integer(minimum=1))

_LEAF_SPECS: dict[str, dict[str, Field]] = {
    "const": {"type": Field(anything()), "val": Field(anything())},
    "int": {
        "type": Field(anything()),
        "minval": Field(integer(), required=True),
        "maxval": Field(integer(), required=True),
        "count": _COUNT,
    },
    "double": {
        "type": Field(anything()),
        "minval": Field(number(), required=True),
        "maxval": Field(number(), required=True),
        "count": _COUNT,
    },
    "log": {
        "type": Field(anything()),
        "minval": Field(number(), required=True),
        "maxval": Field(number(), required=True),
        "base": Field(number(exclusive_min=0), default=10.0),
        "count": _COUNT,
    },
    "categorical": {
        "type": Field(anything()),
        "vals": Field(list_of(anything(), nonempty=True), required=True),
    },
}


def is_leaf(spec: Any) -> TypeGuard[Mapping[str, Any]]:
    """True for a typed hyperparameter (`{type: ...}`); false for a nested group."""
    return isinstance(spec, Mapping) and "type" in spec


def _check_leaf(spec: Mapping[str, Any], path: str, problems: Problems) -> dict[str, Any]:
    kind = spec.get("type")
    if kind not in _LEAF_SPECS:
        wanted = ", ".join(HP_TYPES)
        problems.add(join(path, "type"), f"expected one of {wanted}, got {type_name(kind)}")
        return dict(spec)
    if kind == "const" and "val" not in spec:
        problems.add(join(path, "val"), "required")
    leaf = check_section(spec, path, _LEAF_SPECS[kind], problems)
    low, high = leaf.get("minval"), leaf.get("maxval")
    if is_number(low) and is_number(high) and low >= high:
        problems.add(join(path, "minval"), f"must be less than maxval (got {low!r} >= {high!r})")
    return leaf


def _check_group(group: Mapping[str, Any], path: str, problems: Problems) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in group.items():
        where = join(path, name)
        if is_leaf(spec):
            out[name] = _check_leaf(spec, where, problems)
        elif isinstance(spec, Mapping):
            out[name] = _check_group(spec, where, problems)
        else:
            out[name] = {"type": "const", "val": spec}
    return out


def check_hyperparameters(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    """Validate and normalise: every leaf becomes a typed map, nested groups stay plain maps."""
    if not isinstance(value, Mapping):
        problems.add(path, f"expected a mapping, got {type_name(value)}")
        return {}
    return _check_group(value, path, problems)


def iter_leaves(hparams: Mapping[str, Any], path: str = "hyperparameters") -> Iterator[tuple[str, Any]]:
    """Yield `(dotted path, leaf)` for every hyperparameter, descending into nested groups."""
    for name, spec in hparams.items():
        where = join(path, name)
        if isinstance(spec, Mapping) and not is_leaf(spec):
            yield from iter_leaves(spec, where)
        else:
            yield where, spec


def leaf_type(spec: Any) -> str:
    """The type of a leaf as yielded by `iter_leaves` (a raw scalar/list is const)."""
    kind: str = spec["type"] if is_leaf(spec) else "const"
    return kind


def _resolve(spec: Any, path: str) -> Any:
    if is_leaf(spec):
        if spec.get("type") != "const":
            raise ConfigError(
                f"hyperparameter {path} is not const (type {spec.get('type')!r})",
                details=[f"{path}: expected a const hyperparameter, got type {spec.get('type')!r}"],
            )
        return spec.get("val")
    if isinstance(spec, Mapping):
        return {name: _resolve(sub, join(path, name)) for name, sub in spec.items()}
    return spec


def resolve_const_hparams(hparams_cfg: Mapping[str, Any] | None) -> dict[str, Any]:
    """Turn an all-const hyperparameter spec (raw or expanded) into the nested dict a trial sees."""
    if not hparams_cfg:
        return {}
    resolved: dict[str, Any] = _resolve(hparams_cfg, "hyperparameters")
    return resolved
