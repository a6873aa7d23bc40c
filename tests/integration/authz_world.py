"""The world the authorization conformance suite calls routes in: a real master (the app served by uvicorn in a
thread, on SQLite or PostgreSQL, in rbac mode) with two workspaces and one of every object a route can name.

Workspace W holds experiment E (a live trial with a live allocation and a checkpoint), command K, project P and
their jobs; workspace W2 holds experiment E2 (another experiment's allocation). Experiment E3 in W has an allocation
that has ended. Each workspace holds a model with a version (W's of E's checkpoint, W2's of E2's) and a
configuration template. The agent is the
test itself, speaking the agent protocol over HTTP with its own credential. Names of W's objects carry `SECRET` (its
model's notes, since a path names a model by name): a caller who may not view W must never read it. One user per kind
of caller holds the roles `CALLERS` gives it; `tess` owns the account objects (her account, her access token).
"""

from __future__ import annotations

import base64
import pathlib
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import sqlalchemy as sa
from in_thread import serving_both

from helpers_auth import as_admin, bearer, log_in
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.app import create_app
from stalwart.master.identity import tokens
from stalwart.master.settings import MasterSettings

SECRET = "SECRET-7f3a"
"""In the names of W's experiments, commands and projects: what a caller who may not view W must never read."""

CALLERS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "no role": (),
    "a role elsewhere": (("WorkspaceAdmin", "W2"),),
    "Viewer": (("Viewer", "W"),),
    "Editor": (("Editor", "W"),),
    "WorkspaceAdmin": (("WorkspaceAdmin", "W"),),
    "ClusterAdmin": (("ClusterAdmin", None),),
}
"""Each kind of caller: its roles, each on workspace W, on W2, or (None) on the whole cluster."""

PASSWORD = "conformance-pw"
EXPERIMENT = """name: {name}
entrypoint: python3 train.py
workspace: {workspace}
project: {project}
searcher: {{name: single, metric: loss, max_length: {{batches: 10}}}}
"""


def user_of(caller: str) -> str:
    return "caller-" + caller.lower().replace(" ", "-")


