"""B2 (metrics ingestion): durable points/s for 10 metrics x 10,000 steps, Stalwart vs an MLflow server.

Stalwart: a real trial process, started by a real LocalTestCluster (master + agent, SQLite), runs a
Core API script that calls ctx.train.report_training_metrics(step, {10 metrics}) 10,000 times and then
ctx.train.flush(), which returns once the master has acknowledged (committed) every report. The script
times first report -> flush returned and prints it; the benchmark reads that line from the trial's
logs. Afterwards it fetches the trial's training metrics through the API and checks that all 100,000
points are stored (10,000 rows x 10 metrics, every value as sent) - only stored points are counted.

MLflow: `mlflow server --backend-store-uri sqlite:///...` (started here, MLflow's defaults otherwise),
fed by MlflowClient().log_batch(run_id, metrics=[...], synchronous=True) with the same 100,000 points
in batches of 1,000 metrics (MLflow's per-call limit; 100 steps x 10 metrics per call). log_batch
returns after the server has committed the batch, so first call -> last call returned measures the
same thing. Its stored count is verified with get_metric_history for every metric.

Rounds (default 3, after one small discarded warm-up of each) alternate the two systems; a fresh
experiment / run each round on the same long-lived server. Printed: each round, medians, and
median(Stalwart points/s) / median(MLflow points/s). Target: >= 10x.

Durability is not identical: Stalwart's SQLite runs WAL with synchronous=NORMAL (group commit);
MLflow's SQLAlchemy SQLite store uses SQLite's defaults (rollback journal, synchronous=FULL).

Run from the repository root:  .venv/bin/python bench/metrics.py [--rounds 3] [--json out.json]
Needs `pip install -r bench/requirements.txt` (mlflow).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request

from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster, free_port

TARGET = 10.0
N_METRICS = 10
MLFLOW_BATCH = 1000  # MLflow's limit of metrics per log_batch call

TRAIN_PY = textwrap.dedent('''\
    """Metrics-ingestion probe: STEPS reports of N_METRICS metrics each, then flush; prints its timings."""
    import json
    import sys
    import time

    from stalwart import core

    STEPS, N_METRICS = int(sys.argv[1]), int(sys.argv[2])
    NAMES = [f"m{i}" for i in range(N_METRICS)]


    def value(step, i):
        return step * 0.001 + i  # the benchmark checks stored values against this


    def main():
        with core.init() as ctx:
            t_first = time.time()
            for step in range(1, STEPS + 1):
                ctx.train.report_training_metrics(step, {n: value(step, i) for i, n in enumerate(NAMES)})
            t_queued = time.time()
            ctx.train.flush()
            t_acked = time.time()
            print("BENCH " + json.dumps({"t_first": t_first, "t_queued": t_queued, "t_acked": t_acked}), flush=True)
            for op in ctx.searcher.operations():
                op.report_completed(0.0)


    if __name__ == "__main__":
        main()
''')

CONST_YAML = textwrap.dedent('''\
    name: bench-metrics
    entrypoint: python3 train.py {steps} {n_metrics}
    searcher:
      name: single
      metric: x
      max_length:
        batches: 1
    max_restarts: 0
''')


def expected_value(step: int, i: int) -> float:
    return step * 0.001 + i


def wait_for(predicate, timeout: float, interval: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


# -- Stalwart --------------------------------------------------------------------------------------

def write_context(root: pathlib.Path, steps: int) -> pathlib.Path:
    ctx = root / f"context-{steps}"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN_PY)
    (ctx / "const.yaml").write_text(CONST_YAML.format(steps=steps, n_metrics=N_METRICS))
    return ctx


def run_experiment(cluster: LocalTestCluster, client, ctx_dir: pathlib.Path) -> int:
    """Submit, wait until it completes, return the trial id."""
    body = {"config": (ctx_dir / "const.yaml").read_text(),
            "context": base64.b64encode(pack_context(ctx_dir).data).decode(), "activate": True}
    exp_id = client.post("/experiments", body)["experiment"]["id"]

    def finished():
        state = client.get(f"/experiments/{exp_id}")["experiment"]["state"]
        return state if state in ("COMPLETED", "ERROR", "CANCELED") else None

    state = wait_for(finished, 300, 0.2, f"experiment {exp_id} to finish")
    trials = client.get(f"/experiments/{exp_id}")["trials"]
    if state != "COMPLETED":
        logs = trial_log(client, trials[0]["id"]) if trials else ""
        raise RuntimeError(f"experiment {exp_id} ended {state}:\n{logs[-3000:]}")
    return trials[0]["id"]


def trial_log(client, trial_id: int) -> str:
    raw = client.get_bytes(f"/trials/{trial_id}/logs").decode()
    return "\n".join(json.loads(ln)["log"] for ln in raw.splitlines() if ln.strip())


def bench_line(client, trial_id: int) -> dict:
    def find():
        for line in trial_log(client, trial_id).splitlines():
            if line.startswith("BENCH "):
                return json.loads(line[len("BENCH "):])
        return None

    return wait_for(find, 30, 0.2, f"the BENCH line in trial {trial_id}'s logs")


def verify_stalwart(client, trial_id: int, steps: int) -> int:
    """Count stored points through the API; every value must be the one sent."""
    rows = client.get(f"/trials/{trial_id}/metrics", group="training", limit=steps + 1)["metrics"]
    points = 0
    for r in rows:
        for i in range(N_METRICS):
            v = r["metrics"].get(f"m{i}")
            if v is None or abs(v - expected_value(r["steps_completed"], i)) > 1e-9:
                raise AssertionError(f"trial {trial_id} step {r['steps_completed']} m{i}: stored {v!r}")
            points += 1
    if points != steps * N_METRICS or len({r["steps_completed"] for r in rows}) != steps:
        raise AssertionError(f"trial {trial_id}: {points} points stored over {len(rows)} rows, expected "
                             f"{steps * N_METRICS}")
    return points


def stalwart_round(cluster: LocalTestCluster, client, ctx_dir: pathlib.Path, steps: int) -> dict:
    trial_id = run_experiment(cluster, client, ctx_dir)
    t = bench_line(client, trial_id)
    points = verify_stalwart(client, trial_id, steps)
    seconds = t["t_acked"] - t["t_first"]
    return {"system": "stalwart", "trial_id": trial_id, "points": points, "seconds": seconds,
            "points_per_s": points / seconds, "client_blocked_s": t["t_queued"] - t["t_first"]}


# -- MLflow ----------------------------------------------------------------------------------------

def start_mlflow(root: pathlib.Path, workers: int | None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
           "--default-artifact-root", (root / "mlartifacts").as_uri(), "--host", "127.0.0.1", "--port", str(port)]
    if workers:
        cmd += ["--workers", str(workers)]
    with open(root / "mlflow-server.log", "ab") as log:  # the server keeps its own copy of the descriptor
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def up():
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited: {(root / 'mlflow-server.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as resp:
                return resp.status == 200
        except OSError:
            return False

    wait_for(up, 120, 0.2, "the MLflow server")
    return proc, url


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds used so far by every live process in process group `pgid` (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields[2] is pgrp (field 5 of stat)
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def settle(pgids: list[int], what: str, limit: float = 90.0) -> float:
    """Wait until these process groups use < 5% of a core over 2 s (start-up imports done)."""
    t_start = time.monotonic()
    while time.monotonic() - t_start < limit:
        before = sum(group_cpu_seconds(g) for g in pgids)
        time.sleep(2.0)
        if sum(group_cpu_seconds(g) for g in pgids) - before < 0.1:
            return time.monotonic() - t_start
    print(f"  warning: {what} still busy after {limit:.0f} s", flush=True)
    return limit


def stop_process(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, 15)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def mlflow_batches(steps: int) -> list[list]:
    from mlflow.entities import Metric

    per_call = MLFLOW_BATCH // N_METRICS
    ts = int(time.time() * 1000)
    out = []
    for start in range(1, steps + 1, per_call):
        out.append([Metric(f"m{i}", expected_value(step, i), ts, step)
                    for step in range(start, min(start + per_call, steps + 1)) for i in range(N_METRICS)])
    return out


def verify_mlflow(client, run_id: str, steps: int) -> int:
    points = 0
    for i in range(N_METRICS):
        history = client.get_metric_history(run_id, f"m{i}")
        if len(history) != steps or len({m.step for m in history}) != steps:
            raise AssertionError(f"MLflow run {run_id} m{i}: {len(history)} points stored, expected {steps}")
        for m in history:
            if abs(m.value - expected_value(m.step, i)) > 1e-9:
                raise AssertionError(f"MLflow run {run_id} m{i} step {m.step}: stored {m.value}")
        points += len(history)
    return points


def mlflow_round(client, exp_id: str, steps: int) -> dict:
    run_id = client.create_run(exp_id).info.run_id
    batches = mlflow_batches(steps)  # built before the clock starts: Stalwart's dicts are built inside it
    t_first = time.time()
    for batch in batches:
        client.log_batch(run_id, metrics=batch, synchronous=True)
    t_acked = time.time()
    points = verify_mlflow(client, run_id, steps)
    seconds = t_acked - t_first
    return {"system": "mlflow", "run_id": run_id, "points": points, "seconds": seconds,
            "points_per_s": points / seconds, "client_blocked_s": seconds}


# -- reporting ---------------------------------------------------------------------------------------

def print_table(ours: list[dict], theirs: list[dict]) -> dict:
    print(f"\n{'round':>5} {'stalwart pts/s':>15} {'(s)':>7} {'mlflow pts/s':>13} {'(s)':>7} {'ratio':>7}")
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True), 1):
        print(f"{i:>5} {a['points_per_s']:>15,.0f} {a['seconds']:>7.2f} {b['points_per_s']:>13,.0f} "
              f"{b['seconds']:>7.2f} {a['points_per_s'] / b['points_per_s']:>7.1f}")
    ma = statistics.median(r["points_per_s"] for r in ours)
    mb = statistics.median(r["points_per_s"] for r in theirs)
    print(f"{'med':>5} {ma:>15,.0f} {'':>7} {mb:>13,.0f} {'':>7} {ma / mb:>7.1f}")
    per_round = statistics.median(a["points_per_s"] / b["points_per_s"] for a, b in zip(ours, theirs, strict=True))
    print(f"  median of per-round ratios: {per_round:.1f}")
    blocked = statistics.median(r["client_blocked_s"] for r in ours)
    n_calls = ours[0]["points"] // N_METRICS
    print(f"  stalwart: the training loop spent a median {blocked:.2f} s in {n_calls:,} report calls "
          f"({blocked / n_calls * 1e6:.0f} us/call); the rest until flush() returned is shipping + commit")
    print(f"  every round verified: {ours[0]['points']:,} points stored in each system")
    ratio = ma / mb
    verdict = "meets" if ratio >= TARGET else "MISSES"
    print(f"\nmetrics ingestion: Stalwart {ma:,.0f} points/s / MLflow {mb:,.0f} points/s = {ratio:.1f}x "
          f"({verdict} target >= {TARGET:.0f}x)")
    return {"stalwart_points_per_s": ma, "mlflow_points_per_s": mb, "ratio": ratio,
            "median_per_round_ratio": per_round}


# -- main --------------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10_000, help="steps per round (10 metrics each)")
    ap.add_argument("--mlflow-workers", type=int, default=None, help="mlflow server --workers (default: MLflow's)")
    ap.add_argument("--json", type=pathlib.Path, help="write raw per-round numbers here")
    args = ap.parse_args()

    from mlflow.tracking import MlflowClient

    warm_steps = 500
    with tempfile.TemporaryDirectory(prefix="stalwart-bench-metrics-") as tmp:
        tmp_path = pathlib.Path(tmp)
        cluster = LocalTestCluster(tmp_path / "home")
        ml_proc = None
        try:
            cluster.start()
            client = cluster.client()
            wait_for(lambda: client.get("/agents")["agents"], 60, 0.1, "the agent to register")
            (tmp_path / "mlflow").mkdir()
            ml_proc, ml_url = start_mlflow(tmp_path / "mlflow", args.mlflow_workers)
            ml = MlflowClient(tracking_uri=ml_url)
            pgids = [ml_proc.pid, cluster.master.pid, *(a.pid for a in cluster.agents)]
            print(f"servers idle after {settle(pgids, 'the servers'):.0f} s", flush=True)
            ml_exp = ml.create_experiment("bench-metrics")
            ctx_dir, warm_dir = write_context(tmp_path, args.steps), write_context(tmp_path, warm_steps)
            print(f"warm-up (discarded): {warm_steps} steps on each", flush=True)
            stalwart_round(cluster, client, warm_dir, warm_steps)
            mlflow_round(ml, ml_exp, warm_steps)
            ours, theirs = [], []
            for i in range(args.rounds):
                ours.append(stalwart_round(cluster, client, ctx_dir, args.steps))
                theirs.append(mlflow_round(ml, ml_exp, args.steps))
                print(f"round {i + 1}/{args.rounds}: stalwart {ours[-1]['seconds']:.2f} s, "
                      f"mlflow {theirs[-1]['seconds']:.2f} s", flush=True)
            summary = print_table(ours, theirs)
        finally:
            stop_process(ml_proc)
            cluster.stop()
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "stalwart": ours, "mlflow": theirs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
