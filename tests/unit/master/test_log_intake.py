"""Log intake: a batch (one object per line, or agents' runs of one stream) is checked field by field (400s that
name the field) and stored whole and in order in one transaction, on SQLite and PostgreSQL, whatever the text."""

from __future__ import annotations

import pytest

from stalwart.api.errors import InvalidRequest
from stalwart.master.log_rows import body_rows
from stalwart.master.logs import read_logs, store_batch


def run(lines, **fields) -> dict:
    return {"allocation_id": "alloc-1", "trial_id": 5, "agent_id": "agent-0", "rank_id": None, "stdtype": "stdout",
            "source": "task", "level": None, **fields, "lines": lines}


@pytest.mark.parametrize("body, message", [
    ({}, "logs: expected a list of log entries"),
    ({"logs": "text"}, "logs: expected a list of log entries"),
    ({"logs": ["text"]}, "logs[0]: expected an object"),
    ({"logs": [{"log": "a"}, {"log": 3}]}, "logs[1].log: expected a string or null, got 3"),
    ({"logs": [{"timestamp": "now"}]}, "logs[0].timestamp: expected a finite number or null"),
    ({"logs": [{"timestamp": 10**400}]}, "logs[0].timestamp: expected a finite number or null"),
    ({"logs": [{"trial_id": True}]}, "logs[0].trial_id: expected an integer"),
    ({"logs": [{"trial_id": 2**31}]}, "logs[0].trial_id: expected an integer in -2147483648..2147483647"),
    ({"logs": [{"agent_id": "a" * 129}]}, "logs[0].agent_id: expected a string of at most 128 characters"),
    ({"runs": {"lines": []}}, "runs: expected a list of runs of lines"),
    ({"runs": [run([], stdtype=1)]}, "runs[0].stdtype: expected a string"),
    ({"runs": [run("abc")]}, "runs[0].lines: expected a list of [timestamp, text] pairs"),
    ({"runs": [run([[1.0, "ok"], [2.0, None]])]}, "runs[0].lines[1]: expected [timestamp, text]"),
    ({"runs": [run([[float("inf"), "x"]])]}, "runs[0].lines[0]: expected [timestamp, text]"),
    ({"runs": [run([[1.0, "ok", "extra"]])]}, "runs[0].lines[0]: expected [timestamp, text]"),
])
def test_a_bad_field_is_refused_naming_it(body, message):
    with pytest.raises(InvalidRequest) as err:
        body_rows(body, 1.0)
    assert message in str(err.value)
    assert err.value.http_status == 400


def test_a_batch_is_stored_whole_in_order_with_levels_and_any_text(db):
    texts = [f"{i:05d} plain" for i in range(3000)]
    texts[10] = "WARNING: disk almost full"
    texts[11] = "tab\there, a NUL \x00 and a lone surrogate \ud800, é and 日本"
    texts[12] = ""
    body = {
        "logs": [{"trial_id": 5, "allocation_id": "alloc-1", "log": "from a trial's own post", "timestamp": 1.0}],
        "runs": [run([[2.0 + i, t] for i, t in enumerate(texts[:2000])]),
                 run([[9000.0, "oops"]], stdtype="stderr"),
                 run([[9001.0 + i, t] for i, t in enumerate(texts[2000:])], rank_id=1)],
    }
    assert store_batch(db, body) == 3002
    with db.begin() as conn:
        rows = read_logs(conn, 5, 0, limit=10_000)
    stored = list(texts)
    stored[11] = "tab\there, a NUL \\x00 and a lone surrogate ?, é and 日本"  # what a database can hold
    assert [r["log"] for r in rows] == ["from a trial's own post", *stored[:2000], "oops", *stored[2000:]]
    levels = {r["log"]: r["level"] for r in rows}
    assert levels["WARNING: disk almost full"] == "WARNING" and levels["oops"] == "ERROR"
    assert levels["00000 plain"] == "INFO"
    assert [r["rank_id"] for r in rows[-1000:]] == [1] * 1000
    assert [r["timestamp"] for r in rows[:3]] == [1.0, 2.0, 3.0]


def test_a_bad_line_stores_nothing_of_its_batch(db):
    with pytest.raises(InvalidRequest):
        store_batch(db, {"runs": [run([[1.0, "fine"]] * 100 + [[1.0, 7]])]})
    with db.begin() as conn:
        assert read_logs(conn, 5, 0) == []
