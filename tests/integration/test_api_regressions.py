"""Regressions of the 500s fuzzing found, and what an unexpected error does to the connection.

Each bad value answers 400 with an ErrorBody whose message names the field: ints >= 2^63 in paths and query
strings, `"context": true`, `slots` >= 2^63 or a `null` in a command's or an experiment's `resources`, an agent
offering more slots than MAX_AGENT_SLOTS, a bad log timestamp. An exception no handler expected answers a 500
ErrorBody, is logged with its traceback, and the keep-alive connection it came on serves the next request. An
unknown path keeps FastAPI's own 404.

The master is the real app served by uvicorn (as `stalwart master run` serves it) in a thread of the test, so
that a test-only route can raise for real.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import pathlib
import re
import select
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from in_thread import serving

from helpers_auth import as_admin
from stalwart.api.auth_kinds import AuthKind
from stalwart.api.errors import NotFoundError
from stalwart.api.models.agents import MAX_AGENT_SLOTS
from stalwart.api.models.errors import ErrorBody
from stalwart.api.routes_table import ROUTES, RouteSpec
from stalwart.context import pack_context
from stalwart.master.app import create_app
from stalwart.master.identity import tokens
from stalwart.master.settings import MasterSettings

pytestmark = pytest.mark.integration

TOO_BIG = 2**63
"""One past a signed 64-bit column's largest value."""
RAISES = "/api/v1/test-only/raises"
RAISES_STALWART_ERROR = "/api/v1/test-only/not-found"
FAULTS = pathlib.Path(__file__).resolve().parent / "faults"
EXPERIMENT = "name: regressions\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 1}\n"
INT_PATH_PARAMS = ("exp_id", "trial_id", "cmd_id")
"""Path parameters that are database ids (the others are strings: uuids, allocation, agent, job and task ids)."""
LOG_BODIES = {
    "logs": ('{"logs": [{"allocation_id": "a1", "timestamp": TIMESTAMP, "log": "hi"}]}', "logs[0].timestamp"),
    "runs": ('{"runs": [{"allocation_id": "a1", "lines": [[TIMESTAMP, "hi"]]}]}', "runs[0].lines[0]"),
}
"""The two shapes of a task log batch, each with the field a bad timestamp in it is named by."""


@dataclass(frozen=True)
class Served:
    host: str
    port: int
    cluster_token: str
    allocation_token: str
    agent_credential: str  # an enrolled agent's own (the cluster token only enrolls)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _raise_unexpected() -> None:
    raise RuntimeError("a bug the handler did not expect")


def _raise_not_found() -> None:
    raise NotFoundError("thing 7 not found")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("regressions")
    app = create_app(MasterSettings(db_url=f"sqlite:///{home / 'm.db'}", home=home, ui_metrics_index=False))
    app.add_api_route(RAISES, _raise_unexpected, methods=["GET"], include_in_schema=False)
    app.add_api_route(RAISES_STALWART_ERROR, _raise_not_found, methods=["GET"], include_in_schema=False)
    with serving(app, "regressions-master") as url:
        m = app.state.master
        enrolled = httpx.post(f"{url}/api/v1/agents", json={"agent_id": "a0", "slots": 1},
                              headers={"authorization": f"Bearer {m.cluster_token}"})
        assert enrolled.status_code == 200, enrolled.text
        yield Served("127.0.0.1", int(url.rsplit(":", 1)[1]), m.cluster_token, m.allocation_token("0" * 32),
                     enrolled.json()["credential"])


@pytest.fixture(scope="module")
def api(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.url, timeout=30) as client:
        as_admin(client)  # the user routes need a session: the bootstrap admin's
        yield client


def _error(reply: httpx.Response, status: int, *names: str) -> ErrorBody:
    """The reply is `status` with an ErrorBody whose message names each of `names`."""
    assert reply.status_code == status, f"{reply.request.method} {reply.request.url}: {reply.status_code} {reply.text}"
    body = ErrorBody.model_validate(reply.json())
    said = "\n".join([body.error.message, *body.error.details])
    for name in names:
        assert name in said, f"the message and its details do not name {name!r}: {said}"
    return body


def _credentials(served: Served, spec: RouteSpec) -> dict[str, str]:
    kinds = {spec.auth, *spec.also_auth}
    if AuthKind.CLUSTER in kinds:
        return {"authorization": f"Bearer {served.agent_credential}"}
    if AuthKind.ALLOCATION in kinds and AuthKind.USER not in kinds:
        return {tokens.ALLOCATION_HEADER: served.allocation_token}
    return {}  # a user route (a trial may call some with its live allocation's token): the admin's session


