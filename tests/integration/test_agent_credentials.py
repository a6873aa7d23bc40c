"""Each agent its own credential; the cluster token only enrolls (issue 25, hole 4; acceptance 3 and 7).

In-process (`create_app` on a real SQLite database, driven with fastapi's TestClient, whose `client=` sets the
address the master sees): agents a0 (4 slots, running an allocation) and a1 (no slots) enroll from loopback. For
every route of the table whose auth kind includes CLUSTER, a call that names a0 or a0's allocation is refused with
the bare cluster token (except enrollment), with a1's credential, and with a revoked credential, and passes with
a0's own. Enrollment follows `agents.enrollment` (loopback by default, open, closed); an agent registered before
credentials existed gets one at its next registration. With real processes: test_agent_credentials_processes.py.
"""

from __future__ import annotations

import base64
import json
import pathlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from helpers_auth import as_admin, bearer
from stalwart.api.auth_kinds import AuthKind
from stalwart.api.errors import ConfigError
from stalwart.api.routes_table import ROUTES, RouteSpec
from stalwart.config.master import parse_master_config
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master.app import create_app
from stalwart.master.identity import tokens
from stalwart.master.scheduling import scheduling
from stalwart.master.settings import MasterSettings

pytestmark = pytest.mark.integration

LOOPBACK = ("127.0.0.1", 50000)
ELSEWHERE = ("203.0.113.7", 50000)
ENROLL = ("POST", "/api/v1/agents")
CONFIG = """
name: creds
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
"""


# -- an in-process master --------------------------------------------------------------------------------------


@dataclass
class World:
    """A master, a client per address, and what its agents hold."""

    app: FastAPI
    local: TestClient
    far: TestClient
    admin: TestClient
    credentials: dict[str, str] = field(default_factory=dict)
    allocation_id: str = ""

    @property
    def m(self) -> Any:
        return self.app.state.master

    def enroll(self, agent_id: str, slots: int = 0, client: TestClient | None = None) -> httpx.Response:
        return (client or self.local).post("/api/v1/agents", json={"agent_id": agent_id, "slots": slots},
                                           headers=bearer(self.m.cluster_token))

    def close(self) -> None:
        for client in (self.local, self.far, self.admin):
            client.close()
        self.m.db.dispose()


def _client(app: FastAPI, address: tuple[str, int]) -> TestClient:
    # no `with`: the app's background loops stay off; the test's own scheduling tick is the only one
    return TestClient(app, client=address, follow_redirects=False, raise_server_exceptions=False)


def _world(home: pathlib.Path, master_config: dict[str, Any] | None = None, *, running: bool = True,
           db_url: str | None = None) -> World:
    home.mkdir(parents=True, exist_ok=True)
    cluster = parse_master_config(master_config or {})
    app = create_app(MasterSettings(db_url=db_url or f"sqlite:///{home / 'm.db'}", home=home, cluster=cluster,
                                    ui_metrics_index=False, agent_timeout_s=3600))
    w = World(app, _client(app, LOOPBACK), _client(app, ELSEWHERE), _client(app, LOOPBACK))
    as_admin(w.admin)
    if running:
        for agent_id, slots in (("a0", 4), ("a1", 0)):
            reply = w.enroll(agent_id, slots)
            assert reply.status_code == 200, reply.text
            w.credentials[agent_id] = reply.json()["credential"]
        w.allocation_id = _allocation_on_a0(w, home)
    return w


