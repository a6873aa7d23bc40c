"""Every route of the master is checked by the auth kind its route-table entry declares (issue 19, acceptance 1).

The app is the real `create_app(...)` on a real SQLite database, driven in-process. User B ("bob") owns one of
each object a path can name (experiment, trial, checkpoint, command, job, access token, his own account), with a
live run, so each path value names something that exists. User A ("ann") is an active user who is no admin.

- user routes: 401 without credentials and with a garbage token (pages may instead redirect to /login), and
  with the cluster token or an allocation token (neither is a user session); 403 naming the permission for ann
  where the permission is for admins only, or for the owner and the object is bob's;
- cluster routes: 401 without an agent's credential, 403 with a wrong one (a user session is a wrong one; the
  cluster token and other agents' credentials: tests/integration/test_agent_credentials.py);
- allocation routes: 401 without an allocation token, 403 with a forged one;
- open routes: exactly the listed ones, and each answers without credentials.
"""

from __future__ import annotations

import base64
import pathlib
import re
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from helpers_auth import as_admin, as_user, bearer
from stalwart.api import permissions as P
from stalwart.api.auth_kinds import AuthKind
from stalwart.api.routes_table import BY_KEY, HTML, ROUTES, RouteSpec
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.app import create_app
from stalwart.master.identity import tokens
from stalwart.master.scheduling import scheduling
from stalwart.master.settings import MasterSettings
from stalwart.master.ui import pages

pytestmark = pytest.mark.integration

OPEN_ROUTES = {
    ("GET", "/api/v1/master"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/docs/rest-api/"),
    ("GET", "/ui/static/{version}/{path:path}"),
    ("GET", "/login"),
    ("POST", "/login"),
    ("POST", "/api/v1/auth/login"),
    # single sign-on (docs/sso.md): the provider's round trip, and the CLI's trade of a one-time code
    ("GET", "/oidc/login"),
    ("GET", "/oidc/callback"),
    ("GET", "/api/v1/auth/oidc"),
    ("POST", "/api/v1/auth/oidc/token"),
}
"""The routes anyone may call. Adding one is a conscious change: it goes here too."""
SSO_OFF = {("GET", "/oidc/login"), ("GET", "/oidc/callback"), ("POST", "/api/v1/auth/oidc/token")}
"""Open routes that, on a master without single sign-on (this world's), answer 400 (login: not enabled) or 401."""

CONFIG = """
name: bobs
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""
GARBAGE = "not-a-session-just-noise"


@dataclass
class World:
    """The app, a client per caller, and the path value of each object of bob's."""

    app: FastAPI
    anonymous: TestClient
    admin: TestClient
    ann: TestClient
    bob: TestClient
    cluster_token: str
    allocation_token: str
    values: dict[str, str]

    def url(self, spec: RouteSpec) -> str:
        return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: self.values[m.group(1)], spec.path)


