"""ClusterInfo: who this trial process is (from the info file the agent writes), or None off-cluster."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrialInfo:
    """The trial this process belongs to: ids, seed, hyperparameters and experiment config."""

    trial_id: int
    experiment_id: int
    trial_run_id: int
    trial_seed: int
    hparams: dict[str, Any]
    _config: dict[str, Any]
    steps_completed: int = 0
    target_length: int | None = None


@dataclass(frozen=True)
class ClusterInfo:
    """The task this process belongs to: the master, its allocation, slots, containers and credentials."""

    master_url: str
    cluster_id: str
    agent_id: str
    slot_ids: list[int]
    task_id: str
    allocation_id: str
    session_token: str
    task_type: str
    latest_checkpoint: str | None
    trial: TrialInfo | None = None
    user_token: str | None = None  # a session of the task's owner (user routes, the SDK)
    container_addrs: list[str] = field(default_factory=lambda: ["127.0.0.1"])
    container_rank: int = 0
    gpu_uuids: list[str] = field(default_factory=list)
    checkpoint_storage: dict[str, Any] | None = None  # with its credentials (trial.config shows them hidden)

    @property
    def user_data(self) -> dict[str, Any]:
        data: dict[str, Any] = (self.trial._config.get("data") if self.trial else None) or {}
        return data


def _load(path: str) -> ClusterInfo:
    with open(path) as f:
        raw: dict[str, Any] = json.load(f)
    trial = raw.get("trial")
    trial_info = None
    if trial:
        trial_info = TrialInfo(
            trial_id=trial["trial_id"],
            experiment_id=trial["experiment_id"],
            trial_run_id=trial.get("trial_run_id", 0),
            trial_seed=trial["trial_seed"],
            hparams=trial["hparams"],
            _config=trial["config"],
            steps_completed=trial.get("steps_completed", 0),
            target_length=trial.get("target_length"),
        )
    return ClusterInfo(
        master_url=raw["master_url"],
        cluster_id=raw["cluster_id"],
        agent_id=raw["agent_id"],
        slot_ids=raw.get("slot_ids", []),
        task_id=raw["task_id"],
        allocation_id=raw["allocation_id"],
        session_token=raw["session_token"],
        task_type=raw.get("task_type", "TRIAL"),
        latest_checkpoint=raw.get("latest_checkpoint"),
        trial=trial_info,
        user_token=raw.get("user_token"),
        container_addrs=_container_addrs(raw),
        container_rank=_container_rank(raw),
        gpu_uuids=raw.get("gpu_uuids", []),
        checkpoint_storage=raw.get("checkpoint_storage"),
    )


def _container_addrs(raw: dict[str, Any]) -> list[str]:
    """Addresses of the trial's containers in rank order: the env the master sets, the info file, or loopback."""
    text = os.environ.get("STALWART_CONTAINER_ADDRS")
    if text:
        try:
            addrs = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"STALWART_CONTAINER_ADDRS={text!r} must be a JSON list of addresses") from None
        if isinstance(addrs, list) and addrs:
            return [str(a) for a in addrs]
        raise ValueError(f"STALWART_CONTAINER_ADDRS={text!r} must be a non-empty JSON list of addresses")
    return list(raw.get("container_addrs") or ["127.0.0.1"])


def _container_rank(raw: dict[str, Any]) -> int:
    for name in ("STALWART_CONTAINER_RANK", "DET_CONTAINER_RANK"):
        text = os.environ.get(name)
        if text:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"{name}={text!r} must be an integer (0 is the chief container)") from None
    return int(raw.get("container_rank", 0))


_cached: ClusterInfo | None = None


def get_cluster_info() -> ClusterInfo | None:
    """This process's cluster info, or None when it runs off-cluster (`python train.py`)."""
    global _cached
    path = os.environ.get("STALWART_INFO_FILE")
    if not path or not os.path.exists(path):
        return None
    if _cached is None:
        _cached = _load(path)
    return _cached
