"""The authorization conformance suite (issue 25): generated from the route table, it calls every route the master
serves as every kind of caller, on SQLite and on PostgreSQL, and checks each answer against what the permission
table (docs/users.md) and the roles table (docs/workspaces.md) say.

- User routes: for each kind of caller (`authz_world.CALLERS`: no role, a role in another workspace only, Viewer,
  Editor and WorkspaceAdmin on the objects' workspace W, ClusterAdmin), every object its path or query names is one
  of W's (or an account or cluster object); the call is refused with a 403 naming the permission exactly when the
  tables say the caller lacks it, and otherwise passes the check (any answer but 401/403, never a 5xx). A route
  whose objects are in its body (scope `body`) gets a body naming W's objects (`BODIES`), which its handler checks.
  Any other call that passes would change something: it gets a body the route cannot take (so the check, not the
  handler, decides), or objects made for it.
- Listings: a caller who may not view W reads nothing of W's (its experiments', commands' and projects' names carry
  `SECRET`), from any route it may call.
- Allocation routes: another experiment's allocation token and an ended allocation's token are refused.
- Objects named by bodies: creating, moving or deleting into or out of W needs the permission on W.
- Coverage: a route of the table whose path or query values the suite cannot fill fails it, as the master refuses
  to register a route whose objects the check cannot find (`identity.authz.check_declaration`).
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable, Iterator

import authz_world as aw
import httpx
import pytest

from pg_databases import fresh_database
from stalwart.api import permissions as P
from stalwart.api.auth_kinds import PATH_VALUES, AuthKind, PathValue, Scope
from stalwart.api.determined_routes import DET_ROUTES
from stalwart.api.routes_table import HTML, ROUTES, WEBSOCKET, RouteSpec
from stalwart.master.identity import authz

pytestmark = pytest.mark.integration

USER_ROUTES = [s for s in ROUTES if s.auth is AuthKind.USER]
DET_USER_ROUTES = [s for s in DET_ROUTES if s.auth is AuthKind.USER]
"""The Determined listener's user routes (master/determined_api): the same permissions, checked the same way."""
QUERIES = {("GET", "/api/v1/ui/events"): {"page": "experiment", "id": "{exp_id}", "interval": "0.2"}}
"""The query of each route of scope `query`, naming W's objects."""
NOT_A_BODY = b"[]"
"""What a call that would change something sends when the check should let it through: no route takes it (400)."""
BODIES = {
    ("POST", "/api/v1/experiments"): lambda w: {
        "config": aw.EXPERIMENT.format(name="made-" + aw.SECRET, workspace="team-w", project="proj-" + aw.SECRET),
        "context": w.context, "activate": False},
    ("DELETE", "/api/v1/checkpoints"): lambda w: {"uuids": [w.new_checkpoint()]},
    ("POST", "/api/v1/commands"): lambda w: {"config": {"entrypoint": ["true"], "workspace": "team-w",
                                                        "project": "proj-" + aw.SECRET}},
    ("POST", "/api/v1/shells"): lambda w: {"config": {"workspace": "team-w", "project": "proj-" + aw.SECRET}},
    ("POST", "/api/v1/notebooks"): lambda w: {"config": {"workspace": "team-w", "project": "proj-" + aw.SECRET}},
    ("POST", "/api/v1/tensorboards"): lambda w: {"experiment_ids": [int(w.values["exp_id"])], "config": {
        "workspace": "team-w", "project": "proj-" + aw.SECRET}},
    ("POST", "/api/v1/tokens"): lambda w: {"description": "conformance"},
    ("POST", "/api/v1/webhooks"): lambda w: {"url": "http://127.0.0.1:9/made", "workspace_id": w.workspaces["W"],
                                             "triggers": [{"trigger_type": "CUSTOM"}]},
    ("POST", "/api/v1/models"): lambda w: {"name": f"made-{next(w.serial)}", "workspace": "team-w"},
    ("POST", "/api/v1/templates"): lambda w: {"name": f"made-{next(w.serial)}", "config": {"max_restarts": 2},
                                              "workspace": "team-w"},
    ("POST", "/api/v1/rbac/assignments"): lambda w: {"role": "Viewer", "username": "tess",
                                                     "workspaceId": w.workspaces["W"]},
    ("POST", "/api/v1/rbac/unassignments"): lambda w: {"role": "Viewer", "username": "tess",
                                                       "workspaceId": w.workspaces["W"]},
}
"""The body of each route of scope `body`, naming W's objects (its handler checks them)."""
_DET_CONFIG = aw.EXPERIMENT.format(name="det-" + aw.SECRET, workspace="team-w", project="proj-" + aw.SECRET)
DET_BODIES = {
    ("POST", "/api/v1/experiments"): lambda w: {"config": _DET_CONFIG, "activate": False, "modelDefinition": [
        {"path": "train.py", "type": 48, "content": base64.b64encode(b"print(1)\n").decode(), "mtime": "0",
         "mode": 0o644, "uid": 0, "gid": 0}]},
    ("PUT", "/api/v1/experiments/by-external-id/{external_id:path}"): lambda w: {"config": _DET_CONFIG,
                                                                                "unmanaged": True},
    ("POST", "/api/v1/trials"): lambda w: {"experimentId": int(w.values["exp_id"])},
    ("PUT", "/api/v1/trials"): lambda w: {"createTrialRequest": {"experimentId": int(w.values["exp_id"])},
                                          "externalTrialId": "conformance"},
    ("POST", "/api/v1/runs/start"): lambda w: {"runId": int(w.values["trial_id"])},
    ("POST", "/api/v1/checkpoints"): lambda w: {"uuid": str(uuid.uuid4()), "taskId": f"trial-{w.values['trial_id']}",
                                                "metadata": {"steps_completed": 1}, "resources": {}},
    ("POST", "/task-logs"): lambda w: [{"task_id": f"trial-{w.values['trial_id']}", "log": "conformance\n"}],
}
"""The same for the Determined listener's routes of scope `body`, in Determined's shapes."""


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[aw.World]:
    home = tmp_path_factory.mktemp(f"conformance-{request.param}")
    if request.param == "sqlite":
        yield from aw.build(home, f"sqlite:///{home / 'm.db'}")
        return
    with fresh_database("stalwart_conformance") as url:
        yield from aw.build(home, url)


