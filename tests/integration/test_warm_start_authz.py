"""Who may warm-start from what (issue 29, acceptance 5), on the conformance suite's world (a real master in rbac
mode; `authz_world`): starting trials from a checkpoint (`searcher.source_checkpoint_uuid`, or a trial's latest
through `searcher.source_trial_id`) needs view on the checkpoint's experiment, so a Viewer of W2 only, or a
WorkspaceAdmin of W2, is refused with 403 for a checkpoint or trial of W, and learns nothing of W's trials; a
source that names nothing, or a trial without a checkpoint, is a 400 naming the key. An allowed warm start hands
the checkpoint to the trial's first run with its batch count at 0; its restarts resume from its own checkpoints.
The training itself is tests/integration/test_warm_start.py.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Iterator
from typing import Any

import authz_world as aw
import httpx
import pytest
import sqlalchemy as sa

from stalwart.api import permissions as P
from stalwart.db import tables as t
from stalwart.master.identity import tokens

pytestmark = pytest.mark.integration

CONFIG = """name: warm-{serial}
entrypoint: python3 train.py
workspace: {workspace}
project: {project}
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}, {key}: {value}}}
"""
PROJECTS = {"W": "proj-" + aw.SECRET, "W2": "proj-two"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[aw.World]:
    home = tmp_path_factory.mktemp("warm")
    yield from aw.build(home, f"sqlite:///{home / 'm.db'}")


def _create(world: aw.World, caller: httpx.Client, where: str, key: str, value: Any) -> httpx.Response:
    config = CONFIG.format(serial=next(world.serial), workspace=f"team-{where.lower()}", project=PROJECTS[where],
                           key=key, value=value)
    return caller.post("/api/v1/experiments", json={"config": config, "context": world.context, "activate": True})


def _refused(reply: httpx.Response, status: int, *words: str) -> None:
    assert reply.status_code == status, f"{reply.status_code} {reply.text[:400]}"
    for word in words:
        assert word in reply.text, (word, reply.text[:400])


def test_without_view_on_the_source_it_is_403(world: aw.World) -> None:
    uuid, w_trial = world.values["uuid"], world.trials["E"]
    viewer = world.new_user("warm-w2-viewer", (("Viewer", "W2"),))
    for key, value in (("source_checkpoint_uuid", uuid), ("source_trial_id", w_trial)):
        _refused(_create(world, viewer, "W2", key, value), 403)
    admin_of_w2 = world.callers["a role elsewhere"]  # WorkspaceAdmin of W2: may create there, may not view W
    for key, value in (("source_checkpoint_uuid", uuid), ("source_trial_id", w_trial)):
        _refused(_create(world, admin_of_w2, "W2", key, value), 403, P.VIEW_EXPERIMENTS.name)
    # a trial of W without a checkpoint is refused the same way: nothing about W's trials leaks out as a 400
    reply = _create(world, admin_of_w2, "W2", "source_trial_id", world.trials["E3"])  # W's, no checkpoint
    _refused(reply, 403, P.VIEW_EXPERIMENTS.name)
    assert "no completed checkpoint" not in reply.text and aw.SECRET not in reply.text


def test_a_source_that_names_no_checkpoint_is_400_naming_the_key(world: aw.World) -> None:
    admin_of_w2 = world.callers["a role elsewhere"]
    unknown = str(uuidlib.uuid4())
    _refused(_create(world, admin_of_w2, "W2", "source_checkpoint_uuid", unknown), 400,
             f"searcher.source_checkpoint_uuid: no completed checkpoint {unknown}")
    _refused(_create(world, admin_of_w2, "W2", "source_trial_id", 999_999), 400, "searcher.source_trial_id")
    fresh = world.new_experiment("W2", activate=True)  # E2 has checkpoints now (W2's model registers one)
    bare = aw.ok(world.admin.get(f"/api/v1/experiments/{fresh}/trials"))["trials"][0]["id"]
    _refused(_create(world, admin_of_w2, "W2", "source_trial_id", bare), 400,
             f"searcher.source_trial_id: trial {bare} has no completed checkpoint")


def _order(world: aw.World, allocation_id: str) -> dict[str, Any]:
    actions = aw.ok(httpx.get(f"{world.url}/api/v1/agents/a0/actions", headers=world.agent_headers))
    return next(s for s in actions["start"] if s["allocation_id"] == allocation_id)


def _starts_from(order: dict[str, Any], uuid: str, steps: int) -> None:
    assert order["env"]["DET_LATEST_CHECKPOINT"] == uuid and order["info"]["latest_checkpoint"] == uuid
    assert order["env"]["DET_STEPS_COMPLETED"] == str(steps) and order["info"]["trial"]["steps_completed"] == steps


def test_view_on_the_source_is_enough_and_the_trial_starts_from_it_at_batch_0(world: aw.World) -> None:
    uuid = world.values["uuid"]  # E's checkpoint, at steps_completed 1
    both = world.new_user("warm-w2-editor-w-viewer", (("Editor", "W2"), ("Viewer", "W")))
    exp_id = int(aw.ok(_create(world, both, "W2", "source_checkpoint_uuid", uuid))["experiment"]["id"])
    allocation_id, trial_id = aw._live_allocation(world, exp_id)
    _starts_from(_order(world, allocation_id), uuid, 0)

    own = str(uuidlib.uuid4())  # the trial saves a checkpoint of its own, then its process fails
    headers = {tokens.ALLOCATION_HEADER: world.master.allocation_token(allocation_id)}
    aw.ok(httpx.post(f"{world.url}/api/v1/checkpoints", headers=headers, json={
        "trial_id": trial_id, "uuid": own, "metadata": {"steps_completed": 3}, "resources": {"w": 1}}))
    assert aw.ok(both.get(f"/api/v1/trials/{trial_id}"))["latest_checkpoint"]["uuid"] == own
    aw.ok(httpx.post(f"{world.url}/api/v1/allocations/{allocation_id}/exited", headers=world.agent_headers,
                     json={"agent_id": "a0", "exit_code": 1}))
    again = _next_allocation(world, trial_id, allocation_id)
    _starts_from(_order(world, again), own, 3)  # the restart resumes from its own checkpoint
    aw.ok(world.admin.post(f"/api/v1/experiments/{exp_id}/kill", json={}))


def _next_allocation(world: aw.World, trial_id: int, previous: str) -> str:
    """The allocation of the trial's restart, once the scheduling pass has made it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with world.master.db.begin() as conn:
            found = conn.execute(sa.select(t.allocations.c.id).where(
                t.allocations.c.trial_id == trial_id, t.allocations.c.id != previous)).scalar()
        if found is not None:
            return str(found)
        time.sleep(0.1)
    raise AssertionError(f"trial {trial_id} was not restarted")