def _client(app: FastAPI) -> TestClient:
    return TestClient(app, follow_redirects=False, raise_server_exceptions=False)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home: pathlib.Path = tmp_path_factory.mktemp("route-auth")
    app = create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, ui_metrics_index=False))
    m = app.state.master
    # no `with`: the background scheduler stays off, the test's own tick is the only one
    anonymous, admin, ann, bob = (_client(app) for _ in range(4))
    as_admin(admin)
    for name in ("ann", "bob"):
        made = admin.post("/api/v1/users", json={"username": name, "password": f"pw-{name}"})
        assert made.status_code == 200, made.text
        as_user(ann if name == "ann" else bob, name, f"pw-{name}")
    local = TestClient(app, client=("127.0.0.1", 50000))  # the cluster token enrolls from loopback (no `with`)
    enrolled = local.post("/api/v1/agents", json={"agent_id": "a0", "slots": 4}, headers=bearer(m.cluster_token))
    local.close()
    assert enrolled.status_code == 200 and enrolled.json()["credential"], enrolled.text

    ctx = home / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('hi')\n")
    context = base64.b64encode(pack_context(ctx).data).decode()
    created = bob.post("/api/v1/experiments", json={"config": CONFIG, "context": context})
    assert created.status_code == 200, created.text
    exp_id = created.json()["experiment"]["id"]
    cmd = bob.post("/api/v1/commands", json={"config": {"entrypoint": ["true"]}})
    assert cmd.status_code == 200, cmd.text
    cmd_id = cmd.json()["command"]["id"]
    scheduling.tick(m)
    with m.db.begin() as conn:
        alloc = conn.execute(sa.select(t.allocations).where(t.allocations.c.trial_id.is_not(None))).mappings().one()
    allocation_token = m.allocation_token(alloc["id"])
    ckpt = str(uuidlib.uuid4())
    registered = anonymous.post("/api/v1/checkpoints", headers={tokens.ALLOCATION_HEADER: allocation_token}, json={
        "trial_id": alloc["trial_id"], "uuid": ckpt, "metadata": {"steps_completed": 1}, "resources": {"w": 1}})
    assert registered.status_code == 200, registered.text
    token = admin.post("/api/v1/tokens", json={"username": "bob", "description": "bob's automation"})
    assert token.status_code == 200, token.text
    space = bob.post("/api/v1/workspaces", json={"name": "bobs-space"})
    assert space.status_code == 200, space.text
    workspace_id = space.json()["workspace"]["id"]
    made_project = bob.post(f"/api/v1/workspaces/{workspace_id}/projects", json={"name": "bobs-project"})
    assert made_project.status_code == 200, made_project.text
    group = admin.post("/api/v1/groups", json={"name": "bobs-group", "addUsers": ["bob"]})
    assert group.status_code == 200, group.text
    jobs = admin.get("/api/v1/jobs").json()["jobs"]
    job_id = next(j["job_id"] for j in jobs if j["type"] == "EXPERIMENT" and j["entity_id"] == exp_id)

    values = {"exp_id": str(exp_id), "trial_id": str(alloc["trial_id"]), "cmd_id": str(cmd_id), "job_id": job_id,
              "username": "bob", "token_id": str(token.json()["tokenInfo"]["id"]), "uuid": ckpt, "agent_id": "a0",
              "allocation_id": alloc["id"], "task_id": f"command-{cmd_id}", "action": "pause",
              "version": pages.VERSION, "path": "app.css", "workspace_id": str(workspace_id),
              "project_id": str(made_project.json()["project"]["id"]), "group_name": "bobs-group", "role": "Viewer",
              "pool": "default", **_models_and_webhooks(admin, bob, ckpt), **_interactive_tasks(bob, exp_id)}
    yield World(app, anonymous, admin, ann, bob, m.cluster_token, allocation_token, values)
    for client in (anonymous, admin, ann, bob):
        client.close()
    m.db.dispose()


def _models_and_webhooks(admin: TestClient, bob: TestClient, ckpt: str) -> dict[str, str]:
    """Bob's model with version 1 (his checkpoint), a webhook and bob's template: their path values."""
    model = bob.post("/api/v1/models", json={"name": "bobs-model"})
    assert model.status_code == 200, model.text
    version = bob.post("/api/v1/models/bobs-model/versions", json={"checkpoint_uuid": ckpt})
    assert version.status_code == 200, version.text
    webhook = admin.post("/api/v1/webhooks", json={"url": "http://127.0.0.1:9/hook",
                                                   "triggers": [{"trigger_type": "CUSTOM"}]})
    assert webhook.status_code == 200, webhook.text
    template = bob.post("/api/v1/templates", json={"name": "bobs-template", "config": {"max_restarts": 1}})
    assert template.status_code == 200, template.text
    return {"model_name": "bobs-model", "version_num": "1", "webhook_id": str(webhook.json()["webhook"]["id"]),
            "template_name": "bobs-template"}


def _interactive_tasks(bob: TestClient, exp_id: int) -> dict[str, str]:
    """Bob's notebook, TensorBoard and shell (queued: this world's scheduler does not run): their path values."""
    values = {}
    for kind, body in (("notebook", {}), ("tensorboard", {"experiment_ids": [exp_id]}), ("shell", {})):
        started = bob.post(f"/api/v1/{kind}s", json=body)
        assert started.status_code == 200, started.text
        values[f"{kind}_id"] = str(started.json()[kind]["id"])
    return values


