"""Ids that are never handed out twice: which tables' ids the database assigns, and moving their counters forward.

SQLite reuses the largest rowid after a delete unless the table is AUTOINCREMENT: `tables.py` marks every table of
`NEVER_REUSED` with `sqlite_autoincrement`, and migration 0009 rebuilt the tables of older databases so. PostgreSQL's
sequences never go back. What is left is an id that lives on outside its table: in another table's rows, in the
audit log's targets ('experiment 7'), and in checkpoint storage, where each trial writes its TensorBoard event files
under `<storage root>/tensorboard/experiment/<experiment id>/trial/<trial id>/`. A counter behind any of those would
hand the id out again: the new trial's event files would land beside the old ones and the audit log's 'experiment 7'
would name two experiments. `raise_past_everything` moves every counter past all of them (migration 0009, once);
`raise_past_storage` only past the TensorBoard directories of the storage roots the master knows (each master start:
a database restored from a backup, or a new one beside an old storage, would otherwise reuse their ids). Counters
only ever move forward.

The storage layout is read here, not through `stalwart.storage` (a sibling layer): only `shared_fs` and `directory`
storage have a root the master can list.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from stalwart.db import tables as t

log = logging.getLogger(__name__)

NEVER_REUSED = ("experiments", "trials", "commands", "users", "user_sessions", "workspaces", "projects",
                "user_groups", "role_assignments", "metrics", "task_logs", "audit_log", "models", "model_versions",
                "webhooks", "webhook_triggers", "config_templates", "log_policy_matches")
"""Every table whose integer `id` the database assigns. (Allocations, jobs and checkpoints have random uuids:
they cannot come back.)"""

REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "experiments": (("trials", "experiment_id"), ("contexts", "experiment_id"), ("jobs", "entity_id")),
    "trials": (("metrics", "trial_id"), ("checkpoints", "trial_id"), ("allocations", "trial_id"),
               ("task_logs", "trial_id")),
    "commands": (("allocations", "command_id"), ("jobs", "entity_id")),
    "users": (("user_sessions", "user_id"), ("group_members", "user_id"), ("role_assignments", "user_id")),
    "workspaces": (("projects", "workspace_id"), ("role_assignments", "workspace_id"),
                   ("pool_bindings", "workspace_id")),
    "projects": (("experiments", "project_id"), ("commands", "project_id")),
    "user_groups": (("group_members", "group_id"), ("role_assignments", "group_id")),
    "models": (("model_versions", "model_id"),),
    "webhooks": (("webhook_triggers", "webhook_id"), ("webhook_deliveries", "webhook_id")),
}
"""Columns of other tables that name a table's ids (`jobs.entity_id` by its job's type)."""

_JOB_TYPES = {"experiments": "EXPERIMENT", "commands": "COMMAND"}

AUDIT_KINDS = {"experiment": "experiments", "trial": "trials", "command": "commands", "project": "projects",
               "workspace": "workspaces", "token": "user_sessions"}
"""The audit log's targets that name an id ('experiment 7', as `identity.authz.target_of` writes them)."""

_ID32_MAX = 2**31 - 1


def next_id(conn: sa.Connection, table: str) -> int:
    """The id the next row inserted into `table` will get (SQLite AUTOINCREMENT: past both the table's largest id and
    its sqlite_sequence entry; PostgreSQL: the sequence's next value, whatever the table holds)."""
    if conn.dialect.name == "sqlite":
        largest = conn.execute(sa.select(sa.func.max(t.metadata.tables[table].c.id))).scalar()
        seq = conn.execute(sa.text("SELECT seq FROM sqlite_sequence WHERE name = :t"), {"t": table}).scalar()
        return max(int(largest or 0), int(seq or 0)) + 1
    last, called = conn.execute(sa.text(f"SELECT last_value, is_called FROM {_pg_sequence(conn, table)}")).one()
    return int(last) + 1 if called else int(last)


def raise_counter(conn: sa.Connection, table: str, floor: int) -> None:
    """Make every id `table` hands out from now on larger than `floor` (a counter already past it stays)."""
    if floor <= 0 or next_id(conn, table) > floor:
        return
    log.info("ids of %s start after %d from now on", table, floor)
    if conn.dialect.name == "sqlite":
        if conn.execute(sa.text("UPDATE sqlite_sequence SET seq = :f WHERE name = :t"),
                        {"f": floor, "t": table}).rowcount == 0:
            conn.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES (:t, :f)"), {"f": floor, "t": table})
        return
    conn.execute(sa.text("SELECT setval(:s, :f, true)"), {"s": _pg_sequence(conn, table), "f": floor})


def _pg_sequence(conn: sa.Connection, table: str) -> str:
    name = conn.execute(sa.text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table}).scalar()
    if name is None:
        raise RuntimeError(f"table {table}: its id column has no sequence")
    return str(name)


