"""What following a queued or quiet job prints: why it waits (from the job queue), and no "lost the connection" while
the master answers (a quiet log stream that hit the read timeout is reopened silently)."""

from __future__ import annotations

from collections.abc import Iterator

from stalwart.api.errors import MasterUnavailable
from stalwart.api.models.jobs import Job
from stalwart.api.models.trials import LogEntry
from stalwart.cli import follow, queued


def _job(position: int, kind: str = "EXPERIMENT", entity: int = 1, *, pool: str = "default", requested: int = 1,
         allocated: int = 0, name: str = "", reason: str | None = None, limited: bool = False) -> Job:
    return Job(job_id=f"j{position}", type=kind, entity_id=None if limited else entity, limited=limited, name=name,
               state="SCHEDULED" if allocated else "QUEUED", priority=42, weight=1.0, queue_position=position,
               resource_pool=pool, slots_requested=requested, slots_allocated=allocated, reason=reason)


def test_a_queued_job_names_its_pool_place_slots_and_what_holds_them():
    holder = _job(1, entity=3, requested=2, allocated=2, name="sleepy")
    other_pool = _job(2, entity=4, pool="gpu", allocated=1)
    mine = _job(3, "COMMAND", 5)
    text = queued.describe(mine, [holder, other_pool, mine], "Command 5")
    assert text == ("Command 5 is queued in pool default, place 2 in its queue: it waits for 1 slot, held by "
                    "experiment 3 (sleepy): 2 slots.")


def test_the_schedulers_reason_and_jobs_the_caller_may_not_see():
    hidden = _job(1, allocated=4, limited=True)
    mine = _job(2, "COMMAND", 5, requested=8, reason="no agent of pool default has 8 slots.")
    text = queued.describe(mine, [hidden, mine], "Command 5")
    assert "waits for 8 slots, held by a job you may not view: 4 slots." in text
    assert text.endswith("The scheduler says: no agent of pool default has 8 slots.")


def _entry(n: int) -> LogEntry:
    return LogEntry(id=n, timestamp=0.0, level="INFO", log=f"line {n}")


def _flaky_stream(fail_after: dict[int, int]):
    """A log stream that gives lines 1..3 and drops the connection once after line `after` (as a read timeout
    does), for each `after` in `fail_after`."""
    opened: list[int] = []

    def stream(after: int) -> Iterator[LogEntry]:
        opened.append(after)
        for n in range(after + 1, 4):
            yield _entry(n)
            if fail_after.get(n):
                fail_after[n] -= 1
                raise MasterUnavailable("lost the connection to the master at http://m: timed out")

    return stream, opened


def test_a_quiet_stream_reopens_silently_while_the_master_answers(capsys):
    stream, opened = _flaky_stream({1: 1})
    follow.follow_logs(stream, True, answers=lambda: True)
    out, err = capsys.readouterr()
    assert [line.split()[-1] for line in out.splitlines()] == ["1", "2", "3"] and opened == [0, 1]
    assert "lost the connection" not in err and "reconnecting" not in err


def test_a_master_that_does_not_answer_is_reported(capsys, monkeypatch):
    monkeypatch.setattr(follow.time, "sleep", lambda s: None)
    stream, opened = _flaky_stream({2: 1})
    follow.follow_logs(stream, True, answers=lambda: False)
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 3 and opened == [0, 2]
    assert "lost the connection to the master at http://m: timed out; reconnecting..." in err
