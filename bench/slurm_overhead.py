"""B12 (Slurm overhead): what running trials through Slurm costs against our own agents, and what one Slurm poll
costs the master with 1,000 queued jobs.

Self-contained: it starts its own Slurm (tests/slurm_server.py: one slurmctld, a slurmd per node, all on this host,
private slurm.conf) and stops it on exit, errors included. Root only (the daemons run as root).

1. Launch: `experiment create` -> the trial's first stored log line, on two kinds of LocalTestCluster started up
   front and not timed: one master with 1 agent (1 slot), and one master with no agent whose resource manager is
   Slurm (partition `batch`, jobs run as root) per `--poll-intervals` value (the manager's `poll_interval`; 2 s is
   the shipped default). The trial prints one line and sleeps. t0 is just before the create POST; the latency is
   the stored timestamp of that line minus t0 (the benchmark's polling does not enter it). After one discarded
   warm-up of each, rounds alternate the paths; each round's experiment is killed and waited for.
2. Poll cost: a Master in this process on SQLite (as `stalwart.testing.rm_conformance.World` builds one) whose
   resource manager is this Slurm: N single-trial experiments created with `experiments.create_experiment`, then
   one scheduling pass submits each allocation as a real job through the manager's own `sbatch` path, with
   `slurm.sbatch_args: [--hold]` so that they stay PENDING (held). A first `SlurmManager.reconcile()` records
   every row's pending reason (Slurm's hold reason); then each round times one more (`poll_interval: 0`) inside a
   transaction: wall and CPU time of this process, and of the `squeue` subprocess (its wall time and its CPU from
   RUSAGE_CHILDREN). Done with N = 10 while Slurm holds only those 10 jobs, then with N = 1,000 interleaved with
   the 10-row master again (whose `squeue` then lists 1,010 jobs). The held jobs are cancelled at the end.

Run from the repository root, as root:  .venv/bin/python bench/slurm_overhead.py [--rounds 5] [--jobs 1000]
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import datetime
import json
import os
import pathlib
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the tests' Slurm cluster

import slurm_server  # noqa: E402 - after the path above
from stalwart.config.master import parse_master_config  # noqa: E402
from stalwart.context import pack_context  # noqa: E402
from stalwart.master.experiments import experiments  # noqa: E402
from stalwart.master.queries import engine_jobs  # noqa: E402
from stalwart.master.scheduling import scheduling  # noqa: E402
from stalwart.master.scheduling.slurm_manager import SlurmManager  # noqa: E402
from stalwart.master.service import Master  # noqa: E402
from stalwart.master.settings import MasterSettings  # noqa: E402
from stalwart.rm.slurm import SlurmCli  # noqa: E402
from stalwart.rm.slurm.cli import parse_squeue  # noqa: E402
from stalwart.testing import LocalTestCluster  # noqa: E402

PARTITION = "batch"
FIRST = "FIRST-LINE"
TRAIN_PY = f'print("{FIRST}", flush=True)\nimport time\ntime.sleep(30)\n'
TRIAL = """name: bench-slurm
entrypoint: python3 train.py
searcher: {{name: single, metric: x, max_length: {{batches: 1}}}}
max_restarts: 0
resources: {{resource_pool: {pool}}}
"""
ALLOW_ROOT = {"security": {"allow_root_tasks": True}}
ENDED = ("COMPLETED", "CANCELED", "ERROR", "DELETED")
HELD_TRIAL = """name: bench-poll-{n}
entrypoint: python3 train.py
searcher: {{name: single, metric: x, max_length: {{batches: 1}}}}
resources: {{resource_pool: batch}}
slurm: {{sbatch_args: [--hold]}}
"""


# -- 1. launch latency ------------------------------------------------------------------------------------------


def slurm_master_config(prefix: str, poll_interval: float, home: pathlib.Path) -> str:
    """A master in front of the benchmark's Slurm: the default `agent_command`, the jobs' output in its home (read
    for the stages)."""
    return yaml.safe_dump({**ALLOW_ROOT, "resource_manager": {
        "type": "slurm", "slot_type": "cpu", "user_name": "root", "poll_interval": poll_interval,
        "job_name_prefix": prefix, "job_output_dir": str(home / "slurm-jobs")},
        "resource_pools": [{"pool_name": PARTITION}]})


def first_line_latency(c: LocalTestCluster, ctx: pathlib.Path, pool: str) -> tuple[float, float]:
    """t0 and the seconds from just before the create request to the stored timestamp of the trial's first line; the
    experiment is then killed and waited for."""
    context = base64.b64encode(pack_context(ctx).data).decode()
    t0 = time.time()
    reply = c.client().post("/experiments", {"config": TRIAL.format(pool=pool), "context": context, "activate": True})
    exp_id = reply["experiment"]["id"]
    deadline, latency = time.monotonic() + 120, None
    while latency is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"experiment {exp_id}: no first line in 120 s; "
                               f"master log: {c.log('master.log')[-3000:]}")
        described = c.client().get(f"/experiments/{exp_id}")
        trials = described["trials"]
        if described["experiment"]["state"] in ENDED:
            raise RuntimeError(f"experiment {exp_id} ended ({described['experiment']['state']}) before its first "
                               f"line; master log: {c.log('master.log')[-3000:]}")
        if trials:
            for line in c.client().stream_lines(f"/trials/{trials[0]['id']}/logs", follow="false"):
                if FIRST in line["log"]:
                    latency = float(line["timestamp"]) - t0
        time.sleep(0.05)
    c.cli("e", "kill", str(exp_id))
    c.wait_for(lambda: c.client().get(f"/experiments/{exp_id}")["experiment"]["state"] in ENDED, timeout=60,
               what=f"experiment {exp_id} to end")
    return t0, latency


def _stamp(line: str) -> float:
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def slurm_stages(c: LocalTestCluster, t0: float, latency: float) -> dict[str, float]:
    """Where a Slurm round's time went, from the master's log and the newest job's output (the one-shot agent's
    log): create -> sbatch returned -> the job started (slurmd created its output file: that file's birth time) ->
    agent registered (srun started the one-shot agent, its Python imported and it enrolled) -> trial started (a
    poll saw the job RUNNING and placed the run; the agent took the order) -> first line. `jobs`: how many jobs
    the run took (more than 1: a job ended before its run was placed and the run was submitted again; the first
    stage then runs to the last submission)."""
    submitted = [ln for ln in c.log("master.log").splitlines() if "submitted as Slurm job" in ln
                 and _stamp(ln) >= t0 - 0.002]
    path = max((c.home / "slurm-jobs").glob("*.out"), key=lambda f: f.stat().st_mtime)
    out = path.read_text().splitlines()
    born = float(subprocess.run(["stat", "-c", "%.9W", str(path)], capture_output=True, text=True).stdout or 0)
    registered = next(ln for ln in out if "registered agent" in ln)
    started = next(ln for ln in out if "started allocation" in ln)
    marks = [t0, _stamp(submitted[-1]), born, _stamp(registered), _stamp(started), t0 + latency]
    names = ["create->last submitted", "submitted->job started", "job started->agent registered",
             "registered->trial started", "started->first line"]
    return {"jobs": len(submitted), **{name: b - a for name, a, b in zip(names, marks, marks[1:], strict=False)}}


def measure_launch(rounds: int, root: pathlib.Path, polls: Sequence[float]) -> dict[str, Any]:
    ctx = root / "context"
    ctx.mkdir()
    (ctx / "train.py").write_text(TRAIN_PY)
    sides: dict[str, tuple[LocalTestCluster, str]] = {}
    times: dict[str, list[float]] = {}
    stages: dict[str, list[dict[str, float]]] = {}
    agent = LocalTestCluster(root / "agent", master_config=yaml.safe_dump(ALLOW_ROOT))
    slurms = {}
    for p in polls:
        slurms[f"slurm poll {p:g}s"] = LocalTestCluster(root / f"slurm-{p:g}", agents=0, master_config=(
            slurm_master_config(f"b12-{uuid.uuid4().hex[:8]}-", p, root / f"slurm-{p:g}")))
    started: list[LocalTestCluster] = []
    try:
        for name, c in [("agents", agent), *slurms.items()]:
            started.append(c.start())
            sides[name] = (c, "default" if c is agent else PARTITION)
            times[name], stages[name] = [], []
        for c, pool in sides.values():
            first_line_latency(c, ctx, pool)  # warm-ups, discarded
        for i in range(rounds):
            for name, (c, pool) in sides.items():
                t0, latency = first_line_latency(c, ctx, pool)
                times[name].append(latency)
                if c is not agent:
                    stages[name].append(slurm_stages(c, t0, latency))
            print(f"round {i + 1}/{rounds}: " + ", ".join(f"{n} {t[-1]:.3f} s" for n, t in times.items()), flush=True)
    finally:
        for c in started:
            c.stop()
    return {"times": times, "stages": stages}


def report_launch(launch: Mapping[str, Any]) -> list[str]:
    times, stages = launch["times"], launch["stages"]
    base = statistics.median(times["agents"])
    out = [f"create -> first log line, median of {len(times['agents'])} rounds: agents {base:.3f} s"]
    for name, values in times.items():
        if name != "agents":
            mid = statistics.median(values)
            ratios = statistics.median(v / a for v, a in zip(values, times["agents"], strict=True))
            out.append(f"  {name}: {mid:.3f} s = {mid / base:.2f}x agents (+{mid - base:.3f} s; median of per-round "
                       f"ratios {ratios:.2f}); rounds {' '.join(f'{v:.2f}' for v in values)}")
            parts = ", ".join(f"{k} {med(stages[name], k):.3f}" for k in stages[name][0] if k != "jobs")
            again = [i + 1 for i, st in enumerate(stages[name]) if st["jobs"] > 1]
            out.append(f"    stages, medians (s): {parts}")
            out.append(f"    rounds whose run took a second job (its first ended before a poll placed the run): "
                       f"{len(again)} of {len(values)}{f' (rounds {again})' if again else ''}")
    out.append(f"  agents rounds {' '.join(f'{v:.2f}' for v in times['agents'])}")
    return out


# -- 2. poll cost ---------------------------------------------------------------------------------------------------


class TimedCli(SlurmCli):
    """The real Slurm client, each call's wall time and its subprocess's CPU time recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, float, float, str]] = []  # (tool, wall s, child CPU s, stdout)

    def _run(self, argv: Sequence[str], stdin: str | None = None, job_env: Mapping[str, str] | None = None) -> Any:
        before, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        done = super()._run(argv, stdin, job_env)
        wall, after = time.perf_counter() - w0, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.calls.append((argv[0], wall, cpu, done.stdout))
        return done


