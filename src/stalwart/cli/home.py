"""Where local state lives: $STALWART_HOME (default ~/.stalwart) and the local cluster's record in it."""

from __future__ import annotations

import json
import os
import pathlib

import pydantic
from typing_extensions import TypedDict  # pydantic validates only this one on Python < 3.12


class LocalRecord(TypedDict, total=False):
    """$STALWART_HOME/local-cluster.json: what `stalwart up` started there and how (the file is gone at `down`)."""

    url: str
    master_pid: int
    agent_pid: int
    home: str
    port: int
    cluster_id: str | None
    config: str | None
    slots: int | None
    pool: str
    runtime: str  # the agent's: process, docker or podman (`up --runtime`)
    slurm_prefix: str  # `up --slurm`: no agent; `down` cancels the Slurm jobs whose names start with it
    det_url: str  # the master's Determined listener: DET_MASTER for Determined's own CLI and SDK


class StartedRecord(LocalRecord, total=False):
    """What a start answers: the record, and whether the cluster was already running (with the master config
    given again, if one was)."""

    already_running: bool
    same_config: bool


_RECORD = pydantic.TypeAdapter(LocalRecord)


def home() -> pathlib.Path:
    return pathlib.Path(os.environ.get("STALWART_HOME") or pathlib.Path.home() / ".stalwart").expanduser()


def local_record_path() -> pathlib.Path:
    return home() / "local-cluster.json"


def read_local_record() -> LocalRecord | None:
    """The local cluster's record; None when there is none, or it is not one (pydantic's errors are ValueErrors)."""
    try:
        return _RECORD.validate_json(local_record_path().read_bytes())
    except (OSError, ValueError):
        return None


def write_local_record(record: LocalRecord) -> None:
    path = local_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))


def token_file(base: pathlib.Path | None = None) -> pathlib.Path:
    return (base or home()) / "cluster-token"
