"""Editing, listing, deleting and continuing experiments, deleting checkpoints and filtering trial logs, through the
typed client against an in-process master (its real routes, state machine and SQLite database)."""

from __future__ import annotations

import contextlib
import pathlib
import subprocess
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.api.errors import InvalidRequest, InvalidStateError, NotFoundError, StalwartError
from stalwart.api.states import ExitReason
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.app import create_app
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, intake
from stalwart.master.logs import insert_logs
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.storage import make_storage

CONFIG = """
name: {name}
labels: {labels}
entrypoint: python3 train.py
hyperparameters: {{lr: 0.1}}
searcher: {{name: {searcher}, metric: loss, max_length: {{batches: 10}}{extra}}}
max_restarts: 1
checkpoint_storage: {{type: shared_fs, host_path: {ckpts}, save_trial_latest: 5, save_trial_best: 5}}
"""


class Admin:
    """An in-process master, its typed client, and ways to drive its trials."""

    def __init__(self, app: Any, tmp: pathlib.Path, client: Client) -> None:
        self.app, self.tmp, self.client = app, tmp, client
        self.m: Master = app.state.master
        ctx = tmp / "ctx"
        ctx.mkdir(exist_ok=True)
        (ctx / "train.py").write_text("print('x')\n")
        self.archive = pack_context(ctx).data
        self.ckpts = tmp / "ckpts"

    def create(self, name: str = "exp", labels: list[str] | None = None, owner: str = "me", searcher: str = "single",
               extra: str = "", activate: bool = True) -> int:
        text = CONFIG.format(name=name, labels=labels or [], searcher=searcher, extra=extra, ckpts=self.ckpts)
        exp_id, _ = experiments.create_experiment(self.m, text, self.archive, activate=activate, owner=owner)
        assert exp_id is not None
        return exp_id

    def rows(self, table: sa.Table, **where: Any) -> list[dict[str, Any]]:
        with self.m.db.begin() as conn:
            q = sa.select(table)
            for k, v in where.items():
                q = q.where(table.c[k] == v)
            return [dict(r) for r in conn.execute(q).mappings()]

    def live_alloc(self) -> dict[str, Any]:
        scheduling.tick(self.m)
        live = [a for a in self.rows(t.allocations) if a["state"] != "TERMINATED"]
        assert len(live) == 1, live
        return live[0]

    def checkpoint(self, alloc: dict[str, Any], steps: int) -> str:
        """A checkpoint written to shared_fs storage and registered by the allocation's trial."""
        ckpt_uuid = str(uuidlib.uuid4())
        src = self.tmp / "src" / ckpt_uuid
        src.mkdir(parents=True)
        (src / "weights.bin").write_bytes(b"w" * 10)
        make_storage({"type": "shared_fs", "host_path": str(self.ckpts)}).upload(src, ckpt_uuid)
        intake.register_checkpoint(self.m, alloc["id"], {
            "trial_id": alloc["trial_id"], "uuid": ckpt_uuid, "metadata": {"steps_completed": steps},
            "resources": {"weights.bin": 10}})
        return ckpt_uuid

    def exit(self, alloc: dict[str, Any], code: int | None) -> None:
        with self.m.db.begin() as conn:
            lifecycle.allocation_exited(self.m, conn, alloc["id"], code, ExitReason.EXITED)

    def kill(self, exp_id: int) -> None:
        """Kill the experiment and report its live run gone: it ends CANCELED."""
        experiments.kill(self.m, exp_id)
        for alloc in self.rows(t.allocations):
            if alloc["state"] != "TERMINATED":
                self.exit(alloc, 137)
        assert self.state(exp_id) == "CANCELED"

    def state(self, exp_id: int) -> str:
        return self.client.get_experiment(exp_id).experiment.state.value


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def admin(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Admin]:
    """On SQLite and on PostgreSQL: the list filters (labels in a JSON column) are SQL of each dialect."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
    app = create_app(MasterSettings(db_url=url, home=tmp_path, ui_metrics_index=False))
    agents.register(app.state.master, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    # no `with`: the app's background scheduler loop stays off, so the test's own ticks are the only ones
    client = Client("http://testserver")
    client._http = TestClient(app)  # the typed client over the in-process app
    as_admin(client._http)
    yield Admin(app, tmp_path, client)
    client.close()
    app.state.master.db.dispose()


def _bad(err: pytest.ExceptionInfo[StalwartError], *words: str) -> None:
    for word in words:
        assert word in err.value.full_message(), err.value.full_message()


# -- PATCH ------------------------------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_given(admin: Admin) -> None:
    exp_id = admin.create("first", labels=["a", "b"])
    got = admin.client.patch_experiment(exp_id, notes="lr too high?").experiment
    assert (got.name, got.notes, got.labels, got.description) == ("first", "lr too high?", ["a", "b"], None)
    got = admin.client.patch_experiment(exp_id, name="renamed", description="d", labels=["x"]).experiment
    assert (got.name, got.description, got.notes, got.labels) == ("renamed", "d", "lr too high?", ["x"])
    detail = admin.client.get_experiment(exp_id)
    assert detail.experiment.notes == "lr too high?"
    assert detail.config["name"] == "renamed" and detail.config["labels"] == ["x"]
    assert admin.client.patch_experiment(exp_id, labels=[]).experiment.labels == []


def test_patch_refuses_bad_input(admin: Admin) -> None:
    exp_id = admin.create()
    http = admin.client._http
    for body, word in (({"name": None}, "name"), ({"name": ""}, "name"), ({"labels": [""]}, "labels"),
                       ({"labels": "x"}, "labels"), ({"name": "n" * 513}, "name"), ({"nmae": "x"}, "nmae"),
                       ({"labels": None}, "labels")):
        reply = http.patch(f"/api/v1/experiments/{exp_id}", json=body)
        assert reply.status_code == 400 and word in reply.text, (body, reply.text)
    with pytest.raises(NotFoundError):
        admin.client.patch_experiment(exp_id + 100, name="x")
    assert admin.client.get_experiment(exp_id).experiment.name == "exp"


# -- list filters and sorting --------------------------------------------------------------------------------------


def test_list_filters_and_sorts_on_the_server(admin: Admin) -> None:
    a = admin.create("Alpha 100%", labels=["vision", "big"], owner="ann")
    b = admin.create("beta", labels=["vision"], owner="bob", activate=False)
    c = admin.create("gamma alpha", labels=["nlp"], owner="ann")
    admin.kill(c)
    admin.client.experiment_action(c, "archive")
    ids = lambda **kw: [e.id for e in admin.client.list_experiments(**kw).experiments]  # noqa: E731
    assert ids() == [b, a]  # archived hidden by default, newest first
    assert ids(include_archived=True) == [c, b, a]
    assert ids(states=["PAUSED"]) == [b]
    assert ids(states=["ACTIVE", "PAUSED"], order_by="asc") == [a, b]
    assert ids(labels=["vision"]) == [b, a]
    assert ids(labels=["vision", "big"]) == [a]
    assert ids(name="ALPHA", include_archived=True) == [c, a]
    assert ids(name="100%") == [a]
    assert ids(name="%") == [a]  # a literal %, not a wildcard
    assert ids(owner="ann", include_archived=True) == [c, a]
    assert ids(sort_by="name", order_by="asc", include_archived=True) == [a, b, c]
    page = admin.client.list_experiments(limit=1, offset=1, include_archived=True)
    assert [e.id for e in page.experiments] == [b] and page.total == 3
    assert admin.client.list_experiments(states=["CANCELED"]).total == 0
    # comma-separated values work as repeated keys do
    assert admin.client.get("/experiments", states="ACTIVE,PAUSED")["total"] == 2


def test_list_refuses_unknown_values(admin: Admin) -> None:
    with pytest.raises(InvalidRequest) as err:
        admin.client.list_experiments(states=["RUNNING"])
    _bad(err, "states", "RUNNING")
    for params in ({"sort_by": "color"}, {"order_by": "up"}):
        reply = admin.client._http.get("/api/v1/experiments", params=params)
        assert reply.status_code == 400 and next(iter(params)) in reply.text, reply.text


# -- trial log filters ---------------------------------------------------------------------------------------------


def _logged(admin: Admin) -> int:
    admin.create()
    trial_id = admin.rows(t.trials)[0]["id"]
    lines = [("INFO", 100.0, "loading data"), ("WARNING", 200.0, "slow batch"), ("ERROR", 300.0, "nan loss 50%"),
             ("INFO", 400.0, "batch 1 done"), ("INFO", 500.0, "batch 2 done")]
    with admin.m.db.begin() as conn:
        insert_logs(conn, [{"trial_id": trial_id, "log": text, "level": level, "timestamp": ts, "source": "task",
                            "stdtype": "stdout"} for level, ts, text in lines])
    return trial_id


def _texts(admin: Admin, trial_id: int, **kw: Any) -> list[str]:
    return [e.log for e in admin.client.stream_trial_logs(trial_id, **kw)]


def test_log_filters_run_in_the_query(admin: Admin) -> None:
    trial_id = _logged(admin)
    assert _texts(admin, trial_id, levels=["WARNING", "ERROR"]) == ["slow batch", "nan loss 50%"]
    assert _texts(admin, trial_id, since=300) == ["nan loss 50%", "batch 1 done", "batch 2 done"]
    assert _texts(admin, trial_id, since="1970-01-01T00:06:40Z") == ["batch 1 done", "batch 2 done"]
    assert _texts(admin, trial_id, grep="batch") == ["slow batch", "batch 1 done", "batch 2 done"]
    assert _texts(admin, trial_id, grep="50%") == ["nan loss 50%"]
    assert _texts(admin, trial_id, head=2) == ["loading data", "slow batch"]
    assert _texts(admin, trial_id, tail=2) == ["batch 1 done", "batch 2 done"]
    assert _texts(admin, trial_id, levels=["INFO"], tail=2) == ["batch 1 done", "batch 2 done"]
    assert _texts(admin, trial_id, levels=["INFO"], head=1, grep="done") == ["batch 1 done"]
    assert _texts(admin, trial_id, tail=50) == _texts(admin, trial_id)


@pytest.mark.parametrize("params, word", [
    ({"follow": "true", "head": 1}, "head"),
    ({"head": 1, "tail": 1}, "tail"),
    ({"levels": "LOUD"}, "levels"),
    ({"since": "yesterday"}, "since"),
    ({"since": "nan"}, "since"),
    ({"head": 0}, "head"),
])
def test_log_filters_refuse_bad_values(admin: Admin, params: dict[str, Any], word: str) -> None:
    trial_id = _logged(admin)
    reply = admin.client._http.get(f"/api/v1/trials/{trial_id}/logs", params=params)
    assert reply.status_code == 400 and word in reply.json()["error"]["message"], reply.text


# -- deleting checkpoints and experiments ----------------------------------------------------------------------------


def _trained(admin: Admin, steps: tuple[int, ...] = (5, 10)) -> tuple[int, list[str]]:
    """A COMPLETED single-trial experiment with checkpoints at `steps`."""
    exp_id = admin.create()
    alloc = admin.live_alloc()
    uuids = [admin.checkpoint(alloc, s) for s in steps]
    admin.exit(alloc, 0)
    assert admin.state(exp_id) == "COMPLETED"
    return exp_id, uuids


def test_delete_checkpoints_removes_files_then_marks_them_deleted(admin: Admin) -> None:
    _, (first, second) = _trained(admin)
    assert (admin.ckpts / first / "weights.bin").exists()
    with pytest.raises(NotFoundError) as err:
        admin.client.delete_checkpoints([first, "no-such-uuid"])
    _bad(err, "no-such-uuid")
    assert (admin.ckpts / first).exists() and admin.client.get_checkpoint(first).checkpoint.state == "COMPLETED"
    admin.client.delete_checkpoints([first])
    assert not (admin.ckpts / first).exists() and (admin.ckpts / second).exists()
    assert admin.client.get_checkpoint(first).checkpoint.state == "DELETED"
    admin.client.delete_checkpoints([first])  # already deleted: nothing to do
    reply = admin.client._http.request("DELETE", "/api/v1/checkpoints", json={"uuids": []})
    assert reply.status_code == 400 and "uuids" in reply.text


@contextlib.contextmanager
def _undeletable(path: pathlib.Path) -> Iterator[None]:
    """A file under `path` that not even root can remove (the immutable attribute), for as long as the block lasts."""
    victim = next(p for p in path.rglob("*") if p.is_file())
    if subprocess.run(["chattr", "+i", str(victim)], capture_output=True).returncode != 0:
        pytest.skip("this file system cannot make a file immutable (chattr +i), so no real deletion failure")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(victim)], check=True)


def test_a_storage_failure_keeps_the_records(admin: Admin) -> None:
    exp_id, (first, _second) = _trained(admin)
    with _undeletable(admin.ckpts / first):
        with pytest.raises(StalwartError) as err:
            admin.client.delete_checkpoints([first])
        _bad(err, first)
        assert admin.client.get_checkpoint(first).checkpoint.state == "COMPLETED"
        with pytest.raises(StalwartError) as err:
            admin.client.delete_experiment(exp_id)
        _bad(err, first)
        assert admin.state(exp_id) == "COMPLETED" and len(admin.client.experiment_checkpoints(exp_id).checkpoints) == 2
    admin.client.delete_checkpoints([first])  # once the files can go, they do
    assert not (admin.ckpts / first).exists()


def test_delete_experiment_only_when_finished_and_everything_goes(admin: Admin) -> None:
    running = admin.create()
    with pytest.raises(InvalidStateError) as err:
        admin.client.delete_experiment(running)
    _bad(err, "ACTIVE", "cancel or kill")
    admin.kill(running)
    exp_id, uuids = _trained(admin)
    trial_id = admin.rows(t.trials, experiment_id=exp_id)[0]["id"]
    admin.client.delete_experiment(exp_id)
    assert not any((admin.ckpts / u).exists() for u in uuids)
    with pytest.raises(NotFoundError):
        admin.client.get_experiment(exp_id)
    for table in (t.trials, t.contexts, t.jobs):
        key = {"trials": "experiment_id", "contexts": "experiment_id", "jobs": "entity_id"}[table.name]
        assert admin.rows(table, **{key: exp_id}) == []
    for table in (t.checkpoints, t.metrics, t.task_logs, t.allocations):
        assert admin.rows(table, trial_id=trial_id) == []
    assert admin.client.get_experiment(running).experiment.state.value == "CANCELED"  # the other one stays
    with pytest.raises(NotFoundError):
        admin.client.delete_experiment(exp_id)


# -- continue --------------------------------------------------------------------------------------------------------


def test_continue_trains_the_same_trial_further_from_its_latest_checkpoint(admin: Admin) -> None:
    exp_id, (_first, latest) = _trained(admin)
    trial = admin.rows(t.trials)[0]
    got = admin.client.continue_experiment(exp_id, {"searcher": {"max_length": {"batches": 20}}, "max_restarts": 3})
    assert got.experiment.state.value == "ACTIVE" and got.experiment.ended_at is None
    again = admin.rows(t.trials)[0]
    assert (again["id"], again["state"], again["target_length"], again["restarts"]) == (trial["id"], "ACTIVE", 20, 0)
    alloc = admin.live_alloc()
    assert alloc["trial_id"] == trial["id"] and alloc["run_id"] == 2
    order = agents.pending_actions(admin.m, "a0")["start"][0]
    assert order["env"]["DET_LATEST_CHECKPOINT"] == latest and order["env"]["DET_STEPS_COMPLETED"] == "10"
    assert order["info"]["trial"]["target_length"] == 20
    assert admin.client.get_experiment(exp_id).config["searcher"]["max_length"] == {"batches": 20}
    # the longer max_restarts counts from zero: three failures are restarts, the fourth ends it
    for _ in range(3):
        admin.exit(admin.live_alloc(), 1)
        assert admin.rows(t.trials)[0]["state"] == "ACTIVE"
    admin.exit(admin.live_alloc(), 1)
    assert admin.state(exp_id) == "ERROR"
    # an experiment that ended in ERROR continues too, and completes
    admin.client.continue_experiment(exp_id, {})
    admin.exit(admin.live_alloc(), 0)
    assert admin.state(exp_id) == "COMPLETED"


def test_continue_refuses_what_it_cannot_do(admin: Admin) -> None:
    running = admin.create()
    with pytest.raises(InvalidStateError) as err:
        admin.client.continue_experiment(running, {})
    _bad(err, "ACTIVE")
    admin.kill(running)
    exp_id, _ = _trained(admin)
    for overrides, words in (
        ({"hyperparameters": {"lr": 0.2}}, ("hyperparameters",)),
        ({"searcher": {"name": "random"}}, ("searcher.name",)),
        ({"searcher": {"max_length": {"batches": -5}}}, ("searcher.max_length",)),
        ({"max_restarts": "many"}, ("max_restarts",)),
    ):
        with pytest.raises(InvalidRequest) as err:
            admin.client.continue_experiment(exp_id, overrides)
        _bad(err, *words)
        assert admin.state(exp_id) == "COMPLETED"
    many = admin.create(searcher="random", extra=", max_trials: 2")
    admin.kill(many)
    with pytest.raises(InvalidStateError) as err:
        admin.client.continue_experiment(many, {})
    _bad(err, "2 trials", "single-trial")
    with pytest.raises(NotFoundError):
        admin.client.continue_experiment(exp_id + 100, {})
    reply = admin.client._http.post(f"/api/v1/experiments/{exp_id}/continue", json={"override": {}})
    assert reply.status_code == 400 and "override" in reply.text
    admin.client.delete_checkpoints([c.uuid for c in admin.client.experiment_checkpoints(exp_id).checkpoints])
    with pytest.raises(InvalidStateError) as err:
        admin.client.continue_experiment(exp_id, {})
    _bad(err, "no checkpoint left")