@dataclass
class PollWorld:
    """A master on SQLite whose Slurm manager has `n` held jobs, one per PENDING allocation."""

    home: pathlib.Path
    n: int
    prefix: str = field(default_factory=lambda: f"b12p-{uuid.uuid4().hex[:8]}-")
    samples: list[dict[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True)
        cfg = parse_master_config({"resource_manager": {
            "type": "slurm", "slot_type": "cpu", "user_name": "root", "poll_interval": 0,
            "job_name_prefix": self.prefix, "agent_command": ["true"]}, "resource_pools": [{"pool_name": PARTITION}],
            **ALLOW_ROOT})
        self.master = Master(MasterSettings(db_url=f"sqlite:///{self.home / 'm.db'}", home=self.home, cluster=cfg))
        ctx = self.home / "ctx"
        ctx.mkdir()
        (ctx / "train.py").write_text("print('x')\n")
        archive = pack_context(ctx).data
        t0 = time.perf_counter()
        for i in range(self.n):
            experiments.create_experiment(self.master, HELD_TRIAL.format(n=i), archive, activate=True, owner="bench")
        t1 = time.perf_counter()
        scheduling.tick(self.master)  # queues every trial and submits each run as a held job (sbatch --hold)
        with self.master.db.begin() as conn:
            self.job_ids = [r["engine_job_id"] for r in engine_jobs.with_jobs(conn)]
        if len(self.job_ids) != self.n:
            raise RuntimeError(f"{len(self.job_ids)} of {self.n} allocations were submitted; master home {self.home}")
        print(f"  {self.n} experiments created in {t1 - t0:.1f} s, submitted as held jobs in "
              f"{time.perf_counter() - t1:.1f} s (one scheduling pass)", flush=True)
        self.first = self.cycle()  # records every row's pending reason (one UPDATE each)
        with self.master.db.begin() as conn:
            reasons = {r["pending_reason"] for r in engine_jobs.with_jobs(conn)}
        print(f"  first reconcile (records {self.n} pending reasons, e.g. {sorted(map(str, reasons))[:1]}): "
              f"{self.first['wall'] * 1000:.1f} ms", flush=True)

    def cycle(self) -> dict[str, float]:
        """One reconcile, timed: wall, this process's CPU, squeue's wall and CPU."""
        with self.master.db.begin() as conn:
            rm = SlurmManager(self.master, conn, [PARTITION])
            rm.cli = cli = TimedCli()
            w0, c0 = time.perf_counter(), time.process_time()
            rm.reconcile()
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if [c[0] for c in cli.calls] != ["squeue"]:
            raise RuntimeError(f"expected one squeue and nothing else, Slurm was called: {[c[0] for c in cli.calls]}")
        _, sq_wall, sq_cpu, out = cli.calls[0]
        self.last_squeue = out
        return {"wall": wall, "cpu": cpu, "squeue_wall": sq_wall, "squeue_cpu": sq_cpu, "own_wall": wall - sq_wall}

    def parts(self, reps: int = 11) -> dict[str, float]:
        """The master's own work, piece by piece (medians of `reps`): the rows' query, parsing squeue's output,
        the one-shot agents' clean-up query."""
        samples = []
        for _ in range(reps):
            with self.master.db.begin() as conn:
                w0 = time.perf_counter()
                engine_jobs.with_jobs(conn)
                w1 = time.perf_counter()
                jobs = [j for j in parse_squeue(self.last_squeue) if j.name.startswith(self.prefix)]
                w2 = time.perf_counter()
                engine_jobs.remove_ended_one_shot_agents(conn)
                w3 = time.perf_counter()
            if len(jobs) != self.n:
                raise RuntimeError(f"squeue listed {len(jobs)} of this master's {self.n} jobs")
            samples.append({"rows_query": w1 - w0, "parse_squeue": w2 - w1, "agents_cleanup": w3 - w2})
        return {**{k: med(samples, k) for k in samples[0]}, "squeue_lines": float(len(self.last_squeue.splitlines()))}

    def profile(self) -> str:
        prof = cProfile.Profile()
        with self.master.db.begin() as conn:
            rm = SlurmManager(self.master, conn, [PARTITION])
            prof.runcall(rm.reconcile)
        stats = pstats.Stats(prof)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])[:12]  # type: ignore[attr-defined]
        return "\n".join(f"    {ct * 1000:7.1f} ms cum {nc:6d} calls  {pathlib.Path(f).name}:{ln} {fn}"
                         for (f, ln, fn), (_cc, nc, _tt, ct, _callers) in rows)

    def close(self, cli: SlurmCli) -> None:
        cli.cancel(self.job_ids)
        self.master.db.dispose()


