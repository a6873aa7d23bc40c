"""Each role allows exactly its documented permissions (issue 20, acceptance 6), and docs/workspaces.md's role table
is `stalwart.api.permissions.ROLES`, row for row.

The master is the real `create_app(...)` in rbac mode on a real SQLite database, driven in-process. For each role
a user holds only that role, on workspace `Uncategorized` (where commands and unplaced experiments live), or on
the whole cluster for the roles assignable only there. The admin owns one of each object the probes name. Each
permission has one representative call (`PROBES`); a call is refused when it answers 403 naming the permission,
and allowed otherwise (a probe may then fail for its own reason: deleting a workspace that holds experiments is a
409, but the permission check let it through). What a role allows: its permissions (those on no workspace only
when it is assigned on the cluster), plus the account permissions every active user keeps.

After changing ROLES, rewrite the doc's table with `.venv/bin/python tests/unit/api/test_roles.py`.
"""

from __future__ import annotations

import base64
import itertools
import pathlib
import sys
import uuid as uuidlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from stalwart.api import permissions as P
from stalwart.api.routes_table import ROUTES

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "workspaces.md"
START = "<!-- roles table: generated from stalwart.api.permissions.ROLES -->"
END = "<!-- end of roles table -->"

UNCATEGORIZED = 1
CONFIG = """name: {name}
entrypoint: python3 train.py
searcher: {{name: single, metric: loss, max_length: 1}}
"""


# -- the doc's table ------------------------------------------------------------------------------------------
def table() -> str:
    """One row per role: where it may be assigned, what it is for, its permissions (in the registry's order)."""
    rows = ["| Role | Assigned on | What it is for | Permissions |", "|---|---|---|---|"]
    for r in P.ROLES.values():
        where = "a workspace or the whole cluster" if r.workspace_scoped else "the whole cluster only"
        names = ", ".join(f"`{p.name}`" for p in P.REGISTRY.values() if p in r.permissions)
        rows.append(f"| `{r.name}` | {where} | {r.description} | {names} |")
    return "\n".join(rows)


def documented(text: str) -> str:
    assert START in text and END in text, f"{DOC} lacks the markers around its roles table"
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def test_the_docs_table_is_the_roles() -> None:
    assert documented(DOC.read_text()) == table(), (
        "docs/workspaces.md's roles table differs from stalwart.api.permissions.ROLES: rewrite it with "
        "`.venv/bin/python tests/unit/api/test_roles.py`")


def rewrite() -> None:
    head, rest = DOC.read_text().split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{table()}\n{END}{tail}")


# -- the world the probes act on ------------------------------------------------------------------------------
@dataclass
class World:
    admin: TestClient
    app: object
    exp_id: int
    cmd_id: str
    project_id: int
    context: str
    names: Iterator[int]
    trial_id: int = 0
    allocation_token: str = ""

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.names)}"

    def new_checkpoint(self) -> str:
        """A checkpoint of the admin's live trial, registered with its allocation's token as the trial would."""
        uuid = str(uuidlib.uuid4())
        _ok(self.admin.post("/api/v1/checkpoints", headers={"x-allocation-token": self.allocation_token}, json={
            "trial_id": self.trial_id, "uuid": uuid, "metadata": {"steps_completed": 1}, "resources": {"w": 1}}))
        return uuid


def _client(app: object) -> TestClient:
    return TestClient(app, follow_redirects=False, raise_server_exceptions=False)  # type: ignore[arg-type]


def _log_in(client: TestClient, username: str, password: str) -> None:
    reply = client.post("/api/v1/auth/login", json={"username": username, "password": password, "isHashed": False})
    assert reply.status_code == 200, reply.text
    client.headers["authorization"] = f"Bearer {reply.json()['token']}"


def _ok(reply) -> dict:
    assert reply.status_code == 200, f"{reply.request.method} {reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    from stalwart.config.master import parse_master_config
    from stalwart.context import pack_context
    from stalwart.master.app import create_app
    from stalwart.master.settings import MasterSettings

    home = tmp_path_factory.mktemp("roles")
    cluster = parse_master_config({"security": {"authz": {"type": "rbac"}}})
    app = create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, cluster=cluster,
                                    ui_metrics_index=False))
    admin = _client(app)  # no `with`: the background scheduler stays off; nothing needs to run
    _log_in(admin, "admin", "")
    ctx = home / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('never runs')\n")
    context = base64.b64encode(pack_context(ctx).data).decode()
    exp = _ok(admin.post("/api/v1/experiments", json={"config": CONFIG.format(name="admins"), "context": context,
                                                      "activate": False}))
    _ok(admin.post("/api/v1/users", json={"username": "bystander", "password": ""}))  # gets roles from probes
    cmd = _ok(admin.post("/api/v1/commands", json={"config": {"entrypoint": ["true"]}}))
    trial_id, allocation_id = _live_trial(app, admin, context)
    return World(admin=admin, app=app, exp_id=exp["experiment"]["id"], cmd_id=str(cmd["command"]["id"]),
                 project_id=UNCATEGORIZED, context=context, names=itertools.count(), trial_id=trial_id,
                 allocation_token=app.state.master.allocation_token(allocation_id))


