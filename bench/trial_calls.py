"""Issue 15: the master's latency for trial-side calls (metrics, progress, preemption check) under 50 reporters.

One LocalTestCluster (master + one agent with N slots, SQLite) runs one experiment of N trials
(`random` searcher, N concurrent). Each trial process only sleeps, so every allocation is real, live
and RUNNING while it is measured; the benchmark reads each allocation's token from its process's
environment (/proc/PID/environ, with the pid the agent reported), as the integration tests do. Then, per
round, R reporters (asyncio + one httpx.AsyncClient each, reporter i speaks for trial i mod N, with that
trial's own token) loop for `--seconds` as fast as answers come back (closed loop, no think time), each
iteration making the three calls a trial makes:

  metrics     POST /api/v1/trials/{id}/metrics     one training report of 10 metrics (steps rising)
  progress    POST /api/v1/trials/{id}/progress    {"progress": x}
  preemption  GET  /api/v1/allocations/{id}/signals/preemption?timeout_seconds=0   (no long-poll)

Latency is request sent -> answer read, per call, by the client (same machine: the client's own
CPU is part of it). Printed: each round's p50/p99 per call and over all calls, calls/s, and the
medians over rounds; then one JSON object. Every call must answer 200 (a round with an error fails).
Afterwards the stored training rows are counted through the API and must equal the acknowledged
metric calls.

With --baseline SRC a second cluster runs the code in SRC (another checkout's src/, put first on the
master's, agent's and trials' PYTHONPATH), and the rounds alternate between the two clusters, so
that the load of a shared machine hits both alike; the ratios this / baseline are printed too.

Run from the repository root:  .venv/bin/python bench/trial_calls.py [--rounds 5] [--seconds 10]
  [--trials 50] [--reporters 50] [--baseline ../before/src] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import pathlib
import statistics
import sys
import tempfile
import textwrap
import time

import httpx

from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

KINDS = ("metrics", "progress", "preemption")

CONFIG = textwrap.dedent('''\
    name: bench-trial-calls
    entrypoint: exec sleep 3600
    hyperparameters:
      x:
        type: double
        minval: 0
        maxval: 1
    searcher:
      name: random
      metric: loss
      max_trials: {trials}
      max_concurrent_trials: {trials}
      max_length:
        batches: 1000000
    max_restarts: 0
''')


def wait_for(predicate, timeout: float, interval: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def start_trials(client, root: pathlib.Path, n: int) -> tuple[int, list[dict]]:
    """Create the experiment; return (experiment id, [{trial_id, allocation_id, token}]) once all run.

    Each token is read from its trial process's environment (/proc/PID/environ, the pid the agent
    reported): the process the master handed that allocation's token to.
    """
    ctx = root / "context"
    ctx.mkdir()
    (ctx / "README").write_text("trial-calls benchmark: the entrypoint only sleeps\n")
    body = {"config": CONFIG.format(trials=n), "context": base64.b64encode(pack_context(ctx).data).decode(),
            "activate": True}
    exp_id = client.post("/experiments", body)["experiment"]["id"]

    def tokens():
        trials = client.get(f"/experiments/{exp_id}")["trials"]
        if len(trials) < n:
            return None
        found = []
        for t in trials:
            runs = [r for r in client.get(f"/trials/{t['id']}")["runs"] if r["state"] == "RUNNING" and r["pid"]]
            env = _environ(runs[0]["pid"]) if runs else {}
            if "STALWART_ALLOCATION_TOKEN" not in env:
                return None
            found.append({"trial_id": t["id"], "allocation_id": runs[0]["id"],
                          "token": env["STALWART_ALLOCATION_TOKEN"]})
        return found

    return exp_id, wait_for(tokens, 300, 1.0, f"{n} trials to run")


def _environ(pid: int) -> dict:
    try:
        raw = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(p.decode(errors="replace").split("=", 1) for p in raw.split(b"\0") if b"=" in p)


async def reporter(http: httpx.AsyncClient, trial: dict, stop_at: float, step0: int, out: dict, slow: list) -> int:
    """One reporter's closed loop: seconds per call into out[kind], (seconds, kind, sent at) into slow."""
    tid, aid = trial["trial_id"], trial["allocation_id"]
    acked, step = 0, step0
    while time.monotonic() < stop_at:
        step += 1
        report = {"group": "training", "steps_completed": step, "trial_run_id": 1, "report_time": time.time(),
                  "metrics": {f"m{i}": step * 0.001 + i for i in range(10)}}
        for kind in KINDS:
            t0 = time.perf_counter()
            if kind == "metrics":
                resp = await http.post(f"/api/v1/trials/{tid}/metrics", json={"reports": [report]})
            elif kind == "progress":
                resp = await http.post(f"/api/v1/trials/{tid}/progress", json={"progress": (step % 1000) / 1000})
            else:
                resp = await http.get(f"/api/v1/allocations/{aid}/signals/preemption", params={"timeout_seconds": 0})
            took = time.perf_counter() - t0
            out[kind].append(took)
            slow.append((took, kind, t0))
            if resp.status_code != 200:
                raise RuntimeError(f"{kind} call of trial {tid} answered {resp.status_code}: {resp.text[:300]}")
        acked += 1
    return acked


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))] * 1000