def _allocation_on_a0(w: World, home: pathlib.Path) -> str:
    ctx = home / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "train.py").write_text("print('never runs: the agent is the test')\n")
    context = base64.b64encode(pack_context(ctx).data).decode()
    created = w.admin.post("/api/v1/experiments", json={"config": CONFIG, "context": context})
    assert created.status_code == 200, created.text
    scheduling.tick(w.m)
    with w.m.db.begin() as conn:
        alloc = conn.execute(sa.select(t.allocations).where(t.allocations.c.trial_id.is_not(None))).mappings().one()
        placed = conn.execute(sa.select(t.allocation_containers.c.agent_id)
                              .where(t.allocation_containers.c.allocation_id == alloc["id"])).scalars().all()
    assert placed == ["a0"]
    return str(alloc["id"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = _world(tmp_path_factory.mktemp("agent-creds"))
    yield w
    w.close()


# -- every cluster route, from the route table ----------------------------------------------------------------

Call = Callable[[World], dict[str, Any]]
"""How to call a cluster route naming agent a0 or a0's allocation: TestClient.request keyword arguments."""

CALLS: dict[tuple[str, str], Call] = {
    ENROLL: lambda w: {"json": {"agent_id": "a0", "slots": 4}},
    ("GET", "/api/v1/agents/{agent_id}/actions"): lambda w: {"params": {"timeout": 0}},
    ("GET", "/api/v1/allocations/{allocation_id}/context"): lambda w: {},
    ("POST", "/api/v1/allocations/{allocation_id}/started"): lambda w: {"json": {"agent_id": "a0", "pid": None}},
    ("POST", "/api/v1/allocations/{allocation_id}/exited"): lambda w: {"json": {"agent_id": "a0", "exit_code": 0}},
    ("POST", "/api/v1/task/logs"): lambda w: {"json": {"runs": [
        {"allocation_id": w.allocation_id, "agent_id": "a0", "lines": [[time.time(), "a line of a0's trial"]]}]}},
}
"""One entry per cluster route. A route added to the table without one fails `test_every_cluster_route_is_probed`."""
CHANGES_STATE = {("POST", "/api/v1/allocations/{allocation_id}/started"),
                 ("POST", "/api/v1/allocations/{allocation_id}/exited")}
"""Routes whose passing call (a0's own) would end the shared allocation: passed in their own test, in order."""


def _cluster_routes() -> list[RouteSpec]:
    return [s for s in ROUTES if AuthKind.CLUSTER in (s.auth, *s.also_auth)]


def _route(method: str, path: str) -> RouteSpec:
    return next(s for s in _cluster_routes() if s.key == (method, path))


ACTIONS = ("GET", "/api/v1/agents/{agent_id}/actions")


def _call(w: World, spec: RouteSpec, headers: dict[str, str], client: TestClient | None = None) -> httpx.Response:
    url = spec.path.replace("{agent_id}", "a0").replace("{allocation_id}", w.allocation_id)
    return (client or w.far).request(spec.method, url, headers=headers, **CALLS[spec.key](w))


def _refusals(w: World, headers: dict[str, str], routes: list[RouteSpec], status: int = 403) -> dict[str, str]:
    out = {}
    for spec in routes:
        reply = _call(w, spec, headers)
        if reply.status_code != status:
            out[f"{spec.method} {spec.path}"] = f"{reply.status_code} {reply.text[:300]}"
    return out


def test_every_cluster_route_is_probed() -> None:
    assert {s.key for s in _cluster_routes()} == set(CALLS)


def test_the_bare_cluster_token_reaches_nothing_but_enrollment(world: World) -> None:
    others = [s for s in _cluster_routes() if s.key != ENROLL]
    assert others
    assert _refusals(world, bearer(world.m.cluster_token), others) == {}
    assert "only enrolls agents" in _call(world, others[0], bearer(world.m.cluster_token)).text
    # enrollment itself: a0 is enrolled, so the cluster token cannot register it again, from anywhere
    enroll = next(s for s in _cluster_routes() if s.key == ENROLL)
    for client in (world.local, world.far):
        reply = _call(world, enroll, bearer(world.m.cluster_token), client)
        assert reply.status_code == 403 and "has its own credential" in reply.text, reply.text


def test_another_agents_credential_is_refused_where_a0_or_its_allocation_is_named(world: World) -> None:
    assert _refusals(world, bearer(world.credentials["a1"]), _cluster_routes()) == {}


def test_no_credential_is_a_401_and_an_unknown_one_a_403(world: World) -> None:
    assert _refusals(world, {}, _cluster_routes(), 401) == {}
    assert _refusals(world, bearer("agent-not-a-credential-of-this-master"), _cluster_routes()) == {}


def test_a0s_own_credential_passes_from_any_address(world: World) -> None:
    mine = bearer(world.credentials["a0"])
    for spec in (s for s in _cluster_routes() if s.key not in CHANGES_STATE):
        reply = _call(world, spec, mine)
        assert reply.status_code == 200, f"{spec.method} {spec.path}: {reply.status_code} {reply.text[:300]}"
    actions = _call(world, _route(*ACTIONS), mine).json()
    assert [o["allocation_id"] for o in actions["start"]] == [world.allocation_id]
    with world.m.db.begin() as conn:
        stored = conn.execute(sa.select(t.task_logs).where(t.task_logs.c.log == "a line of a0's trial")
                              ).mappings().all()
    assert [(r["agent_id"], r["allocation_id"]) for r in stored] == [("a0", world.allocation_id)]


def test_log_lines_are_filed_under_the_agent_and_allocation_they_belong_to(world: World) -> None:
    """A line naming no allocation, or claiming another agent or another trial, is never stored as such."""
    runs = [{"trial_id": 999, "agent_id": "a1", "allocation_id": world.allocation_id, "lines": [[1.0, "claims"]]},
            {"trial_id": 999, "lines": [[1.0, "no allocation"]]},
            {"allocation_id": "f" * 32, "lines": [[1.0, "an allocation the master never had"]]}]
    reply = world.far.post("/api/v1/task/logs", json={"runs": runs}, headers=bearer(world.credentials["a0"]))
    assert reply.status_code == 200 and reply.json()["accepted"] == 1, reply.text
    with world.m.db.begin() as conn:
        stored = conn.execute(sa.select(t.task_logs).where(t.task_logs.c.log.in_(
            ["claims", "no allocation", "an allocation the master never had"]))).mappings().all()
        trial_id = conn.execute(sa.select(t.allocations.c.trial_id)
                                .where(t.allocations.c.id == world.allocation_id)).scalar_one()
    assert [(r["log"], r["agent_id"], r["trial_id"]) for r in stored] == [("claims", "a0", trial_id)]


def test_the_start_and_exit_of_an_allocation_come_only_from_its_agent(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path)  # its own: the exit ends the allocation
    try:
        a1, a0 = bearer(w.credentials["a1"]), bearer(w.credentials["a0"])
        lying = w.far.post(f"/api/v1/allocations/{w.allocation_id}/started", headers=a0,
                           json={"agent_id": "a1", "pid": None})  # a0 may not report for another agent
        assert lying.status_code == 403 and "not the agent calling" in lying.text, lying.text
        for key in sorted(CHANGES_STATE, key=lambda k: k[1].endswith("/exited")):  # started, then exited
            assert _call(w, _route(*key), a1).status_code == 403
            reply = _call(w, _route(*key), a0)
            assert reply.status_code == 200, f"{key}: {reply.text}"
    finally:
        w.close()


def test_a_revoked_credential_is_refused_everywhere_and_the_admin_sees_it(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path)
    try:
        assert _call(w, _route(*ACTIONS), bearer(w.credentials["a0"])).status_code == 200
        listed = w.admin.get("/api/v1/agents/credentials").json()["credentials"]
        assert [(c["agent_id"], c["state"]) for c in listed] == [("a0", "active"), ("a1", "active")]
        assert not any("credential" in c or w.credentials["a0"] in json.dumps(c) for c in listed)
        refused = w.far.post("/api/v1/agents/a0/revoke", json={}, headers=bearer(w.credentials["a0"]))
        assert refused.status_code == 401  # an agent's credential is no user session
        revoked = w.admin.post("/api/v1/agents/a0/revoke", json={})
        assert revoked.status_code == 200 and revoked.json()["credential"]["state"] == "revoked", revoked.text
        assert _refusals(w, bearer(w.credentials["a0"]), _cluster_routes()) == {}
        assert "revoked" in _call(w, _route(*ACTIONS), bearer(w.credentials["a0"])).text
        again = w.enroll("a0", 4)  # the cluster token cannot claim a revoked id
        assert again.status_code == 403 and "--reenroll" in again.text, again.text
        listed = {c["agent_id"]: c for c in w.admin.get("/api/v1/agents/credentials").json()["credentials"]}
        assert listed["a0"]["state"] == "revoked" and listed["a0"]["revoked_at"] and listed["a0"]["last_used"]
        assert listed["a1"]["state"] == "active"
        # an admin lets the id enroll again (its credential file was lost): a new credential, the old one stays dead
        assert w.admin.post("/api/v1/agents/a0/revoke", json={"reenroll": True}).status_code == 200
        fresh = w.enroll("a0", 4)
        assert fresh.status_code == 200 and fresh.json()["credential"] not in (None, w.credentials["a0"])
        assert _call(w, _route(*ACTIONS), bearer(w.credentials["a0"])).status_code == 403
        assert _call(w, _route(*ACTIONS), bearer(fresh.json()["credential"])).status_code == 200
        assert w.admin.post("/api/v1/agents/nobody/revoke", json={}).status_code == 404
    finally:
        w.close()


@pytest.mark.postgres
def test_the_checks_hold_on_postgresql(tmp_path: pathlib.Path, pg_url: str) -> None:
    w = _world(tmp_path, db_url=pg_url)
    try:
        others = [s for s in _cluster_routes() if s.key != ENROLL]
        assert _refusals(w, bearer(w.m.cluster_token), others) == {}
        assert _refusals(w, bearer(w.credentials["a1"]), _cluster_routes()) == {}
        assert _call(w, _route(*ACTIONS), bearer(w.credentials["a0"])).status_code == 200
        assert w.admin.post("/api/v1/agents/a0/revoke", json={}).status_code == 200
        assert _refusals(w, bearer(w.credentials["a0"]), _cluster_routes()) == {}
        listed = {c["agent_id"]: c["state"] for c in w.admin.get("/api/v1/agents/credentials").json()["credentials"]}
        assert listed == {"a0": "revoked", "a1": "active"}
    finally:
        w.close()


def test_revoking_is_for_admins_only(world: World) -> None:
    made = world.admin.post("/api/v1/users", json={"username": "ann", "password": "pw-ann"})
    assert made.status_code == 200, made.text
    ann = _client(world.app, LOOPBACK)
    try:
        ann.headers.update(bearer(ann.post("/api/v1/auth/login", json={
            "username": "ann", "password": "pw-ann", "isHashed": False}).json()["token"]))
        for method, path in (("GET", "/api/v1/agents/credentials"), ("POST", "/api/v1/agents/a1/revoke")):
            reply = ann.request(method, path, json={} if method == "POST" else None)
            assert reply.status_code == 403 and "manage_agents" in reply.text, reply.text
    finally:
        ann.close()


# -- who may enroll ----------------------------------------------------------------------------------------------


def test_a_rogue_with_only_the_cluster_token_is_refused_when_enrollment_is_closed(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path, {"agents": {"enrollment": "closed"}}, running=False)
    try:
        for client in (w.local, w.far):
            reply = w.enroll("rogue", 4, client)
            assert reply.status_code == 403, reply.text
            assert "agents.enrollment: closed" in reply.text and "enrollment: open" in reply.text
        assert w.admin.get("/api/v1/agents").json()["agents"] == []
    finally:
        w.close()


def test_by_default_only_loopback_enrolls(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path, running=False)
    try:
        reply = w.enroll("rogue", 4, w.far)
        assert reply.status_code == 403, reply.text
        assert ELSEWHERE[0] in reply.text and "enrollment: open" in reply.text
        for host in ("127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"):
            near = _client(w.app, (host, 40000))
            try:
                assert w.enroll(f"near-{host}", 1, near).status_code == 200, host
            finally:
                near.close()
        assert sorted(a["id"] for a in w.admin.get("/api/v1/agents").json()["agents"]) == [
            "near-127.0.0.1", "near-127.9.9.9", "near-::1", "near-::ffff:127.0.0.1"]
    finally:
        w.close()


def test_open_enrollment_takes_agents_from_anywhere(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path, {"agents": {"enrollment": "open"}}, running=False)
    try:
        reply = w.enroll("far-away", 2, w.far)
        assert reply.status_code == 200 and reply.json()["credential"].startswith(tokens.CREDENTIAL_PREFIX)
    finally:
        w.close()


def test_a_bad_enrollment_setting_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"agents\.enrollment.*loopback, open, closed"):
        parse_master_config({"agents": {"enrollment": "sometimes"}})


# -- agents registered before this change -------------------------------------------------------------------------


def _pre_upgrade_agent(w: World, agent_id: str) -> None:
    """An agents row as a master before credentials wrote it: registered, no credential."""
    with w.m.db.begin() as conn:
        conn.execute(t.agents.insert().values(
            id=agent_id, hostname="old-host", resource_pool="default", slots=1, slot_type="cpu", enabled=True,
            connected=False, registered_at=time.time() - 86400, last_seen=time.time() - 3600, draining=False))


@pytest.mark.parametrize("policy", ["loopback", "open"])
def test_an_agent_registered_before_credentials_gets_one_at_its_next_registration(tmp_path: pathlib.Path,
                                                                                   policy: str) -> None:
    w = _world(tmp_path, {"agents": {"enrollment": policy}}, running=False)
    try:
        _pre_upgrade_agent(w, "old")
        listed = w.admin.get("/api/v1/agents/credentials").json()["credentials"]
        assert [(c["agent_id"], c["state"], c["registered"]) for c in listed] == [("old", "none", True)]
        reply = w.enroll("old", 1, w.far)  # an upgrade, even from another machine: the id was already admitted
        assert reply.status_code == 200, reply.text
        mine = bearer(reply.json()["credential"])
        assert w.far.get("/api/v1/agents/old/actions", headers=mine).status_code == 200
        again = w.enroll("old", 1, w.local)  # once: from then on the cluster token no longer registers it
        assert again.status_code == 403 and "has its own credential" in again.text
        assert w.far.post("/api/v1/agents", json={"agent_id": "old", "slots": 1}, headers=mine).status_code == 200
    finally:
        w.close()


def test_closed_enrollment_upgrades_no_agent_and_an_admin_may_revoke_one_that_has_none(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path, {"agents": {"enrollment": "closed"}}, running=False)
    try:
        _pre_upgrade_agent(w, "old")
        _pre_upgrade_agent(w, "distrusted")
        assert w.enroll("old", 1).status_code == 403
        assert w.admin.post("/api/v1/agents/distrusted/revoke", json={}).json()["credential"]["state"] == "revoked"
    finally:
        w.close()
    w = _world(tmp_path / "reopened", running=False)
    try:
        _pre_upgrade_agent(w, "distrusted")
        assert w.admin.post("/api/v1/agents/distrusted/revoke", json={}).status_code == 200
        assert w.enroll("distrusted", 1).status_code == 403  # revoked before it ever had one: never claimable
    finally:
        w.close()


def test_an_answer_lost_on_the_way_is_issued_again_only_to_the_same_agent_process(tmp_path: pathlib.Path) -> None:
    w = _world(tmp_path, running=False)
    try:
        body = {"agent_id": "a", "slots": 1, "incarnation": "run-1"}
        first = w.local.post("/api/v1/agents", json=body, headers=bearer(w.m.cluster_token))
        assert first.status_code == 200
        # its answer never arrived: the same process asks again, and the first credential dies
        again = w.local.post("/api/v1/agents", json=body, headers=bearer(w.m.cluster_token))
        assert again.status_code == 200 and again.json()["credential"] != first.json()["credential"]
        assert w.local.get("/api/v1/agents/a/actions", headers=bearer(first.json()["credential"])).status_code == 403
        other = w.local.post("/api/v1/agents", json={**body, "incarnation": "intruder"},
                             headers=bearer(w.m.cluster_token))
        assert other.status_code == 403
        assert w.local.get("/api/v1/agents/a/actions", headers=bearer(again.json()["credential"])).status_code == 200
        # used once: never issued again, even to the same process
        assert w.local.post("/api/v1/agents", json=body, headers=bearer(w.m.cluster_token)).status_code == 403
    finally:
        w.close()