def _live_trial(app, admin: TestClient, context: str) -> tuple[int, str]:
    """A trial of the admin's with a live allocation on an agent the master registers itself (the probes of
    delete_checkpoints need real checkpoints of it)."""
    import sqlalchemy as sa

    from stalwart.db import tables as t
    from stalwart.master.cluster import agents, credentials
    from stalwart.master.scheduling import scheduling

    m = app.state.master
    agents.register(m, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    _ok(admin.post("/api/v1/experiments", json={"config": CONFIG.format(name="running"), "context": context}))
    scheduling.tick(m)
    with m.db.begin() as conn:
        alloc = conn.execute(sa.select(t.allocations).where(t.allocations.c.trial_id.is_not(None))).mappings().one()
    return int(alloc["trial_id"]), str(alloc["id"])


Probe = Callable[[TestClient, World], object]
"""One call that needs one permission (on workspace Uncategorized, or on the cluster)."""

PROBES: dict[P.Permission, Probe] = {
    P.VIEW_EXPERIMENTS: lambda c, w: c.get(f"/api/v1/experiments/{w.exp_id}"),
    P.CREATE_EXPERIMENTS: lambda c, w: c.post("/api/v1/experiments", json={
        "config": CONFIG.format(name=w.fresh("e")), "context": w.context, "activate": False}),
    P.EDIT_EXPERIMENTS: lambda c, w: c.patch(f"/api/v1/experiments/{w.exp_id}", json={"notes": "probed"}),
    P.DELETE_EXPERIMENTS: lambda c, w: c.delete(f"/api/v1/experiments/{w.exp_id}"),  # 409: it has not ended
    P.DELETE_CHECKPOINTS: lambda c, w: c.request("DELETE", "/api/v1/checkpoints", json={
        "uuids": [w.new_checkpoint()]}),
    P.VIEW_CLUSTER: lambda c, w: c.get("/api/v1/agents"),
    P.VIEW_TASKS: lambda c, w: c.get(f"/api/v1/commands/{w.cmd_id}"),
    P.MANAGE_AGENTS: lambda c, w: c.post("/api/v1/agents/no-such-agent/enable", json={}),
    P.EDIT_JOBS: lambda c, w: c.patch(f"/api/v1/experiments/{w.exp_id}/job", json={"priority": 42}),
    P.CREATE_COMMANDS: lambda c, w: c.post("/api/v1/commands", json={"config": {"entrypoint": ["true"]}}),
    P.EDIT_COMMANDS: lambda c, w: c.post(f"/api/v1/commands/{w.cmd_id}/kill", json={}),
    P.VIEW_USERS: lambda c, w: c.get("/api/v1/users"),
    P.EDIT_OWN_ACCOUNT: lambda c, w: c.patch(f"/api/v1/users/{_me(c)}", json={"displayName": "probed"}),
    P.MANAGE_USERS: lambda c, w: c.post("/api/v1/users", json={"username": w.fresh("u"), "password": ""}),
    P.MANAGE_OWN_TOKENS: lambda c, w: c.get("/api/v1/tokens"),
    P.MANAGE_ALL_TOKENS: lambda c, w: c.get("/api/v1/tokens", params={"all": "true"}),
    P.VIEW_AUDIT: lambda c, w: c.get("/api/v1/audit"),
    P.SIGN_OUT: lambda c, w: None,  # probed last, by `signs_out`: it ends the session
    P.VIEW_WORKSPACES: lambda c, w: c.get(f"/api/v1/workspaces/{UNCATEGORIZED}"),
    P.CREATE_WORKSPACES: lambda c, w: c.post("/api/v1/workspaces", json={"name": w.fresh("ws")}),
    P.EDIT_WORKSPACES: lambda c, w: c.post(f"/api/v1/workspaces/{UNCATEGORIZED}/archive", json={}),  # 409
    P.DELETE_WORKSPACES: lambda c, w: c.delete(f"/api/v1/workspaces/{UNCATEGORIZED}"),  # 409: it cannot go
    P.CREATE_PROJECTS: lambda c, w: c.post(f"/api/v1/workspaces/{UNCATEGORIZED}/projects",
                                           json={"name": w.fresh("p")}),
    P.EDIT_PROJECTS: lambda c, w: c.post(f"/api/v1/projects/{w.project_id}/archive", json={}),  # 409
    P.DELETE_PROJECTS: lambda c, w: c.delete(f"/api/v1/projects/{w.project_id}"),  # 409: it cannot go
    P.ASSIGN_ROLES: lambda c, w: c.post("/api/v1/rbac/assignments", json={
        "role": "Viewer", "username": "bystander", "workspaceId": UNCATEGORIZED}),
    P.VIEW_ROLES: lambda c, w: c.get("/api/v1/rbac/roles"),
    P.MANAGE_GROUPS: lambda c, w: c.post("/api/v1/groups", json={"name": w.fresh("g")}),
    P.BIND_POOLS: lambda c, w: c.request("DELETE", "/api/v1/resource-pools/default/workspace-bindings",
                                         json={"workspaceIds": [UNCATEGORIZED]}),
    P.SET_AGENT_USER: lambda c, w: c.delete("/api/v1/users/bystander/agent-user"),
    P.VIEW_MODEL_REGISTRY: lambda c, w: c.get(f"/api/v1/models/{_admins_model(w)}"),
    P.CREATE_MODEL_REGISTRY: lambda c, w: c.post("/api/v1/models", json={"name": w.fresh("model-")}),
    P.EDIT_MODEL_REGISTRY: lambda c, w: c.patch(f"/api/v1/models/{_admins_model(w)}", json={"notes": "probed"}),
    P.DELETE_MODEL_REGISTRY: lambda c, w: c.delete(f"/api/v1/models/{_admins_model(w)}"),
    P.EDIT_WEBHOOKS: lambda c, w: c.post("/api/v1/webhooks", json={
        "url": "http://127.0.0.1:9/probe", "triggers": [{"trigger_type": "CUSTOM"}], "workspace_id": UNCATEGORIZED}),
    P.VIEW_TEMPLATES: lambda c, w: c.get(f"/api/v1/templates/{_admins_template(w)}"),
    P.EDIT_TEMPLATES: lambda c, w: c.put(f"/api/v1/templates/{_admins_template(w)}", json={"config": {"x": 1}}),
}


def _admins_model(w: World) -> str:
    """A new model of the admin's in Uncategorized."""
    name = w.fresh("admins-model-")
    _ok(w.admin.post("/api/v1/models", json={"name": name}))
    return name


def _admins_template(w: World) -> str:
    """A new configuration template of the admin's in Uncategorized."""
    name = w.fresh("admins-template-")
    _ok(w.admin.post("/api/v1/templates", json={"name": name, "config": {"description": "probe"}}))
    return name


def _me(c: TestClient) -> str:
    name: str = _ok(c.get("/api/v1/me"))["user"]["username"]
    return name


def refused(reply, permission: P.Permission) -> bool:
    """A 403 naming the permission: refused; any other answer: the check let the call through."""
    if reply.status_code == 403:
        assert permission.name in reply.json()["error"]["message"], reply.text
        return True
    assert reply.status_code < 500, f"{reply.request.method} {reply.request.url}: {reply.status_code} {reply.text}"
    return False


def expected(role: P.Role | None) -> set[P.Permission]:
    """What a holder of `role` (on Uncategorized, or on the cluster when it is assignable only there) may do."""
    granted = set(P.ACCOUNT)
    if role is not None:
        granted |= {p for p in role.permissions if not role.workspace_scoped or p not in P.CLUSTER_ONLY}
    return granted


def test_every_permission_a_route_names_has_a_probe() -> None:
    named = {r.permission for r in ROUTES if r.permission is not None}
    assert named <= set(PROBES), f"no probe for {sorted(p.name for p in named - set(PROBES))}"


def _holder(world: World, role: P.Role | None) -> TestClient:
    name = f"holds-{role.name.lower() if role else 'nothing'}"
    _ok(world.admin.post("/api/v1/users", json={"username": name, "password": "pw"}))
    if role is not None:
        assignment: dict[str, object] = {"role": role.name, "username": name}
        if role.workspace_scoped:
            assignment["workspaceId"] = UNCATEGORIZED
        _ok(world.admin.post("/api/v1/rbac/assignments", json=assignment))
    client = _client(world.app)
    _log_in(client, name, "pw")
    return client


@pytest.mark.parametrize("role_name", [*P.ROLES, None])
def test_a_role_allows_exactly_its_permissions(world: World, role_name: str | None) -> None:
    role = P.ROLES[role_name] if role_name is not None else None
    client = _holder(world, role)
    allowed = {p for p, probe in PROBES.items() if p is not P.SIGN_OUT and not refused(probe(client, world), p)}
    if not refused(client.post("/api/v1/auth/logout", json={}), P.SIGN_OUT):
        allowed.add(P.SIGN_OUT)
    want = expected(role) & set(PROBES)
    assert allowed == want, (f"{role_name}: allowed but not in the role: {sorted(p.name for p in allowed - want)}; "
                             f"in the role but refused: {sorted(p.name for p in want - allowed)}")


def test_a_role_on_another_workspace_allows_nothing_here(world: World) -> None:
    other = _ok(world.admin.post("/api/v1/workspaces", json={"name": "elsewhere"}))["workspace"]["id"]
    _ok(world.admin.post("/api/v1/users", json={"username": "editor-elsewhere", "password": "pw"}))
    _ok(world.admin.post("/api/v1/rbac/assignments", json={
        "role": "Editor", "username": "editor-elsewhere", "workspaceId": other}))
    client = _client(world.app)
    _log_in(client, "editor-elsewhere", "pw")
    for permission in (P.VIEW_EXPERIMENTS, P.EDIT_EXPERIMENTS, P.CREATE_EXPERIMENTS, P.CREATE_PROJECTS):
        assert refused(PROBES[permission](client, world), permission), permission.name


if __name__ == "__main__":
    rewrite()
    sys.exit(0)
