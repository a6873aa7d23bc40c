"""B-UI: time to a drawn experiment page (1,000 trials x 10,000 validations) and trial page (100,000 points), vs MLflow.

Data: one experiment of TRIALS trials, each with STEPS validation points {validation_loss, validation_accuracy},
and trial 1 also with LONG training points {loss}. The same numbers go into both systems:
- Stalwart: bulk INSERTs through SQLAlchemy Core into a fresh master SQLite DB (schema by its Alembic migrations);
  then `stalwart master run` starts on it.
- MLflow: experiment and runs (with params) through its SqlAlchemyStore, metric rows straight into its SQLite
  `metrics` / `latest_metrics` tables (its secondary indexes dropped for the load and rebuilt after);
  then `mlflow server` starts on it (the bench/metrics.py helpers; it waits until both servers are idle).

Measured in Debian's Chromium through Playwright, a fresh browser context per load ("cold": nothing cached in the
browser) and then the same URL again in that context ("warm": static files cached). The master's series response
cache (keyed by the data's version) is on, as shipped, so after the discarded warm-up round it answers the charts
from memory; `--no-cache` runs the master with that cache off, every chart computed afresh from SQLite.
Time = performance.now() (from the start of navigation) when the page has drawn, checked every animation frame:
- Stalwart experiment page: the learning-curve chart drawn with points and the trials table has rows.
- MLflow experiment page (runs, chart view, /#/experiments/ID/runs?compareRunsMode=CHART): the runs grid has
  rows and every metric chart has a drawn line.
- Stalwart trial page: the training chart (the LONG-point series) and the validation chart drawn.
- MLflow run page (/#/experiments/ID/runs/RUN/model-metrics): every metric chart has a drawn line.
Rounds alternate the systems (ours, theirs, ours, theirs...) after one discarded warm-up round; printed: every
load, medians, median of per-round ratios. Targets: each of our pages < 1 s and >= 5x faster than MLflow.

Run from the repository root:  .venv/bin/python bench/ui.py [--rounds 5] [--json out.json]
Needs mlflow (bench/requirements.txt), playwright (pip) and /usr/bin/chromium (apt-get install -y chromium).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from metrics import settle, start_mlflow, stop_process, wait_for  # noqa: E402 - the B2 helpers, same directory

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
T0 = 1_790_000_000.0
CONFIG = """
name: bench-ui-{trials}x{steps}
description: {trials} trials x {steps} validation steps, loaded directly into the database by bench/ui.py
labels: [bench, ui]
entrypoint: python3 train.py
hyperparameters:
  learning_rate: {{type: log, base: 10, minval: -4, maxval: -1}}
  hidden: {{type: int, minval: 16, maxval: 512}}
  dropout: {{type: double, minval: 0.0, maxval: 0.5}}
searcher: {{name: random, metric: validation_loss, smaller_is_better: true, max_trials: {trials},
           max_length: {{batches: {steps}}}}}