@dataclass
class World:
    """The served master, the admin's client, one client per caller, and the objects routes name."""

    url: str
    app: Any
    admin: httpx.Client
    callers: dict[str, httpx.Client]
    values: dict[str, str]
    workspaces: dict[str, int]
    agent_headers: dict[str, str]
    cluster_token: str
    allocations: dict[str, str] = field(default_factory=dict)  # E, E2, E3 -> allocation id
    trials: dict[str, int] = field(default_factory=dict)
    context: str = ""
    serial: Iterator[int] = field(default_factory=lambda: iter(range(1, 1_000_000)))
    det_url: str = ""  # the master's Determined listener (master/determined_api), same server and database

    @property
    def master(self) -> Any:
        return self.app.state.master

    def allocation_token(self, which: str) -> dict[str, str]:
        return {tokens.ALLOCATION_HEADER: self.master.allocation_token(self.allocations[which])}

    def client(self, token: str | None = None) -> httpx.Client:
        client = httpx.Client(base_url=self.url, timeout=30)
        if token:
            client.headers.update(bearer(token))
        return client

    def fresh_session(self, caller: str, base_url: str | None = None) -> httpx.Client:
        """A client with a new session of `caller` (for the calls that end their session), of `base_url` (default:
        the master's own listener)."""
        with httpx.Client(base_url=self.url, timeout=30) as plain:
            token = log_in(plain, user_of(caller), PASSWORD)
        client = httpx.Client(base_url=base_url or self.url, timeout=30)
        client.headers.update(bearer(token))
        return client

    def on_determined(self, client: httpx.Client) -> httpx.Client:
        """A client of the Determined listener carrying `client`'s credentials."""
        return httpx.Client(base_url=self.det_url, timeout=30, headers=client.headers)

    def new_user(self, name: str, roles: tuple[tuple[str, str], ...]) -> httpx.Client:
        """A new user holding each (role, workspace) of `roles`, and a client logged in as it."""
        ok(self.admin.post("/api/v1/users", json={"username": name, "password": PASSWORD}))
        for role, where in roles:
            ok(self.admin.post("/api/v1/rbac/assignments", json={
                "role": role, "username": name, "workspaceId": self.workspaces[where]}))
        with httpx.Client(base_url=self.url) as plain:
            return self.client(log_in(plain, name, PASSWORD))

    def new_experiment(self, where: str = "W", *, activate: bool = False) -> int:
        project = "proj-" + SECRET if where == "W" else "proj-two"
        name = f"exp-{SECRET}-{next(self.serial)}" if where == "W" else f"other-{next(self.serial)}"
        made = ok(self.admin.post("/api/v1/experiments", json={
            "config": EXPERIMENT.format(name=name, workspace=f"team-{where.lower()}", project=project),
            "context": self.context, "activate": activate}))
        return int(made["experiment"]["id"])

    def new_trial(self) -> int:
        exp_id = self.new_experiment(activate=True)
        trials = ok(self.admin.get(f"/api/v1/experiments/{exp_id}/trials"))["trials"]
        return int(trials[0]["id"])

    def new_command(self) -> int:
        made = ok(self.admin.post("/api/v1/commands", json={"config": {
            "entrypoint": ["sleep", "600"], "description": f"cmd-{SECRET}-{next(self.serial)}",
            "workspace": "team-w", "project": "proj-" + SECRET}}))
        return int(made["command"]["id"])

    def new_shell(self) -> int:
        made = ok(self.admin.post("/api/v1/shells", json={"config": {
            "description": f"shell-{SECRET}-{next(self.serial)}", "workspace": "team-w", "project": "proj-" + SECRET}}))
        return int(made["shell"]["id"])

    def new_notebook(self) -> int:
        made = ok(self.admin.post("/api/v1/notebooks", json={"config": {
            "description": f"nb-{SECRET}-{next(self.serial)}", "workspace": "team-w", "project": "proj-" + SECRET}}))
        return int(made["notebook"]["id"])

    def new_tensorboard(self) -> int:
        config = {"description": f"tb-{SECRET}-{next(self.serial)}", "workspace": "team-w", "project": "proj-" + SECRET}
        made = ok(self.admin.post("/api/v1/tensorboards", json={"experiment_ids": [int(self.values["exp_id"])],
                                                                "config": config}))
        return int(made["tensorboard"]["id"])

    def new_token(self) -> int:
        made = ok(self.admin.post("/api/v1/tokens", json={"username": "tess", "description": "tess's automation"}))
        return int(made["tokenInfo"]["id"])

    def new_checkpoint(self, which: str = "E") -> str:
        """A new checkpoint of E's (or E2's) trial (registered with its allocation token, as the trial would)."""
        uuid = str(uuidlib.uuid4())
        ok(httpx.post(f"{self.url}/api/v1/checkpoints", headers=self.allocation_token(which), json={
            "trial_id": self.trials[which], "uuid": uuid, "metadata": {"steps_completed": 1}, "resources": {"w": 1}}))
        return uuid

    def new_model(self, where: str = "W") -> str:
        """A new model in W (or W2) with version 1, a checkpoint of E (or E2); its notes carry `SECRET` in W."""
        name = f"model-{where.lower()}-{next(self.serial)}"
        notes = f"notes-{SECRET}" if where == "W" else "notes"
        ok(self.admin.post("/api/v1/models", json={"name": name, "notes": notes, "workspace": f"team-{where.lower()}"}))
        ckpt = self.new_checkpoint("E" if where == "W" else "E2")
        ok(self.admin.post(f"/api/v1/models/{name}/versions", json={"checkpoint_uuid": ckpt, "notes": notes}))
        return name

    def new_webhook(self, where: str | None = "W") -> str:
        """A new webhook of W (its name carries `SECRET`), of W2, or (None) of the whole cluster."""
        made: dict[str, Any] = {"url": "http://127.0.0.1:9/hook", "triggers": [{"trigger_type": "CUSTOM"}],
                                "name": f"hook-{SECRET}-{next(self.serial)}" if where == "W" else "hook"}
        if where is not None:
            made["workspace_id"] = self.workspaces[where]
        return str(ok(self.admin.post("/api/v1/webhooks", json=made))["webhook"]["id"])

    def new_template(self, where: str = "W") -> str:
        """A new configuration template of W (its config carries `SECRET`; a path names it by name) or of W2."""
        name = f"template-{where.lower()}-{next(self.serial)}"
        config = {"description": f"tpl-{SECRET}" if where == "W" else "tpl", "max_restarts": 1}
        ok(self.admin.post("/api/v1/templates", json={"name": name, "config": config,
                                                      "workspace": f"team-{where.lower()}"}))
        return name

    def new_group(self) -> str:
        name = f"group-{next(self.serial)}"
        ok(self.admin.post("/api/v1/groups", json={"name": name}))
        return name

    def repair(self) -> None:
        """Undo what an allowed call may have changed that later calls need: W and P open."""
        self.admin.post(f"/api/v1/workspaces/{self.workspaces['W']}/unarchive", json={})
        self.admin.post(f"/api/v1/projects/{self.values['project_id']}/unarchive", json={})


