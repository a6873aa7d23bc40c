"""Schemathesis against the full OpenAPI document of a real running master: no 5xx, every answer as documented.

The master ran one tiny trial (so real ids and a real allocation exist), then its agent was killed, so that
commands and experiments the fuzzer creates stay queued and nothing it generates is ever executed. Each
operation is called with the credentials its `x-auth-kind` names (the cluster token, the trial allocation's
token; for user routes a fresh session of the bootstrap admin, which is never answered 401), first with the
real ids in its path and generated query and body values, then with everything generated, valid and invalid.
Hypothesis runs derandomized with a bounded number of examples per operation. Long polls and log follows are
bounded so that no call hangs; the web UI's server-sent events stream never ends, so its calls are streamed and
judged by their status and headers (its errors, which end, by their whole answer). The static files and the UI's
pages are operations like the others, and the static files also get the paths that once answered 500 (very long,
`..`, NUL, encoded slashes, directories).

One test checks every operation and reports all those that failed, each with its first failure.
"""

from __future__ import annotations

import base64
import contextlib
import pathlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Err

from helpers_auth import as_admin, bearer, log_in
from stalwart.api.models.errors import ErrorBody
from stalwart.context import pack_context
from stalwart.master.identity import tokens
from stalwart.master.ui import pages
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
FAULTS = REPO / "tests" / "integration" / "faults"
CONFIG = """name: fuzz
entrypoint: python3 train.py
environment: {environment_variables: [LEDGER=LEDGER_PATH, STEP_SECONDS=0.01, CHECKPOINT_EVERY=2]}
searcher: {name: single, metric: loss, max_length: 2}
"""

REAL_IDS_EXAMPLES = 10
"""Examples per operation with the real ids in the path (query and body generated)."""
GENERATED_EXAMPLES = 25
"""Examples per operation with every value generated, valid and invalid."""
CALL_TIMEOUT_S = 15.0
"""A call that has not answered by then counts as a failure (a hang), not a wait."""

ENDLESS = {("GET", "/api/v1/ui/events")}
"""Operations whose successful answer is a stream that stays open until the client leaves."""
STATIC_PATHS = ["x/" + "a" * 300, "a" * 5000, "../../../../etc/passwd", "..%2F..%2Fpyproject.toml", "%00", "a%00b",
                "js", "js/", "vendor/", "app.css/x", "%2e%2e/%2e%2e/x", "~", "con", "a/" * 200]
"""Paths of static files that are not there (or not files), as a browser or a prober might send them (a bare `.` or
`..` segment never reaches the master: the client resolves it)."""
BOUNDED_QUERY = {"timeout": 0.2, "timeout_seconds": 0.2}
"""Long-poll waits, capped so a call answers at once."""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
ENDS_ITS_SESSION = {("POST", "/api/v1/auth/logout"), ("POST", "/logout")}
"""Operations after whose first call the session they came with is over (their later calls may be a 401)."""


@dataclass(frozen=True)
class RealMaster:
    url: str
    agent_credential: str  # agent-0's own (the cluster token only enrolls)
    allocation_token: str
    path_values: dict[str, str | int]


def _master_secret(db_path: pathlib.Path) -> str:
    with sqlite3.connect(db_path) as db:
        (secret,) = db.execute("SELECT value FROM cluster_info WHERE key = 'secret'").fetchone()
    return str(secret)


@pytest.fixture(scope="module")
def real_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealMaster]:
    """A master whose one trial ran to the end, whose agent is gone, and one queued experiment (a job)."""
    home = tmp_path_factory.mktemp("fuzz")
    with LocalTestCluster(home / "home") as c, httpx.Client(base_url=c.url, timeout=60) as http:
        as_admin(http)
        config = CONFIG.replace("LEDGER_PATH", str(home / "ledger"))
        context = base64.b64encode(pack_context(FAULTS).data).decode()

        def create() -> int:
            reply = http.post("/api/v1/experiments", json={"config": config, "context": context})
            assert reply.status_code == 200, reply.text
            return int(reply.json()["experiment"]["id"])

        exp_id = create()
        c.wait_for(lambda: http.get(f"/api/v1/experiments/{exp_id}").json()["experiment"]["state"] == "COMPLETED",
                   what="the experiment to complete")
        trial = http.get(f"/api/v1/experiments/{exp_id}").json()["trials"][0]
        detail = http.get(f"/api/v1/trials/{trial['id']}").json()
        allocation_id = detail["runs"][0]["id"]
        c.kill_agent(0)
        create()  # stays queued: the job queue has an entry
        job_id = http.get("/api/v1/jobs").json()["jobs"][0]["job_id"]
        token_id = http.post("/api/v1/tokens", json={"description": "fuzzed"}).json()["tokenInfo"]["id"]
        yield RealMaster(
            url=c.url,
            agent_credential=c.agent_credential(0),
            allocation_token=tokens.allocation_token(_master_secret(home / "home" / "master.db"), allocation_id),
            path_values={"exp_id": exp_id, "trial_id": trial["id"], "allocation_id": allocation_id,
                         "uuid": detail["latest_checkpoint"]["uuid"], "agent_id": "agent-0", "job_id": job_id,
                         "task_id": f"trial-{trial['id']}", "action": "archive", "username": "determined",
                         "token_id": token_id, "version": pages.VERSION, "path": "app.css"},
        )


def _credentials(master: RealMaster, auth_kinds: list[str]) -> dict[str, str]:
    if "cluster" in auth_kinds:
        return {"authorization": f"Bearer {master.agent_credential}"}
    if "allocation" in auth_kinds:
        return {tokens.ALLOCATION_HEADER: master.allocation_token}
    if "user" in auth_kinds:  # a session of its own per operation: a logout fuzzed ends only that one
        with httpx.Client(base_url=master.url, timeout=60) as http:
            return bearer(log_in(http))
    return {}