async def one_round(clients: list, trials: list[dict], seconds: float, step0: int) -> dict:
    out, slow = {k: [] for k in KINDS}, []
    stop_at = time.monotonic() + seconds
    t0, p0 = time.monotonic(), time.perf_counter()
    acked = await asyncio.gather(*(reporter(http, trials[i % len(trials)], stop_at, step0 + i * 10_000_000, out, slow)
                                   for i, http in enumerate(clients)))
    wall = time.monotonic() - t0
    every = [v for k in KINDS for v in out[k]]
    row = {"wall_s": wall, "calls": len(every), "calls_per_s": len(every) / wall, "metric_calls": sum(acked),
           "slowest": [{"kind": k, "ms": round(s * 1000, 1), "sent_at_s": round(at - p0, 3)}
                       for s, k, at in sorted(slow, reverse=True)[:10]]}
    for k, values in (*out.items(), ("all", every)):
        row[k] = {"n": len(values), "p50_ms": pct(values, 50), "p99_ms": pct(values, 99), "max_ms": max(values) * 1000}
    return row


class Side:
    """One cluster under test: its label, URL, trials with tokens, and its reporters' clients."""

    def __init__(self, label: str, url: str, trials: list[dict], reporters: int) -> None:
        self.label, self.url, self.trials = label, url, trials
        self.n_reporters = reporters
        self.clients: list[httpx.AsyncClient] = []
        self.rounds: list[dict] = []

    def open(self) -> None:
        """Clients are made before any round: building 50 httpx clients takes seconds of client CPU (an SSL
        context each) that must not land inside the first calls; the warm-up then connects them."""
        self.clients = [httpx.AsyncClient(base_url=self.url, timeout=60, headers={
            "x-allocation-token": f"Bearer {self.trials[i % len(self.trials)]['token']}"})
            for i in range(self.n_reporters)]


async def all_rounds(sides: list[Side], args) -> None:
    """Warm every side up, then rounds interleaved side by side (the order alternating round by round)."""
    for side in sides:
        side.open()
    try:
        for side in sides:
            await one_round(side.clients, side.trials, 2.0, 0)  # warm-up, discarded
        for r in range(args.rounds):
            for side in (sides if r % 2 == 0 else sides[::-1]):
                side.rounds.append(await one_round(side.clients, side.trials, args.seconds, (r + 1) * 1_000_000))
                a = side.rounds[-1]
                print(f"round {r + 1}/{args.rounds} {side.label}: {a['calls']} calls, {a['calls_per_s']:.0f}/s; "
                      + ", ".join(f"{k} p50 {a[k]['p50_ms']:.1f} p99 {a[k]['p99_ms']:.1f}" for k in (*KINDS, "all"))
                      + " ms", flush=True)
    finally:
        for side in sides:
            for http in side.clients:
                await http.aclose()


