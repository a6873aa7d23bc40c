"""B1 (launch latency): submit -> first reported training metric, on a cluster vs `python train.py`.

One LocalTestCluster (master + agent, SQLite) is started up front and is not timed: a cluster is
long-lived. Each round then times two things with the same tiny Core API script (imports torch,
builds a small model, trains one batch, reports one training metric):

  cluster  t0 = time.time() just before the client packs the context and POSTs /api/v1/experiments;
           latency = t_report - t0, where t_report is the trial's own time.time() recorded just before
           report_training_metrics() and stored inside the metric. The benchmark polls the trial's
           training metrics until that point is stored; the polling interval does not enter the number.
  direct   t0 = time.time() just before subprocess.Popen([python, train.py]) off-cluster; the script
           prints the same timestamps; latency = t_report - t0.

Rounds alternate direct/cluster (after one discarded warm-up of each) so drift hits both alike.
Printed: every round, the per-stage breakdown, the medians, and median(cluster) / median(direct).
Target: ratio <= 1.5.

Run from the repository root:  .venv/bin/python bench/launch.py [--rounds 5] [--json out.json]
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

from stalwart.context import pack_context
from stalwart.testing import LocalTestCluster

TARGET = 1.5

TRAIN_PY = textwrap.dedent('''\
    """Launch-latency probe: import torch, one batch, one training metric carrying its own timestamps."""
    import time
    T_START = time.time()  # first statement: the interpreter is up

    import json

    import torch

    from stalwart import core

    T_IMPORTED = time.time()


    def main():
        torch.set_num_threads(1)
        with core.init() as ctx:
            t_init = time.time()
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x, y = torch.randn(32, 10), torch.randn(32, 1)
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            stamps = {"t_start": T_START, "t_imported": T_IMPORTED, "t_init": t_init}
            stamps["t_report"] = time.time()
            ctx.train.report_training_metrics(1, {"loss": loss.item(), **stamps})
            ctx.train.flush()  # the master has stored it (a no-op off-cluster)
            stamps["t_acked"] = time.time()
            print("BENCH " + json.dumps(stamps), flush=True)
            for op in ctx.searcher.operations():
                op.report_completed(loss.item())


    if __name__ == "__main__":
        main()
''')

CONST_YAML = textwrap.dedent('''\
    name: bench-launch
    entrypoint: python3 train.py
    searcher:
      name: single
      metric: x
      max_length:
        batches: 1
    max_restarts: 0
''')


# -- setup -------------------------------------------------------------------------------------------

def write_context(root: pathlib.Path) -> pathlib.Path:
    ctx = root / "context"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN_PY)
    (ctx / "const.yaml").write_text(CONST_YAML)
    return ctx


def probe_env() -> dict:
    """The environment both paths run the script in (no cluster variables; same as the agent gives)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STALWART_", "DET_"))}
    env["PYTHONUNBUFFERED"] = "1"
    return env


# -- the two paths -----------------------------------------------------------------------------------

