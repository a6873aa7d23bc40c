"""What an agent gets to launch one container of a trial's run: the trial's env and info file, and its gang's."""

from __future__ import annotations

import json
from typing import Any

from stalwart.config import secrets
from stalwart.master.allocations import container_orders, containers
from stalwart.master.allocations.env import base_env, owner_session, run_as
from stalwart.master.experiments import trials
from stalwart.master.queries import experiments as experiment_rows, trials as trial_rows
from stalwart.master.queries.rows import Conn, Row
from stalwart.master.service import Master


def start_order(m: Master, conn: Conn, alloc: Row, container: dict[str, Any]) -> dict[str, Any]:
    """Everything an agent needs to launch one container of a trial's run: identity, token, env and the info file."""
    order = _trial_order(m, conn, alloc, container)
    env, info = containers.env_for(conn, alloc, container)
    order["env"].update(env)
    order["info"].update(info)
    return order


def _steps_completed(trial: Row, latest: Row | None) -> int:
    """The batches the trial has trained: its latest checkpoint's, but 0 when that is the checkpoint it was
    warm-started from (searcher.source_trial_id / source_checkpoint_uuid: its weights only, as in Determined)."""
    if latest is None or latest["uuid"] == trial["source_checkpoint_uuid"]:
        return 0
    return int(latest["steps_completed"])


def _trial_order(m: Master, conn: Conn, alloc: Row, container: dict[str, Any]) -> dict[str, Any]:
    trial = trial_rows.get(conn, alloc["trial_id"])
    exp = experiment_rows.get(conn, trial["experiment_id"])
    config = exp["config"]
    part = container_orders.for_container(m, conn, config, container)  # ContainerRefused: the pool's policy
    shown = secrets.redact(config)  # its config as the trial sees it: secrets hidden (but info's checkpoint_storage)
    latest = trials.latest_checkpoint(conn, trial["id"])
    token = m.allocation_token(alloc["id"])
    user_token = owner_session(m, conn, alloc, exp["owner"])
    steps = _steps_completed(trial, latest)
    info = {
        "master_url": m.settings.url,
        "cluster_id": m.cluster_id,
        "agent_id": container["agent_id"],
        "slot_ids": list(container["slot_ids"] or []),
        "task_id": f"trial-{trial['id']}",
        "allocation_id": alloc["id"],
        "session_token": token,
        "user_token": user_token,
        "task_type": "TRIAL",
        "latest_checkpoint": latest["uuid"] if latest else None,
        "checkpoint_storage": config.get("checkpoint_storage"),  # with its secrets: only in this 0600 file
        "trial": {
            "trial_id": trial["id"],
            "experiment_id": exp["id"],
            "trial_run_id": alloc["run_id"],
            "trial_seed": trial["seed"],
            "hparams": trial["hparams"],
            "config": shown,
            "steps_completed": steps,
            "target_length": trial["target_length"],
        },
    }
    env = base_env(m, alloc, token, exp["owner"], f"trial-{trial['id']}", "TRIAL", container, user_token)
    env.update({
        "STALWART_TRIAL_ID": str(trial["id"]),
        "STALWART_EXPERIMENT_ID": str(exp["id"]),
        "STALWART_TRIAL_RUN_ID": str(alloc["run_id"]),
        "DET_EXPERIMENT_ID": str(exp["id"]),
        "DET_TRIAL_ID": str(trial["id"]),
        "DET_TRIAL_RUN_ID": str(alloc["run_id"]),
        "DET_TRIAL_SEED": str(trial["seed"]),
        "DET_HPARAMS": json.dumps(trial["hparams"]),
        "DET_EXPERIMENT_CONFIG": json.dumps(shown),
        "DET_STEPS_COMPLETED": str(steps),
    })
    if latest:
        env["DET_LATEST_CHECKPOINT"] = latest["uuid"]
    env["DET_SLOT_TYPE"] = part.slot_type
    env.update(part.variables)
    return {
        "allocation_id": alloc["id"],
        "trial_id": trial["id"],
        "slot_ids": list(container["slot_ids"] or []),
        "entrypoint": config["entrypoint"],
        "env": env,
        "info": info,
        "run_as": run_as(conn, exp["owner"], exp["project_id"]),
        "container": part.container,
    }