# -- what the tables say --------------------------------------------------------------------------------------
def expected_allowed(spec: RouteSpec, roles: tuple[tuple[str, str | None], ...]) -> bool:
    """Does the permission table give a caller with `roles` this route's permission on what the route names (W's
    objects, tess's account objects, the cluster)?"""
    permission, scope = spec.permission, spec.scope
    assert permission is not None and scope is not None
    if permission in P.ACCOUNT:  # by the basic rules: anyone; or the owner, of one's own things (tess owns the rest)
        return permission.basic is P.Rule.ANYONE or scope in (Scope.OWN, Scope.BODY)  # BODY: one's own token
    holding = [where for role, where in roles if permission in P.ROLES[role].permissions]
    if permission in P.CLUSTER_ONLY:
        return None in holding
    if scope in (Scope.PATH, Scope.QUERY, Scope.BODY):
        return None in holding or "W" in holding
    return bool(holding)  # a listing: the permission anywhere


# -- calling a route ------------------------------------------------------------------------------------------
def _fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], template)


def _changes(spec: RouteSpec) -> bool:
    return spec.method != "GET"


def call(world: aw.World, client: httpx.Client, spec: RouteSpec, values: dict[str, str] | None = None,
         bodies: dict[tuple[str, str], Callable[[aw.World], object]] = BODIES) -> tuple[int, str]:
    """Call the route with the world's objects (a body of scope `body` from `bodies`): (status, the answer's text;
    none of an endless stream's)."""
    values = values or world.values
    query = {k: _fill(v, values) for k, v in QUERIES.get(spec.key, {}).items()}
    body = NOT_A_BODY if spec.request is not None else None
    if spec.scope is Scope.BODY:
        body = json.dumps(bodies[spec.key](world)).encode()
    headers = {"content-type": "application/json"} if body is not None else None
    with client.stream(spec.method, _fill(spec.path, values), params=query, content=body, headers=headers) as reply:
        endless = spec.streaming and reply.status_code == 200 and "follow" not in str(reply.url)
        text = "" if endless and spec.content_type == "text/event-stream" else reply.read().decode(errors="replace")
        return reply.status_code, text


def _values_for(world: aw.World, spec: RouteSpec, allowed: bool) -> dict[str, str]:
    """The world's objects, or new ones for a call that passes and changes (or removes) what it names."""
    if not (allowed and _changes(spec) and spec.request is None):
        return world.values
    return {**world.values, **{k: aw.FRESH[k](world) for k in spec.path_values if k in aw.FRESH}}