def _served_routes(app: FastAPI) -> list[RouteSpec]:
    """Every route the app serves, as its route-table entry (a route missing from the table fails here)."""
    out = []
    for route in iter_route_contexts(app.routes):
        for method in sorted(getattr(route, "methods", None) or ()):
            if method == "HEAD":
                continue
            spec = BY_KEY.get((method, route.path))
            assert spec is not None, f"{method} {route.path} is served but has no entry in api/routes_table.py"
            out.append(spec)
    assert out
    return out


def _of(world: World, *kinds: AuthKind) -> list[RouteSpec]:
    return [s for s in _served_routes(world.app) if {s.auth, *s.also_auth} & set(kinds)]


def _call(client: TestClient, world: World, spec: RouteSpec, headers: dict[str, str] | None = None):
    body = {} if spec.request is not None or spec.method in ("POST", "PATCH") else None
    return client.request(spec.method, world.url(spec), json=body, headers=headers)


def _refused(reply, spec: RouteSpec, status: int) -> str | None:
    """None when the reply is the expected refusal; otherwise what is wrong. A page without a session may be
    answered with a redirect to the login page instead of a 401."""
    if status == 401 and spec.content_type == HTML and reply.status_code in (303, 307):
        where = reply.headers.get("location", "")
        return None if where.startswith("/login") else f"redirects to {where!r}, not the login page"
    if reply.status_code != status:
        return f"{reply.status_code} {reply.text[:200]}"
    return None


def _failures(world: World, specs: list[RouteSpec], client: TestClient, status: int,
              headers: dict[str, str] | None = None) -> dict[str, str]:
    out = {}
    for spec in specs:
        wrong = _refused(_call(client, world, spec, headers), spec, status)
        if wrong is not None:
            out[f"{spec.method} {spec.path}"] = wrong
    return out


# -- open routes ----------------------------------------------------------------------------------------------


def test_exactly_the_listed_routes_are_open() -> None:
    assert {s.key for s in ROUTES if s.auth is AuthKind.OPEN and not s.also_auth} == OPEN_ROUTES


def test_each_open_route_answers_without_credentials(world: World) -> None:
    bodies = {("POST", "/api/v1/auth/login"): {"json": {"username": "ann", "password": "pw-ann"}},
              ("POST", "/login"): {"data": {"username": "ann", "password": "pw-ann", "next": "/"}}}
    answers = {}
    for spec in _of(world, AuthKind.OPEN):
        stranger = _client(world.app)  # a fresh one each: the login form's answer sets cookies
        reply = stranger.request(spec.method, world.url(spec), **bodies.get(spec.key, {}))
        stranger.close()
        answers[f"{spec.method} {spec.path}"] = reply.status_code if spec.key not in SSO_OFF else (
            0 if reply.status_code in (400, 401) else reply.status_code)
    assert answers and all(code < 400 for code in answers.values()), answers


# -- user routes ----------------------------------------------------------------------------------------------


def test_no_user_route_answers_without_a_session(world: World) -> None:
    assert _failures(world, _of(world, AuthKind.USER), world.anonymous, 401) == {}


def test_a_garbage_token_is_no_session(world: World) -> None:
    assert _failures(world, _of(world, AuthKind.USER), world.anonymous, 401, bearer(GARBAGE)) == {}


def test_the_cluster_token_and_an_allocation_token_are_no_user_session(world: World) -> None:
    users = _of(world, AuthKind.USER)
    assert _failures(world, users, world.anonymous, 401, bearer(world.cluster_token)) == {}
    users_only = [s for s in users if AuthKind.ALLOCATION not in s.also_auth]  # not those a trial may call too
    assert _failures(world, users_only, world.anonymous, 401,
                     {tokens.ALLOCATION_HEADER: world.allocation_token}) == {}