def med(samples: Sequence[Mapping[str, float]], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def measure_poll(rounds: int, root: pathlib.Path, n_jobs: int) -> dict[str, Any]:
    cli, worlds = SlurmCli(), []
    try:
        print("poll cost: 10 held jobs (Slurm holds only these)", flush=True)
        small = PollWorld(root / "poll-10", 10)
        worlds.append(small)
        alone = [small.cycle() for _ in range(rounds)]
        small_parts = small.parts()
        print(f"poll cost: {n_jobs} held jobs", flush=True)
        big = PollWorld(root / f"poll-{n_jobs}", n_jobs)
        worlds.append(big)
        for _ in range(rounds):  # interleaved
            big.samples.append(big.cycle())
            small.samples.append(small.cycle())
        big_parts, profile = big.parts(), big.profile()
    finally:
        for w in worlds:
            w.close(cli)
    return {"small_alone": alone, "small_parts": small_parts, "small_busy": small.samples, "big": big.samples,
            "big_parts": big_parts, "big_first": big.first, "small_first": small.first, "profile": profile,
            "n_jobs": n_jobs}


def report_poll(r: Mapping[str, Any]) -> list[str]:
    n = r["n_jobs"]
    out = [f"one SlurmManager.reconcile() (poll_interval 0), medians of {len(r['big'])} rounds, ms:",
           f"  {'rows / squeue lines':<26}{'wall':>8}{'CPU':>8}{'squeue wall':>13}{'squeue CPU':>12}{'own wall':>10}"]
    for label, samples in (("10 / 10", r["small_alone"]), (f"10 / {n + 10}", r["small_busy"]),
                           (f"{n} / {n + 10}", r["big"])):
        out.append(f"  {label:<26}" + "".join(f"{med(samples, k) * 1000:{w}.1f}" for k, w in (
            ("wall", 8), ("cpu", 8), ("squeue_wall", 13), ("squeue_cpu", 12), ("own_wall", 10))))
    out.append(f"  first cycle (records every pending reason): 10 rows {r['small_first']['wall'] * 1000:.1f} ms, "
               f"{n} rows {r['big_first']['wall'] * 1000:.1f} ms")
    for name in ("small_parts", "big_parts"):
        p = r[name]
        out.append(f"  own work, {name.split('_')[0]}: rows query {p['rows_query'] * 1000:.1f} ms, parse_squeue "
                   f"({p['squeue_lines']:.0f} lines) {p['parse_squeue'] * 1000:.1f} ms, one-shot agents cleanup "
                   f"{p['agents_cleanup'] * 1000:.1f} ms")
    out.append(f"  profile of one cycle with {n} rows (top by cumulative time):\n{r['profile']}")
    return out


# -- main -----------------------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1000, help="held jobs for the poll cost (default 1000)")
    ap.add_argument("--poll-intervals", type=float, nargs="+", default=[2.0],
                    help="the Slurm manager's poll_interval for the launch part, one cluster each (default 2)")
    ap.add_argument("--only", choices=("launch", "poll"))
    ap.add_argument("--quick", action="store_true", help="2 rounds, 100 jobs")
    ap.add_argument("--json", type=pathlib.Path, help="write the raw numbers here")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.jobs = 2, 100
    if why := slurm_server.missing():
        print(f"error: {why}", file=sys.stderr)
        return 2
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    run_dir = pathlib.Path(tempfile.mkdtemp(prefix="stalwart-sl-", dir="/tmp"))  # short: slurmd paths live in it
    (run_dir / "owner").write_text(f"{os.getpid()}\n")
    os.environ[slurm_server.RUN.env] = str(run_dir)
    raw: dict[str, Any] = {}
    try:
        t0 = time.monotonic()
        cluster = slurm_server.cluster()
        os.environ.update(cluster.env)  # the masters' Slurm clients (and the clusters' master processes) find it
        print(f"Slurm up in {time.monotonic() - t0:.1f} s ({cluster.conf_path})", flush=True)
        if args.only != "poll":
            raw["launch"] = measure_launch(args.rounds, root, args.poll_intervals)
        if args.only != "launch":
            raw["poll"] = measure_poll(args.rounds, root, args.jobs)
    finally:
        slurm_server.stop_all(run_dir)
    shutil.rmtree(root, ignore_errors=True)  # kept when the run failed: its masters' and jobs' logs
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1, default=str))
    print()
    for line in (report_launch(raw["launch"]) if "launch" in raw else []) + (
            report_poll(raw["poll"]) if "poll" in raw else []):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
