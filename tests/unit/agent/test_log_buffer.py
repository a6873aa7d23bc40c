"""The agent's log buffer: a bound per allocation, back-pressure, drops only after the timeout and then a marker
that counts them where they were, and a consumer that removes exactly what it took (no race with producers)."""

from __future__ import annotations

import random
import threading
import time

import pytest

from stalwart.agent.log_buffer import LogBuffer
from stalwart.agent.outbox import runs_of


def meta(allocation="a1", stdtype="stdout", rank=None) -> dict:
    return {"allocation_id": allocation, "trial_id": 7, "agent_id": "agent-0", "rank_id": rank,
            "stdtype": stdtype, "source": "task", "level": None}


def texts(batch) -> list[str]:
    return [text for _meta, _ts, text, _size in batch]


def drain(buf: LogBuffer) -> list[tuple]:
    """Take and ack until nothing is left (markers appear as the acks make room)."""
    out = []
    while batch := buf.take(1000, 1 << 20):
        buf.ack(batch)
        out += batch
    return out


def test_a_full_allocation_blocks_the_writer_until_the_consumer_acks(tmp_path):
    full = threading.Event()
    buf = LogBuffer(max_bytes=20, block_timeout=60, on_full=full.set)  # two 9-character lines (+ newlines)
    m = meta()
    assert buf.add_lines(m, [(1.0, "line-0001"), (1.0, "line-0002")]) == 2
    kept = []
    writer = threading.Thread(target=lambda: kept.append(buf.add_lines(m, [(2.0, "line-0003")])))
    writer.start()
    assert full.wait(30), "the writer did not find the buffer full"
    assert texts(buf.take(10, 1000)) == ["line-0001", "line-0002"]  # the third line waits with its writer
    buf.ack(buf.take(1, 1000))
    writer.join(30)
    assert not writer.is_alive() and kept == [1]
    assert texts(drain(buf)) == ["line-0002", "line-0003"]


def test_after_the_timeout_lines_are_dropped_and_one_marker_counts_them_where_they_were():
    buf = LogBuffer(max_bytes=40, block_timeout=0)  # four 9-character lines (+ newlines)
    m = meta()
    lines = [(float(i), f"line-{i:04d}") for i in range(1, 7)]
    assert buf.add_lines(m, lines) == 4
    assert buf.add_lines(m, [(7.0, "line-0007")]) == 0  # still full: dropped at once, counted with the others
    assert buf.pending() == 5  # four lines and the marker still to be placed
    assert not buf.wait_empty(0)
    first = buf.take(4, 1000)
    buf.ack(first)  # room again: the marker goes after the lines before the drops ...
    assert buf.add_lines(m, [(8.0, "line-0008")]) == 1  # ... and before the lines after them
    rest = drain(buf)
    assert texts(first + rest) == [f"line-{i:04d}" for i in range(1, 5)] + ["3 lines dropped", "line-0008"]
    marker_meta, marker_ts, _text, _size = rest[0]
    assert marker_meta["level"] == "WARNING" and marker_meta["source"] == "agent"
    assert marker_meta["allocation_id"] == "a1" and marker_meta["trial_id"] == 7
    assert marker_ts == 5.0  # when the first dropped line came
    assert buf.wait_empty(0)


def test_every_drop_episode_gets_its_marker_and_lines_plus_counts_add_up():
    buf = LogBuffer(max_bytes=100, block_timeout=0)
    m = meta()
    seen: list[str] = []
    for i in range(1000):
        buf.add_lines(m, [(float(i), f"{i:05d}")])
        if i % 97 == 0:  # the master takes a few lines now and then
            batch = buf.take(3, 1000)
            buf.ack(batch)
            seen += texts(batch)
    seen += texts(drain(buf))
    markers = [int(s.split()[0]) for s in seen if s.endswith("lines dropped")]
    lines = [int(s) for s in seen if not s.endswith("lines dropped")]
    assert len(markers) > 1
    assert len(lines) + sum(markers) == 1000
    expected = 0  # each gap sits exactly where its marker is, and is as long as it says
    for s in seen:
        if s.endswith("lines dropped"):
            expected += int(s.split()[0])
        else:
            assert int(s) == expected
            expected += 1


def test_one_allocations_full_buffer_does_not_hold_up_another():
    buf = LogBuffer(max_bytes=20, block_timeout=0)
    assert buf.add_lines(meta("a1"), [(1.0, "aaaaaaaaa")] * 5) == 2
    assert buf.add_lines(meta("a2"), [(1.0, "bbbbbbbbb")] * 2) == 2
    assert buf.buffered_bytes("a1") == 20 and buf.buffered_bytes("a2") == 20


