"""The model registry's REST API (issue 29) on the conformance suite's world (a real master in rbac mode:
`authz_world`): models and versions end to end with their errors, checkpoint GC keeping a registered checkpoint,
deleting a registered checkpoint or its experiment refused naming the versions, and who may do what (a Viewer or an
Editor of W2 may not register W's checkpoint; a ModelRegistryViewer reads but does not change)."""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Iterator

import authz_world as aw
import httpx
import pytest
import sqlalchemy as sa

from stalwart.api import permissions as P
from stalwart.db import tables as t
from stalwart.master.identity import tokens

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[aw.World]:
    home = tmp_path_factory.mktemp("registry")
    yield from aw.build(home, f"sqlite:///{home / 'm.db'}")


def _says(reply: httpx.Response, status: int, *words: str) -> None:
    assert reply.status_code == status, f"{reply.status_code} {reply.text[:400]}"
    for word in words:
        assert word in reply.text, (word, reply.text[:400])


def test_models_and_versions_end_to_end(world: aw.World) -> None:
    admin, md = world.admin, "/api/v1/models"
    made = aw.ok(admin.post(md, json={"name": "digits cnn", "description": "d", "labels": ["a"],
                                      "metadata": {"k": 1}, "workspace": "team-w"}))["model"]
    assert (made["workspace"], made["username"], made["num_versions"], made["archived"]) == ("team-w", "admin", 0,
                                                                                             False)
    _says(admin.post(md, json={"name": "DIGITS CNN"}), 409, "digits cnn")
    for bad, why in (("  ", "blank"), ("123", "digits"), ("a/b", "slash"), ("a  b", "two spaces")):
        _says(admin.post(md, json={"name": bad}), 400, why)
    _says(admin.post(md, json={"name": "x", "workspace": "nowhere"}), 404, "nowhere")
    assert aw.ok(admin.get(f"{md}/{made['id']}"))["model"]["name"] == "digits cnn"  # by id
    assert [m["name"] for m in aw.ok(admin.get(md, params={"name": "CNN"}))["models"]] == ["digits cnn"]
    changed = aw.ok(admin.patch(f"{md}/digits cnn", json={"name": "digits", "notes": "n", "labels": ["b"]}))["model"]
    assert (changed["name"], changed["notes"], changed["labels"], changed["metadata"]) == ("digits", "n", ["b"],
                                                                                          {"k": 1})
    uuids = [world.new_checkpoint() for _ in range(2)]
    first = aw.ok(admin.post(f"{md}/digits/versions", json={"checkpoint_uuid": uuids[0], "comment": "c"}))
    version = first["model_version"]
    assert (version["version"], version["model_name"], version["checkpoint"]["uuid"]) == (1, "digits", uuids[0])
    assert (version["experiment_id"], version["trial_id"]) == (int(world.values["exp_id"]), world.trials["E"])
    aw.ok(admin.post(f"{md}/digits/versions", json={"checkpoint_uuid": uuids[1]}))
    _says(admin.post(f"{md}/digits/versions", json={"checkpoint_uuid": str(uuidlib.uuid4())}), 404, "checkpoint")
    aw.ok(admin.post(f"{md}/digits/archive"))
    _says(admin.patch(f"{md}/digits", json={"notes": "x"}), 409, "archived")
    _says(admin.post(f"{md}/digits/versions", json={"checkpoint_uuid": uuids[0]}), 409, "archived")
    assert aw.ok(admin.get(md, params={"archived": "true"}))["models"][0]["name"] == "digits"
    aw.ok(admin.post(f"{md}/digits/unarchive"))
    patched = aw.ok(admin.patch(f"{md}/digits/versions/2", json={"name": "v2", "metadata": {"acc": 0.9}}))
    assert (patched["model_version"]["name"], patched["model_version"]["metadata"]) == ("v2", {"acc": 0.9})
    listed = aw.ok(admin.get(f"{md}/digits/versions"))["model_versions"]
    assert [v["version"] for v in listed] == [1, 2]
    assert aw.ok(admin.get(f"{md}/digits"))["model"]["num_versions"] == 2
    _says(admin.get(f"{md}/digits/versions/9"), 404, "version 9")
    aw.ok(admin.delete(f"{md}/digits/versions/1"))
    assert [v["version"] for v in aw.ok(admin.get(f"{md}/digits/versions"))["model_versions"]] == [2]
    aw.ok(admin.delete(f"{md}/digits"))  # with its remaining version
    _says(admin.get(f"{md}/digits"), 404, "digits")
    assert aw.ok(admin.get(f"/api/v1/checkpoints/{uuids[1]}"))["checkpoint"]["state"] == "COMPLETED"
    audited = {(e["method"], e["target"]) for e in aw.ok(admin.get("/api/v1/audit", params={"limit": 1000}))["entries"]}
    assert {("PATCH", "model digits cnn"), ("DELETE", "model digits")} <= audited


