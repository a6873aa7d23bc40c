"""B-UI: time to a drawn experiment page (1,000 trials x 10,000 validations) and trial page (100,000 points), vs MLflow.

Data (bench/ui_data.py): one experiment of TRIALS trials, each with STEPS validation points {validation_loss,
validation_accuracy}, and trial 1 also with LONG training points {loss}. The same numbers go into both systems:
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
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from metrics import settle, start_mlflow, stop_process, wait_for  # noqa: E402 - the B2 helpers, same directory
from ui_data import load_mlflow, load_stalwart  # noqa: E402 - the loaders, same directory

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
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
            req = urllib.request.Request(url + "/api/v1/ui/status",
                                         headers={"Authorization": f"Bearer {admin_token(url)}"})
            with urllib.request.urlopen(req, timeout=2) as resp:
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


def admin_token(url: str) -> str:
    """A session of the master's local admin (empty password: the master listens on loopback only)."""
    from stalwart.client import Client

    with Client(url, timeout=5) as c:
        return c.login("admin", "").token


def sign_in(ctx, stalwart_url: str) -> None:
    """Sign a browser context in to a Stalwart master as its local admin, through the login form's real POST."""
    res = ctx.request.post(stalwart_url + "/login", form={"username": "admin", "password": "", "next": "/"},
                           max_redirects=0)
    if res.status != 303:
        raise RuntimeError(f"signing in to {stalwart_url} failed: HTTP {res.status} {res.text()[:300]}")


def measure(browser, url: str, condition: str, arg, timeout_s: float, *, stalwart: str | None = None) -> dict:
    """A cold then a warm load of one page in a fresh browser context (signed in first to `stalwart`, a master's
    base URL, when given)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        if stalwart is not None:
            sign_in(ctx, stalwart)
        cold = timed_load(ctx, url, condition, arg, timeout_s)
        warm = timed_load(ctx, url, condition, arg, timeout_s)
    finally:
        ctx.close()
    return {"cold": cold, "warm": warm}


def screenshots(browser, out: pathlib.Path, pages: dict, s_url: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    sign_in(ctx, s_url)
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
    args = arguments()
    from playwright.sync_api import sync_playwright

    root = args.data or pathlib.Path(tempfile.mkdtemp(prefix="bench-ui-"))
    root.mkdir(parents=True, exist_ok=True)
    shape = {"trials": args.trials, "steps": args.steps, "long": args.long}
    loaded = json.loads((root / "loaded.json").read_text()) if (root / "loaded.json").exists() else None
    refusal = no_room(args, root, shape, loaded)
    if refusal:
        print(refusal)
        return 2
    procs: list[subprocess.Popen] = []
    try:
        db_url = f"sqlite:///{root / 'stalwart' / 'master.db'}"
        ours, theirs = data(args, root, db_url, shape, loaded)
        s_url, m_url, status = servers(args, root, db_url, procs)
        pages = pages_of(s_url, m_url, ours, theirs)
        load_avg = {"before": os.getloadavg()}  # other work on the machine slows both systems alike; recorded
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
            results = rounds(browser, pages, args, s_url)
            if args.shots:
                screenshots(browser, args.shots, pages, s_url)
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


def arguments() -> argparse.Namespace:
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
    return ap.parse_args()


def no_room(args: argparse.Namespace, root: pathlib.Path, shape: dict, loaded: dict | None) -> str | None:
    """Why the data cannot go under `root` (another shape there, too little disk), or None."""
    if loaded and loaded["shape"] != shape:
        return f"{root} holds data of another shape ({loaded['shape']}); use another --data directory"
    free_gb = shutil.disk_usage(root).free / 2**30
    need = 8.0 * args.trials * args.steps / 1e7
    if not loaded and free_gb < need:
        return f"need ~{need:.0f} GiB free under {root}, have {free_gb:.0f}"
    return None


def data(args: argparse.Namespace, root: pathlib.Path, db_url: str, shape: dict,
         loaded: dict | None) -> tuple[dict, dict]:
    """Both databases (loaded now, or reused from --data): what each loader said."""
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
    return ours, theirs


def servers(args: argparse.Namespace, root: pathlib.Path, db_url: str,
            procs: list[subprocess.Popen]) -> tuple[str, str, dict]:
    """Stalwart's master and the MLflow server, started (added to `procs`) and idle: their URLs, the master's status."""
    s_proc, s_url, status = start_stalwart(db_url, root / "stalwart", cache=not args.no_cache)
    procs.append(s_proc)
    print(f"  stalwart master ready after {status['ready_after_s']:.1f} s "
          f"(metrics index: {status['rows_folded']:,} rows in {status['build_seconds']:.1f} s, "
          f"{status['memory_bytes'] / 2**20:.0f} MiB; master RSS {status['master_rss_mb']:.0f} MiB)", flush=True)
    m_proc, m_url = start_mlflow(root / "mlflow", None)
    procs.append(m_proc)
    print(f"  servers idle after {settle([s_proc.pid, m_proc.pid], 'the servers'):.0f} s; Stalwart's series cache "
          f"{'on' if not args.no_cache else 'OFF'}", flush=True)
    return s_url, m_url, status


def pages_of(s_url: str, m_url: str, ours: dict, theirs: dict) -> dict:
    """{page: [(Stalwart's url, drawn condition, its argument), (MLflow's ...)]}."""
    ml_experiment = f"{m_url}/#/experiments/{theirs['experiment_id']}"
    return {
        "experiment": [(f"{s_url}/experiments/{ours['experiment_id']}", OURS_EXP, None),
                       (f"{ml_experiment}/runs?compareRunsMode=CHART", ML_DRAWN, [2, True])],
        "trial": [(f"{s_url}/trials/{ours['trial_id']}", OURS_TRIAL, None),
                  (f"{ml_experiment}/runs/{theirs['run_id']}/model-metrics", ML_DRAWN, [3, False])],
    }


def rounds(browser, pages: dict, args: argparse.Namespace, s_url: str) -> dict:
    """A discarded warm-up round, then --rounds rounds of each page on both systems, cold then warm."""
    results: dict = {p: {"stalwart": [], "mlflow": []} for p in pages}
    for r in range(args.rounds + 1):
        label = "warm-up (discarded)" if r == 0 else f"round {r}/{args.rounds}"
        for name, ((o_url, o_cond, o_arg), (m_url_, m_cond, m_arg)) in pages.items():
            a = measure(browser, o_url, o_cond, o_arg, args.timeout, stalwart=s_url)
            b = measure(browser, m_url_, m_cond, m_arg, args.timeout)
            print(f"{label:>20} {name:>10}: stalwart cold {fmt(a['cold']['ms'])} ms "
                  f"warm {fmt(a['warm']['ms'])} ms | mlflow cold {fmt(b['cold']['ms'])} ms "
                  f"warm {fmt(b['warm']['ms'])} ms", flush=True)
            if r:
                results[name]["stalwart"].append(a)
                results[name]["mlflow"].append(b)
    return results


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