def stored_rows(client, trials: list[dict]) -> int:
    """Training rows stored for the trials, read in the API's pages (at most 100,000 rows each)."""
    total = 0
    for t in trials:
        after = -1
        while page := client.get(f"/trials/{t['trial_id']}/metrics", group="training", after_steps=after,
                                 limit=100_000)["metrics"]:
            total += len(page)
            after = page[-1]["steps_completed"]
    return total


def summarize(side: Side, stored: int, args) -> dict:
    rounds = side.rounds
    acked = sum(a["metric_calls"] for a in rounds)
    if stored < acked:
        raise AssertionError(f"{side.label}: {acked} metric reports were acknowledged but only {stored} rows stored")
    median = {k: {m: statistics.median(a[k][m] for a in rounds) for m in ("p50_ms", "p99_ms")}
              for k in (*KINDS, "all")}
    print(f"\n{side.label}: {'call':>11} {'p50 ms':>8} {'p99 ms':>8}   (medians of {args.rounds} rounds of "
          f"{args.seconds:.0f} s, {args.reporters} reporters, {args.trials} trials)")
    for k in (*KINDS, "all"):
        print(f"{'':>{len(side.label) + 1}} {k:>11} {median[k]['p50_ms']:>8.1f} {median[k]['p99_ms']:>8.1f}")
    calls = statistics.median(a["calls_per_s"] for a in rounds)
    print(f"  calls/s (median): {calls:.0f}; metric reports acknowledged in the rounds: {acked}, stored rows: "
          f"{stored} (the rest are the warm-up's)")
    return {"median": median, "calls_per_s": calls, "rounds": rounds, "acked": acked, "stored": stored}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of one round")
    ap.add_argument("--trials", type=int, default=50, help="running trials (allocations) whose tokens are used")
    ap.add_argument("--reporters", type=int, default=50, help="concurrent reporters")
    ap.add_argument("--baseline", type=pathlib.Path,
                    help="the src/ directory of another checkout (e.g. a `git worktree` of the commit before a "
                         "change): a second cluster runs that code, its rounds interleaved with this one's")
    ap.add_argument("--json", type=pathlib.Path, help="write the per-round numbers here")
    args = ap.parse_args()

    labels = ["this", "baseline"] if args.baseline else ["this"]
    with tempfile.TemporaryDirectory(prefix="stalwart-bench-trial-calls-") as tmp, contextlib.ExitStack() as stack:
        root = pathlib.Path(tmp)
        sides, exps = [], []
        for label in labels:
            cluster = LocalTestCluster(root / label / "home", slots=args.trials)
            if label == "baseline":
                cluster.env["PYTHONPATH"] = str(args.baseline.resolve())
            stack.enter_context(cluster)
            (root / label).mkdir(exist_ok=True)
            t0 = time.monotonic()
            exp_id, trials = start_trials(cluster.client(), root / label, args.trials)
            print(f"{label}: {len(trials)} trials running with their tokens after {time.monotonic() - t0:.0f} s",
                  flush=True)
            sides.append(Side(label, cluster.url, trials, args.reporters))
            exps.append((cluster, exp_id))
        asyncio.run(all_rounds(sides, args))
        summary = {"reporters": args.reporters, "trials": args.trials, "seconds": args.seconds,
                   "baseline": str(args.baseline) if args.baseline else None}
        for side, (cluster, exp_id) in zip(sides, exps, strict=True):
            summary[side.label] = summarize(side, stored_rows(cluster.client(), side.trials), args)
            cluster.client().post(f"/experiments/{exp_id}/kill")
    short = {label: {"median": summary[label]["median"], "calls_per_s": round(summary[label]["calls_per_s"])}
             for label in labels}
    if args.baseline:
        this, base = summary["this"]["median"], summary["baseline"]["median"]
        short["ratio_this_over_baseline"] = {k: {m: round(this[k][m] / base[k][m], 3) for m in ("p50_ms", "p99_ms")}
                                             for k in (*KINDS, "all")}
        print("\nthis / baseline (medians): " + ", ".join(
            f"{k} p50 {short['ratio_this_over_baseline'][k]['p50_ms']:.2f} "
            f"p99 {short['ratio_this_over_baseline'][k]['p99_ms']:.2f}" for k in (*KINDS, "all")))
    print(json.dumps(short))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
