"""Deleting checkpoints and whole experiments: their files leave storage first, then their rows.

Storage work happens outside any transaction. When storage fails, nothing whose files are still there loses its
row: the checkpoints already removed are marked DELETED, the rest stay as they were, and the caller gets an error
naming the checkpoint and the storage's complaint (the experiment's rows all stay).

An experiment's delete removes its checkpoints' files, its trials' TensorBoard event files
(`<storage root>/tensorboard/experiment/<id>/`, as the harness writes them) and every row of it: trials, metrics,
logs, allocations, its job, and its context (the model definition stored at create). Its ids are never handed out
again (db/counters.py). It keeps each checkpoint that something else still uses, files and row, and says why
(`Kept`): a trial of another experiment that started from it (a searcher's warm start:
`trials.source_checkpoint_uuid`), or another experiment whose config starts its trials from it
(`searcher.source_checkpoint_uuid`, or `searcher.source_trial_id`: that trial's latest checkpoint). `e continue`
trains the same experiment further and `e fork` copies only its config and code, so neither uses another's
checkpoint unless its config says so. A kept checkpoint's row names its deleted trial; once nothing uses it any
more, the next experiment delete removes it (`_sweep_orphans`).

A checkpoint registered as a model version (the model registry, read through `queries.models_registry`) is never
deleted: an experiment with one is not deleted at all, and `DELETE /api/v1/checkpoints` naming one deletes nothing;
both answer 409 naming the model versions (delete those versions first).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stalwart.api.errors import InvalidStateError, NotFoundError, StalwartError
from stalwart.api.states import ExperimentState as S
from stalwart.config import secrets
from stalwart.master.experiments import searchers
from stalwart.master.queries import (
    checkpoint_users as users,
    checkpoints as checkpoint_rows,
    experiments as experiment_rows,
    models_registry,
)
from stalwart.master.queries.rows import Conn
from stalwart.master.service import Master
from stalwart.storage import StorageManager, make_storage

log = logging.getLogger(__name__)


class CheckpointStorageError(StalwartError):
    """Checkpoint storage refused to delete a checkpoint's files (500: the master's side failed, not the call)."""


@dataclass(frozen=True)
class Kept:
    """A checkpoint an experiment's delete kept, and why: 'trial 31 of experiment 12 started from it'."""

    uuid: str
    reason: str