def _int_path_cases() -> list[tuple[RouteSpec, str]]:
    """Every API route and each of its database-id path parameters."""
    return [(spec, name) for spec in ROUTES if spec.path.startswith("/api/")
            for name in re.findall(r"\{(\w+)\}", spec.path) if name in INT_PATH_PARAMS]


# -- ints >= 2^63 ------------------------------------------------------------------------------------


def _case_id(value: object) -> str:
    return f"{value.method} {value.path}" if isinstance(value, RouteSpec) else str(value)


@pytest.mark.parametrize(("spec", "name"), _int_path_cases(), ids=_case_id)
def test_a_path_id_over_64_bits_is_a_400_naming_it(api: httpx.Client, served: Served, spec: RouteSpec,
                                                    name: str) -> None:
    url = re.sub(r"\{(\w+)\}", lambda m: str(TOO_BIG) if m.group(1) == name else "1", spec.path)
    body: dict[str, object] | None = {} if spec.request is not None else None
    reply = api.request(spec.method, url, json=body, headers=_credentials(served, spec))
    _error(reply, 400, name)


def test_get_trial_9223372036854775808_is_a_400(api: httpx.Client) -> None:
    _error(api.get("/api/v1/trials/9223372036854775808"), 400, "trial_id")


@pytest.mark.parametrize(("path", "name"), [
    ("/api/v1/experiments", "offset"),
    ("/api/v1/experiments", "limit"),
    ("/api/v1/ui/experiments", "offset"),
    ("/api/v1/ui/experiments", "limit"),
    ("/api/v1/ui/experiments/1", "offset"),
    ("/api/v1/ui/experiments/1", "limit"),
    ("/api/v1/trials/1/metrics", "limit"),
    ("/api/v1/trials/1/metrics", "after_steps"),
    ("/api/v1/trials/1/logs", "after_id"),
    ("/api/v1/ui/trials/1/logs", "tail"),
    ("/api/v1/tasks/command-1/logs", "after_id"),
])
def test_a_query_int_over_64_bits_is_a_400_naming_it(api: httpx.Client, path: str, name: str) -> None:
    _error(api.get(path, params={name: str(TOO_BIG)}), 400, name)


# -- request bodies ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def context() -> str:
    return base64.b64encode(pack_context(FAULTS).data).decode()


def test_context_true_in_an_experiment_create_is_a_400(api: httpx.Client) -> None:
    _error(api.post("/api/v1/experiments", json={"config": EXPERIMENT, "context": True}), 400, "context")


def test_context_true_in_a_command_create_is_a_400(api: httpx.Client) -> None:
    _error(api.post("/api/v1/commands", json={"config": {"entrypoint": ["true"]}, "context": True}), 400, "context")


def test_slots_over_64_bits_in_a_command_are_a_400_naming_them(api: httpx.Client) -> None:
    config = {"entrypoint": ["true"], "resources": {"slots": TOO_BIG}}
    _error(api.post("/api/v1/commands", json={"config": config}), 400, "resources.slots")


def test_slots_over_64_bits_in_an_experiment_are_a_400_naming_them(api: httpx.Client, context: str) -> None:
    config = EXPERIMENT + f"resources: {{slots_per_trial: {TOO_BIG}}}\n"
    _error(api.post("/api/v1/experiments", json={"config": config, "context": context}), 400,
           "resources.slots_per_trial")


# A null in the config means "the default", as in Determined's configs (tests/unit/config: every field may be
# null); fuzzing found a null inside `resources` answering 500. It now gets the default.

@pytest.mark.parametrize("resources", [{"slots": None}, None], ids=["null-slots", "null-resources"])
def test_a_null_in_a_commands_resources_means_the_default(api: httpx.Client, resources: object) -> None:
    reply = api.post("/api/v1/commands", json={"config": {"entrypoint": ["true"], "resources": resources}})
    assert reply.status_code == 200, reply.text
    command = reply.json()["command"]
    jobs = api.get("/api/v1/jobs").json()["jobs"]
    job = next(j for j in jobs if j["type"] == "COMMAND" and j["entity_id"] == command["id"])
    assert job["slots_requested"] == 1, job
    assert api.post(f"/api/v1/commands/{command['id']}/kill").status_code == 200