def ok(reply: httpx.Response) -> Any:
    assert reply.status_code == 200, f"{reply.request.method} {reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json()


def _live_allocation(world: World, exp_id: int) -> tuple[str, int]:
    """The allocation of the experiment's trial, once the scheduling pass has made it."""
    deadline = time.monotonic() + 30
    with world.master.db.begin() as conn:
        trial_id = conn.execute(sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id)).scalar_one()
    while time.monotonic() < deadline:
        with world.master.db.begin() as conn:
            found = conn.execute(sa.select(t.allocations.c.id).where(t.allocations.c.trial_id == trial_id)).scalar()
        if found is not None:
            return str(found), int(trial_id)
        time.sleep(0.1)
    raise AssertionError(f"experiment {exp_id} got no allocation")


def _people(world: World) -> None:
    ok(world.admin.post("/api/v1/users", json={"username": "tess", "password": PASSWORD}))
    for caller, roles in CALLERS.items():
        name = user_of(caller)
        ok(world.admin.post("/api/v1/users", json={"username": name, "password": PASSWORD}))
        for role, where in roles:
            assignment: dict[str, Any] = {"role": role, "username": name}
            if where is not None:
                assignment["workspaceId"] = world.workspaces[where]
            ok(world.admin.post("/api/v1/rbac/assignments", json=assignment))
        with httpx.Client(base_url=world.url, timeout=30) as plain:
            world.callers[caller] = world.client(log_in(plain, name, PASSWORD))


def _places(world: World) -> None:
    for where in ("W", "W2"):
        made = ok(world.admin.post("/api/v1/workspaces", json={"name": f"team-{where.lower()}"}))
        world.workspaces[where] = int(made["workspace"]["id"])
    project = ok(world.admin.post(f"/api/v1/workspaces/{world.workspaces['W']}/projects",
                                  json={"name": "proj-" + SECRET}))
    ok(world.admin.post(f"/api/v1/workspaces/{world.workspaces['W2']}/projects", json={"name": "proj-two"}))
    world.values["project_id"] = str(project["project"]["id"])
    world.values["workspace_id"] = str(world.workspaces["W"])


