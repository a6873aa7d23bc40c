"""A trial that floods stdout loses no line in silence: a burst is stored whole and in order while the master
keeps answering, and lines the agent does drop (its buffer full for longer than its timeout) leave a marker."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import httpx
import pytest
import sqlalchemy as sa

from integration.helpers import create, first_trial, live_run, wait_state
from stalwart.cli.local_cluster import pid_alive
from stalwart.db.engine import normalize_url
from stalwart.testing import LocalTestCluster

pytestmark = pytest.mark.integration

# Each line is 100 bytes with its newline: a 10-digit sequence number, a space, 88 x's. Written in blocks of
# 1000 lines through a 64 KiB buffer, as fast as Python can; with a go-file, it waits for the file first.
BURST = """\
import os, sys, time
n = int(sys.argv[1])
if len(sys.argv) > 2:
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.02)
out = open(1, "w", buffering=1 << 16, closefd=False)
pad = "x" * 88
for start in range(0, n, 1000):
    out.write("".join(f"{i:010d} {pad}\\n" for i in range(start, min(start + 1000, n))))
out.flush()
"""
LINE = re.compile(r"^(\d{10}) x{88}$")
MARKER = re.compile(r"^(\d+) lines dropped$")


def _config(lines: int, go_file=None) -> str:
    args = f"{lines} {go_file}" if go_file else str(lines)
    return f"entrypoint: python3 burst.py {args}\nsearcher: {{name: single, metric: x, max_length: 1}}\n"


class StoredLog:
    """Reads a trial's stored log incrementally (after the last id seen): sequence numbers and drop markers."""

    def __init__(self, c, trial_id: int) -> None:
        self.c, self.trial_id = c, trial_id
        self.last_id = 0
        self.seqs: list[int] = []
        self.markers: list[dict] = []
        self.events: list[int] = []  # in stored order: a line's sequence number, or -N for a marker of N lines

    def read_more(self) -> int:
        for entry in self.c.client().stream_lines(f"/trials/{self.trial_id}/logs", after_id=self.last_id):
            self.last_id = entry["id"]
            if m := LINE.match(entry["log"]):
                self.seqs.append(int(m.group(1)))
                self.events.append(self.seqs[-1])
            elif m := MARKER.match(entry["log"]):
                self.markers.append(entry)
                self.events.append(-int(m.group(1)))
        return len(self.seqs)

    def settled(self, enough) -> bool:
        """Read on; true once `enough()` holds, or once the trial has ended and a read brings nothing new."""
        ended = self.c.client().get(f"/trials/{self.trial_id}")["trial"]["state"] in ("COMPLETED", "ERROR", "CANCELED")
        before = self.last_id
        self.read_more()
        return enough() or (ended and self.last_id == before)

    def dropped(self) -> int:
        return -sum(e for e in self.events if e < 0)

    def gaps_explained(self) -> bool:
        """Every line in order, each gap exactly where a marker stands and as long as it says."""
        expected = 0
        for e in self.events:
            if e < 0:
                expected -= e
            elif e != expected:
                return False
            else:
                expected += 1
        return True


