"""The typed client: one method per API operation, answers as the route table's models, bad input refused."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.api.routes_table import ROUTES
from stalwart.api.states import ExperimentState
from stalwart.client import (
    Client,
    agents,
    checkpoints,
    detached,
    experiments,
    jobs,
    master,
    models,
    notebooks,
    oidc,
    shells,
    tasks,
    templates,
    tensorboards,
    trials,
    users,
    webhooks,
    workspaces,
)
from stalwart.client.endpoints import Route
from tiny_http import Answer, TinyServer, json_answer

EXPERIMENT = {"id": 4, "name": "mnist", "owner": "me", "state": "ACTIVE", "archived": False, "searcher": "single",
              "smaller_is_better": True, "created_at": 1.0, "labels": []}
TRIAL = {"id": 9, "experiment_id": 4, "hparams": {"lr": 0.1}, "seed": 1, "state": "ACTIVE", "restarts": 0,
         "runs": 1, "created_at": 1.0}


def test_the_client_has_a_method_for_every_api_route_but_the_ui_and_the_document() -> None:
    client_routes = {(v.method, v.template) for module in (agents, checkpoints, detached, experiments, jobs, master,
                                                           models, notebooks, oidc, shells, tasks, templates,
                                                           tensorboards, trials, users, webhooks, workspaces)
                     for v in vars(module).values() if isinstance(v, Route)}
    api = {r.key for r in ROUTES if r.path.startswith("/api/v1/") and not r.path.startswith("/api/v1/ui/")
           and r.path != "/api/v1/openapi.json"}
    assert api - client_routes == set()
    assert client_routes - api == set()


def test_a_describe_answers_its_model(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: json_answer({"experiment": EXPERIMENT, "config": {}, "trials": [TRIAL]}))
    detail = Client(tiny_server.url).get_experiment(4)
    assert detail.experiment.state is ExperimentState.ACTIVE
    assert detail.trials[0].hparams == {"lr": 0.1}
    assert (tiny_server.seen[0].method, tiny_server.seen[0].target) == ("GET", "/api/v1/experiments/4")


def test_path_values_are_encoded_so_an_id_cannot_reach_another_route(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: json_answer({"checkpoint": {"uuid": "u", "state": "COMPLETED"}}))
    Client(tiny_server.url).get_checkpoint("../experiments/1?x=y")
    assert tiny_server.seen[0].target == "/api/v1/checkpoints/..%2Fexperiments%2F1%3Fx%3Dy"


def test_an_answer_outside_the_contract_names_the_route(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: json_answer({"experiment": {"id": "four"}}))
    with pytest.raises(StalwartError, match=r"answer to POST /api/v1/experiments/\{exp_id\}/\{action\} does not match "
                                            r"the API contract: experiment\.id"):
        Client(tiny_server.url).experiment_action(4, "pause")


def test_a_body_that_is_not_json_names_the_route(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: Answer(200, b"<html>a proxy page</html>", "text/html"))
    with pytest.raises(StalwartError, match="answer to GET /api/v1/master does not match the API contract"):
        Client(tiny_server.url).master_info()


def test_bad_arguments_are_refused_before_anything_is_sent(tiny_server: TinyServer) -> None:
    client = Client(tiny_server.url)
    expected = r"invalid UpdateJob request: priority: expected an integer from 1 \(most urgent\) to 99, got 500"
    with pytest.raises(InvalidRequest, match=expected):
        client.update_job("j1", priority=500)
    with pytest.raises(InvalidRequest, match="invalid ReportProgress request: progress"):
        client.report_progress(1, 1.5)
    assert tiny_server.seen == []


def test_only_the_fields_given_are_sent(tiny_server: TinyServer) -> None:
    job = {"job_id": "j1", "type": "EXPERIMENT", "entity_id": 4, "state": "QUEUED", "priority": 10, "weight": 1.0,
           "resource_pool": "default", "slots_requested": 1, "slots_allocated": 0}
    tiny_server.answer_with(lambda seen: json_answer({"job": job}))
    reply = Client(tiny_server.url).update_experiment_job(4, weight=2.5)
    assert reply.job.job_id == "j1"
    assert (tiny_server.seen[0].method, tiny_server.seen[0].target) == ("PATCH", "/api/v1/experiments/4/job")
    assert json.loads(tiny_server.seen[0].body) == {"weight": 2.5}


def test_metric_reports_go_out_as_they_are(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: json_answer({"accepted": 2}))
    reports = [{"group": "training", "steps_completed": 5, "metrics": {"loss": "NaN", "acc": 0.5},
                "trial_run_id": 0, "report_time": 2.0},
               {"group": "validation", "steps_completed": 5, "metrics": {"acc": 0.9}, "trial_run_id": 0,
                "report_time": 2.0}]
    assert Client(tiny_server.url).report_metrics(9, reports).accepted == 2
    assert tiny_server.seen[0].target == "/api/v1/trials/9/metrics"
    assert json.loads(tiny_server.seen[0].body) == {"reports": reports}


def test_the_action_poll_sends_each_known_allocation(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: json_answer({"start": [], "kill": ["a2"]}))
    actions = Client(tiny_server.url).agent_actions("agent 0", wait_s=0, known=["a1", "a2"])
    assert actions.kill == ["a2"] and actions.start == []
    target = urlsplit(tiny_server.seen[0].target)
    assert target.path == "/api/v1/agents/agent%200/actions"
    assert parse_qs(target.query) == {"timeout": ["0"], "known": ["a1", "a2"]}


def test_log_lines_stream_as_models(tiny_server: TinyServer) -> None:
    lines = [{"id": 1, "log": "hello", "timestamp": 1.0}, {"id": 2, "log": "world", "rank_id": 1}]
    body = b"\n".join(json.dumps(line).encode() for line in lines) + b"\n\n"
    tiny_server.answer_with(lambda seen: Answer(200, body, "application/x-ndjson"))
    got = list(Client(tiny_server.url).stream_trial_logs(9, after_id=0))
    assert [(e.id, e.log, e.rank_id) for e in got] == [(1, "hello", None), (2, "world", 1)]
    target = urlsplit(tiny_server.seen[0].target)
    assert (target.path, parse_qs(target.query)) == ("/api/v1/trials/9/logs", {"follow": ["false"], "after_id": ["0"]})
