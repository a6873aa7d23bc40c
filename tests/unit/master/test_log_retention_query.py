"""The retention cleanup's query (master/queries/log_policies.delete_expired_logs): exactly the lines of trials that
ended more than their retention ago go (the experiment's days, else the master's; -1 forever), on SQLite and
PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa

from stalwart.db import tables as t
from stalwart.master.queries.log_policies import delete_expired_logs

DAY = 86400.0
NOW = 1_800_000_000.0


def _trial(conn, retention: int | None, ended_days_ago: float | None) -> int:
    exp_id = conn.execute(t.experiments.insert().values(
        name="e", labels=[], owner="admin", config={}, config_text="", state="COMPLETED", created_at=0.0,
        log_retention_days=retention).returning(t.experiments.c.id)).scalar_one()
    ended = None if ended_days_ago is None else NOW - ended_days_ago * DAY
    trial_id = conn.execute(t.trials.insert().values(
        experiment_id=exp_id, request_id="r", hparams={}, seed=1, state="COMPLETED", created_at=0.0,
        ended_at=ended).returning(t.trials.c.id)).scalar_one()
    conn.execute(t.task_logs.insert(), [{"trial_id": trial_id, "timestamp": 1.0, "level": "INFO", "stdtype": "stdout",
                                         "source": "task", "log": f"line {i}"} for i in range(3)])
    return int(trial_id)


def test_only_trials_past_their_retention_lose_their_lines(db):
    cases = {  # (experiment's days, ended days ago) -> deleted?
        (None, 3.0): True,      # the master's 2 days ran out
        (None, 1.9): False,     # not yet
        (None, None): False,    # still running
        (5, 3.0): False,        # its own 5 days override the master's
        (1, 1.5): True,         # its own 1 day ran out
        (-1, 400.0): False,     # forever
        (0, 0.0): True,         # 0: at the next cleanup
    }
    with db.begin() as conn:
        trials = {case: _trial(conn, *case) for case in cases}
    with db.begin() as conn:
        assert delete_expired_logs(conn, NOW, master_days=2) == 3 * sum(cases.values())
    with db.begin() as conn:
        left = dict(conn.execute(sa.select(t.task_logs.c.trial_id, sa.func.count())
                                 .group_by(t.task_logs.c.trial_id)).all())
    assert {case: left.get(trials[case], 0) == 0 for case in cases} == cases


def test_a_master_that_keeps_logs_forever_deletes_only_what_experiments_ask(db):
    with db.begin() as conn:
        kept, gone = _trial(conn, None, 900.0), _trial(conn, 10, 11.0)
        assert delete_expired_logs(conn, NOW, master_days=-1) == 3
        assert {r for (r,) in conn.execute(sa.select(t.task_logs.c.trial_id).distinct())} == {kept}
        assert gone != kept
