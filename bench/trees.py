"""Before against after: B2's Stalwart side and B6's Stalwart pages on two source trees, interleaved in one run.

A reshaping change (issue 27) must leave speed where it was. This runs the same benchmark code (this tree's
bench/metrics.py and bench/ui.py) against two source trees at once — `--base` (e.g. `git archive` of the commit
before, unpacked) and `--after` (default: this repository) — each side's processes importing only its own tree's
`src` (PYTHONPATH), and alternates the two sides round by round, so machine load falls on both alike.

- B2 (ingest): one LocalTestCluster per tree (master + agent + a real trial process), kept up for the whole run;
  each round submits bench/metrics.py's probe (10 metrics x `--steps` steps, first report -> flush acknowledged,
  every point verified stored) to one side, then the other. Printed: points/s per round, medians, after/base.
- B6 (UI): one master per tree on its own copy of one database loaded by bench/ui.py's loader (1,000 trials x
  10,000 validations + 100,000 training points by default); each round loads the experiment page and the trial
  page in headless Chromium (cold and warm, signed in as the local admin) on one side, then the other, timing
  until the charts are drawn. Printed: milliseconds per round, medians, after/base.

Run from the repository root:
    git archive <base-commit> | tar -x -C /tmp/base-tree
    .venv/bin/python bench/trees.py --base /tmp/base-tree [--b2-rounds 8] [--b6-rounds 5] [--only b2|b6]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
SIDES = ("base", "after")


def tree_env(tree: pathlib.Path, **extra: str) -> dict[str, str]:
    """The environment of a process that must import `stalwart` from `tree` only."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), **extra}
    for key in ("STALWART_MASTER", "DET_MASTER", "STALWART_HOME"):
        env.pop(key, None)
    return env


# -- B2: one long-lived worker per tree ------------------------------------------------------------

def b2_worker(steps: int, warm_steps: int) -> int:
    """Inside one tree: start a cluster, warm it up, then run one round per line read from stdin."""
    import metrics  # this tree's bench/metrics.py; `stalwart` resolves to the side's tree through PYTHONPATH
    import stalwart

    with tempfile.TemporaryDirectory(prefix="stalwart-trees-b2-") as tmp:
        root = pathlib.Path(tmp)
        cluster = metrics.LocalTestCluster(root / "home")
        try:
            cluster.start()
            client = cluster.client()
            metrics.wait_for(lambda: client.get("/agents")["agents"], 60, 0.1, "the agent to register")
            ctx_dir, warm_dir = metrics.write_context(root, steps), metrics.write_context(root, warm_steps)
            metrics.stalwart_round(cluster, client, warm_dir, warm_steps)
            print(json.dumps({"ready": True, "stalwart": str(pathlib.Path(stalwart.__file__).parent)}), flush=True)
            for line in sys.stdin:
                if line.strip() != "round":
                    break
                print(json.dumps(metrics.stalwart_round(cluster, client, ctx_dir, steps)), flush=True)
        finally:
            cluster.stop()
    return 0


class Worker:
    """One side's B2 worker process: ask for a round, read its result line."""

    def __init__(self, side: str, tree: pathlib.Path, steps: int, warm_steps: int) -> None:
        self.side = side
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "trees.py"), "b2-worker", "--steps", str(steps), "--warm-steps",
             str(warm_steps)], env=tree_env(tree), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self._line()
        print(f"  {side}: cluster ready, stalwart from {ready['stalwart']}", flush=True)

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.side} worker exited ({self.proc.wait()})")
        result: dict[str, Any] = json.loads(line)
        return result

    def round(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        return self._line()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_b2(trees: dict[str, pathlib.Path], rounds: int, steps: int) -> dict[str, Any]:
    print(f"B2: {rounds} rounds per side of 10 metrics x {steps:,} steps, sides alternating", flush=True)
    workers: dict[str, Worker] = {}
    results: dict[str, list[float]] = {side: [] for side in SIDES}
    try:
        for side in SIDES:
            workers[side] = Worker(side, trees[side], steps, 500)
        for r in range(rounds):
            order = SIDES if r % 2 == 0 else SIDES[::-1]  # neither side always goes first
            for side in order:
                results[side].append(workers[side].round()["points_per_s"])
            print(f"  round {r + 1}/{rounds}: base {results['base'][-1]:>9,.0f} points/s, "
                  f"after {results['after'][-1]:>9,.0f} points/s", flush=True)
    finally:
        for w in workers.values():
            w.close()
    return summarize("B2 points/s (higher is better)", results, higher_is_better=True)


# -- B6: one master per tree, one browser ----------------------------------------------------------

def start_master(tree: pathlib.Path, db: pathlib.Path, home: pathlib.Path) -> tuple[subprocess.Popen[bytes], str]:
    """`stalwart master run` from `tree` on `db`; return it once its metrics index is built."""
    from stalwart.client import Client
    from stalwart.testing import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(home / "master.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "master", "run", "--db", f"sqlite:///{db}",
                                 "--home", str(home), "--port", str(port)], env=tree_env(tree), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"master exited: {(home / 'master.log').read_text()[-3000:]}")
        try:
            with Client(url, timeout=5) as c:
                token = c.login("admin", "").token
            req = urllib.request.Request(url + "/api/v1/ui/status", headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=5) as resp:
                return bool(json.loads(resp.read()).get("ready"))
        except Exception:  # noqa: BLE001 - not up yet
            return False

    deadline = time.monotonic() + 900
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the master of {tree} was not ready in 900 s")
        time.sleep(0.5)
    return proc, url