def _bounded(case: schemathesis.Case) -> None:
    """Follow nothing and wait for nothing: a follow=true log stream or a long poll would hold the call open."""
    query = case.query
    if not isinstance(query, dict):
        return
    if query.get("follow") not in (None, False, "false"):
        query["follow"] = "false"
    for name, cap in BOUNDED_QUERY.items():
        value = query.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > cap:
            query[name] = cap


def _with_credentials(case: schemathesis.Case, credentials: dict[str, str]) -> None:
    """Send the real credentials: schemathesis makes up a value for each security scheme's header (an empty or
    random bearer token), which would otherwise replace them."""
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() not in {c.lower() for c in credentials}}
    case.headers = {**headers, **credentials}


def _strategies(operation: schemathesis.APIOperation, known: dict[str, str | int]) -> list[tuple[str, Any, int]]:
    """(what, strategy, examples): real ids in the path, then every value generated (valid, then invalid)."""
    names = [p.name for p in operation.path_parameters]
    out: list[tuple[str, Any, int]] = []
    if names and all(n in known for n in names):
        out.append(("real ids", operation.as_strategy(GenerationMode.POSITIVE,
                                                      path_parameters={n: known[n] for n in names}),
                    REAL_IDS_EXAMPLES))
    generated = [operation.as_strategy(GenerationMode.POSITIVE)]
    with contextlib.suppress(Exception):  # an operation with nothing that can be made invalid (no parameters)
        generated.append(operation.as_strategy(GenerationMode.NEGATIVE))
    out.append(("generated", st.one_of(generated), GENERATED_EXAMPLES))
    return out


def _check_operation(master: RealMaster, operation: schemathesis.APIOperation) -> None:
    auth_kinds = operation.definition.raw.get("x-auth-kind", [])
    headers = _credentials(master, auth_kinds)
    needs_session = auth_kinds == ["user"] and (operation.method.upper(), operation.path) not in ENDS_ITS_SESSION
    for _what, strategy, examples in _strategies(operation, master.path_values):

        @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                  phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False,
                  suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def call(case: schemathesis.Case) -> None:
            _bounded(case)
            _with_credentials(case, headers)
            if (operation.method.upper(), operation.path) in ENDLESS:
                status = _call_stream(master, case, headers)
            else:
                reply = case.call_and_validate(base_url=master.url, headers=headers, checks=CHECKS,
                                               timeout=CALL_TIMEOUT_S)
                status = reply.status_code
            assert not (needs_session and status == 401), "the admin's session was refused"

        call()


def _call_stream(master: RealMaster, case: schemathesis.Case, headers: dict[str, str]) -> int:
    """Call an endless stream: a 200 is judged by its status and content type (it is not read); any other answer
    ends, and is read and checked against the document like every other call's."""
    kwargs = case.as_transport_kwargs(base_url=master.url, headers=headers)
    kwargs.pop("timeout", None)
    method, url = kwargs.pop("method"), kwargs.pop("url")
    documented = case.operation.definition.raw.get("responses", {})
    with httpx.Client(timeout=CALL_TIMEOUT_S) as http, http.stream(
            method, url, headers=kwargs.get("headers"), params=kwargs.get("params"),
            cookies=kwargs.get("cookies")) as reply:
        assert reply.status_code < 500, f"{url}: {reply.status_code} {reply.read()[:500]!r}"
        assert str(reply.status_code) in documented, f"{url}: {reply.status_code} is not documented"
        if reply.status_code == 200:
            assert reply.headers["content-type"].startswith("text/event-stream"), reply.headers
        else:
            assert reply.headers["content-type"].startswith("application/json"), reply.headers
            ErrorBody.model_validate_json(reply.read())
        return reply.status_code


def test_static_files_that_are_not_there_answer_404(real_master: RealMaster) -> None:
    """The static route's odd paths (one of them once answered 500 with the install path) are each a 404 that
    names neither the install path nor a traceback."""
    with httpx.Client(base_url=real_master.url, timeout=CALL_TIMEOUT_S) as http:
        version = real_master.path_values["version"]
        for path in STATIC_PATHS:
            reply = http.get(f"/ui/static/{version}/{path}")
            assert reply.status_code == 404, (path[:60], reply.status_code, reply.text[:300])
            assert "site-packages" not in reply.text and "/src/stalwart" not in reply.text, reply.text[:300]
            assert "Traceback" not in reply.text


@pytest.mark.timeout(600)
def test_every_operation_answers_as_documented_and_never_with_a_5xx(real_master: RealMaster) -> None:
    schema = schemathesis.openapi.from_url(f"{real_master.url}/api/v1/openapi.json")
    failures: dict[str, str] = {}
    checked = 0
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            failures[f"unusable operation {result.err().label}"] = str(result.err())
            continue
        operation = result.ok()
        checked += 1
        try:
            _check_operation(real_master, operation)
        except (Exception, BaseExceptionGroup) as err:  # schemathesis groups its failures: each is collected
            failures[f"{operation.method.upper()} {operation.path}"] = f"{type(err).__name__}: {err}"[:1500]
    assert checked > 40, f"only {checked} operations in the document"
    assert len(schema) == checked, "an operation of the document was not checked"
    report = "\n\n".join(f"== {label}\n{text}" for label, text in sorted(failures.items()))
    assert not failures, f"{len(failures)} of {checked} operations failed:\n{report}"
