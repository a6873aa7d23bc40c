"""Smaller experiment sections: resources, bind mounts, optimizations, profiling, log policies..."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

from stalwart.config._schema import (
    Checker,
    Field,
    Problems,
    any_map,
    boolean,
    check_section,
    choice,
    integer,
    is_int,
    list_of,
    number,
    section,
    string,
    type_name,
)
from stalwart.config.log_patterns import PatternError, compile_pattern
from stalwart.config.storage import absolute_path

MAX_SEED = 2**31 - 1
MAX_SLOTS = 2**31 - 1
"""The most slots a task may ask for or be capped at: the database keeps slot counts in 32-bit integer columns."""


def slot_count(value: Any, path: str, problems: Problems) -> Any:
    """A number of slots: an integer >= 0 that a slots column can hold (at most MAX_SLOTS)."""
    if not is_int(value) or value < 0:
        problems.add(path, f"expected an integer >= 0, got {type_name(value)}")
    elif value > MAX_SLOTS:
        problems.add(path, f"expected at most {MAX_SLOTS} slots, got {value}")
    return value

# ---------------------------------------------------------------- resources

_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*([kmgtpe]i?b?)?\s*$", re.IGNORECASE)


def _shm_size(value: Any, path: str, problems: Problems) -> Any:
    if is_int(value) and value >= 0:
        return value
    if isinstance(value, str) and _SIZE.match(value):
        return value
    wanted = "a byte count or a size like '128M' or '1.5G'"
    problems.add(path, f"expected {wanted}, got {type_name(value)}")
    return value


DEVICE_SPEC: dict[str, Field] = {
    "host_path": Field(string(nonempty=True), required=True),
    "container_path": Field(string(nonempty=True), required=True),
    "mode": Field(string(), default="mrw"),
}

RESOURCES_SPEC: dict[str, Field] = {
    "slots_per_trial": Field(slot_count, default=1),
    "max_slots": Field(slot_count),
    "weight": Field(number(minimum=0), default=1),
    "priority": Field(integer(minimum=1, maximum=99)),
    "resource_pool": Field(string(), default=""),
    "shm_size": Field(_shm_size),
    "devices": Field(list_of(section(DEVICE_SPEC)), default=list),
    "is_single_node": Field(boolean()),
    "agent_label": Field(string()),
    "native_parallel": Field(boolean(), default=False),
}


def check_resources(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    if isinstance(value, Mapping) and "slots" in value:
        problems.add(f"{path}.slots", "not allowed for experiments; use slots_per_trial")
        value = {k: v for k, v in value.items() if k != "slots"}
    return check_section(value, path, RESOURCES_SPEC, problems)


# ---------------------------------------------------------------- bind mounts


def _container_path(value: Any, path: str, problems: Problems) -> Any:
    if not isinstance(value, str) or not value:
        problems.add(path, f"expected a non-empty string, got {type_name(value)}")
    elif value.rstrip("/") in (".", ""):
        problems.add(path, f"must name a directory other than the working directory, got {value!r}")
    return value


BIND_MOUNT_SPEC: dict[str, Field] = {
    "host_path": Field(absolute_path(), required=True),
    "container_path": Field(_container_path, required=True),
    "read_only": Field(boolean(), default=False),
    "propagation": Field(string(), default="rprivate"),
}

# ---------------------------------------------------------------- deprecated tuning sections

OPTIMIZATIONS_SPEC: dict[str, Field] = {
    "aggregation_frequency": Field(integer(minimum=1), default=1),
    "average_aggregated_gradients": Field(boolean(), default=True),
    "average_training_metrics": Field(boolean(), default=True),
    "gradient_compression": Field(boolean(), default=False),
    "mixed_precision": Field(choice("O0", "O1", "O2", "O3"), default="O0"),
    "tensor_fusion_threshold": Field(integer(minimum=1), default=64),
    "tensor_fusion_cycle_time": Field(integer(minimum=1), default=1),
    "auto_tune_tensor_fusion": Field(boolean(), default=False),
    "grad_updates_size_file": Field(string()),
}

# The optimizations keys a PyTorch trial cannot honour here, and why (from Determined 0.38.1's harness: what is not
# named here is honoured: aggregation_frequency by the PyTorch context's step_optimizer(), and
# average_aggregated_gradients as wrap_optimizer()'s default, both read in exec/harness.py as Stalwart's legacy
# harness reads them).
_HOROVOD_ONLY = "Determined applies it only to Horovod, and Stalwart trains with PyTorch DDP"
OPTIMIZATIONS_NO_EFFECT: dict[str, str] = {
    "average_training_metrics": "has no effect for PyTorch trials: training metrics are always averaged across "
                                "workers (Determined's PyTorchTrial ignores the key too; only its TFKerasTrial "
                                "reads it)",
    "gradient_compression": f"has no effect: {_HOROVOD_ONLY} (its fp16 gradient compression)",
    "mixed_precision": "has no effect: Determined's PyTorchTrial ignores it; turn on mixed precision in the trial "
                       "(context.experimental.use_amp(), or context.wrap_scaler() with torch.autocast)",
    "tensor_fusion_threshold": f"has no effect: {_HOROVOD_ONLY}",
    "tensor_fusion_cycle_time": f"has no effect: {_HOROVOD_ONLY}",
    "auto_tune_tensor_fusion": f"has no effect: {_HOROVOD_ONLY}",
    "grad_updates_size_file": f"has no effect: {_HOROVOD_ONLY} (its tensor fusion autotuner's log)",
}

PROFILING_SPEC: dict[str, Field] = {
    "enabled": Field(boolean(), default=False),
    "begin_on_batch": Field(integer(minimum=0), default=0),
    "end_after_batch": Field(integer(minimum=0)),
    "sync_timings": Field(boolean(), default=True),
}


def check_profiling(value: Any, path: str, problems: Problems) -> dict[str, Any]:
    profiling = check_section(value, path, PROFILING_SPEC, problems)
    begin, end = profiling["begin_on_batch"], profiling["end_after_batch"]
    if is_int(begin) and is_int(end) and end < begin:
        problems.add(f"{path}.end_after_batch", f"must be >= begin_on_batch (got {end} < {begin})")
    return profiling


def new_experiment_seed() -> int:
    return secrets.randbelow(MAX_SEED + 1)


REPRODUCIBILITY_SPEC: dict[str, Field] = {
    "experiment_seed": Field(integer(minimum=0, maximum=MAX_SEED), default=new_experiment_seed),
}

RETENTION_POLICY_SPEC: dict[str, Field] = {
    "log_retention_days": Field(integer(minimum=-1, maximum=32767)),
}

# ---------------------------------------------------------------- log policies

LOG_ACTIONS = ("exclude_node", "cancel_retries")

# The master's built-in policies; they label matching log lines and take no action.
DEFAULT_LOG_POLICIES = (
    {"name": "CUDA OOM", "pattern": ".*CUDA out of memory.*", "action": None},
    {"name": "ECC Error", "pattern": ".*uncorrectable ECC error encountered.*", "action": None},
)


def _log_action(value: Any, path: str, problems: Problems) -> Any:
    """`exclude_node`/`cancel_retries`, or the legacy `{type: ...}` form (returned as a string)."""
    if isinstance(value, Mapping) and set(value) <= {"type"}:
        value = value.get("type")
    if value not in LOG_ACTIONS:
        problems.add(path, f"expected one of {', '.join(LOG_ACTIONS)}, got {type_name(value)}")
    return value


_LOG_POLICY = {
    "name": Field(string(nonempty=True)),
    "pattern": Field(string(nonempty=True)),
    "action": Field(_log_action),
    "signal": Field(string()),  # legacy (0.37) spelling of `name`
}


def _log_policy(value: Any, path: str, problems: Problems) -> Any:
    """One policy, in Determined 0.38's form: `name`, `pattern` (a regular expression; null disables a policy of
    the same name from the defaults) and `action` (a string, or none: the policy only labels the trial). The 0.37
    form, `{pattern, action: {type: ...}}` with no name, is accepted and its action normalised to the string."""
    policy = check_section(value, path, _LOG_POLICY, problems)
    signal = policy.pop("signal", None)
    if policy["name"] is None:
        policy["name"] = signal
    if not isinstance(value, Mapping):
        return policy
    if policy["name"] is None and (policy["pattern"] is None or policy["action"] is None):
        problems.add(path, "a log policy needs a name, or (the 0.37 form) both a pattern and an action")
    pattern = policy["pattern"]
    if isinstance(pattern, str):
        try:
            compile_pattern(pattern)
        except PatternError as err:
            which = repr(policy["name"]) if policy["name"] else f"with action {policy['action']}"
            problems.add(f"{path}.pattern", f"log policy {which}: {pattern!r} is not a valid regular expression "
                                            f"({err})")
    return policy


def check_policy_list(value: Any, path: str, problems: Problems) -> Any:
    """A list of log policies as given (the master's `task_container_defaults.log_policies`): each checked, two with
    one name refused."""
    policies = list_of(_log_policy)(value, path, problems)
    if isinstance(policies, list):
        seen: set[str] = set()
        for policy in policies:
            name = policy.get("name") if isinstance(policy, dict) else None
            if isinstance(name, str) and name in seen:
                problems.add(path, f"two log policies are named {name!r}; a name may be used once")
            if isinstance(name, str):
                seen.add(name)
    return policies


def check_log_policies(value: Any, path: str, problems: Problems) -> list[Any]:
    """User policies, merged by name over the built-in ones (the user's entry wins)."""
    policies = check_policy_list(value, path, problems)
    if not isinstance(policies, list):
        return default_log_policies()
    named = {p.get("name") for p in policies if isinstance(p, dict)}
    kept = [p for p in default_log_policies() if p["name"] not in named]
    return kept + policies


def default_log_policies() -> list[Any]:
    return [dict(p) for p in DEFAULT_LOG_POLICIES]


# ---------------------------------------------------------------- cluster integrations

INTEGRATIONS_SPEC: dict[str, Field] = {
    "pachyderm": Field(any_map()),
    "webhooks": Field(any_map()),
}

SECURITY_SPEC: dict[str, Field] = {
    "kerberos": Field(section({"config_file": Field(string())})),
}

SLURM_SPEC: dict[str, Field] = {
    "slots_per_node": Field(integer(minimum=1)),
    "gpu_type": Field(string()),
    "sbatch_args": Field(list_of(string()), default=list),
}

PBS_SPEC: dict[str, Field] = {
    "slots_per_node": Field(integer(minimum=1)),
    "pbsbatch_args": Field(list_of(string()), default=list),
}


def entrypoint_checker() -> Checker:
    def check(value: Any, path: str, problems: Problems) -> Any:
        if isinstance(value, str):
            if not value.strip():
                problems.add(path, "must not be empty")
            return value
        if isinstance(value, list) and value:
            for i, part in enumerate(value):
                if not isinstance(part, str):
                    problems.add(f"{path}[{i}]", f"expected a string, got {type_name(part)}")
            return value
        wanted = "a command string or a non-empty list of strings"
        problems.add(path, f"expected {wanted}, got {type_name(value)}")
        return value

    return check
