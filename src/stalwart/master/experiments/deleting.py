"""Deleting checkpoints and whole experiments: their files leave checkpoint storage first, then their rows.

Storage work happens outside any transaction. When storage fails, nothing whose files are still there loses its
row: the checkpoints already removed are marked DELETED, the rest stay as they were, and the caller gets an error
naming the checkpoint and the storage's complaint (the experiment's rows all stay)."""

from __future__ import annotations

import logging
from typing import Any

from stalwart.api.errors import InvalidStateError, NotFoundError, StalwartError
from stalwart.api.states import ExperimentState as S
from stalwart.master.experiments import searchers
from stalwart.master.queries import checkpoints as checkpoint_rows, experiments as experiment_rows
from stalwart.master.service import Master
from stalwart.storage import make_storage

log = logging.getLogger(__name__)


class CheckpointStorageError(StalwartError):
    """Checkpoint storage refused to delete a checkpoint's files (500: the master's side failed, not the call)."""


def _remove_files(m: Master, checkpoints: list[dict[str, Any]]) -> None:
    """Delete each checkpoint's files from its storage and mark it DELETED; stop at the first failure."""
    for ckpt in checkpoints:
        uuid = ckpt["uuid"]
        try:
            storage = make_storage(ckpt["storage"])
            storage.delete(uuid)
            if storage.list(uuid):
                raise OSError("its files are still there after the delete")
        except Exception as err:
            log.warning("could not delete the files of checkpoint %s: %s", uuid, err)
            raise CheckpointStorageError(
                f"checkpoint {uuid}: its files could not be deleted from checkpoint storage ({err}); "
                "it and the checkpoints not yet deleted keep their records") from None
        with m.db.begin() as conn:
            checkpoint_rows.mark_deleted(conn, uuid)


def delete_checkpoints(m: Master, uuids: list[str]) -> None:
    """Every uuid must name a checkpoint (404 naming the first that does not, and nothing is deleted). Those already
    DELETED are left as they are."""
    wanted = list(dict.fromkeys(uuids))
    with m.db.begin() as conn:
        rows = []
        for uuid in wanted:
            row = checkpoint_rows.find(conn, uuid)
            if row is None:
                raise NotFoundError(f"checkpoint {uuid} not found; nothing was deleted")
            rows.append(dict(row))
    _remove_files(m, [r for r in rows if r["state"] != "DELETED"])


def delete_experiment(m: Master, exp_id: int) -> None:
    """A terminal experiment (COMPLETED, CANCELED, ERROR): its checkpoints' files, then all of its rows."""
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        _require_terminal(exp_id, exp["state"])
        live = [dict(r) for r in checkpoint_rows.of_experiment(conn, exp_id) if r["state"] != "DELETED"]
    _remove_files(m, live)
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        _require_terminal(exp_id, exp["state"])  # it may have been continued while its files went
        experiment_rows.delete_rows(conn, exp_id)
    searchers.forget(m, exp_id)


def _require_terminal(exp_id: int, state: str) -> None:
    if not S(state).terminal:
        raise InvalidStateError(f"experiment {exp_id} is {state}; only a finished experiment (COMPLETED, CANCELED "
                                "or ERROR) can be deleted: cancel or kill it first")
