"""Ids are never handed out twice (issue 26, acceptance 1), on SQLite and PostgreSQL.

Delete then create, and again after a master restart: the new experiment, trial, command, project, workspace,
token and group each get an id past every id the deleted ones had. An experiment, a project, a workspace and a
group are deleted through the API; no route deletes a command or a token (a token is revoked, its row stays), so
theirs are deleted with SQL, as anything that ever prunes them would. An allocation's id is a random uuid: it cannot
come back. A database of revision 0008 with rows deleted, an audit entry naming `experiment 9` and a TensorBoard
directory of experiment 11 starts its counters past all of them once migrated; and every master start moves them
past the TensorBoard directories of its default checkpoint storage.
"""

from __future__ import annotations

import base64
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.db import Database, counters, tables as t
from stalwart.db.engine import _MIGRATIONS
from stalwart.master.app import create_app
from stalwart.master.scheduling import scheduling
from stalwart.master.settings import MasterSettings

CONFIG = """name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 4}}}}
checkpoint_storage: {{type: shared_fs, host_path: {ckpts}}}
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'm.db'}"


class Master:
    """A master on `db_url` (its real routes and database) and an admin's typed client of it."""

    def __init__(self, db_url: str, home: pathlib.Path) -> None:
        self.app = create_app(MasterSettings(db_url=db_url, home=home, ui_metrics_index=False))
        self.client = Client("http://testserver")
        self.client._http = TestClient(self.app)
        as_admin(self.client._http)
        ctx = home / "ctx"
        ctx.mkdir(parents=True, exist_ok=True)
        (ctx / "train.py").write_text("print('x')\n")
        self.context = base64.b64encode(pack_context(ctx).data).decode()
        self.ckpts = home / "ckpts"

    def close(self) -> None:
        self.client.close()
        self.app.state.master.db.dispose()

    def sql(self, *statements: Any) -> None:
        with self.app.state.master.db.begin() as conn:
            for statement in statements:
                conn.execute(statement)


@dataclass
class Ids:
    experiment: int
    trial: int
    command: int
    workspace: int
    project: int
    token: int
    group: int

    def all_past(self, old: Ids) -> list[str]:
        """The kinds whose id here is not past `old`'s (empty: none came back)."""
        return [k for k, v in vars(self).items() if v <= vars(old)[k]]


def _create_all(m: Master, n: int) -> Ids:
    """One of each kind, through the API."""
    c = m.client
    exp = c.create_experiment(CONFIG.format(name=f"run-{n}", ckpts=m.ckpts), m.context, activate=False).experiment
    assert exp is not None
    trial = c.experiment_trials(exp.id).trials[0].id
    cmd = c.create_command({"entrypoint": ["true"], "description": f"cmd-{n}"}).command.id
    ws = c.create_workspace(f"space-{n}").id
    project = c.create_project(ws, f"project-{n}").id
    token = c.create_token(description=f"token-{n}").tokenInfo.id
    group = c.create_group(f"group-{n}").id
    return Ids(exp.id, trial, cmd, ws, project, token, group)


def _delete_all(m: Master, ids: Ids, group: str) -> None:
    """Each one goes: through the API where a route deletes it, with SQL for commands and tokens."""
    c = m.client
    c.experiment_action(ids.experiment, "kill")
    scheduling.tick(m.app.state.master)  # a killed experiment without a live run ends on the next pass
    assert c.get_experiment(ids.experiment).experiment.state.value == "CANCELED"
    assert c.delete_experiment(ids.experiment).kept_checkpoints == []
    c.delete_project(ids.project)
    c.delete_workspace(ids.workspace)
    c.delete_group(group)
    m.sql(t.allocations.delete().where(t.allocations.c.command_id == ids.command),
          t.jobs.delete().where(t.jobs.c.type == "COMMAND", t.jobs.c.entity_id == ids.command),
          t.commands.delete().where(t.commands.c.id == ids.command),
          t.user_sessions.delete().where(t.user_sessions.c.id == ids.token))


def test_no_id_comes_back_after_a_delete_nor_after_a_master_restart(db_url: str, tmp_path: pathlib.Path) -> None:
    m = Master(db_url, tmp_path)
    first = _create_all(m, 1)
    _delete_all(m, first, "group-1")
    second = _create_all(m, 2)
    assert second.all_past(first) == [], (first, second)
    _delete_all(m, second, "group-2")
    m.close()
    m = Master(db_url, tmp_path)  # a restarted master on the same database
    third = _create_all(m, 3)
    assert third.all_past(second) == [], (second, third)
    m.client.experiment_action(third.experiment, "activate")
    scheduling.tick(m.app.state.master)  # the trial gets a (pending) allocation
    with m.app.state.master.db.begin() as conn:
        allocs = conn.execute(sa.select(t.allocations.c.id).where(t.allocations.c.trial_id == third.trial)).scalars()
        assert [bool(re.fullmatch(r"[0-9a-f]{32}", a)) for a in allocs] == [True]  # a random uuid: never again
    m.close()