def largest_in_tables(conn: sa.Connection) -> dict[str, int]:
    """Per table of `NEVER_REUSED`: the largest of its own ids and of the ids other tables' rows name."""
    out: dict[str, int] = {}
    present = set(sa.inspect(conn).get_table_names())  # a migration before a table's own (0009) runs this too
    for table in NEVER_REUSED:
        if table not in present:
            continue
        found = [conn.execute(sa.select(sa.func.max(t.metadata.tables[table].c.id))).scalar()]
        for other, column in REFERENCES.get(table, ()):
            ref = t.metadata.tables[other]
            query = sa.select(sa.func.max(ref.c[column]))
            if other == "jobs":
                query = query.where(ref.c.type == _JOB_TYPES[table])
            found.append(conn.execute(query).scalar())
        out[table] = max((int(v) for v in found if v is not None), default=0)
    return out


def largest_in_audit_log(conn: sa.Connection) -> dict[str, int]:
    """Per table: the largest id the audit log's targets name ('experiment 9' → experiments: 9)."""
    out: dict[str, int] = {}
    target = t.audit_log.c.target
    for kind, table in AUDIT_KINDS.items():
        rows = conn.execute(sa.select(target).distinct().where(target.like(f"{kind} %"))).scalars()
        ids = [int(rest) for r in rows if _is_id(rest := r[len(kind) + 1:])]
        if ids:
            out[table] = max(ids)
    return out


def _is_id(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) < 12 and int(text) <= _ID32_MAX


def storage_root(config: Mapping[str, Any] | None) -> pathlib.Path | None:
    """The directory a `checkpoint_storage` section stores under (as `stalwart.storage` lays it out); None for
    storage the master cannot list."""
    if not isinstance(config, Mapping):
        return None
    if config.get("type") == "shared_fs" and isinstance(config.get("host_path"), str):
        base = pathlib.Path(config["host_path"])
        sub = config.get("storage_path")
        return (base / sub) if isinstance(sub, str) and sub else base
    if config.get("type") == "directory" and isinstance(config.get("container_path"), str):
        return pathlib.Path(config["container_path"])
    return None


def largest_in_storage(roots: Iterable[pathlib.Path]) -> dict[str, int]:
    """The largest experiment and trial ids of TensorBoard directories under the roots
    (`tensorboard/experiment/<id>/trial/<id>/`); a root that cannot be read is skipped."""
    experiments = trials = 0
    for root in roots:
        for exp_dir in _id_dirs(root / "tensorboard" / "experiment"):
            experiments = max(experiments, int(exp_dir.name))
            trials = max([trials, *(int(d.name) for d in _id_dirs(exp_dir / "trial"))])
    return {k: v for k, v in (("experiments", experiments), ("trials", trials)) if v}


def _id_dirs(path: pathlib.Path) -> list[pathlib.Path]:
    try:
        with os.scandir(path) as entries:
            return [pathlib.Path(e.path) for e in entries if _is_id(e.name) and e.is_dir()]
    except OSError:
        return []


def roots_named_in_database(conn: sa.Connection) -> set[pathlib.Path]:
    """Storage roots of every experiment's config, every workspace's default storage and every checkpoint."""
    sections: dict[str, Any] = {}
    queries = (sa.select(t.experiments.c.config["checkpoint_storage"]),
               sa.select(t.workspaces.c.checkpoint_storage), sa.select(t.checkpoints.c.storage).distinct())
    for query in queries:
        for value in conn.execute(query).scalars():
            section = json.loads(value) if isinstance(value, str) else value
            sections.setdefault(json.dumps(section, sort_keys=True), section)
    return {root for s in sections.values() if (root := storage_root(s)) is not None}


def _merge(*found: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for each in found:
        for table, value in each.items():
            out[table] = max(out.get(table, 0), value)
    return out


def raise_past_everything(conn: sa.Connection, storage: Iterable[Mapping[str, Any]] = ()) -> dict[str, int]:
    """Move every counter past the largest id found in any table, the audit log, and the TensorBoard directories of
    every storage root the database names (and of `storage`). Returns the floors found, per table."""
    roots = roots_named_in_database(conn) | {r for s in storage if (r := storage_root(s)) is not None}
    floors = _merge(largest_in_tables(conn), largest_in_audit_log(conn), largest_in_storage(roots))
    for table, floor in floors.items():
        raise_counter(conn, table, floor)
    return floors


def raise_past_storage(conn: sa.Connection, storage: Iterable[Mapping[str, Any] | None]) -> dict[str, int]:
    """Move the experiment and trial counters past the TensorBoard directories of `storage` (the master's default)
    and of every workspace's default storage: a few directory listings, cheap enough for each master start."""
    sections = [*storage, *conn.execute(sa.select(t.workspaces.c.checkpoint_storage)).scalars()]
    floors = largest_in_storage({r for s in sections if (r := storage_root(s)) is not None})
    for table, floor in floors.items():
        raise_counter(conn, table, floor)
    return floors
