"""Where local state lives: $STALWART_HOME (default ~/.stalwart) and the local cluster's record in it."""

from __future__ import annotations

import json
import os
import pathlib


def home() -> pathlib.Path:
    return pathlib.Path(os.environ.get("STALWART_HOME") or pathlib.Path.home() / ".stalwart").expanduser()


def local_record_path() -> pathlib.Path:
    return home() / "local-cluster.json"


def read_local_record() -> dict | None:
    try:
        return json.loads(local_record_path().read_text())
    except (OSError, ValueError):
        return None


def write_local_record(record: dict) -> None:
    path = local_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))


def token_file(base: pathlib.Path | None = None) -> pathlib.Path:
    return (base or home()) / "cluster-token"
