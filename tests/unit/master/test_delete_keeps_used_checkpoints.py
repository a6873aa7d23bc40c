"""Deleting an experiment (issue 26): every file of it leaves storage (checkpoints, TensorBoard event files), except
the checkpoints another experiment's trials started from, which the answer lists with the reason; a warm start
(`searcher.source_trial_id` / `source_checkpoint_uuid`) records the checkpoint each trial starts from and is refused
when it names none; checkpoint GC keeps what another experiment started from too. Through the typed client against
an in-process master on SQLite and PostgreSQL.
"""

from __future__ import annotations

import base64
import pathlib
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from helpers_auth import as_admin
from stalwart.api.errors import InvalidRequest
from stalwart.api.states import ExitReason
from stalwart.client import Client
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.allocations import lifecycle
from stalwart.master.app import create_app
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments, intake, trials
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings
from stalwart.storage import make_storage

CONFIG = """
name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}{extra}}}
checkpoint_storage: {{type: shared_fs, host_path: {ckpts}, save_trial_latest: {latest}, save_trial_best: {latest},
                     save_experiment_best: 0}}
"""


class World:
    """An in-process master with one agent of one slot; its trials are driven by hand."""

    def __init__(self, app: Any, tmp: pathlib.Path, client: Client) -> None:
        self.app, self.client, self.tmp = app, client, tmp
        self.m: Master = app.state.master
        ctx = tmp / "ctx"
        ctx.mkdir()
        (ctx / "train.py").write_text("print('x')\n")
        self.archive = pack_context(ctx).data
        self.context = base64.b64encode(self.archive).decode()
        self.ckpts = tmp / "ckpts"

    def create(self, name: str, extra: str = "", latest: int = 5) -> int:
        text = CONFIG.format(name=name, extra=extra, ckpts=self.ckpts, latest=latest)
        exp_id, _ = experiments.create_experiment(self.m, text, self.archive, activate=True, owner="admin")
        assert exp_id is not None
        return exp_id

    def trial_of(self, exp_id: int) -> dict[str, Any]:
        with self.m.db.begin() as conn:
            return dict(conn.execute(sa.select(t.trials).where(t.trials.c.experiment_id == exp_id)).mappings().one())

    def train(self, exp_id: int, steps: tuple[int, ...] = (5, 10)) -> list[str]:
        """Run the experiment's trial to the end: a checkpoint at each of `steps`, TensorBoard files as the harness
        writes them, exit 0. The checkpoints' uuids."""
        alloc = self.start(exp_id)
        uuids = [self.checkpoint(alloc, s) for s in steps]
        self.end(exp_id, alloc)
        return uuids

    def start(self, exp_id: int) -> dict[str, Any]:
        """The experiment's trial runs (its allocation) and has written TensorBoard files as the harness does."""
        scheduling.tick(self.m)
        with self.m.db.begin() as conn:
            alloc = dict(conn.execute(sa.select(t.allocations).where(
                t.allocations.c.state != "TERMINATED")).mappings().one())
        tb = self.ckpts / "tensorboard" / "experiment" / str(exp_id) / "trial" / str(alloc["trial_id"])
        tb.mkdir(parents=True)
        (tb / "events.out.tfevents.1").write_bytes(b"x")
        return alloc

    def end(self, exp_id: int, alloc: dict[str, Any]) -> None:
        with self.m.db.begin() as conn:
            lifecycle.allocation_exited(self.m, conn, alloc["id"], 0, ExitReason.EXITED)
        assert self.client.get_experiment(exp_id).experiment.state.value == "COMPLETED"

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

    def checkpoint_rows(self) -> set[str]:
        with self.m.db.begin() as conn:
            return set(conn.execute(sa.select(t.checkpoints.c.uuid)).scalars())


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


def test_a_deleted_experiment_keeps_only_the_checkpoint_a_fork_started_from(world: World) -> None:
    first = world.create("first")
    older, latest = world.train(first)
    source_trial = world.trial_of(first)["id"]
    fork = world.create("fork", extra=f", source_trial_id: {source_trial}")
    assert world.trial_of(fork)["source_checkpoint_uuid"] == latest  # the warm start: the trial's latest
    with world.m.db.begin() as conn:
        assert trials.latest_checkpoint(conn, world.trial_of(fork)["id"])["uuid"] == latest

    done = world.client.delete_experiment(first)
    fork_trial = world.trial_of(fork)["id"]
    assert [(k.uuid, k.reason) for k in done.kept_checkpoints] == [
        (latest, f"trial {fork_trial} of experiment {fork} started from it; experiment {fork}'s config starts its "
                 f"trials from trial {source_trial}'s latest checkpoint (searcher.source_trial_id)")]
    assert done.deleted_checkpoints == 1
    assert not (world.ckpts / older).exists() and (world.ckpts / latest / "weights.bin").exists()
    assert not (world.ckpts / "tensorboard" / "experiment" / str(first)).exists()
    assert world.checkpoint_rows() == {latest}
    with world.m.db.begin() as conn:  # the fork's next run still starts from it
        assert trials.latest_checkpoint(conn, fork_trial)["uuid"] == latest

    world.train(fork, steps=(12,))
    assert world.client.delete_experiment(fork).kept_checkpoints == []
    assert world.checkpoint_rows() == set()  # nothing uses the kept one any more: it went with the fork
    assert not (world.ckpts / latest).exists()


def test_a_checkpoint_named_by_another_config_is_kept_and_the_others_go(world: World) -> None:
    first = world.create("first")
    older, latest = world.train(first)
    other = world.create("other", extra=f", source_checkpoint_uuid: {older}")
    done = world.client.delete_experiment(first)
    other_trial = world.trial_of(other)["id"]
    assert [k.uuid for k in done.kept_checkpoints] == [older]
    assert done.kept_checkpoints[0].reason.startswith(f"trial {other_trial} of experiment {other} started from it")
    assert (world.ckpts / older).exists() and not (world.ckpts / latest).exists()


def test_a_warm_start_must_name_a_completed_checkpoint(world: World) -> None:
    first = world.create("first")
    trial_id = world.trial_of(first)["id"]  # not trained yet: no checkpoint
    with pytest.raises(InvalidRequest) as err:
        world.client.create_experiment(CONFIG.format(name="x", extra=f", source_trial_id: {trial_id}",
                                                     ckpts=world.ckpts, latest=1), world.context)
    assert f"searcher.source_trial_id: trial {trial_id} has no completed checkpoint" in err.value.full_message()
    with pytest.raises(InvalidRequest) as err:
        world.client.create_experiment(CONFIG.format(name="x", extra=", source_checkpoint_uuid: nope",
                                                     ckpts=world.ckpts, latest=1), world.context)
    assert "searcher.source_checkpoint_uuid: no completed checkpoint nope" in err.value.full_message()
    assert world.client.list_experiments().total == 1


def test_checkpoint_gc_keeps_what_another_experiment_started_from(world: World) -> None:
    first = world.create("first", latest=1)  # keeps only each trial's latest checkpoint
    alloc = world.start(first)
    early = world.checkpoint(alloc, 5)
    other = world.create("other", extra=f", source_checkpoint_uuid: {early}")
    late = world.checkpoint(alloc, 10)
    world.end(first, alloc)  # the GC of the ended trial: `early` is no longer its latest
    assert (world.ckpts / early).exists() and (world.ckpts / late).exists()
    assert world.client.get_checkpoint(early).checkpoint.state == "COMPLETED"
    assert world.trial_of(other)["source_checkpoint_uuid"] == early