def _verdict(spec: RouteSpec, status: int, text: str, allowed: bool) -> str | None:
    """None when the answer is what the tables say; otherwise what is wrong."""
    assert spec.permission is not None
    if status >= 500:
        return f"{status} {text[:300]}"
    if allowed:
        return None if status not in (401, 403) else f"refused ({status}) though allowed: {text[:300]}"
    if status != 403 or spec.permission.name not in text:
        return f"not refused with a 403 naming {spec.permission.name}: {status} {text[:300]}"
    return None


# -- the suite -------------------------------------------------------------------------------------------------
def test_every_route_of_the_table_is_covered() -> None:
    """A route the suite cannot call fails here: every path value is one the world fills, every route of scope
    `query` has its query, and the master's check knows every object a path or query can name."""
    filled = set(PATH_VALUES)
    for spec in (*ROUTES, *DET_ROUTES):
        assert set(spec.path_values) <= filled, f"{spec.method} {spec.path}: the world has no value for it"
        if spec.scope is Scope.QUERY:
            assert spec.key in QUERIES and spec.key in authz.QUERY_OBJECTS, f"{spec.method} {spec.path}"
        if spec.scope is Scope.BODY:
            bodies = DET_BODIES if spec in DET_ROUTES else BODIES
            assert spec.key in bodies, f"{spec.method} {spec.path}: the suite has no body naming W's objects for it"
    named = {k for k, v in PATH_VALUES.items() if v in (PathValue.WORKSPACE_OBJECT, PathValue.ACCOUNT_OBJECT)}
    assert named == set(authz.FINDERS)
    assert set(aw.FRESH) <= named | {"group_name"}


def test_the_master_serves_exactly_the_table(world: aw.World) -> None:
    from fastapi.routing import APIWebSocketRoute, iter_route_contexts

    contexts = list(iter_route_contexts(world.app.routes))
    served = {(method, route.path) for route in contexts
              for method in (getattr(route, "methods", None) or ()) if method != "HEAD"}
    served |= {(WEBSOCKET, route.path) for route in contexts if isinstance(route.route, APIWebSocketRoute)}
    assert served == {s.key for s in ROUTES}


@pytest.mark.parametrize("caller", list(aw.CALLERS))
def test_each_caller_gets_what_the_permission_table_says(world: aw.World, caller: str) -> None:
    wrong = _wrong_answers(world, caller, USER_ROUTES, world.callers[caller], world.url)
    assert wrong == {}, f"{caller}: {len(wrong)} route(s) answer otherwise than the permission table says: {wrong}"


@pytest.mark.parametrize("caller", list(aw.CALLERS))
def test_each_caller_gets_the_same_on_determineds_listener(world: aw.World, caller: str) -> None:
    with world.on_determined(world.callers[caller]) as client:
        wrong = _wrong_answers(world, caller, DET_USER_ROUTES, client, world.det_url, DET_BODIES)
    assert wrong == {}, f"{caller}: {len(wrong)} Determined route(s) answer otherwise than the table says: {wrong}"


def _wrong_answers(world: aw.World, caller: str, specs: list[RouteSpec], client: httpx.Client, base_url: str,
                   bodies: dict[tuple[str, str], Callable[[aw.World], object]] = BODIES) -> dict[str, str]:
    """Each route of `specs` called as `caller` through `client` (of `base_url`): what answers otherwise than the
    permission table says."""
    wrong: dict[str, str] = {}
    for spec in specs:
        allowed = expected_allowed(spec, aw.CALLERS[caller])
        if spec.scope is Scope.OWN and _changes(spec):  # signing out: a session of its own, ended by the call
            with world.fresh_session(caller, base_url) as own:
                status, text = call(world, own, spec, bodies=bodies)
        else:
            status, text = call(world, client, spec, _values_for(world, spec, allowed), bodies)
        problem = _verdict(spec, status, text, allowed)
        if problem is not None:
            wrong[f"{spec.method} {spec.path}"] = problem
        if allowed and _changes(spec):
            world.repair()
    return wrong


def _readable_routes() -> list[RouteSpec]:
    return [s for s in USER_ROUTES if s.method == "GET" and s.key not in QUERIES]