def test_gc_keeps_a_registered_checkpoint(world: aw.World) -> None:
    registered, doomed, _latest = (world.new_checkpoint() for _ in range(3))
    aw.ok(world.admin.post("/api/v1/models", json={"name": "kept", "workspace": "team-w"}))
    aw.ok(world.admin.post("/api/v1/models/kept/versions", json={"checkpoint_uuid": registered}))
    policy = {"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0}
    aw.ok(world.admin.patch(f"/api/v1/experiments/{world.values['exp_id']}/checkpoint-gc-policy", json=policy))
    states = {u: aw.ok(world.admin.get(f"/api/v1/checkpoints/{u}"))["checkpoint"]["state"] for u in (registered,
                                                                                                    doomed)}
    assert states == {registered: "COMPLETED", doomed: "DELETED"}


def test_a_workspace_holding_a_model_is_not_deleted(world: aw.World) -> None:
    ws = aw.ok(world.admin.post("/api/v1/workspaces", json={"name": "models-only"}))["workspace"]["id"]
    aw.ok(world.admin.post("/api/v1/models", json={"name": "lonely", "workspace_id": ws}))
    _says(world.admin.delete(f"/api/v1/workspaces/{ws}"), 409, "lonely")
    aw.ok(world.admin.patch("/api/v1/models/lonely", json={"workspace_id": world.workspaces["W2"]}))
    assert aw.ok(world.admin.get("/api/v1/models/lonely"))["model"]["workspace"] == "team-w2"
    aw.ok(world.admin.delete(f"/api/v1/workspaces/{ws}"))


def _ended_experiment_with_checkpoint(world: aw.World) -> tuple[int, str]:
    """A CANCELED experiment of W's whose trial saved one checkpoint before it was killed."""
    exp_id = world.new_experiment(activate=True)
    deadline = time.monotonic() + 30
    while (found := _allocation(world, exp_id)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found is not None, "no allocation"
    alloc, trial_id = found
    uuid = str(uuidlib.uuid4())
    token = {tokens.ALLOCATION_HEADER: world.master.allocation_token(alloc)}
    aw.ok(httpx.post(f"{world.url}/api/v1/checkpoints", headers=token, json={
        "trial_id": trial_id, "uuid": uuid, "metadata": {"steps_completed": 1}, "resources": {}}))
    aw.ok(world.admin.post(f"/api/v1/experiments/{exp_id}/kill", json={}))
    aw.ok(httpx.post(f"{world.url}/api/v1/allocations/{alloc}/exited", headers=world.agent_headers,
                     json={"agent_id": "a0", "exit_code": -15}))
    while aw.ok(world.admin.get(f"/api/v1/experiments/{exp_id}"))["experiment"]["state"] != "CANCELED":
        assert time.monotonic() < deadline, "the experiment did not end"
        time.sleep(0.1)
    return exp_id, uuid


def _allocation(world: aw.World, exp_id: int) -> tuple[str, int] | None:
    with world.master.db.begin() as conn:
        row = conn.execute(sa.select(t.allocations.c.id, t.trials.c.id.label("trial_id"))
                           .join(t.trials, t.trials.c.id == t.allocations.c.trial_id)
                           .where(t.trials.c.experiment_id == exp_id)).first()
    return (str(row.id), int(row.trial_id)) if row is not None else None


def test_a_registered_checkpoint_and_its_experiment_are_not_deleted(world: aw.World) -> None:
    exp_id, uuid = _ended_experiment_with_checkpoint(world)
    aw.ok(world.admin.post("/api/v1/models", json={"name": "held", "workspace": "team-w"}))
    aw.ok(world.admin.post("/api/v1/models/held/versions", json={"checkpoint_uuid": uuid}))
    _says(world.admin.delete(f"/api/v1/experiments/{exp_id}"), 409, "model held version 1")
    _says(world.admin.request("DELETE", "/api/v1/checkpoints", json={"uuids": [uuid]}), 409, "model held version 1")
    assert aw.ok(world.admin.get(f"/api/v1/checkpoints/{uuid}"))["checkpoint"]["state"] == "COMPLETED"
    aw.ok(world.admin.delete("/api/v1/models/held/versions/1"))
    aw.ok(world.admin.delete(f"/api/v1/experiments/{exp_id}"))


def test_who_may_register_and_change(world: aw.World) -> None:
    w_uuid = world.new_checkpoint()
    aw.ok(world.admin.post("/api/v1/models", json={"name": "in-w2", "workspace": "team-w2"}))
    viewer_w2 = world.new_user("reg-viewer-w2", (("Viewer", "W2"),))
    _says(viewer_w2.post("/api/v1/models/in-w2/versions", json={"checkpoint_uuid": w_uuid}), 403)
    editor_w2 = world.new_user("reg-editor-w2", (("Editor", "W2"),))  # may change W2's model, may not view W
    _says(editor_w2.post("/api/v1/models/in-w2/versions", json={"checkpoint_uuid": w_uuid}), 403,
          P.VIEW_EXPERIMENTS.name)
    assert aw.ok(world.admin.get("/api/v1/models/in-w2"))["model"]["num_versions"] == 0
    w2_uuid = world.new_checkpoint("E2")
    assert aw.ok(editor_w2.post("/api/v1/models/in-w2/versions", json={"checkpoint_uuid": w2_uuid}))
    reader = world.new_user("reg-reader-w2", (("ModelRegistryViewer", "W2"),))
    assert [m["name"] for m in aw.ok(reader.get("/api/v1/models"))["models"]] == [
        m["name"] for m in aw.ok(world.admin.get("/api/v1/models", params={"workspace_id": world.workspaces["W2"]}))[
            "models"]]
    assert aw.ok(reader.get("/api/v1/models/in-w2/versions/1"))["model_version"]["checkpoint"]["uuid"] == w2_uuid
    _says(reader.patch("/api/v1/models/in-w2", json={"notes": "x"}), 403, P.EDIT_MODEL_REGISTRY.name)
    _says(reader.delete("/api/v1/models/in-w2/versions/1"), 403, P.DELETE_MODEL_REGISTRY.name)
    _says(reader.post("/api/v1/models", json={"name": "mine", "workspace": "team-w2"}), 403,
          P.CREATE_MODEL_REGISTRY.name)
    _says(reader.get(f"/api/v1/models/{world.values['model_name']}"), 403, P.VIEW_MODEL_REGISTRY.name)  # W's
