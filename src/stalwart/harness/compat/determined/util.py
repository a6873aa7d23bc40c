"""`determined.util`: the public helpers of Determined 0.38.1's module, giving the same results for the same inputs.

Metrics (`make_metrics`), batch sizes (`calculate_batch_sizes`), JSON (`json_encode`), config masking and
small introspection helpers live here; process and file-system helpers in `_util_processes`.
Two differences: `write_user_code` (Determined's on-cluster copy of the model directory) raises, and
`legacy_trial_entrypoint_to_script` gives the command that runs a Trial class under Stalwart.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import datetime
import enum
import inspect
import json
import logging
import math
import numbers
import pathlib
import random
import re
import time
import uuid
from collections.abc import Callable
from typing import Any, NoReturn, SupportsFloat, cast

from . import errors
from ._util_processes import check_sshd, force_create_symlink, forward_signals, rmtree_nfs_safe, signal_process_tree
from .common import check, util

logger = logging.getLogger("determined")
_MASK = "********"
_LEGACY_TRIAL_CLASS = re.compile("^[a-zA-Z0-9_.]+:[a-zA-Z0-9_]+$")


@util.preserve_random_state
def download_gcs_blob_with_backoff(blob: Any, n_retries: int = 32, max_backoff: int = 32) -> Any:
    """`blob.download_as_string()`, retried with exponential back-off (needs google-cloud-storage)."""
    # google-cloud-storage is optional and untyped
    from google.cloud import storage  # type: ignore[import-untyped, import-not-found, unused-ignore]

    if not isinstance(blob, storage.Blob):
        raise Exception(f"Called download_gcs_blob_with_backoff with object of type {type(blob).__name__}")  # noqa: TRY002
    for attempt in range(n_retries):
        try:
            return blob.download_as_string()
        except Exception:  # noqa: BLE001 - retried, as Determined does
            time.sleep(min(2**attempt + random.random(), max_backoff))
    raise Exception("Max retries exceeded for downloading blob.")  # noqa: TRY002


def is_overridden(full_method: Any, parent_class: Any) -> bool:
    """Whether a method (looked up on a subclass) is defined outside `parent_class`; non-callables are not."""
    if callable(full_method):
        return cast(bool, full_method.__qualname__.partition(".")[0] != parent_class.__name__)
    return False


def has_param(fn: Callable[..., Any], name: str, pos: int | None = None) -> bool:
    """Whether `fn` has a positional-or-keyword parameter `name` (or, with `pos`, more than `pos` of them)."""
    params = inspect.getfullargspec(fn).args
    if name in params:
        return True
    return pos is not None and pos < len(params)


def get_member_func(obj: Any, func_name: str) -> Any:
    member = getattr(obj, func_name, None)
    return member if callable(member) else None


def _list_to_dict(list_of_dicts: list[dict[str, Any]]) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = collections.defaultdict(list)
    for row in list_of_dicts:
        for key, value in row.items():
            columns[key].append(value)
    return columns


def _dict_to_list(dict_of_lists: dict[str, list[Any]]) -> list[dict[str, Any]]:
    length = len(next(iter(dict_of_lists.values())))
    for column in dict_of_lists.values():
        check.check_len(column, length, "All lists in the dict must be the same length.")
    return [{key: column[i] for key, column in dict_of_lists.items()} for i in range(length)]


def merge_dicts(base_dict: dict[Any, Any], source_dict: dict[Any, Any]) -> dict[Any, Any]:
    """A new dict: `source_dict` merged over `base_dict`, dicts recursively; the inputs are not changed."""
    merged = copy.deepcopy(base_dict)
    for key, value in source_dict.items():
        merged[key] = merge_dicts(base_dict[key], value) if key in base_dict and isinstance(value, dict) else value
    return merged


def validate_batch_metrics(batch_metrics: list[dict[str, Any]]) -> None:
    """CheckFailedError unless every batch has the same metric names (as all batches together have)."""
    all_names = _list_to_dict(batch_metrics).keys()
    for idx, batch in enumerate(batch_metrics):
        check.eq(all_names, batch.keys(), f"inconsistent training metrics: index: {idx}")


def _mean_or_none(values: list[Any]) -> float | None:
    import numpy as np

    try:
        array = np.array(values)
        return cast(float, np.mean(array[array != None]).item())  # noqa: E711 - elementwise on the array
    except (TypeError, ValueError):
        return None  # non-scalar values: the name stays, with no average


def make_metrics(num_inputs: int | None, batch_metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """{"batch_metrics": ..., "avg_metrics": {name: mean over batches, Nones left out}, ["num_inputs": n]}."""
    columns = _list_to_dict(batch_metrics)
    validate_batch_metrics(batch_metrics)
    metrics: dict[str, Any] = {"batch_metrics": batch_metrics,
                               "avg_metrics": {name: _mean_or_none(values) for name, values in columns.items()}}
    if num_inputs is not None:
        metrics["num_inputs"] = num_inputs
    return metrics


def _jsonable_number(obj: Any) -> Any:
    if isinstance(obj, numbers.Integral):
        return int(obj)
    value = float(cast(SupportsFloat, obj))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0.0 else "-Infinity"
    return value


def _jsonable(obj: Any) -> Any:  # noqa: PLR0911 - one return per kind of value, as Determined's encoder has
    import numpy as np

    if isinstance(obj, (str, bool, type(None))):
        return obj
    if isinstance(obj, numbers.Number):
        return _jsonable_number(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf8")
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, datetime.datetime):
        return obj.isoformat()
    if isinstance(obj, enum.Enum):
        return obj.name
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if hasattr(obj, "__json__"):
        return obj.__json__()
    raise TypeError(f"Unserializable object {obj} of type {type(obj)}")


def json_encode(obj: Any, indent: str | None = None, sort_keys: bool = False) -> str:
    """JSON that also takes numpy values and arrays, NaN/±inf (as strings), bytes, datetimes, enums, UUIDs
    and objects with `__json__()`."""
    return json.dumps(_jsonable(obj), indent=indent, sort_keys=sort_keys)


def write_user_code(path: pathlib.Path, on_cluster: bool) -> NoReturn:
    raise NotImplementedError(
        "determined.util.write_user_code copies Determined's managed model directory into a checkpoint; Stalwart "
        "keeps each experiment's model definition itself: save your own files into the checkpoint directory instead"
    )


def filter_duplicates(in_list: list[Any], sorter: Callable[[list[Any]], list[Any]] = sorted) -> set[Any]:
    """The items that appear more than once (neighbours after `sorter`)."""
    ordered = sorter(in_list)
    return {item for prev, item in zip([None, *ordered], ordered, strict=False) if prev == item}


def humanize_float(n: float) -> float:
    """Rounded to 4 significant digits, never rounding the integer part: 1.33333 -> 1.333, 3333.3 -> 3333.0."""
    if n == 0 or not math.isfinite(n):
        return n
    digits = math.ceil(math.log10(abs(n)))
    return round(n, max(digits, 4) - digits)


def make_timing_log(verb: str, duration: float, num_inputs: int, num_batches: int) -> str:
    records_per_s = humanize_float(num_inputs / duration if duration else math.inf)
    batches_per_s = humanize_float(num_batches / duration if duration else math.inf)
    return (f"{verb}: {num_inputs} records in {humanize_float(duration)}s ({records_per_s} records/s), "
            f"in {num_batches} batches ({batches_per_s} batches/s)")


def calculate_batch_sizes(hparams: dict[str, Any], slots_per_trial: int, trialname: str) -> tuple[int, int]:
    """(per-slot batch size, effective global batch size) from the `global_batch_size` hyperparameter."""
    slots = max(slots_per_trial, 1)
    if "global_batch_size" not in hparams:
        raise errors.InvalidExperimentException(
            "Please specify an integer `global_batch_size` hyperparameter in your experiment "
            f"config.  It is a required hyperparameter for {trialname}-based training.")
    global_batch_size = hparams["global_batch_size"]
    if not isinstance(global_batch_size, int):
        raise errors.InvalidExperimentException(
            f"The `global_batch_size` hyperparameter must be an integer value, not {type(global_batch_size).__name__}")
    if global_batch_size < slots:
        raise errors.InvalidExperimentException(
            "Please set the `global_batch_size` hyperparameter to be greater or equal to the number of slots. "
            f"Current batch_size: {global_batch_size}, slots_per_trial: {slots}.")
    per_slot = global_batch_size // slots
    effective = per_slot * slots
    if effective != global_batch_size:
        logger.warning(f"`global_batch_size` changed from {global_batch_size} to {effective} "
                       f"to divide equally across {slots} slots.")
    return per_slot, effective


def match_legacy_trial_class(arg: str) -> bool:
    """Whether `arg` is a Trial-class entrypoint, `module.submodule:ClassName`."""
    return bool(_LEGACY_TRIAL_CLASS.match(arg))


def legacy_trial_entrypoint_to_script(trial_entrypoint: str) -> list[str]:
    """The command that runs a Trial class (Determined's is `determined.exec.harness`, Stalwart's the launcher)."""
    return ["python3", "-m", "determined.launch.torch_distributed", "--trial", trial_entrypoint]


def is_numerical_scalar(n: Any) -> bool:
    """Whether TensorBoard can take `n` as a scalar: int, float, numpy number or 0-d numeric array."""
    import numpy as np

    if isinstance(n, (int, float, np.number)):
        return True
    return isinstance(n, np.ndarray) and n.ndim == 0 and bool(np.issubdtype(n.dtype, np.number))


def mask_checkpoint_storage(d: dict[str, Any]) -> dict[str, Any]:
    """A copy with `access_key` and `secret_key` masked."""
    masked = copy.deepcopy(d)
    for key in ("access_key", "secret_key"):
        if key in masked:
            masked[key] = _MASK
    return masked


def mask_config_dict(d: dict[str, Any]) -> dict[str, Any]:
    """A copy of an experiment config with storage keys, the registry password and data secrets masked."""
    masked = copy.deepcopy(d)
    with contextlib.suppress(KeyError, AttributeError):
        masked["checkpoint_storage"] = mask_checkpoint_storage(masked["checkpoint_storage"])
    with contextlib.suppress(KeyError, AttributeError):
        if masked["environment"]["registry_auth"].get("password") is not None:
            masked["environment"]["registry_auth"]["password"] = _MASK
    with contextlib.suppress(KeyError, AttributeError, IndexError):
        if masked["data"]["secrets"] is not None:
            for key in masked["data"]["secrets"]:
                masked["data"]["secrets"][key] = _MASK
    return masked


__all__ = ["calculate_batch_sizes", "check_sshd", "download_gcs_blob_with_backoff", "filter_duplicates",
           "force_create_symlink", "forward_signals", "get_member_func", "has_param", "humanize_float",
           "is_numerical_scalar", "is_overridden", "json_encode", "make_metrics", "make_timing_log",
           "mask_checkpoint_storage", "mask_config_dict", "match_legacy_trial_class",
           "legacy_trial_entrypoint_to_script", "merge_dicts", "rmtree_nfs_safe", "signal_process_tree",
           "validate_batch_metrics", "write_user_code"]