@pytest.mark.parametrize("caller", ["no role", "a role elsewhere"])
def test_a_caller_who_may_not_view_w_reads_nothing_of_it(world: aw.World, caller: str) -> None:
    client = world.callers[caller]
    leaks = {}
    for spec in _readable_routes():
        for show_all in ({}, {"all": "true"}, {"archived": "all"}):
            with client.stream("GET", _fill(spec.path, world.values), params=show_all) as reply:
                if spec.content_type == "text/event-stream":
                    continue
                text = reply.read().decode(errors="replace")
            if aw.SECRET in text:
                leaks[f"GET {spec.path} {show_all}"] = text[max(0, text.index(aw.SECRET) - 200):][:400]
    for page in ("experiments", "cluster"):
        text = _first_event(client, page)
        if aw.SECRET in text:
            leaks[f"ui/events page={page}"] = text[:400]
    assert leaks == {}, f"{caller} reads W's objects: {leaks}"


@pytest.mark.parametrize("caller", ["no role", "a role elsewhere"])
def test_nor_through_determineds_listener(world: aw.World, caller: str) -> None:
    leaks = {}
    with world.on_determined(world.callers[caller]) as client:
        for spec in [s for s in DET_USER_ROUTES if s.method == "GET"]:
            for show_all in ({}, {"archived": "true"}, {"limit": "0"}):  # `det e list --all` sends no `users`
                with client.stream("GET", _fill(spec.path, world.values), params=show_all) as reply:
                    text = reply.read().decode(errors="replace")
                if aw.SECRET in text:
                    leaks[f"GET {spec.path} {show_all}"] = text[max(0, text.index(aw.SECRET) - 200):][:400]
    assert leaks == {}, f"{caller} reads W's objects through Determined's listener: {leaks}"


def _first_event(client: httpx.Client, page: str) -> str:
    with client.stream("GET", "/api/v1/ui/events", params={"page": page, "interval": "0.2"}) as reply:
        if reply.status_code != 200:
            return reply.read().decode()
        for line in reply.iter_lines():
            if line.startswith("data:"):
                return line
    return ""


def test_a_viewer_of_w_reads_its_objects_in_the_listings(world: aw.World) -> None:
    """The other side of the test above: the listings do show W's objects to who may view them."""
    viewer = world.callers["Viewer"]
    for path in ("/api/v1/experiments", "/api/v1/tasks", "/api/v1/jobs", "/api/v1/ui/experiments"):
        assert aw.SECRET in viewer.get(path).text, path
    jobs = aw.ok(world.callers["no role"].get("/api/v1/jobs"))["jobs"]
    assert jobs and all(j["limited"] and j.get("name") is None and j.get("owner") is None for j in jobs
                        if j["workspace_id"] == world.workspaces["W"])


# -- allocation routes ------------------------------------------------------------------------------------------
ALLOCATION_ROUTES = [s for s in ROUTES if AuthKind.ALLOCATION in (s.auth, *s.also_auth)]
ALLOCATION_BODIES = {
    ("POST", "/api/v1/trials/{trial_id}/metrics"): {"reports": [{"group": "training", "steps_completed": 1,
                                                                 "metrics": {"x": 1}}]},
    ("POST", "/api/v1/trials/{trial_id}/progress"): {"progress": 0.5},
    ("POST", "/api/v1/trials/{trial_id}/early_exit"): {"reason": "INVALID_HP"},
    ("POST", "/api/v1/checkpoints"): {"trial_id": "{trial_id}", "uuid": "{fresh}", "metadata": {"steps_completed": 2},
                                      "resources": {"w": 1}},
    ("POST", "/api/v1/allocations/{allocation_id}/signals/ack_preemption"): None,
    ("POST", "/api/v1/allocations/{allocation_id}/service"): {"port": 8888},
    ("POST", "/api/v1/allocations/{allocation_id}/detached/end"): {"state": "COMPLETED"},
    ("POST", "/api/v1/trials/{trial_id}/alerts"): {"title": "t", "description": "d", "level": "INFO"},
    ("POST", "/api/v1/task/logs"): {"logs": [{"allocation_id": "{allocation_id}", "trial_id": "{trial_id}",
                                              "timestamp": 1.0, "log": "hi"}]},
}


def _alloc_body(spec: RouteSpec, values: dict[str, str]) -> object:
    shape = ALLOCATION_BODIES.get(spec.key)
    if shape is None:
        return None
    text = json.dumps(shape).replace("{fresh}", str(uuid.uuid4()))
    text = re.sub(r'"\{(\w+)\}"', lambda m: json.dumps(int(values[m.group(1)]) if m.group(1) == "trial_id"
                                                       else values[m.group(1)]), text)
    return json.loads(text)


