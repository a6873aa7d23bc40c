"""Trial lines stored through `logs.store_rows` with `log_policies.watch`: each run's first line per policy is
recorded once (batches resent or repeated lines add nothing), the trial shows the policy's name, and a failure
after a `cancel_retries` match ends the trial without a restart; on SQLite and PostgreSQL."""

from __future__ import annotations

import functools

import pytest
import sqlalchemy as sa

from stalwart.api.states import ExitReason
from stalwart.context import pack_context
from stalwart.db import tables as t
from stalwart.master import log_policies
from stalwart.master.allocations import lifecycle
from stalwart.master.cluster import agents, credentials
from stalwart.master.experiments import experiments
from stalwart.master.logs import store_rows
from stalwart.master.scheduling import scheduling
from stalwart.master.service import Master
from stalwart.master.settings import MasterSettings

CONFIG = """
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 10}}
max_restarts: 3
checkpoint_storage: {type: shared_fs, host_path: %s}
log_policies:
  - {name: Fatal, pattern: "FATAL \\\\d+", action: cancel_retries}
  - {name: Noted, pattern: noted}
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def m(request, tmp_path):
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
    master = Master(MasterSettings(db_url=url, home=tmp_path))
    agents.register(master, {"agent_id": "a0", "slots": 1}, caller=credentials.IN_PROCESS)
    yield master
    master.db.dispose()


def _line(alloc, text: str, agent: str | None = "a0") -> tuple:
    return (alloc["trial_id"], alloc["id"], agent, None, 1.0, "INFO", "stdout", "task", text)


def test_matches_are_recorded_once_per_run_and_cancel_retries_stops_the_restart(m, tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "train.py").write_text("print('x')\n")
    experiments.create_experiment(m, CONFIG % (tmp_path / "ckpts"), pack_context(ctx).data, activate=True, owner="me")
    scheduling.tick(m)
    with m.db.begin() as conn:
        [alloc] = [dict(r) for r in conn.execute(sa.select(t.allocations)).mappings()]
    watch = functools.partial(log_policies.watch, m)
    batch = [_line(alloc, "all noted"), _line(alloc, "FATAL 3: disk gone", agent=None), _line(alloc, "FATAL 4")]
    for _ in range(2):  # the same batch again (a resend) records nothing new
        store_rows(m.db, list(batch), watch=watch)
    with m.db.begin() as conn:
        matches = [dict(r) for r in conn.execute(sa.select(t.log_policy_matches).order_by(t.log_policy_matches.c.id))
                   .mappings()]
        trial = dict(conn.execute(sa.select(t.trials)).mappings().one())
    assert [(x["policy_name"], x["action"], x["agent_id"], x["log"]) for x in matches] == [
        ("Noted", None, "a0", "all noted"), ("Fatal", "cancel_retries", "a0", "FATAL 3: disk gone")]
    assert trial["log_policy_matched"] == "Fatal"
    with m.db.begin() as conn:
        lifecycle.allocation_exited(m, conn, alloc["id"], 1, ExitReason.EXITED)
        trial = dict(conn.execute(sa.select(t.trials)).mappings().one())
    assert (trial["state"], trial["restarts"]) == ("ERROR", 0)
    assert "log policy 'Fatal'" in trial["error_message"] and "FATAL 3: disk gone" in trial["error_message"]