@dataclass(frozen=True)
class Deleted:
    """What an experiment's delete removed (how many checkpoints) and kept."""

    checkpoints: int
    kept: list[Kept]


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
            shown = secrets.masked(str(err), secrets.storage_secret_values(ckpt["storage"]))
            log.warning("could not delete the files of checkpoint %s: %s", uuid, shown)
            raise CheckpointStorageError(
                f"checkpoint {uuid}: its files could not be deleted from checkpoint storage ({shown}); "
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
        registered = models_registry.versions_using(conn, wanted)
    if registered:
        used = "; ".join(f"checkpoint {uuid}: {', '.join(v)}" for uuid, v in registered.items())
        raise InvalidStateError(f"registered checkpoints cannot be deleted ({used}); nothing was deleted: delete "
                                "those model versions (or their models) first")
    _remove_files(m, [r for r in rows if r["state"] != "DELETED"])


def delete_experiment(m: Master, exp_id: int) -> Deleted:
    """A terminal experiment (COMPLETED, CANCELED, ERROR): its files (but the checkpoints something else uses), then
    all of its rows."""
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        _require_terminal(exp_id, exp["state"])
        _require_unregistered(conn, exp_id)
        live = [dict(r) for r in checkpoint_rows.of_experiment(conn, exp_id) if r["state"] != "DELETED"]
        kept = still_used(conn, exp_id, live)
    gone = [c for c in live if c["uuid"] not in {k.uuid for k in kept}]
    _remove_files(m, gone)
    _remove_tensorboard(exp_id, [exp["config"].get("checkpoint_storage"), *(c["storage"] for c in live)])
    with m.db.begin() as conn:
        exp = experiment_rows.get(conn, exp_id)
        _require_terminal(exp_id, exp["state"])  # it may have been continued while its files went
        experiment_rows.delete_rows(conn, exp_id, frozenset(k.uuid for k in kept))
    searchers.forget(m, exp_id)
    _sweep_orphans(m)
    return Deleted(len(gone), kept)


def _require_terminal(exp_id: int, state: str) -> None:
    if not S(state).terminal:
        raise InvalidStateError(f"experiment {exp_id} is {state}; only a finished experiment (COMPLETED, CANCELED "
                                "or ERROR) can be deleted: cancel or kill it first")


def _require_unregistered(conn: Conn, exp_id: int) -> None:
    """409 naming the model versions that use a checkpoint of the experiment, if any do."""
    used = models_registry.versions_of_experiment(conn, exp_id)
    if used:
        shown = "; ".join(used[:10]) + (f"; and {len(used) - 10} more" if len(used) > 10 else "")
        raise InvalidStateError(f"experiment {exp_id} cannot be deleted: its checkpoints are registered in the model "
                                f"registry ({shown}); delete those model versions (or their models) first")


def still_used(conn: Conn, exp_id: int, live: list[dict[str, Any]]) -> list[Kept]:
    """Which of experiment `exp_id`'s live checkpoints something outside it still uses, each with why."""
    uuids = [c["uuid"] for c in live]
    reasons: dict[str, list[str]] = defaultdict(list)
    started: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for row in users.trials_started_from(conn, uuids, outside=exp_id):
        started[row["uuid"]][row["experiment_id"]].append(row["trial_id"])
    for uuid, by_experiment in started.items():
        reasons[uuid] += [f"{_trials(ids)} of experiment {e} started from it" for e, ids in by_experiment.items()]
    for row in users.configs_naming_checkpoints(conn, uuids, outside=exp_id):
        reasons[row["uuid"]].append(f"experiment {row['experiment_id']}'s config starts its trials from it "
                                    "(searcher.source_checkpoint_uuid)")
    own = sorted({c["trial_id"] for c in live})
    for row in users.configs_naming_trials(conn, own, outside=exp_id):
        latest = checkpoint_rows.latest_completed_of_trial(conn, row["trial_id"])
        if latest is not None and latest["uuid"] in uuids:
            reasons[latest["uuid"]].append(f"experiment {row['experiment_id']}'s config starts its trials from "
                                           f"trial {row['trial_id']}'s latest checkpoint (searcher.source_trial_id)")
    return [Kept(uuid, "; ".join(reasons[uuid])) for uuid in uuids if uuid in reasons]


def _trials(ids: list[int], most: int = 5) -> str:
    """'trial 3', 'trials 3, 4 and 5', 'trials 3, 4, 5, 6, 7 and 4 more'."""
    if len(ids) == 1:
        return f"trial {ids[0]}"
    if len(ids) <= most:
        return f"trials {', '.join(map(str, ids[:-1]))} and {ids[-1]}"
    return f"trials {', '.join(map(str, ids[:most]))} and {len(ids) - most} more"


def _storages(configs: Iterable[Any]) -> list[tuple[dict[str, Any], StorageManager]]:
    """Each distinct storage section among `configs` with its backend (any kind: shared_fs, directory, s3, gcs,
    azure); a section no backend can be made of (incomplete, or its library missing) is left out, logged."""
    sections: dict[str, dict[str, Any]] = {}
    for config in configs:
        if isinstance(config, dict) and config.get("type"):
            sections.setdefault(json.dumps(config, sort_keys=True, default=str), dict(config))
    out = []
    for section in sections.values():
        try:
            out.append((section, make_storage(section)))
        except (StalwartError, KeyError, TypeError) as err:
            shown = secrets.masked(str(err), secrets.storage_secret_values(section))
            log.warning("no TensorBoard files deleted from %s storage: %s", section.get("type"), shown)
    return out


def _remove_tensorboard(exp_id: int, storage: Iterable[Any]) -> None:
    """Remove `tensorboard/experiment/<exp_id>/` from every storage the experiment wrote to, whatever its backend
    (objects under `<prefix>/tensorboard/experiment/<id>/` on s3, gcs and azure)."""
    for section, backend in _storages(storage):
        try:
            backend.delete_tensorboard(exp_id)
        except NotImplementedError:
            continue
        except Exception as err:
            shown = secrets.masked(str(err), secrets.storage_secret_values(section))
            log.warning("could not delete the TensorBoard files of experiment %d: %s", exp_id, shown)
            raise CheckpointStorageError(
                f"experiment {exp_id}: its TensorBoard files in {section.get('type')} checkpoint storage could not be "
                f"deleted ({shown}); the experiment keeps its records (its checkpoints' files are already gone)"
            ) from None


def _sweep_orphans(m: Master) -> None:
    """Delete the checkpoints kept by earlier deletes that nothing uses any more (files, then rows). A failure
    is logged, not raised: the delete that swept has been done."""
    with m.db.begin() as conn:
        orphans = [dict(r) for r in users.orphans(conn)]
        uuids = [o["uuid"] for o in orphans]
        used = {r["uuid"] for r in users.trials_started_from(conn, uuids)}
        used |= {r["uuid"] for r in users.configs_naming_checkpoints(conn, uuids)}
        named = {r["trial_id"] for r in users.configs_naming_trials(conn, sorted({o["trial_id"] for o in orphans}))}
    free = [o for o in orphans if o["uuid"] not in used and o["trial_id"] not in named]
    if not free:
        return
    try:
        _remove_files(m, [o for o in free if o["state"] != "DELETED"])
    except CheckpointStorageError as err:
        log.warning("checkpoints kept by an earlier experiment delete stay: %s", err)
        return
    with m.db.begin() as conn:
        users.delete(conn, [o["uuid"] for o in free])
    log.info("deleted checkpoints %s, kept earlier for experiments that no longer use them",
             ", ".join(o["uuid"] for o in free))