@pytest.mark.parametrize("whose", ["another experiment's", "an ended allocation's"])
def test_allocation_routes_take_only_their_own_live_allocation(world: aw.World, whose: str) -> None:
    """Each route a trial calls, naming E's trial and allocation (or, for an ended one, its own), refuses the token."""
    token = world.allocation_token("E2" if whose.startswith("another") else "E3")
    values = dict(world.values)
    if whose.startswith("an ended"):
        values.update(trial_id=str(world.trials["E3"]), allocation_id=world.allocations["E3"],
                      exp_id=str(_experiment_of(world, world.trials["E3"])))
    wrong = {}
    for spec in ALLOCATION_ROUTES:
        url = _fill(spec.path, values)
        if spec.key == ("POST", "/api/v1/task/logs") and not whose.startswith("an ended"):
            continue  # a trial's own log lines are filed under its own allocation, whatever the body names
        reply = httpx.request(spec.method, world.url + url, headers=token, json=_alloc_body(spec, values), timeout=30)
        if reply.status_code not in (403, 409) or reply.status_code >= 500:
            wrong[f"{spec.method} {spec.path}"] = f"{reply.status_code} {reply.text[:200]}"
    assert wrong == {}, wrong


def _experiment_of(world: aw.World, trial_id: int) -> int:
    return int(aw.ok(world.admin.get(f"/api/v1/trials/{trial_id}"))["trial"]["experiment_id"])


# -- objects named by bodies ------------------------------------------------------------------------------------
def test_objects_named_by_bodies_need_the_permission_on_them(world: aw.World) -> None:
    viewer, elsewhere = world.callers["Viewer"], world.callers["a role elsewhere"]
    config = aw.EXPERIMENT.format(name="into-w", workspace="team-w", project="proj-" + aw.SECRET)
    for client, permission in ((viewer, P.CREATE_EXPERIMENTS), (elsewhere, P.CREATE_EXPERIMENTS)):
        reply = client.post("/api/v1/experiments", json={"config": config, "context": world.context})
        assert reply.status_code == 403 and permission.name in reply.text, reply.text
    command = {"entrypoint": ["true"], "workspace": "team-w", "project": "proj-" + aw.SECRET}
    reply = elsewhere.post("/api/v1/commands", json={"config": command})
    assert reply.status_code == 403 and P.CREATE_COMMANDS.name in reply.text, reply.text
    reply = viewer.request("DELETE", "/api/v1/checkpoints", json={"uuids": [world.values["uuid"]]})
    assert reply.status_code == 403 and P.DELETE_CHECKPOINTS.name in reply.text, reply.text
    reply = elsewhere.request("DELETE", "/api/v1/checkpoints", json={"uuids": [world.values["uuid"]]})
    assert reply.status_code == 403 and P.DELETE_CHECKPOINTS.name in reply.text, reply.text
    reply = elsewhere.post("/api/v1/rbac/assignments", json={
        "role": "Viewer", "username": "tess", "workspaceId": world.workspaces["W"]})
    assert reply.status_code == 403 and P.ASSIGN_ROLES.name in reply.text, reply.text
    # an Editor of W moves nothing into W2, where it has no role; W2's admin takes nothing out of W
    mine = world.new_experiment()
    two = aw.ok(world.admin.get(f"/api/v1/workspaces/{world.workspaces['W2']}/projects"))["projects"][0]["id"]
    reply = world.callers["Editor"].post(f"/api/v1/experiments/{mine}/move", json={"destinationProjectId": two})
    assert reply.status_code == 403, reply.text
    reply = elsewhere.post(f"/api/v1/experiments/{mine}/move", json={"destinationProjectId": two})
    assert reply.status_code == 403 and P.EDIT_EXPERIMENTS.name in reply.text, reply.text


def test_pages_refuse_with_a_page(world: aw.World) -> None:
    """A refused page is an HTML page naming the permission (the UI shows it), not a JSON body."""
    pages = [s for s in USER_ROUTES if s.content_type == HTML and s.scope is Scope.PATH]
    assert pages
    for spec in pages:
        status, text = call(world, world.callers["no role"], spec)
        assert status == 403 and "<html" in text.lower(), (spec.path, status, text[:200])