class Prober(threading.Thread):
    """GET /api/v1/experiments (what `stalwart e list` calls) every 0.2 s; keeps each answer's seconds and any
    failure (an error status, or no answer within 30 s)."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.headers = {"authorization": f"Bearer {token}"}  # the admin's session (LocalTestCluster logs it in)
        self.seconds: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30, headers=self.headers) as http:
            while not self.stop.is_set():
                t0 = time.monotonic()
                try:
                    http.get("/api/v1/experiments").raise_for_status()
                except httpx.HTTPError as e:
                    self.failures.append(repr(e))
                else:
                    self.seconds.append(time.monotonic() - t0)
                self.stop.wait(0.2)


@pytest.fixture
def burst_ctx(tmp_path):
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "burst.py").write_text(BURST)
    return ctx


def _burst_lines_stored(engine, trial_id: int, n: int) -> bool:
    """Straight from the database, without loading the master: the highest id is cheap; the exact count of
    burst lines is taken only once it can be complete."""
    with engine.connect() as conn:
        top = conn.execute(sa.text("SELECT max(id) FROM task_logs WHERE trial_id = :t"), {"t": trial_id}).scalar()
        return bool(top and top >= n) and conn.execute(sa.text(
            "SELECT count(*) FROM task_logs WHERE trial_id = :t AND log LIKE '% xxxxxxxxxx%'"),
            {"t": trial_id}).scalar() >= n


def test_a_million_line_burst_is_stored_whole_in_order_while_the_master_answers(any_db_cluster, burst_ctx):
    c = any_db_cluster
    n = 1_000_000
    prober = Prober(c.url, c.admin_token)
    prober.start()
    t0 = time.monotonic()
    exp_id = create(c, _config(n), burst_ctx)
    trial_id = first_trial(c, exp_id)
    engine = sa.create_engine(normalize_url(c.db_url))
    try:
        c.wait_for(lambda: _burst_lines_stored(engine, trial_id, n), timeout=240, interval=0.5,
                   what=f"{n} stored lines")
    finally:
        engine.dispose()
        prober.stop.set()
        prober.join()
    took = time.monotonic() - t0
    d = wait_state(c, exp_id, {"COMPLETED", "ERROR"})
    assert d["experiment"]["state"] == "COMPLETED"
    stored = StoredLog(c, trial_id)
    stored.read_more()  # through the trial logs API
    assert stored.markers == []
    assert len(stored.seqs) == n, f"{n - len(stored.seqs)} lines lost"
    assert stored.seqs == list(range(n)), "lines repeated or out of order"
    slowest = max(prober.seconds)
    print(f"\n{n} lines stored in {took:.1f} s; {len(prober.seconds)} experiment listings meanwhile, slowest "
          f"{slowest:.3f} s")
    # The master keeps answering: every listing during the burst succeeded. How fast is measured by
    # bench/log_burst.py (B9), not asserted here: a loaded CI host makes a wall-clock bound flaky.
    assert prober.failures == []
    assert len(prober.seconds) >= 5


def test_lines_dropped_after_the_block_timeout_leave_a_marker_that_counts_them(tmp_path, burst_ctx):
    # A 32 KiB bound and a 0.5 s timeout; the master is stopped (SIGSTOP) while the trial writes its burst, so
    # the agent's buffer fills, the trial's pipe reader blocks longer than the timeout and the rest is dropped.
    n = 200_000
    go = tmp_path / "go"
    home = tmp_path / "home"
    c = LocalTestCluster(home)
    c.env["STALWART_AGENT_LOG_BUFFER_MIB"] = str(32 / 1024)
    c.env["STALWART_AGENT_LOG_BLOCK_TIMEOUT"] = "0.5"
    with c:
        exp_id = create(c, _config(n, go), burst_ctx)
        trial_id = first_trial(c, exp_id)
        pid = c.wait_for(lambda: (r := live_run(c, trial_id)) and r["pid"], what="the trial's process")
        os.kill(c.master.pid, signal.SIGSTOP)
        try:
            go.touch()
            c.wait_for(lambda: not pid_alive(pid), timeout=60, what="the trial to write its burst and exit")
        finally:
            os.kill(c.master.pid, signal.SIGCONT)
        d = wait_state(c, exp_id, {"COMPLETED", "ERROR"}, timeout=60)
        assert d["experiment"]["state"] == "COMPLETED"
        stored = StoredLog(c, trial_id)
        c.wait_for(lambda: stored.settled(lambda: len(stored.seqs) + stored.dropped() >= n), timeout=60,
                   interval=1.0, what="lines and markers to add up")
    print(f"\n{len(stored.seqs)} lines stored, markers: {[m['log'] for m in stored.markers]}")
    assert stored.markers, "nothing was dropped: the test did not fill the buffer"
    assert len(stored.seqs) + stored.dropped() == n
    assert stored.gaps_explained(), "lines out of order, or a marker not where its lines were"
    assert all(m["level"] == "WARNING" and m["source"] == "agent" for m in stored.markers)