def _at_0008(url: str) -> Database:
    db = Database(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0008")
    return db


def _fill_0008(db: Database, ckpts: pathlib.Path) -> None:
    """Experiments 1..5 with a trial each, experiment 5 and its trial deleted again, a command, an audit entry
    naming experiment 9 and one naming token 40, written on the 0008 schema."""
    meta = sa.MetaData()
    meta.reflect(db.engine, only=["experiments", "trials", "commands", "audit_log", "checkpoints"])
    ex, tr, cm, au, ck = (meta.tables[n] for n in ("experiments", "trials", "commands", "audit_log", "checkpoints"))
    storage = {"type": "shared_fs", "host_path": str(ckpts)}
    with db.engine.begin() as conn:
        for n in range(1, 6):
            exp_id = conn.execute(ex.insert().values(
                name=f"old-{n}", labels=[], owner="admin", config={"checkpoint_storage": storage}, config_text="",
                state="COMPLETED", archived=False, progress=1.0, created_at=1.0)).inserted_primary_key[0]
            trial_id = conn.execute(tr.insert().values(
                experiment_id=exp_id, request_id="r", hparams={}, seed=1, state="COMPLETED", restarts=0, runs=1,
                stop_requested=False, progress=1.0, created_at=1.0)).inserted_primary_key[0]
        conn.execute(ck.insert().values(uuid="kept-uuid", trial_id=1, steps_completed=4, state="COMPLETED",
                                        resources={}, metadata={}, storage=storage, report_time=1.0))
        conn.execute(tr.delete().where(tr.c.id == trial_id))
        conn.execute(ex.delete().where(ex.c.id == exp_id))
        conn.execute(cm.insert().values(description="c", owner="admin", config={}, state="TERMINATED", created_at=1.0))
        for target in ("experiment 9", "token 40", "experiment abc", "user bob"):
            conn.execute(au.insert().values(timestamp=1.0, username="admin", method="POST", path="/x", target=target,
                                            status=200, outcome="ok"))


def test_an_upgraded_database_starts_past_every_id_of_its_tables_audit_log_and_storage(
        db_url: str, tmp_path: pathlib.Path) -> None:
    ckpts = tmp_path / "old-checkpoints"
    (ckpts / "tensorboard" / "experiment" / "11" / "trial" / "23").mkdir(parents=True)
    (ckpts / "tensorboard" / "experiment" / "not-an-id").mkdir()
    old = _at_0008(db_url)
    _fill_0008(old, ckpts)
    old.dispose()
    db = Database(db_url)
    db.migrate()  # as the new master does at start
    with db.engine.begin() as conn:
        assert {k: counters.next_id(conn, k) for k in ("experiments", "trials", "commands", "user_sessions")} == {
            "experiments": 12, "trials": 24, "commands": 2, "user_sessions": 41}
        assert sa.inspect(conn).get_foreign_keys("checkpoints") == []  # a kept checkpoint outlives its trial
        assert conn.execute(sa.select(t.checkpoints.c.trial_id)).scalars().all() == [1]  # every row stays
    db.dispose()
    m = Master(db_url, tmp_path / "home")
    exp = m.client.create_experiment(CONFIG.format(name="new", ckpts=ckpts), m.context, activate=False).experiment
    assert exp is not None and exp.id == 12
    assert [tr.id for tr in m.client.experiment_trials(12).trials] == [24]
    m.close()


def test_each_master_start_moves_the_counters_past_its_storage(db_url: str, tmp_path: pathlib.Path) -> None:
    """A new database beside an old checkpoint storage (here: the master's default, in its home)."""
    (tmp_path / "checkpoints" / "tensorboard" / "experiment" / "20" / "trial" / "31").mkdir(parents=True)
    m = Master(db_url, tmp_path)
    exp = m.client.create_experiment(CONFIG.format(name="next", ckpts=m.ckpts), m.context, activate=False).experiment
    assert exp is not None and exp.id == 21
    assert [tr.id for tr in m.client.experiment_trials(21).trials] == [32]
    m.close()


@pytest.fixture
def sqlite_schema(tmp_path: pathlib.Path) -> Iterator[dict[str, str]]:
    """The CREATE TABLE text of every table of a migrated SQLite database."""
    db = Database(f"sqlite:///{tmp_path / 's.db'}")
    db.migrate()
    with db.engine.connect() as conn:
        yield dict(conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'").all())
    db.dispose()


def test_every_table_with_a_database_assigned_id_is_autoincrement_on_sqlite(sqlite_schema: dict[str, str]) -> None:
    integer_ids = {tb.name for tb in t.metadata.sorted_tables  # allocations and jobs have uuid strings
                   if [c.name for c in tb.primary_key.columns] == ["id"] and not isinstance(tb.c.id.type, sa.String)}
    assert integer_ids == set(counters.NEVER_REUSED)
    for name in counters.NEVER_REUSED:
        assert t.metadata.tables[name].dialect_options["sqlite"]["autoincrement"] is True, name
    assert {n for n, sql in sqlite_schema.items() if "AUTOINCREMENT" in (sql or "")} == set(counters.NEVER_REUSED)