def run_direct(ctx_dir: pathlib.Path) -> dict:
    t0 = time.time()
    res = subprocess.run([sys.executable, "train.py"], cwd=ctx_dir, env=probe_env(), capture_output=True,
                         text=True, timeout=300)
    t_exit = time.time()
    if res.returncode != 0:
        raise RuntimeError(f"direct run failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("BENCH "))
    stamps = json.loads(line[len("BENCH "):])
    return {"t0": t0, "t_exit": t_exit, **stamps}


def wait_for(predicate, timeout: float, interval: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def first_training_point(client, exp_id: int, poll: float) -> tuple[int, dict]:
    def trial_id():
        return (client.get(f"/experiments/{exp_id}")["trials"] or [{}])[0].get("id")

    tid = wait_for(trial_id, 120, poll, f"a trial of experiment {exp_id}")

    def point():
        rows = client.get(f"/trials/{tid}/metrics", group="training")["metrics"]
        return rows[0] if rows else None

    return tid, wait_for(point, 300, poll, f"the first training metric of trial {tid}")


def wait_finished(cluster: LocalTestCluster, client, exp_id: int) -> str:
    def done():
        state = client.get(f"/experiments/{exp_id}")["experiment"]["state"]
        return state if state in ("COMPLETED", "ERROR", "CANCELED") else None

    state = wait_for(done, 120, 0.1, f"experiment {exp_id} to finish")
    if state != "COMPLETED":
        raise RuntimeError(f"experiment {exp_id} ended {state}; agent log tail:\n{cluster.log('agent-0.log')[-3000:]}")
    return state


def run_cluster(cluster: LocalTestCluster, client, ctx_dir: pathlib.Path, poll: float) -> dict:
    config = (ctx_dir / "const.yaml").read_text()
    t0 = time.time()
    body = {"config": config, "context": base64.b64encode(pack_context(ctx_dir).data).decode(), "activate": True}
    exp_id = client.post("/experiments", body)["experiment"]["id"]
    t_created = time.time()
    tid, point = first_training_point(client, exp_id, poll)
    t_seen = time.time()
    wait_finished(cluster, client, exp_id)
    run = client.get(f"/trials/{tid}")["runs"][0]
    m = point["metrics"]
    return {"t0": t0, "t_created": t_created, "t_seen": t_seen, "alloc_created": run["created_at"],
            "alloc_started": run["started_at"], **{k: m[k] for k in ("t_start", "t_imported", "t_init", "t_report")}}


# -- reporting ---------------------------------------------------------------------------------------

def stages(r: dict, cluster: bool) -> dict:
    """Consecutive intervals (ms) from t0 to t_report; they sum to the latency."""
    out = {}
    if cluster:
        out["submit->allocated"] = r["alloc_created"] - r["t0"]
        out["allocated->spawned"] = r["alloc_started"] - r["alloc_created"]
        out["spawned->script"] = r["t_start"] - r["alloc_started"]
    else:
        out["spawn->script"] = r["t_start"] - r["t0"]
    out["imports"] = r["t_imported"] - r["t_start"]
    out["core.init"] = r["t_init"] - r["t_imported"]
    out["train 1 batch"] = r["t_report"] - r["t_init"]
    return {k: v * 1000 for k, v in out.items()}


def print_table(direct: list[dict], clustered: list[dict]) -> dict:
    print(f"\n{'round':>5} {'direct ms':>10} {'cluster ms':>11} {'ratio':>7}")
    d_lat = [(r["t_report"] - r["t0"]) * 1000 for r in direct]
    c_lat = [(r["t_report"] - r["t0"]) * 1000 for r in clustered]
    for i, (d, c) in enumerate(zip(d_lat, c_lat, strict=True), 1):
        print(f"{i:>5} {d:>10.0f} {c:>11.0f} {c / d:>7.2f}")
    md, mc = statistics.median(d_lat), statistics.median(c_lat)
    print(f"{'med':>5} {md:>10.0f} {mc:>11.0f} {mc / md:>7.2f}")
    per_round = statistics.median(c / d for d, c in zip(d_lat, c_lat, strict=True))
    print(f"  median of per-round ratios: {per_round:.2f}")
    for name, rows, is_cluster in (("direct", direct, False), ("cluster", clustered, True)):
        per = [stages(r, is_cluster) for r in rows]
        parts = ", ".join(f"{k} {statistics.median(p[k] for p in per):.0f}" for k in per[0])
        print(f"  {name:<8} median stages (ms): {parts}")
    lag = statistics.median((r["t_seen"] - r["t_report"]) * 1000 for r in clustered)
    print(f"  cluster: metric seen by the polling client a median {lag:.0f} ms after t_report (not counted)")
    ratio = mc / md
    verdict = "meets" if ratio <= TARGET else "MISSES"
    print(f"\nlaunch latency: cluster median {mc:.0f} ms / direct median {md:.0f} ms = {ratio:.2f}x "
          f"({verdict} target <= {TARGET}x)")
    if ratio > TARGET:
        explain(direct, clustered)
    return {"direct_ms": d_lat, "cluster_ms": c_lat, "median_direct_ms": md, "median_cluster_ms": mc, "ratio": ratio,
            "median_per_round_ratio": per_round}


def explain(direct: list[dict], clustered: list[dict]) -> None:
    d = {k: statistics.median(stages(r, False)[k] for r in direct) for k in stages(direct[0], False)}
    c = {k: statistics.median(stages(r, True)[k] for r in clustered) for k in stages(clustered[0], True)}
    shared = d["imports"] + d["core.init"] + d["train 1 batch"]
    extra = {k: c[k] for k in ("submit->allocated", "allocated->spawned", "spawned->script")}
    extra["core.init (cluster - direct)"] = c["core.init"] - d["core.init"]
    print(f"  in both paths: python + imports (torch, stalwart) + init + 1 batch ~ {shared:.0f} ms direct")
    largest_first = sorted(extra.items(), key=lambda kv: -kv[1])
    print("  cluster-only time (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in largest_first))


# -- main --------------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--poll", type=float, default=0.1, help="seconds between metric polls (not in the number)")
    ap.add_argument("--json", type=pathlib.Path, help="write raw per-round numbers here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="stalwart-bench-launch-") as tmp:
        tmp_path = pathlib.Path(tmp)
        ctx_dir = write_context(tmp_path)
        cluster = LocalTestCluster(tmp_path / "home")
        try:
            cluster.start()
            client = cluster.client()
            wait_for(lambda: client.get("/agents")["agents"], 60, 0.1, "the agent to register")
            print("warm-up (discarded): one direct run and one experiment", flush=True)
            run_direct(ctx_dir)
            run_cluster(cluster, client, ctx_dir, args.poll)
            direct, clustered = [], []
            for i in range(args.rounds):
                direct.append(run_direct(ctx_dir))
                clustered.append(run_cluster(cluster, client, ctx_dir, args.poll))
                print(f"round {i + 1}/{args.rounds} done", flush=True)
            summary = print_table(direct, clustered)
        finally:
            cluster.stop()
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "direct": direct, "cluster": clustered}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
