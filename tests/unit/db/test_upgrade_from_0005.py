"""A database of the release before users (Alembic revision 0005) upgrades in place (issue 19, acceptance 5).

The old database holds experiments of alice, bob and determined (Determined's default user), with trials,
metrics and checkpoints, and a command of carol's, written with SQLAlchemy Core on the 0005 schema. After
`Database(url).migrate()` and `create_app(...)`: everything is still there with the same owners; each owner is an
inactive user without a password; the bootstrap admin exists (and determined, who stays inactive since it was
an owner before); an admin activates alice, who then logs in with the empty password and sees her experiment.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient

from helpers_auth import as_admin, as_user
from stalwart.config import load_experiment_config
from stalwart.db import Database
from stalwart.db.engine import _MIGRATIONS
from stalwart.master.app import create_app
from stalwart.master.settings import MasterSettings

OWNERS = ("alice", "bob", "determined")
CONFIG = """name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 4}}}}
checkpoint_storage: {{type: shared_fs, host_path: /tmp/old-checkpoints}}
"""
STEPS = (2, 4)


def _to_0005(db: Database) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0005")


def _fill_0005(db: Database) -> dict[str, Any]:
    """One completed experiment per owner (a trial, a metric per step, a checkpoint), and carol's ended command.
    What was written, to compare with after the upgrade."""
    meta = sa.MetaData()
    meta.reflect(db.engine, only=["experiments", "trials", "metrics", "checkpoints", "commands"])
    ex, tr, me, ck, cm = (meta.tables[n] for n in ("experiments", "trials", "metrics", "checkpoints", "commands"))
    wrote: dict[str, Any] = {"experiments": {}, "checkpoints": {}}
    with db.engine.begin() as conn:
        for owner in OWNERS:
            text = CONFIG.format(name=f"{owner}s-run")
            exp_id = conn.execute(ex.insert().values(
                name=f"{owner}s-run", labels=["old"], owner=owner, config=load_experiment_config(text).config,
                config_text=text, state="COMPLETED", archived=False, progress=1.0, created_at=1.0, ended_at=2.0,
            )).inserted_primary_key[0]
            trial_id = conn.execute(tr.insert().values(
                experiment_id=exp_id, request_id=f"req-{owner}", hparams={"lr": 0.1}, seed=7, state="COMPLETED",
                restarts=0, runs=1, target_length=4, stop_requested=False, progress=1.0, created_at=1.0, ended_at=2.0,
            )).inserted_primary_key[0]
            for step in STEPS:
                conn.execute(me.insert().values(trial_id=trial_id, trial_run_id=1, group_name="training",
                                                steps_completed=step, metrics={"loss": 1.0 / step}, report_time=1.5))
            uuid = f"00000000-0000-4000-8000-00000000000{OWNERS.index(owner)}"
            conn.execute(ck.insert().values(
                uuid=uuid, trial_id=trial_id, steps_completed=4, state="COMPLETED", resources={"w.bin": 3},
                metadata={"steps_completed": 4}, storage={"type": "shared_fs", "host_path": "/tmp/old-checkpoints"},
                report_time=1.8))
            wrote["experiments"][exp_id] = (owner, trial_id)
            wrote["checkpoints"][uuid] = trial_id
        wrote["command"] = conn.execute(cm.insert().values(
            description="carol's shell", owner="carol", config={"entrypoint": ["true"]}, state="TERMINATED",
            exit_code=0, created_at=1.0, ended_at=2.0)).inserted_primary_key[0]
    return wrote


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'old.db'}"


@pytest.fixture
def upgraded(db_url: str, tmp_path: pathlib.Path) -> Iterator[tuple[TestClient, dict[str, Any]]]:
    """An admin's client of a master opened on the upgraded old database, and what the old one held."""
    old = Database(db_url)
    _to_0005(old)
    wrote = _fill_0005(old)
    old.dispose()
    Database(db_url).migrate()  # as the new master does at start
    app = create_app(MasterSettings(db_url=db_url, home=tmp_path, ui_metrics_index=False))
    admin = TestClient(app)
    as_admin(admin)
    yield admin, wrote
    admin.close()
    app.state.master.db.dispose()


