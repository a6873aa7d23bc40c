"""Changing an experiment's checkpoint GC policy after the fact (PATCH /api/v1/experiments/{id}/checkpoint-gc-policy)
through the typed client against an in-process master (SQLite, PostgreSQL) whose trials are driven by hand: the dry
run changes nothing; applying deletes files and marks rows; a running trial keeps its latest checkpoint and its later
GC follows the new policy; a checkpoint another experiment starts from stays; bad input is refused naming what is
wrong."""

from __future__ import annotations

import pathlib
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.api.errors import InvalidRequest, NotFoundError
from stalwart.api.states import ExitReason
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.app import create_app
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, intake
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.storage import make_storage

CONFIG = """
name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 20}}{extra}}}
checkpoint_storage: {{type: shared_fs, host_path: {ckpts}, save_trial_latest: 5, save_trial_best: 0,
                     save_experiment_best: 0}}
"""
NONE_KEPT = {"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0}


class World:
    """An in-process master with one agent of one slot; its trials are driven by hand."""

    def __init__(self, app: Any, tmp: pathlib.Path, client: Client) -> None:
        self.app, self.client, self.tmp = app, client, tmp
        self.m: Master = app.state.master
        ctx = tmp / "ctx"
        ctx.mkdir()
        (ctx / "train.py").write_text("print('x')\n")
        self.archive = pack_context(ctx).data
        self.ckpts = tmp / "ckpts"

    def create(self, name: str, extra: str = "") -> int:
        text = CONFIG.format(name=name, extra=extra, ckpts=self.ckpts)
        exp_id, _ = experiments.create_experiment(self.m, text, self.archive, activate=True, owner="admin")
        assert exp_id is not None
        return exp_id

    def start(self) -> dict[str, Any]:
        scheduling.tick(self.m)
        with self.m.db.begin() as conn:
            return dict(conn.execute(sa.select(t.allocations).where(
                t.allocations.c.state != "TERMINATED")).mappings().one())

    def checkpoint(self, alloc: dict[str, Any], steps: int) -> str:
        uuid = str(uuidlib.uuid4())
        src = self.tmp / "src" / uuid
        src.mkdir(parents=True)
        (src / "weights.bin").write_bytes(b"w")
        make_storage({"type": "shared_fs", "host_path": str(self.ckpts)}).upload(src, uuid)
        intake.register_checkpoint(self.m, alloc["id"], {"trial_id": alloc["trial_id"], "uuid": uuid,
                                                         "metadata": {"steps_completed": steps},
                                                         "resources": {"weights.bin": 1}})
        return uuid

    def end(self, alloc: dict[str, Any]) -> None:
        with self.m.db.begin() as conn:
            lifecycle.allocation_exited(self.m, conn, alloc["id"], 0, ExitReason.EXITED)

    def states(self) -> dict[str, str]:
        with self.m.db.begin() as conn:
            return {r.uuid: r.state for r in conn.execute(sa.select(t.checkpoints.c.uuid, t.checkpoints.c.state))}

    def on_disk(self) -> set[str]:
        return {p.name for p in self.ckpts.iterdir() if p.name != "tensorboard"} if self.ckpts.exists() else set()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[World]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
    app = create_app(MasterSettings(db_url=url, home=tmp_path, ui_metrics_index=False))
    agents.register(app.state.master, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    client = Client("http://testserver")
    client._http = TestClient(app)  # no `with`: the test's own scheduling ticks are the only ones
    as_admin(client._http)
    yield World(app, tmp_path, client)
    client.close()
    app.state.master.db.dispose()


def test_a_running_trial_keeps_its_latest_and_its_later_gc_follows_the_new_policy(world: World) -> None:
    exp = world.create("running")
    alloc = world.start()
    first, second, third = (world.checkpoint(alloc, s) for s in (5, 10, 15))

    preview = world.client.change_gc_policy(exp, **NONE_KEPT, dry_run=True)
    assert [c.uuid for c in preview.to_delete] == [first, second]
    assert [(c.uuid, c.reason) for c in preview.to_keep] == [
        (third, f"trial {alloc['trial_id']} has not ended: it resumes from its latest checkpoint")]
    assert world.states() == dict.fromkeys((first, second, third), "COMPLETED")  # the dry run changed nothing
    assert world.on_disk() == {first, second, third}
    assert world.client.get_experiment(exp).config["checkpoint_storage"]["save_trial_latest"] == 5

    done = world.client.change_gc_policy(exp, **NONE_KEPT)
    assert not done.dry_run and [c.uuid for c in done.to_delete] == [first, second] and done.not_deleted == []
    assert world.states() == {first: "DELETED", second: "DELETED", third: "COMPLETED"}
    assert world.on_disk() == {third}
    storage = world.client.get_experiment(exp).config["checkpoint_storage"]
    assert {k: storage[k] for k in NONE_KEPT} == NONE_KEPT and storage["type"] == "shared_fs"

    world.end(alloc)  # the trial's own GC at its end reads the stored policy: nothing is kept now
    assert world.states() == dict.fromkeys((first, second, third), "DELETED")
    assert world.on_disk() == set()


def test_a_checkpoint_another_experiment_starts_from_stays(world: World) -> None:
    first = world.create("first")
    alloc = world.start()
    older, latest = world.checkpoint(alloc, 5), world.checkpoint(alloc, 10)
    world.end(alloc)
    other = world.create("other", extra=f", source_checkpoint_uuid: {older}")
    other_trial = world.client.get_experiment(other).trials[0].id

    done = world.client.change_gc_policy(first, **NONE_KEPT)
    assert [c.uuid for c in done.to_delete] == [latest]
    assert [(c.uuid, c.reason) for c in done.to_keep] == [
        (older, f"trial {other_trial} of experiment {other} started from it")]
    assert world.states() == {older: "COMPLETED", latest: "DELETED"} and world.on_disk() == {older}


def test_bad_input_is_refused_naming_what_is_wrong(world: World) -> None:
    exp = world.create("plain")
    with pytest.raises(InvalidRequest, match="save_trial_best"):  # the client refuses it before sending
        world.client.change_gc_policy(exp, save_experiment_best=0, save_trial_best=-1, save_trial_latest=1)
    with pytest.raises(NotFoundError, match="experiment 999"):
        world.client.change_gc_policy(999, **NONE_KEPT, dry_run=True)
    http = world.client._http  # the TestClient the fixture put there: a raw call, past the client's own checks
    url = f"/api/v1/experiments/{exp}/checkpoint-gc-policy"
    for payload, named in (({**NONE_KEPT, "save_trial_latest": -3}, "save_trial_latest"),
                           ({"save_trial_best": 1, "save_trial_latest": 1}, "save_experiment_best"),
                           ({**NONE_KEPT, "save_trial_lates": 2}, "save_trial_lates"),
                           ({**NONE_KEPT, "save_experiment_best": "many"}, "save_experiment_best")):
        reply = http.patch(url, json=payload)
        assert reply.status_code == 400 and named in reply.text, (payload, reply.text)
    assert world.client.get_experiment(exp).config["checkpoint_storage"]["save_trial_latest"] == 5


def test_a_policy_that_deletes_nothing_is_still_stored(world: World) -> None:
    exp = world.create("keep-all")
    alloc = world.start()
    only = world.checkpoint(alloc, 5)
    world.end(alloc)
    done = world.client.change_gc_policy(exp, save_experiment_best=3, save_trial_best=2, save_trial_latest=1)
    assert done.to_delete == [] and [(c.uuid, c.reason) for c in done.to_keep] == [(only, "latest of trial 1")]
    storage = world.client.get_experiment(exp).config["checkpoint_storage"]
    assert (storage["save_experiment_best"], storage["save_trial_best"], storage["save_trial_latest"]) == (3, 2, 1)