def test_a_line_longer_than_the_bound_is_kept_when_nothing_else_is_buffered():
    buf = LogBuffer(max_bytes=10, block_timeout=0)
    assert buf.add_lines(meta(), [(1.0, "x" * 100)]) == 1
    assert texts(drain(buf)) == ["x" * 100]


def test_a_line_given_as_a_dict_keeps_its_fields():
    buf = LogBuffer()
    assert buf.add({"allocation_id": "a9", "trial_id": 3, "agent_id": "ag", "timestamp": 4.5, "stdtype": "stderr",
                    "source": "agent", "level": "ERROR", "log": "agent could not start the trial"})
    [(m, ts, text, _size)] = drain(buf)
    assert (m["allocation_id"], m["trial_id"], m["stdtype"], m["source"], m["level"], ts, text) == (
        "a9", 3, "stderr", "agent", "ERROR", 4.5, "agent could not start the trial")


def test_acking_anything_but_the_oldest_lines_is_refused():
    buf = LogBuffer()
    buf.add_lines(meta(), [(1.0, "one"), (1.0, "two")])
    batch = buf.take(2, 1000)
    with pytest.raises(RuntimeError, match="not the oldest"):
        buf.ack(batch[1:])


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="max_bytes"):
        LogBuffer(max_bytes=0)
    with pytest.raises(ValueError, match="block_timeout"):
        LogBuffer(block_timeout=-1)


def test_writers_and_the_consumer_racing_lose_repeat_or_reorder_nothing():
    # Two writers (stdout and stderr of one allocation) against a bound of a few lines, a consumer taking
    # batches of random sizes and acking them: every line arrives exactly once, each stream in its order.
    buf = LogBuffer(max_bytes=200, block_timeout=60)
    n = 20_000
    out: list[tuple] = []
    done = threading.Event()

    def write(stdtype):
        m = meta(stdtype=stdtype)
        for start in range(0, n, 7):
            buf.add_lines(m, [(0.0, f"{stdtype}-{i}") for i in range(start, min(start + 7, n))])

    def consume():
        rng = random.Random(5)
        while not (done.is_set() and buf.pending() == 0):
            batch = buf.take(rng.randint(1, 50), 1 << 20)
            if batch:
                out.extend(batch)
                buf.ack(batch)
            else:
                time.sleep(0.001)

    writers = [threading.Thread(target=write, args=(s,)) for s in ("stdout", "stderr")]
    consumer = threading.Thread(target=consume)
    for th in [*writers, consumer]:
        th.start()
    for th in writers:
        th.join(120)
    done.set()
    consumer.join(120)
    assert not consumer.is_alive()
    for stdtype in ("stdout", "stderr"):
        assert [t for m, _ts, t, _s in out if m["stdtype"] == stdtype] == [f"{stdtype}-{i}" for i in range(n)]
    assert len(out) == 2 * n and buf.pending() == 0


def test_the_shipper_sends_consecutive_lines_of_one_stream_as_one_run_in_order():
    buf = LogBuffer()
    out, err, rank1 = meta(), meta(stdtype="stderr"), meta(rank=1)
    buf.add_lines(out, [(1.0, "a"), (1.5, "b")])
    buf.add_lines(err, [(2.0, "oops")])
    buf.add_lines(out, [(3.0, "c")])
    buf.add_lines(rank1, [(4.0, "r1")])
    runs = runs_of(buf.take(100, 1 << 20))
    assert [(r["stdtype"], r["rank_id"], r["lines"]) for r in runs] == [
        ("stdout", None, [(1.0, "a"), (1.5, "b")]), ("stderr", None, [(2.0, "oops")]),
        ("stdout", None, [(3.0, "c")]), ("stdout", 1, [(4.0, "r1")])]
    assert all(r["allocation_id"] == "a1" and r["trial_id"] == 7 for r in runs)


def test_waiting_for_one_allocations_lines_ignores_the_others_and_gives_up_only_without_progress():
    buf = LogBuffer()
    buf.add_lines(meta("a1"), [(1.0, "one"), (1.0, "two")])
    buf.add_lines(meta("a2"), [(1.0, "other")])
    assert not buf.wait_empty(0.05, "a1")  # nobody acks: gives up
    done = []
    waiter = threading.Thread(target=lambda: done.append(buf.wait_empty(60, "a1")))
    waiter.start()
    buf.ack(buf.take(1, 1000))  # progress: keeps waiting ...
    buf.ack(buf.take(1, 1000))  # ... until a1's lines are all in
    waiter.join(60)
    assert done == [True]
    assert buf.pending() == 1 and not buf.wait_empty(0.05)  # a2's line is still there
    assert buf.wait_empty(0.05, "no-such-allocation")