def _runs(world: World) -> None:
    """E (live, with a checkpoint), E2 in W2 (live), E3 (its allocation ended)."""
    for which, where in (("E", "W"), ("E2", "W2"), ("E3", "W")):
        exp_id = world.new_experiment(where, activate=True)
        world.allocations[which], world.trials[which] = _live_allocation(world, exp_id)
        world.values.setdefault("exp_id", str(exp_id))
    ended = world.allocations["E3"]
    ok(world.admin.post(f"/api/v1/trials/{world.trials['E3']}/kill", json={}))
    ok(httpx.post(f"{world.url}/api/v1/allocations/{ended}/exited", headers=world.agent_headers,
                  json={"agent_id": "a0", "exit_code": -15}))
    world.values.update(trial_id=str(world.trials["E"]), uuid=world.new_checkpoint(),
                        allocation_id=world.allocations["E"])


def _objects(world: World) -> None:
    cmd_id = world.new_command()
    jobs = ok(world.admin.get("/api/v1/jobs"))["jobs"]
    exp_id = int(world.values["exp_id"])
    world.values.update(
        cmd_id=str(cmd_id), task_id=f"command-{cmd_id}", username="tess", token_id=str(world.new_token()),
        job_id=next(j["job_id"] for j in jobs if j["type"] == "EXPERIMENT" and j["entity_id"] == exp_id),
        agent_id="a0", pool="default", group_name=world.new_group(), role="Viewer", action="pause",
        version="0", path="app.css", model_name=world.new_model("W"), version_num="1",
        external_id="conformance-ext")
    world.new_model("W2")
    world.values["shell_id"] = str(world.new_shell())
    world.values["tensorboard_id"] = str(world.new_tensorboard())
    world.values["notebook_id"] = str(world.new_notebook())
    world.values["webhook_id"] = world.new_webhook("W")
    world.new_webhook("W2")
    world.new_webhook(None)  # the cluster's: listed only to who may manage it on the cluster
    world.values["template_name"] = world.new_template("W")
    world.new_template("W2")


def build(home: pathlib.Path, db_url: str) -> Iterator[World]:
    """Serve a master on `db_url` and fill it with the world; stop it afterwards."""
    cluster = parse_master_config({"security": {"authz": {"type": "rbac"}}})
    app = create_app(MasterSettings(db_url=db_url, home=home, cluster=cluster, ui_metrics_index=False,
                                    agent_timeout_s=3600))
    with serving_both(app, "conformance-master") as (url, det_url):
        yield from _filled(app, home, url, det_url or "")


def _filled(app: Any, home: pathlib.Path, url: str, det_url: str) -> Iterator[World]:
    admin = httpx.Client(base_url=url, timeout=30)
    as_admin(admin)
    m = app.state.master
    enrolled = ok(httpx.post(f"{url}/api/v1/agents", headers=bearer(m.cluster_token),
                             json={"agent_id": "a0", "slots": 64}))
    agent_headers = bearer(enrolled.get("credential") or m.cluster_token)
    ctx = home / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('never runs: the agent is the test')\n")
    world = World(url=url, app=app, admin=admin, callers={}, values={}, workspaces={}, agent_headers=agent_headers,
                  cluster_token=m.cluster_token, context=base64.b64encode(pack_context(ctx).data).decode(),
                  det_url=det_url)
    _places(world)
    _people(world)
    _runs(world)
    _objects(world)
    try:
        yield world
    finally:
        for client in (admin, *world.callers.values()):
            client.close()
        m.db.dispose()


Factory = Callable[[World], str]
FRESH: dict[str, Factory] = {
    "exp_id": lambda w: str(w.new_experiment()),
    "trial_id": lambda w: str(w.new_trial()),
    "cmd_id": lambda w: str(w.new_command()),
    "task_id": lambda w: f"command-{w.new_command()}",
    "shell_id": lambda w: str(w.new_shell()),
    "tensorboard_id": lambda w: str(w.new_tensorboard()),
    "notebook_id": lambda w: str(w.new_notebook()),
    "token_id": lambda w: str(w.new_token()),
    "group_name": lambda w: w.new_group(),
    "webhook_id": lambda w: w.new_webhook(),
    "model_name": lambda w: w.new_model(),
    "template_name": lambda w: w.new_template(),
}
"""Objects made anew for a call that changes or removes what it names (the world's own stay as they are)."""
