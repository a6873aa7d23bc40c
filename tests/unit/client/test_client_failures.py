"""How the client tells a server error from an unreachable master, against a real tiny HTTP server.

A 5xx is the master answering: StalwartError saying it answered an internal error, with its message, never
"cannot reach the master". A kept-alive connection that the server closed under a request is retried on a fresh
connection; only a fresh connection failing reads as an unreachable master.
"""

from __future__ import annotations

import socket

import pytest

from stalwart.api.errors import MasterUnavailable, NotFoundError, StalwartError
from stalwart.client import Client, MasterInternalError
from tiny_http import Answer, Seen, TinyServer, json_answer

MASTER_INFO = {"cluster_id": "c1", "version": "1"}


def _internal_error(seen: Seen) -> Answer:
    if seen.target.startswith("/api/v1/experiments/7"):
        return json_answer({"error": {"kind": "internal", "message": "internal master error: boom",
                                      "details": []}}, status=500)
    return json_answer(MASTER_INFO)


def test_a_500_says_the_master_answered_an_internal_error_with_its_message(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(_internal_error)
    client = Client(tiny_server.url)
    with pytest.raises(MasterInternalError) as err:
        client.get_experiment(7)
    message = str(err.value)
    assert "answered an internal error (HTTP 500): internal master error: boom" in message
    assert "cannot reach" not in message
    assert not isinstance(err.value, MasterUnavailable)
    assert err.value.http_status == 500
    # the connection stays usable: the next call goes out on it and is answered
    assert client.master_info().cluster_id == "c1"
    assert [s.connection for s in tiny_server.seen] == [1, 1]


def test_a_gateway_error_without_a_json_body_is_still_the_master_answering(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: Answer(502, b"<html>bad gateway</html>", "text/html"))
    with pytest.raises(StalwartError) as err:
        Client(tiny_server.url).master_info()
    assert not isinstance(err.value, MasterUnavailable)
    assert "answered an internal error (HTTP 502): <html>bad gateway</html>" in str(err.value)
    assert err.value.http_status == 502


def test_a_4xx_keeps_its_kind(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: json_answer(
        {"error": {"kind": "not_found", "message": "experiment 9 not found", "details": []}}, status=404))
    with pytest.raises(NotFoundError, match="experiment 9 not found"):
        Client(tiny_server.url).get_experiment(9)


def _drop_second_request_on_first_connection(seen: Seen) -> Answer:
    if seen.connection == 1 and seen.index == 2:
        return Answer(drop=True)  # the server closed the kept-alive connection as the request arrived
    return json_answer(MASTER_INFO)


def test_a_kept_alive_connection_closed_by_the_server_is_retried_on_a_fresh_one(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(_drop_second_request_on_first_connection)
    client = Client(tiny_server.url)
    assert client.master_info().cluster_id == "c1"
    assert client.master_info().cluster_id == "c1"  # dropped on connection 1, answered on connection 2
    assert [(s.connection, s.index) for s in tiny_server.seen] == [(1, 1), (1, 2), (2, 1)]


def test_a_post_is_retried_too_when_its_kept_alive_connection_was_closed(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: Answer(drop=True) if (seen.connection, seen.index) == (1, 2)
                            else json_answer({"accepted": 1}))
    client = Client(tiny_server.url)
    reports = [{"group": "training", "steps_completed": 1, "metrics": {"loss": 0.5}}]
    assert client.report_metrics(3, reports).accepted == 1
    assert client.report_metrics(3, reports).accepted == 1
    assert [s.body for s in tiny_server.seen[1:]] == [tiny_server.seen[0].body] * 2  # the same body went again


def test_a_fresh_connection_that_fails_reads_as_unreachable_and_is_not_retried(tiny_server: TinyServer) -> None:
    tiny_server.answer_with(lambda seen: Answer(drop=True))
    with pytest.raises(MasterUnavailable, match="cannot reach the master"):
        Client(tiny_server.url).master_info()
    assert tiny_server.connections == 1


def test_a_port_nobody_listens_on_reads_as_unreachable() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(MasterUnavailable, match=f"cannot reach the master at http://127.0.0.1:{port}"):
        Client(f"127.0.0.1:{port}", timeout=5).master_info()


def test_a_patient_client_waits_out_5xx_answers(tiny_server: TinyServer) -> None:
    answers = iter([json_answer({"error": {"kind": "internal", "message": "db restarting"}}, status=503)] * 2)
    tiny_server.answer_with(lambda seen: next(answers, json_answer(MASTER_INFO)))
    assert Client(tiny_server.url, retry_for=30).master_info().cluster_id == "c1"
    assert len(tiny_server.seen) == 3