def _ok(reply: Any) -> Any:
    assert reply.status_code == 200, f"{reply.request.method} {reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json()


def test_every_experiment_trial_metric_and_checkpoint_stays_with_its_owner(
        upgraded: tuple[TestClient, dict[str, Any]]) -> None:
    admin, wrote = upgraded
    listed = _ok(admin.get("/api/v1/experiments"))["experiments"]
    assert {e["id"]: e["owner"] for e in listed} == {i: o for i, (o, _) in wrote["experiments"].items()}
    for exp_id, (owner, trial_id) in wrote["experiments"].items():
        detail = _ok(admin.get(f"/api/v1/experiments/{exp_id}"))
        assert detail["experiment"]["owner"] == owner and detail["experiment"]["state"] == "COMPLETED"
        assert [t["id"] for t in detail["trials"]] == [trial_id]
        points = _ok(admin.get(f"/api/v1/trials/{trial_id}/metrics"))["metrics"]
        assert [(p["steps_completed"], p["metrics"]["loss"]) for p in points] == [(s, 1.0 / s) for s in STEPS]
    for uuid, trial_id in wrote["checkpoints"].items():
        ckpt = _ok(admin.get(f"/api/v1/checkpoints/{uuid}"))["checkpoint"]
        assert (ckpt["trial_id"], ckpt["steps_completed"], ckpt["resources"]) == (trial_id, 4, {"w.bin": 3})
    cmd = _ok(admin.get(f"/api/v1/commands/{wrote['command']}"))["command"]
    assert cmd["owner"] == "carol"


def test_every_experiment_lands_in_uncategorized(upgraded: tuple[TestClient, dict[str, Any]]) -> None:
    admin, wrote = upgraded
    listed = _ok(admin.get("/api/v1/experiments"))["experiments"]
    assert {(e["workspace"], e["project"]) for e in listed} == {("Uncategorized", "Uncategorized")}
    assert len(listed) == len(wrote["experiments"])
    inside = _ok(admin.get("/api/v1/experiments", params={"workspace": "Uncategorized",
                                                         "project": "Uncategorized"}))["experiments"]
    assert {e["id"] for e in inside} == set(wrote["experiments"])
    spaces = _ok(admin.get("/api/v1/workspaces"))["workspaces"]
    assert [(w["name"], w["immutable"], w["numExperiments"]) for w in spaces] == [
        ("Uncategorized", True, len(wrote["experiments"]))]


def test_owners_become_inactive_users_without_a_password_beside_the_bootstrap_admin(
        upgraded: tuple[TestClient, dict[str, Any]]) -> None:
    admin, _ = upgraded
    users = {u["username"]: u for u in _ok(admin.get("/api/v1/users"))["users"]}
    assert set(users) == {"admin", "alice", "bob", "carol", "determined"}
    for name in ("alice", "bob", "carol", "determined"):  # determined was an owner: it stays as the upgrade left it
        assert (users[name]["active"], users[name]["admin"], users[name]["hasPassword"]) == (False, False, False), \
            users[name]
    assert (users["admin"]["active"], users["admin"]["admin"]) == (True, True)
    refused = admin.post("/api/v1/auth/login", json={"username": "bob", "password": ""})
    assert refused.status_code == 403 and "not active" in refused.json()["error"]["message"], refused.text


def test_an_admin_activates_alice_who_then_logs_in_with_the_empty_password(
        upgraded: tuple[TestClient, dict[str, Any]]) -> None:
    admin, wrote = upgraded
    assert _ok(admin.patch("/api/v1/users/alice", json={"active": True}))["user"]["active"] is True
    alice = TestClient(admin.app)
    as_user(alice, "alice", "")
    assert _ok(alice.get("/api/v1/me"))["user"]["username"] == "alice"
    mine = [i for i, (o, _) in wrote["experiments"].items() if o == "alice"]
    listed = _ok(alice.get("/api/v1/experiments", params={"owner": "alice"}))["experiments"]
    assert [e["id"] for e in listed] == mine
    alice.close()