def _forbidden_to_ann(spec: RouteSpec) -> bool:
    """Routes ann's session must not pass: admins only, or the owner's, on an object of bob's in the path."""
    permission = spec.permission
    assert permission is not None, f"{spec.method} {spec.path}: a user route naming no permission"
    if permission.basic is P.Rule.ADMIN:
        return True
    owned = {"exp_id", "trial_id", "cmd_id", "job_id", "username", "token_id", "workspace_id", "project_id",
             "model_name", "template_name", "notebook_id", "tensorboard_id", "shell_id"}
    return permission.basic is P.Rule.OWNER and bool(set(re.findall(r"\{(\w+)", spec.path)) & owned)


def test_a_user_without_the_permission_gets_a_403_naming_it(world: World) -> None:
    specs = [s for s in _of(world, AuthKind.USER) if _forbidden_to_ann(s)]
    assert len(specs) > 10
    wrong = {}
    for spec in specs:
        reply = _call(world.ann, world, spec)
        assert spec.permission is not None
        if reply.status_code != 403 or spec.permission.name not in reply.text:
            wrong[f"{spec.method} {spec.path}"] = f"{reply.status_code} {reply.text[:200]}"
    assert wrong == {}, f"not refused with a 403 naming the permission: {wrong}"


def test_the_owner_and_an_admin_pass_the_check_where_another_user_does_not(world: World) -> None:
    """The 403s above come from the permission, not from the route: bob's and the admin's sessions pass it
    (GETs only, so that nothing changes; a pass may still be a 404 or 409 of the handler, never 401/403)."""
    specs = [s for s in _of(world, AuthKind.USER) if _forbidden_to_ann(s) and s.method == "GET" and not s.streaming]
    assert specs
    bobs = [s for s in specs if s.permission is not None and s.permission.basic is P.Rule.OWNER]
    for caller, allowed in ((world.admin, specs), (world.bob, bobs)):
        for spec in allowed:
            reply = _call(caller, world, spec)
            assert reply.status_code not in (401, 403), f"{spec.method} {world.url(spec)}: {reply.text[:200]}"


def test_any_user_reads_what_is_on_the_cluster_and_manages_their_own_tokens(world: World) -> None:
    """ann's session is enough for every GET whose permission is not for admins or owners of something else."""
    specs = [s for s in _of(world, AuthKind.USER)
             if s.method == "GET" and not s.streaming and not _forbidden_to_ann(s)]
    assert specs
    answers = {f"{s.method} {world.url(s)}": _call(world.ann, world, s) for s in specs}
    refused = {k: f"{r.status_code} {r.text[:200]}" for k, r in answers.items() if r.status_code in (401, 403)}
    assert refused == {}
    made = world.ann.post("/api/v1/tokens", json={"description": "ann's own"})
    assert made.status_code == 200, made.text
    assert world.ann.delete(f"/api/v1/tokens/{made.json()['tokenInfo']['id']}").status_code == 200


# -- cluster and allocation routes ---------------------------------------------------------------------------


def test_cluster_routes_need_the_cluster_token(world: World) -> None:
    specs = _of(world, AuthKind.CLUSTER)
    assert specs
    assert _failures(world, specs, world.anonymous, 401) == {}
    assert _failures(world, specs, world.anonymous, 403, bearer("wrong-cluster-token")) == {}
    # a user's session, even the admin's, is not the cluster token
    admin_session = world.admin.headers["authorization"].split(" ", 1)[1]
    agent_only = [s for s in specs if not s.also_auth]
    assert _failures(world, agent_only, world.anonymous, 403, bearer(admin_session)) == {}


def test_allocation_routes_need_an_allocation_token(world: World) -> None:
    specs = _of(world, AuthKind.ALLOCATION)
    assert specs
    forged = f"{world.values['allocation_id']}.{'0' * 64}"
    assert _failures(world, specs, world.anonymous, 401) == {}
    assert _failures(world, specs, world.anonymous, 403, {tokens.ALLOCATION_HEADER: forged}) == {}
    wrong = {}
    for spec in (s for s in specs if not s.also_auth):  # a user session is not an allocation token either
        reply = _call(world.bob, world, spec)
        if reply.status_code not in (401, 403):
            wrong[f"{spec.method} {spec.path}"] = f"{reply.status_code} {reply.text[:200]}"
    assert wrong == {}