@pytest.mark.parametrize("resources", ["{slots_per_trial: null}", "null"], ids=["null-slots", "null-resources"])
def test_a_null_in_an_experiments_resources_means_the_default(api: httpx.Client, context: str,
                                                              resources: str) -> None:
    config = EXPERIMENT + f"resources: {resources}\n"
    reply = api.post("/api/v1/experiments", json={"config": config, "context": context, "validate_only": True})
    assert reply.status_code == 200, reply.text
    created = api.post("/api/v1/experiments", json={"config": config, "context": context, "activate": False})
    assert created.status_code == 200, created.text
    exp_id = created.json()["experiment"]["id"]
    assert api.get(f"/api/v1/experiments/{exp_id}").json()["config"]["resources"]["slots_per_trial"] == 1


def test_agent_slots_over_64_bits_are_a_400(api: httpx.Client, served: Served) -> None:
    reply = api.post("/api/v1/agents", json={"agent_id": "big", "slots": TOO_BIG},
                     headers={"authorization": f"Bearer {served.cluster_token}"})
    _error(reply, 400, "slots")


def test_an_agent_offering_more_slots_than_a_machine_has_is_a_400(api: httpx.Client, served: Served) -> None:
    # fuzzing found an agent of 2**31 - 1 slots taken, and GET /api/v1/slots then listing each one until the
    # master ran out of memory
    reply = api.post("/api/v1/agents", json={"agent_id": "huge", "slots": MAX_AGENT_SLOTS + 1},
                     headers={"authorization": f"Bearer {served.cluster_token}"})
    _error(reply, 400, "slots")


@pytest.mark.parametrize("timestamp", ['"yesterday"', "NaN", "Infinity", "1e300", "-5", str(TOO_BIG)])
@pytest.mark.parametrize("shape", ["logs", "runs"])
def test_a_bad_log_timestamp_is_a_400_naming_it(api: httpx.Client, served: Served, shape: str,
                                                 timestamp: str) -> None:
    # raw JSON text: NaN and Infinity are what a careless client's json.dumps sends
    template, name = LOG_BODIES[shape]
    text = template.replace("TIMESTAMP", timestamp)
    reply = api.post("/api/v1/task/logs", content=text, headers={
        "authorization": f"Bearer {served.agent_credential}", "content-type": "application/json"})
    _error(reply, 400, name)


def test_a_body_that_is_not_json_is_a_400_error_body(api: httpx.Client) -> None:
    reply = api.post("/api/v1/experiments", content=b"\xa6f\xd2", headers={"content-type": "application/json"})
    assert _error(reply, 400, "body").error.kind == "invalid_request"


# -- unexpected errors and unknown paths -------------------------------------------------------------


def test_an_unexpected_error_is_a_500_error_body_and_the_connection_serves_the_next_request(
        served: Served, caplog: pytest.LogCaptureFixture) -> None:
    conn = http.client.HTTPConnection(served.host, served.port, timeout=10)
    try:
        with caplog.at_level(logging.ERROR):
            conn.request("GET", RAISES)
            first = conn.getresponse()
            body = json.loads(first.read())
        assert first.status == 500
        error = ErrorBody.model_validate(body).error
        assert error.kind == "internal" and "a bug the handler did not expect" in error.message
        assert (first.getheader("connection") or "").lower() != "close"
        logged = [r for r in caplog.records if r.exc_info and "a bug the handler did not expect" in str(r.exc_info[1])]
        assert logged, "the unexpected error was not logged with its traceback"
        sock = conn.sock
        assert sock is not None
        local = sock.getsockname()
        # a server that dropped the connection makes the socket readable (EOF) at once
        readable, _, _ = select.select([sock], [], [], 0.5)
        assert not readable, "the server closed the keep-alive connection after the 500"
        conn.request("GET", "/api/v1/master")
        second = conn.getresponse()
        second.read()
        assert second.status == 200
        assert conn.sock is sock and sock.getsockname() == local, "the second request went on a new connection"
    finally:
        conn.close()


def test_a_stalwart_error_keeps_its_own_status_and_body(api: httpx.Client) -> None:
    body = _error(api.get(RAISES_STALWART_ERROR), 404, "thing 7 not found")
    assert body.error.kind == "not_found"


def test_an_unknown_path_is_fastapis_own_404(api: httpx.Client) -> None:
    reply = api.get("/api/v1/nope")
    assert reply.status_code == 404
    assert reply.json() == {"detail": "Not Found"}
