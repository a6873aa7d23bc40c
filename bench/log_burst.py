"""B9 (log burst): a trial prints 1,000,000 lines of 100 bytes as fast as it can; how long until all are stored.

A real LocalTestCluster (master + agent, default agent settings: 64 MiB log buffer per allocation, 30 s block
timeout) runs a trial that writes N lines (10-digit sequence number, a space, 88 x's) to stdout in blocks of
1,000 through a 64 KiB buffer, and records how long its writing took (back-pressure shows up there). The
benchmark counts the stored rows straight from the database every 0.25 s and, every 0.2 s, times
GET /api/v1/experiments (what `stalwart e list` calls). Printed per database: the trial's write time, create ->
all stored, first stored line -> all stored (the master's and agent's ingest rate), the listing's median and
maximum latency, and whether every line is stored once and in order (checked in the database).

Run from the repository root:  .venv/bin/python bench/log_burst.py [--lines 1000000] [--db sqlite postgres]
PostgreSQL: a throw-away database on $STALWART_TEST_PG (default postgresql://postgres@127.0.0.1:5432/postgres).
"""

from __future__ import annotations

import argparse
import base64
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time
import uuid

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "src"))

from stalwart.context import pack_context  # noqa: E402
from stalwart.testing import LocalTestCluster  # noqa: E402

TRIAL = """\
import sys, time
n, report = int(sys.argv[1]), sys.argv[2]
t0 = time.monotonic()
out = open(1, "w", buffering=1 << 16, closefd=False)
pad = "x" * 88
for start in range(0, n, 1000):
    out.write("".join(f"{i:010d} {pad}\\n" for i in range(start, min(start + 1000, n))))
out.flush()
open(report, "w").write(str(time.monotonic() - t0))
"""
PG_ADMIN = os.environ.get("STALWART_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _pg_database() -> tuple[str, callable]:
    import psycopg

    name = f"stalwart_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop():
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name, drop


def one(db: str, n: int, tmp: pathlib.Path) -> dict:
    ctx = tmp / "ctx"
    ctx.mkdir(parents=True, exist_ok=True)
    (ctx / "burst.py").write_text(TRIAL)
    report = tmp / f"write-seconds-{db}"
    url, drop = _pg_database() if db == "postgres" else (None, lambda: None)
    latencies: list[float] = []
    stop = threading.Event()
    try:
        with LocalTestCluster(tmp / f"home-{db}", url) as c:
            engine = sa.create_engine(c.db_url.replace("postgresql://", "postgresql+psycopg://"))

            def probe():
                with httpx.Client(base_url=c.url, timeout=60) as http:
                    while not stop.is_set():
                        t = time.monotonic()
                        http.get("/api/v1/experiments").raise_for_status()
                        latencies.append(time.monotonic() - t)
                        stop.wait(0.2)

            prober = threading.Thread(target=probe, daemon=True)
            prober.start()
            t0 = time.monotonic()
            c.client().post("/experiments", {
                "config": f"entrypoint: python3 burst.py {n} {report}\n"
                          "searcher: {name: single, metric: x, max_length: 1}\n",
                "context": base64.b64encode(pack_context(ctx).data).decode(), "activate": True})
            first = None
            while True:  # max(id) is cheap; the exact count only once it can be complete
                with engine.connect() as conn:
                    top = conn.execute(sa.text("SELECT coalesce(max(id), 0) FROM task_logs")).scalar()
                    stored = top >= n and conn.execute(sa.text(
                        "SELECT count(*) FROM task_logs WHERE log LIKE '% xxxx%'")).scalar() >= n
                now = time.monotonic()
                if top and first is None:
                    first = now
                if stored or now - t0 > 900:
                    break
                time.sleep(0.25)
            done = time.monotonic()
            stop.set()
            prober.join()
            with engine.connect() as conn:
                seqs = [int(s) for (s,) in conn.execute(sa.text(
                    "SELECT substr(log, 1, 10) FROM task_logs WHERE log LIKE '% xxxx%' ORDER BY id"))]
            engine.dispose()
            c.wait_for(report.exists, timeout=120, what="the trial's write time")
    finally:
        drop()
    return {"db": db, "lines": n, "stored": len(seqs), "in_order": seqs == list(range(n)),
            "trial_write_s": float(report.read_text()), "create_to_stored_s": done - t0,
            "first_to_stored_s": done - (first or done), "listings": len(latencies),
            "listing_median_s": statistics.median(latencies), "listing_max_s": max(latencies)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--db", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for db in args.db:
            r = one(db, args.lines, pathlib.Path(tmp))
            print(f"{r['db']:8s} stored {r['stored']:,}/{r['lines']:,} in order: {r['in_order']}; "
                  f"trial wrote in {r['trial_write_s']:.1f} s; create -> all stored {r['create_to_stored_s']:.1f} s "
                  f"(first line -> all {r['first_to_stored_s']:.1f} s, "
                  f"{r['stored'] / max(r['first_to_stored_s'], 1e-9):,.0f} lines/s); "
                  f"e list: {r['listings']} calls, median {r['listing_median_s'] * 1000:.0f} ms, "
                  f"max {r['listing_max_s'] * 1000:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
