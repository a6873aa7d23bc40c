"""The secrets handed to a task are masked in its stored logs (issue 25, hole 12).

`allocations.env.secrets_of` lists what a start order hands an allocation's tasks: its allocation token, its
owner session and the token the task proxy sends its server. `logs.store_rows` with it replaces each of them,
wherever it stands in a line, by `********`; other allocations' lines and lines with no allocation are stored as
they came.
"""

from __future__ import annotations

import functools

import pytest

from stalwart.master.allocations import env
from stalwart.master.app import create_app
from stalwart.master.identity import sessions, tokens
from stalwart.master.log_rows import log_rows
from stalwart.master.logs import MASK, mask_secrets, read_logs, store_rows
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings


@pytest.fixture
def m(tmp_path) -> Master:
    app = create_app(MasterSettings(db_url=f"sqlite:///{tmp_path / 'm.db'}", home=tmp_path, ui_metrics_index=False))
    master: Master = app.state.master
    return master


def test_the_secrets_of_an_allocation_are_the_tokens_its_tasks_get(m: Master) -> None:
    with m.db.begin() as conn:
        user_token = sessions.task_session(m, conn, "admin", "alloc-7")
    assert env.secrets_of(m, "alloc-7") == [m.allocation_token("alloc-7"), user_token,
                                            tokens.service_token(m.secret, "alloc-7")]
    assert env.secrets_of(m, "alloc-8")[0] != env.secrets_of(m, "alloc-7")[0]


def test_each_secret_of_a_lines_allocation_is_masked_in_it(m: Master) -> None:
    alloc, user, service = env.secrets_of(m, "alloc-1")
    other_alloc, _, _ = env.secrets_of(m, "alloc-2")
    entries = [
        {"trial_id": 1, "allocation_id": "alloc-1", "log": f"token={alloc} and again {alloc}"},
        {"trial_id": 1, "allocation_id": "alloc-1", "log": f"{user}"},
        {"trial_id": 1, "allocation_id": "alloc-1", "log": f"Authorization: token {service}"},
        {"trial_id": 1, "allocation_id": "alloc-1", "log": "nothing secret"},
        {"trial_id": 2, "allocation_id": "alloc-2", "log": f"mine: {other_alloc}; another's: {alloc}"},
        {"trial_id": 3, "allocation_id": None, "log": f"no allocation: {alloc}"},
    ]
    store_rows(m.db, log_rows(entries, 1.0), secrets_of=functools.partial(env.secrets_of, m))
    with m.db.begin() as conn:
        first = [r["log"] for r in read_logs(conn, 1, 0)]
        second = [r["log"] for r in read_logs(conn, 2, 0)]
        third = [r["log"] for r in read_logs(conn, 3, 0)]
    assert first == [f"token={MASK} and again {MASK}", MASK, f"Authorization: token {MASK}", "nothing secret"]
    assert second == [f"mine: {MASK}; another's: {alloc}"]  # only an allocation's own secrets are known to it
    assert third == [f"no allocation: {alloc}"]


def test_the_secrets_are_asked_for_once_per_batch_and_allocation(m: Master) -> None:
    alloc, user, _ = env.secrets_of(m, "alloc-3")
    rows = log_rows([{"log": f"{alloc} {user}"}], 1.0)
    asked: list[str] = []

    def secrets_of(allocation_id: str) -> list[str]:
        asked.append(allocation_id)
        return env.secrets_of(m, allocation_id)

    masked = mask_secrets([(9, "alloc-3", *row[2:]) for row in rows * 3], secrets_of)
    assert [row[8] for row in masked] == [f"{MASK} {MASK}"] * 3
    assert asked == ["alloc-3"]  # once per batch and allocation
    untouched = log_rows([{"allocation_id": "alloc-3", "log": "plain"}], 1.0)
    assert mask_secrets(untouched, secrets_of) is untouched