"""
OURS_EXP = """() => { const c = document.querySelector('#curves');
  return !!c && c.dataset.drawn === '1' && Number(c.dataset.points) > 0
    && !!document.querySelector('#trials tbody tr[data-key]'); }"""
OURS_TRIAL = """() => ['#chart-training', '#chart-validation'].every(s => { const c = document.querySelector(s);
  return !!c && c.dataset.drawn === '1' && Number(c.dataset.points) > 0; })"""
ML_DRAWN = """(minCharts, needRows) => { const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const drawn = plots.length >= minCharts && plots.every(p => [...p.querySelectorAll('path.js-line')]
    .some(l => (l.getAttribute('d') || '').length > 20));
  return drawn && (!needRows || document.querySelectorAll('.ag-center-cols-container .ag-row').length > 0); }"""

# What was on the page when it counted as drawn (kept per load in --json, summarised in the printout).
DRAWN_INFO = """() => ({series: document.querySelector('#curves')?.dataset.series,
  points: document.querySelector('#chart-training')?.dataset.points
    ?? document.querySelector('#curves')?.dataset.points,
  rows: document.querySelectorAll('#trials tbody tr[data-key]').length,
  ml_charts: document.querySelectorAll('.js-plotly-plot').length,
  ml_traces: document.querySelectorAll('.js-plotly-plot .trace').length,
  ml_rows: document.querySelectorAll('.ag-center-cols-container .ag-row').length})"""


def hparams(i: int) -> dict:
    return {"learning_rate": 10 ** (-4 + 3 * ((i * 0.618034) % 1)), "hidden": 16 + (i * 37) % 497,
            "dropout": round(((i * 0.414214) % 1) * 0.5, 4)}


def val_point(i: int, s: int) -> tuple[float, float]:
    """(validation_loss, validation_accuracy) of trial index i at step s: a decaying curve with jitter."""
    jitter = ((s * 2654435761 + i * 97) % 1000) / 1e5
    loss = (0.5 + (i % 17) / 10) * math.exp(-s / (800 + 7 * i)) + 0.05 + (i % 13) / 100 + jitter
    return loss, 1.0 - loss / 3


def train_point(s: int) -> float:
    return 2.0 * math.exp(-s / 15000) + 0.1 + ((s * 2654435761) % 1000) / 5000 + (3.0 if s == 77_777 else 0.0)


# -- loading ---------------------------------------------------------------------------------------

def load_stalwart(db_url: str, trials: int, steps: int, long: int) -> dict:
    import sqlalchemy as sa

    from stalwart.config import load_experiment_config
    from stalwart.db import Database, tables as t

    t_start = time.monotonic()
    text = CONFIG.format(trials=trials, steps=steps)
    cfg = load_experiment_config(text, master_defaults={"checkpoint_storage": {"type": "shared_fs",
                                                                                "host_path": "/tmp"}}).config
    db = Database(db_url)
    db.migrate()
    with db.begin() as conn:
        exp_id = conn.execute(t.experiments.insert().values(
            name=cfg["name"], description=cfg.get("description"), labels=cfg["labels"], owner="bench", config=cfg,
            config_text=text, state="COMPLETED", archived=False, progress=1.0, created_at=T0, ended_at=T0 + 3600,
        )).inserted_primary_key[0]
        conn.execute(t.trials.insert(), [dict(
            experiment_id=exp_id, request_id=f"r{i}", hparams=hparams(i), seed=i, state="COMPLETED", restarts=0,
            runs=1, target_length=steps, progress=1.0, created_at=T0 + i, ended_at=T0 + 3000 + i,
        ) for i in range(trials)])
        ids = [r[0] for r in conn.execute(sa.select(t.trials.c.id).where(t.trials.c.experiment_id == exp_id)
                                          .order_by(t.trials.c.id))]
    rows = 0
    batch: list[dict] = []

    def flush() -> None:
        if batch:
            with db.begin() as conn:
                conn.execute(t.metrics.insert(), batch)
        batch.clear()

    for i, tid in enumerate(ids):
        for s in range(1, steps + 1):
            loss, acc = val_point(i, s)
            batch.append({"trial_id": tid, "trial_run_id": 1, "group_name": "validation", "steps_completed": s,
                          "metrics": {"validation_loss": loss, "validation_accuracy": acc},
                          "report_time": T0 + i + s * 0.3})
            if len(batch) >= 50_000:
                rows += len(batch)
                flush()
        if i == 0:
            for s in range(1, long + 1):
                batch.append({"trial_id": tid, "trial_run_id": 1, "group_name": "training", "steps_completed": s,
                              "metrics": {"loss": train_point(s)}, "report_time": T0 + s * 0.03})
                if len(batch) >= 50_000:
                    rows += len(batch)
                    flush()
    rows += len(batch)
    flush()
    db.dispose()
    return {"experiment_id": exp_id, "trial_id": ids[0], "rows": rows, "seconds": time.monotonic() - t_start}


def load_mlflow(root: pathlib.Path, trials: int, steps: int, long: int) -> dict:
    from mlflow.entities import ExperimentTag, Param, RunStatus, RunTag
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    t_start = time.monotonic()
    db = root / "mlflow.db"
    store = SqlAlchemyStore(f"sqlite:///{db}", (root / "mlartifacts").as_uri())
    exp_id = store.create_experiment(f"bench-ui-{trials}x{steps}", tags=[
        ExperimentTag("mlflow.experimentKind", "custom_model_development")])
    runs = []
    for i in range(trials):
        run = store.create_run(exp_id, "bench", int(T0 * 1000) + i, [RunTag("mlflow.runName", f"trial-{i + 1}")],
                               f"trial-{i + 1}")
        store.log_batch(run.info.run_id, [], [Param(k, str(v)) for k, v in hparams(i).items()], [])
        store.update_run_info(run.info.run_id, RunStatus.FINISHED, int((T0 + 3000 + i) * 1000), f"trial-{i + 1}")
        runs.append(run.info.run_id)
    store.engine.dispose()
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX index_metrics_run_uuid")
    conn.execute("DROP INDEX index_metrics_run_uuid_key_step")
    rows = 0
    sql = "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, 0)"
    for key in ("validation_accuracy", "validation_loss"):  # primary-key order: key, timestamp, step
        batch = []
        for s in range(1, steps + 1):
            for i, run_id in enumerate(runs):
                loss, acc = val_point(i, s)
                value = loss if key == "validation_loss" else acc
                batch.append((key, value, int((T0 + i + s * 0.3) * 1000), run_id, s))
            if len(batch) >= 200_000:
                conn.executemany(sql, batch)
                rows += len(batch)
                batch = []
        conn.executemany(sql, batch)
        rows += len(batch)
    conn.executemany(sql, [("loss", train_point(s), int((T0 + s * 0.03) * 1000), runs[0], s)
                           for s in range(1, long + 1)])
    rows += long
    latest = []
    for i, run_id in enumerate(runs):
        loss, acc = val_point(i, steps)
        ts = int((T0 + i + steps * 0.3) * 1000)
        latest += [("validation_loss", loss, ts, steps, 0, run_id), ("validation_accuracy", acc, ts, steps, 0, run_id)]
    latest.append(("loss", train_point(long), int((T0 + long * 0.03) * 1000), long, 0, runs[0]))
    conn.executemany("INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
                     "VALUES (?, ?, ?, ?, ?, ?)", latest)
    conn.execute("CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid)")
    conn.execute('CREATE INDEX index_metrics_run_uuid_key_step ON metrics (run_uuid, "key", step)')
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    return {"experiment_id": exp_id, "run_id": runs[0], "rows": rows, "seconds": time.monotonic() - t_start}


# -- servers ---------------------------------------------------------------------------------------

def start_stalwart(db_url: str, home: pathlib.Path, cache: bool = True) -> tuple[subprocess.Popen, str, dict]:
    from stalwart.testing import free_port

    port = free_port()
    env = {**os.environ, "STALWART_UI_SERIES_CACHE": "1" if cache else "0"}
    with open(home / "master.log", "ab") as log:  # the master keeps its own copy of the descriptor
        proc = subprocess.Popen([sys.executable, "-m", "stalwart.cli.main", "master", "run", "--db", db_url, "--home",
                                 str(home), "--port", str(port)], stdout=log, env=env,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    t_start = time.monotonic()

    def ready():
        if proc.poll() is not None:
            raise RuntimeError(f"master exited: {(home / 'master.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/api/v1/ui/status", timeout=2) as resp:
                status = json.loads(resp.read())
                return status if status.get("ready") else None
        except OSError:
            return None

    status = wait_for(ready, 900, 0.5, "the Stalwart master's metrics index")
    status["ready_after_s"] = time.monotonic() - t_start
    status["master_rss_mb"] = rss_mb(proc.pid)
    return proc, url, status


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- browser ---------------------------------------------------------------------------------------

def timed_load(ctx, url: str, condition: str, arg, timeout_s: float) -> dict:
    """Navigate and return performance.now() when `condition` first holds (checked every frame)."""
    page = ctx.new_page()
    page.goto(url, wait_until="commit")
    probe = f"""(arg) => {{ const ok = ({condition})(...(Array.isArray(arg) ? arg : [arg]));
      if (ok && window.__readyAt === undefined) window.__readyAt = performance.now(); return ok; }}"""
    try:
        page.wait_for_function(probe, arg=arg, polling="raf", timeout=timeout_s * 1000)
        ms = page.evaluate("window.__readyAt")
    except Exception as err:  # noqa: BLE001 - a timeout is a result
        page.close()
        return {"ms": None, "error": str(err).splitlines()[0]}
    slow = page.evaluate("""() => performance.getEntriesByType('resource')
      .filter(e => e.name.includes('api/'))
      .map(e => [e.name.split('?')[0].split('/').slice(-3).join('/'), Math.round(e.duration)])
      .sort((a, b) => b[1] - a[1]).slice(0, 2)""")
    info = page.evaluate(DRAWN_INFO)
    page.close()
    return {"ms": ms, "slowest_api": slow, **info}


def measure(browser, url: str, condition: str, arg, timeout_s: float) -> dict:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        cold = timed_load(ctx, url, condition, arg, timeout_s)
        warm = timed_load(ctx, url, condition, arg, timeout_s)
    finally:
        ctx.close()
    return {"cold": cold, "warm": warm}


def screenshots(browser, out: pathlib.Path, pages: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    for name, ((url, cond, _arg), _theirs) in pages.items():
        page = ctx.new_page()
        page.goto(url)
        page.wait_for_function(f"() => ({cond})()", timeout=60_000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(out / f"{name}-1000-trials.png"), full_page=True)
        page.close()
    ctx.close()


def fmt(ms) -> str:
    return f"{ms:8.0f}" if ms is not None else "   (fail)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--long", type=int, default=100_000, help="points of trial 1's training series")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one page may take")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--data", type=pathlib.Path, help="keep the loaded databases in this directory and reuse them "
                    "on the next run (default: a temporary directory, removed at the end)")
    ap.add_argument("--no-cache", action="store_true", help="run the master with STALWART_UI_SERIES_CACHE=0: "
                    "every chart computed afresh")
    ap.add_argument("--shots", type=pathlib.Path, help="save screenshots of the two Stalwart pages here")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    root = args.data or pathlib.Path(tempfile.mkdtemp(prefix="bench-ui-"))
    root.mkdir(parents=True, exist_ok=True)
    shape = {"trials": args.trials, "steps": args.steps, "long": args.long}
    loaded = json.loads((root / "loaded.json").read_text()) if (root / "loaded.json").exists() else None
    if loaded and loaded["shape"] != shape:
        print(f"{root} holds data of another shape ({loaded['shape']}); use another --data directory")
        return 2
    free_gb = shutil.disk_usage(root).free / 2**30
    need = 8.0 * args.trials * args.steps / 1e7
    if not loaded and free_gb < need:
        print(f"need ~{need:.0f} GiB free under {root}, have {free_gb:.0f}")
        return 2
    procs: list[subprocess.Popen] = []
    try:
        db_url = f"sqlite:///{root / 'stalwart' / 'master.db'}"
        if loaded:
            ours, theirs = loaded["stalwart"], loaded["mlflow"]
            print(f"reusing the data loaded in {root}", flush=True)
        else:
            (root / "stalwart").mkdir()
            (root / "mlflow").mkdir()
            print(f"loading {args.trials} trials x {args.steps} validation steps (+{args.long} training points) ...",
                  flush=True)
            ours = load_stalwart(db_url, args.trials, args.steps, args.long)
            theirs = load_mlflow(root / "mlflow", args.trials, args.steps, args.long)
            if args.data:
                (root / "loaded.json").write_text(json.dumps({"shape": shape, "stalwart": ours, "mlflow": theirs}))
        print(f"  stalwart: {ours['rows']:,} rows loaded in {ours['seconds']:.0f} s "
              f"({(root / 'stalwart' / 'master.db').stat().st_size / 2**30:.2f} GiB)", flush=True)
        print(f"  mlflow:   {theirs['rows']:,} rows loaded in {theirs['seconds']:.0f} s "
              f"({(root / 'mlflow' / 'mlflow.db').stat().st_size / 2**30:.2f} GiB)", flush=True)
        s_proc, s_url, status = start_stalwart(db_url, root / "stalwart", cache=not args.no_cache)
        procs.append(s_proc)
        print(f"  stalwart master ready after {status['ready_after_s']:.1f} s "
              f"(metrics index: {status['rows_folded']:,} rows in {status['build_seconds']:.1f} s, "
              f"{status['memory_bytes'] / 2**20:.0f} MiB; master RSS {status['master_rss_mb']:.0f} MiB)", flush=True)
        m_proc, m_url = start_mlflow(root / "mlflow", None)
        procs.append(m_proc)
        print(f"  servers idle after {settle([s_proc.pid, m_proc.pid], 'the servers'):.0f} s; Stalwart's series cache "
              f"{'on' if not args.no_cache else 'OFF'}", flush=True)

        ml_experiment = f"{m_url}/#/experiments/{theirs['experiment_id']}"
        pages = {
            "experiment": [(f"{s_url}/experiments/{ours['experiment_id']}", OURS_EXP, None),
                           (f"{ml_experiment}/runs?compareRunsMode=CHART", ML_DRAWN, [2, True])],
            "trial": [(f"{s_url}/trials/{ours['trial_id']}", OURS_TRIAL, None),
                      (f"{ml_experiment}/runs/{theirs['run_id']}/model-metrics", ML_DRAWN, [3, False])],
        }
        results: dict = {p: {"stalwart": [], "mlflow": []} for p in pages}
        load_avg = {"before": os.getloadavg()}  # other work on the machine slows both systems alike; recorded
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
            for r in range(args.rounds + 1):
                label = "warm-up (discarded)" if r == 0 else f"round {r}/{args.rounds}"
                for name, ((o_url, o_cond, o_arg), (m_url_, m_cond, m_arg)) in pages.items():
                    a = measure(browser, o_url, o_cond, o_arg, args.timeout)
                    b = measure(browser, m_url_, m_cond, m_arg, args.timeout)
                    print(f"{label:>20} {name:>10}: stalwart cold {fmt(a['cold']['ms'])} ms "
                          f"warm {fmt(a['warm']['ms'])} ms | mlflow cold {fmt(b['cold']['ms'])} ms "
                          f"warm {fmt(b['warm']['ms'])} ms", flush=True)
                    if r:
                        results[name]["stalwart"].append(a)
                        results[name]["mlflow"].append(b)
            if args.shots:
                screenshots(browser, args.shots, pages)
            browser.close()
        load_avg["after"] = os.getloadavg()
        summary = report(results, args.long)
        before, after = (" ".join(f"{x:.2f}" for x in load_avg[when]) for when in ("before", "after"))
        print(f"load average (1, 5, 15 min) before the rounds: {before}, after: {after} ({os.cpu_count()} cores)")
        if args.json:
            args.json.write_text(json.dumps({"load": {"stalwart": ours, "mlflow": theirs}, "index": status,
                                             "load_avg": load_avg, "results": results, "summary": summary},
                                            indent=1, default=str))
        return 0 if all(s["meets"] for s in summary.values()) else 1
    finally:
        for p in procs:
            stop_process(p)
        if not args.data:
            shutil.rmtree(root, ignore_errors=True)


def report(results: dict, long: int) -> dict:
    summary = {}
    print(f"\n{'page':>10} {'cache':>5} {'stalwart ms':>12} {'mlflow ms':>10} {'ratio':>7}   "
          "(medians; ratio = median of per-round ratios)")
    for name, r in results.items():
        for cache in ("cold", "warm"):
            ours = [x[cache]["ms"] for x in r["stalwart"]]
            theirs = [x[cache]["ms"] for x in r["mlflow"]]
            ratios = [b / a for a, b in zip(ours, theirs, strict=True) if a and b]
            mo = statistics.median([v for v in ours if v is not None]) if any(ours) else None
            mt = statistics.median([v for v in theirs if v is not None]) if any(theirs) else None
            ratio = statistics.median(ratios) if ratios else None
            meets = mo is not None and mo < 1000 and ratio is not None and ratio >= 5 and None not in ours
            summary[f"{name}-{cache}"] = {"stalwart_ms": mo, "mlflow_ms": mt, "ratio": ratio, "meets": meets,
                                          "stalwart_all": ours, "mlflow_all": theirs}
            print(f"{name:>10} {cache:>5} {fmt(mo):>12} {fmt(mt):>10} {ratio if ratio else float('nan'):7.1f}"
                  f"   {'meets' if meets else 'MISSES'} (< 1000 ms and >= 5x)")
    last = results["experiment"]["stalwart"][-1]["warm"]
    print(f"\nstalwart experiment page drew {last.get('series')} trial curves and {last.get('rows')} table rows; "
          f"slowest API calls: {last.get('slowest_api')}")
    last = results["trial"]["stalwart"][-1]["warm"]
    print(f"stalwart trial page drew {last.get('points')} of the {long:,}-point series' points; "
          f"slowest: {last.get('slowest_api')}")
    for name in results:
        m = results[name]["mlflow"][-1]["warm"]
        print(f"mlflow {name} page: {m.get('ml_charts')} charts, {m.get('ml_traces')} plotted traces, "
              f"{m.get('ml_rows')} grid rows rendered; slowest API calls: {m.get('slowest_api')}")
    return summary


if __name__ == "__main__":
    sys.exit(main())