def signed_in_measure(browser: Any, base_url: str, page: str, condition: str, timeout_s: float) -> dict[str, Any]:
    """bench/ui.py's cold-then-warm load of one page, in a fresh context signed in as the local admin."""
    import ui

    got = ui.measure(browser, base_url + page, condition, None, timeout_s, stalwart=base_url)
    return {"cold": got["cold"]["ms"], "warm": got["warm"]["ms"]}


def load_database(data: pathlib.Path, shape: dict[str, int]) -> tuple[pathlib.Path, dict[str, Any]]:
    """The B6 database (bench/ui.py's loader, this tree), loaded once into `data` and reused while its shape fits."""
    import ui

    db, meta = data / "b6.db", data / "b6.json"
    if meta.exists() and json.loads(meta.read_text())["shape"] == shape and db.exists():
        return db, json.loads(meta.read_text())["loaded"]
    data.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    print(f"B6: loading {shape['trials']} trials x {shape['steps']} validations (+{shape['long']} training points)",
          flush=True)
    loaded = ui.load_stalwart(f"sqlite:///{db}", shape["trials"], shape["steps"], shape["long"])
    meta.write_text(json.dumps({"shape": shape, "loaded": loaded}))
    return db, loaded


def run_b6(trees: dict[str, pathlib.Path], rounds: int, shape: dict[str, int], data: pathlib.Path,
           timeout_s: float) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    import ui

    db, loaded = load_database(data, shape)
    pages = {"experiment": (f"/experiments/{loaded['experiment_id']}", ui.OURS_EXP),
             "trial": (f"/trials/{loaded['trial_id']}", ui.OURS_TRIAL)}
    masters: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    results: dict[str, dict[str, list[float]]] = {
        f"{page} {cache}": {side: [] for side in SIDES} for page in pages for cache in ("cold", "warm")}
    try:
        for side in SIDES:
            home = data / f"home-{side}"
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            shutil.copyfile(db, home / "master.db")
            masters[side] = start_master(trees[side], home / "master.db", home)
            print(f"  {side}: master ready at {masters[side][1]}", flush=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ui.CHROMIUM_ARGS)
            for r in range(rounds + 1):
                order = SIDES if r % 2 == 0 else SIDES[::-1]
                for name, (path, condition) in pages.items():
                    for side in order:
                        got = signed_in_measure(browser, masters[side][1], path, condition, timeout_s)
                        if r == 0:
                            continue  # warm-up, discarded
                        for cache in ("cold", "warm"):
                            results[f"{name} {cache}"][side].append(got[cache])
                if r:
                    print(f"  round {r}/{rounds}: " + ", ".join(
                        f"{k} base {v['base'][-1]:.0f} / after {v['after'][-1]:.0f} ms" for k, v in results.items()),
                        flush=True)
            browser.close()
    finally:
        for proc, _url in masters.values():
            proc.terminate()
            proc.wait(timeout=60)
    return {key: summarize(f"B6 {key} ms (lower is better)", r, higher_is_better=False)
            for key, r in results.items()}


# -- report ----------------------------------------------------------------------------------------

def summarize(what: str, results: dict[str, list[float]], *, higher_is_better: bool) -> dict[str, Any]:
    """Medians per side and after/base (of the medians, and the median of per-round ratios)."""
    base, after = statistics.median(results["base"]), statistics.median(results["after"])
    per_round = statistics.median(a / b for a, b in zip(results["after"], results["base"], strict=True))
    better = "higher" if higher_is_better else "lower"
    print(f"{what}: base median {base:,.1f}, after median {after:,.1f}; after/base {after / base:.3f} "
          f"(median of per-round ratios {per_round:.3f}; {better} is better)", flush=True)
    return {"base": results["base"], "after": results["after"], "base_median": base, "after_median": after,
            "ratio_of_medians": after / base, "median_round_ratio": per_round}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="compare", choices=("compare", "b2-worker"))
    ap.add_argument("--base", type=pathlib.Path, help="the source tree before the change (holds src/stalwart)")
    ap.add_argument("--after", type=pathlib.Path, default=HERE.parent, help="the tree after (default: this one)")
    ap.add_argument("--only", choices=("b2", "b6"), help="run one benchmark only")
    ap.add_argument("--b2-rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10_000, help="B2 steps per round (10 metrics each)")
    ap.add_argument("--warm-steps", type=int, default=500, help=argparse.SUPPRESS)
    ap.add_argument("--b6-rounds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--validations", type=int, default=10_000, help="B6 validation points per trial")
    ap.add_argument("--long", type=int, default=100_000, help="B6 training points of the first trial")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one page may take")
    ap.add_argument("--data", type=pathlib.Path, default=pathlib.Path(tempfile.gettempdir()) / "stalwart-trees-b6",
                    help="where B6's database is loaded (and reused by the next run of the same shape)")
    ap.add_argument("--json", type=pathlib.Path, help="write every round's numbers here")
    args = ap.parse_args()
    if args.mode == "b2-worker":
        return b2_worker(args.steps, args.warm_steps)
    if args.base is None or not (args.base / "src" / "stalwart").is_dir():
        ap.error("--base must be a source tree holding src/stalwart (e.g. `git archive REV | tar -x -C DIR`)")
    trees = {"base": args.base.resolve(), "after": args.after.resolve()}
    jobs: dict[str, Callable[[], dict[str, Any]]] = {
        "b2": lambda: run_b2(trees, args.b2_rounds, args.steps),
        "b6": lambda: run_b6(trees, args.b6_rounds, {"trials": args.trials, "steps": args.validations,
                                                     "long": args.long}, args.data, args.timeout)}
    out = {name: job() for name, job in jobs.items() if args.only in (None, name)}
    print(f"load average (1, 5, 15 min) at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
