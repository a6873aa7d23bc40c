"""B3: hyperparameter searchers on the YAHPO Gym LCBench surrogate, and the searchers' own cost.

Run from the repository root (peers: `.venv/bin/pip install optuna "ray[tune]" onnxruntime`):

    .venv/bin/python bench/search.py [--tasks 7593,126025,167149,189909] [--seeds 2] [--first-seed 1] [--workers 4,32]
                                     [--budget 4=32,32=8] [--extend 4] [--procs 2] [--methods a,b]
                                     [--extend-methods a,b] [--extend-all] [--skip-cost] [--json PATH]
    .venv/bin/python bench/search.py --merge A.json,B.json [same --workers --budget --extend --methods ...]

`--merge` reports on the cells of earlier `--json` runs (gzipped or not) together, as one run over all their cells
would (every number is per cell, or a median over cells), so a long run can be made in parts: over disjoint tasks or
seeds, or adding methods to cells run before. A run of one method in one cell that two files both hold must be the
same within the budget (the simulation is deterministic; random search is in every file), and the one that ran on
past the budget is kept. It refuses files with another budget or extension, or other --extend-methods (files written
since the JSON records them). A time to a mark that no file measured (a method that was not run on past the budget
because it had reached a lower mark) is shown as not measured, '-'. Runs of the evolution methods made under an
earlier rule of `sampler: evolution` (see EVOLUTION_RULE) are reported as '<method>-rule<N>' and still count towards
the marks; the current rule's runs must come from a file written since.

(All methods at W = 4 and 32 take well over an hour of 2 cores here, nearly all of it in the
Optuna-based runs past the budget: one `optuna-sha` run on one cell took over 10 CPU-minutes at 4
budgets. With `--extend-methods` naming random, our non-TPE searchers and the Ray peers, each W and
8 cells take 8-11 min; see RESULTS B3, 2026-11-24.)

Part 1, search quality. The LCBench surrogate (`/work/shared/data/yahpo-lcbench`, YAHPO Gym's ONNX
model, loaded directly with onnxruntime: YAHPO Gym's own package pins numpy<2 and would downgrade
the project's venv) maps (OpenML task, 7 hyperparameters, epoch 1..52) to validation accuracy and
the cumulative training time. Every method runs through `stalwart.searcher.simulate` with W
simulated workers on the surrogate's time (no real time passes), validating after every epoch, for
the same wall-clock budget: `budget` median full 52-epoch trainings of wall-clock time, i.e. `budget
* median_full_time(task)` seconds (W workers get W times the worker time, as a deadline gives a
bigger cluster; with a fixed total instead, 32 workers would have only a few trial-lengths of wall
clock, and the serial path of one full training, not the searcher, would bound every early-stopping
method; the budget may differ per W, see above, and is the same for every method). Methods: ours:
`random`, `asha` (`adaptive_asha` with Determined's defaults: standard mode, divisor 4 -> brackets
[3, 13, 52] and [13, 52] epochs), `asha-aggr` (mode aggressive: the one bracket [3, 13, 52]),
`asha-promo` (`asha_promotion`, Determined 0.37's promotion-based ASHA, mode aggressive), `asha-tpe`
/ `asha-aggr-tpe` (the same two ASHAs with `sampler: tpe`: new trials' hyperparameters from Optuna's
TPE fed with every rung result), `asha-evo` / `asha-aggr-evo` (the same two with `sampler: evolution`:
new trials mutate the trials with the best rung results) and `asha-aggr-evo-d2` (aggressive, divisor 2:
rungs [3, 6, 13, 26, 52]), `hyperband` (eta 3, max_trials scaled so one iteration fills the
budget), `pbt` (population max(2W, min(budget W, 64)), 13 rounds of 4 epochs); peers: Optuna 5 TPE
alone (`optuna-tpe`), with SuccessiveHalvingPruner at its defaults (`optuna-sha`) and with
min_resource=3 (`optuna-sha3`; with reduction factor 2 as well: `optuna-sha3-rf2`), with
HyperbandPruner(1, 52, 3) (`optuna-hb`), all ask/tell and reporting every epoch; Ray Tune's
ASHAScheduler over random samples, grace 1 (its default, `ray-asha`) and grace 3 (`ray-asha3`),
reduction factor 4, max_t 52, and grace 3 with reduction factor 2 (`ray-asha3-rf2`: the peer of our
divisor-2 variant). The peers are wrapped as `SearchMethod`s so that they see the same workers, clock and
events as ours. Our random-sampling searchers and the Ray peers draw configurations from the same seeded
stream (common random numbers: they see the same candidates in the same order and differ only in what they
stop); Optuna and our `-tpe` ASHAs ask TPE.

Per (task, seed, W): regret = best accuracy of the task (the best seen by any method or in a 3,000
config x 52 epoch random pool) - the best validation accuracy the method saw within the budget;
time-to-1% (mark A) = the simulated time at which the method first saw an accuracy >= 0.99 * the
best accuracy any method found within the budget in that (task, seed, W) cell; mark B = 0.99 *
random search's own best within the budget. A method that has not reached a mark by the end of the
budget is run again (the simulation is deterministic, so its first part repeats exactly) for up to
`extend` budgets to measure when it does: the time to a mark is measured, not truncated at the
budget; a mark still unreached then counts as `extend` budgets, a bound in that method's favour.
`--extend-methods` limits the runs past the budget to the methods named (and random): the targets
need only ours and random's times, and at W = 32 the TPE-based methods' runs past the budget cost
most of the CPU. A time the script did not measure is shown as '-' and enters no ratio.

The surrogate and the peers live in bench/lcbench.py, the methods in bench/search_methods.py, the report in
bench/search_report.py, part 2 in bench/search_cost.py.

Part 2, searcher cost: 10,000 trials through the searcher (create -> validation -> exit), time per
decision and peak memory (tracemalloc), against Optuna's in-memory storage doing ask/tell for
10,000 trials (RandomSampler: storage and bookkeeping only; TPE shown for 1,000 trials).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import subprocess
import sys
import time

from lcbench import Surrogate
from search_cost import cost_optuna, cost_ours, cost_report
from search_methods import EVOLUTION_METHODS, EVOLUTION_RULE, METHODS, run_cell
from search_report import marks, med, quality_report, time_to, verdict

# -- main ---------------------------------------------------------------------------------------------

def progress(phase: str, done: int, total: int, cell_runs: list[dict], started: float) -> None:
    """One line on stderr per finished cell: a long run shows how far it is and which method costs the most."""
    slowest = max(cell_runs, key=lambda r: r["cpu_s"])
    first = cell_runs[0]
    print(f"[{time.perf_counter() - started:6.0f} s] {phase} {done}/{total}: task {first['task']} seed {first['seed']} "
          f"W={first['workers']}; slowest {slowest['method']} {slowest['cpu_s']:.0f} s", file=sys.stderr, flush=True)


def parse_budgets(text: str, workers_list: list[int]) -> dict[int, float]:
    """--budget: one number for every W, or W=B pairs naming every W run."""
    if "=" not in text:
        return {w: float(text) for w in workers_list}
    given = {int(w): float(b) for w, b in (pair.split("=") for pair in text.split(","))}
    missing = [w for w in workers_list if w not in given]
    if missing:
        raise SystemExit(f"--budget: no budget for W={', '.join(map(str, missing))}; give W=B for each of --workers")
    return given


def late_runs(runs: list[dict], cell_marks: dict, limits: dict, extend_methods: set[str], every: bool = False) -> dict:
    """{cell: methods} that had not reached mark A within the budget and are to run on past it (`every`: all the
    runs of `extend_methods`, reached or not)."""
    late: dict = {}
    for r in runs:
        cell = (r["task"], r["seed"], r["workers"])
        if r["method"] in extend_methods and (
                every or time_to(r["trace"], cell_marks[cell][0]) > limits[(r["task"], r["workers"])]):
            late.setdefault(cell, []).append(r["method"])
    return late


def simulate_cells(args, jobs: list, budgets: dict, limits: dict, methods: list[str], extend_methods: set[str],
                   started: float) -> tuple[list[dict], dict, dict]:
    """Every method in every cell within the budget, then the late ones past it: (runs, cell marks, late)."""
    runs: list[dict] = []
    with multiprocessing.get_context("fork").Pool(args.procs) as p:
        for done, cell_runs in enumerate(p.imap(run_cell, jobs), 1):
            runs += cell_runs
            progress("cell", done, len(jobs), cell_runs, started)
        # time to the marks, measured: whoever has not reached mark A within the budget runs on (same seeds)
        cell_marks = marks(runs, limits, methods)
        late = late_runs(runs, cell_marks, limits, extend_methods)
        # --extend-all: for a merge with files whose runs may raise the marks, every one runs on
        run_on = late_runs(runs, cell_marks, limits, extend_methods, every=True) if args.extend_all else late
        ext_jobs = [(task, seed, w, round(budgets[w] * w), args.extend * limits[(task, w)], ms)
                    for (task, seed, w), ms in sorted(run_on.items())]
        by = {(r["method"], r["task"], r["seed"], r["workers"]): r for r in runs}
        for done, (job, cell_runs) in enumerate(zip(ext_jobs, p.imap(run_cell, ext_jobs), strict=True), 1):
            progress("past the budget", done, len(ext_jobs), cell_runs, started)
            for ext in cell_runs:
                by[(ext["method"], job[0], job[1], job[2])]["trace_ext"] = ext["trace"]
    return runs, cell_marks, late


def load_runs(paths: list[str], extend: float) -> tuple[list[dict], dict, dict]:
    """The runs of earlier --json files, their budgets in simulated seconds ({"task/W": s}) and, for files that record
    it, the methods each file ran on past the budget and the methods it ran ({path: (ran on, ran)}). Their extension
    must be this run's. A run two files both hold must agree within the budget; the one with a run past it is kept."""
    by: dict = {}
    limits: dict = {}
    ran_on: dict = {}
    for path in paths:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            data = json.load(f)
        if data["extend"] != extend:
            raise SystemExit(f"--merge: {path} ran on for {data['extend']:g} budgets; this report uses {extend:g} "
                             "(--extend)")
        limits.update(data["limits"])
        rule = data.get("evolution_rule", 1)
        if rule != EVOLUTION_RULE:
            for run in data["runs"]:
                run["method"] = _earlier_rule(run["method"], rule)
            if "extend_methods" in data:
                data["extend_methods"] = [_earlier_rule(m, rule) for m in data["extend_methods"]]
        for run in data["runs"]:
            key = (run["method"], run["task"], run["seed"], run["workers"])
            earlier = by.get(key)
            if earlier is not None:
                limit = limits[f"{run['task']}/{run['workers']}"]
                if _within(earlier["trace"], limit) != _within(run["trace"], limit):
                    raise SystemExit(f"--merge: {path} has another run of {key[0]} on task {key[1]} seed {key[2]} "
                                     f"W={key[3]} than an earlier file; were they run with the same code?")
                if "trace_ext" in earlier:
                    continue
            by[key] = run
        if "extend_methods" in data:
            ran_on[path] = (set(data["extend_methods"]), {r["method"] for r in data["runs"]})
    return list(by.values()), limits, ran_on


def _earlier_rule(method: str, rule: int) -> str:
    return f"{method}-rule{rule}" if method in EVOLUTION_METHODS else method


def _within(trace: list, limit: float) -> list:
    return [[t, v] for t, v in trace if t <= limit]


def main() -> None:
    args = arguments()
    tasks = args.tasks.split(",")
    merged = None
    if args.merge:
        merged, merged_limits, merged_ran_on = load_runs(args.merge.split(","), args.extend)
        tasks = list(dict.fromkeys(r["task"] for r in merged))
    workers_list = [int(w) for w in args.workers.split(",")]
    budgets = parse_budgets(args.budget, workers_list)
    methods, extend_methods = select_methods(args, merged)
    not_extended = [m for m in methods if m not in extend_methods]
    started = time.perf_counter()

    surrogate = Surrogate()
    pool = {task: surrogate.pool(task) for task in tasks}
    limits = {(task, w): budgets[w] * pool[task][1] for task in tasks for w in workers_list}
    if merged is not None:
        runs = merged_cells(merged, merged_limits, merged_ran_on, tasks, workers_list, methods, extend_methods, limits)
        cell_marks = marks(runs, limits, methods)
        late = late_runs(runs, cell_marks, limits, extend_methods)
    else:
        jobs = [(task, seed, w, round(budgets[w] * w), limits[(task, w)], methods)
                for w in workers_list for task in tasks
                for seed in range(args.first_seed, args.first_seed + args.seeds)]
        runs, cell_marks, late = simulate_cells(args, jobs, budgets, limits, methods, extend_methods, started)
    extended = sum(len(ms) for ms in late.values())
    refs = {task: max([pool[task][0]] + [r["trace"][-1][1] for r in runs if r["task"] == task and r["trace"]])
            for task in tasks}
    cpu = {m: med([r["cpu_s"] for r in runs if r["method"] == m]) for m in methods}

    out = header(args, tasks, runs, budgets, workers_list, extended, not_extended, refs, pool)
    quality, regret_summary, speed_summary = quality_report(runs, refs, limits, cell_marks, workers_list, methods,
                                                            args.extend, extend_methods)
    out += quality
    failed = [f"{r['method']}/{r['task']}/{r['seed']}/W{r['workers']}" for r in runs if r["failed"]]
    out.append(f"runs whose search ended in failure: {len(failed)} {' '.join(failed)}")
    out.append("median real CPU seconds per run: " + ", ".join(f"{m} {cpu[m]:.1f}" for m in methods))
    cost_rows = []
    if not args.skip_cost:
        cost_rows = [cost_ours("random", 10_000), cost_ours("asha", 10_000), cost_optuna("random", 10_000),
                     cost_optuna("tpe", 1_000, memory=False)]
        out += ["", "B3 searcher cost: 10,000 trials through the searcher vs Optuna's in-memory storage"]
        out += cost_report(cost_rows)
    out += ["", "verdict:"] + verdict(workers_list, regret_summary, speed_summary)
    out.append(f"wall time {time.perf_counter() - started:.0f} s")
    print("\n".join(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "refs": refs, "cost": cost_rows, "extend": args.extend,
                       "evolution_rule": EVOLUTION_RULE,
                       "extend_methods": sorted(extend_methods),
                       "limits": {f"{k[0]}/{k[1]}": v for k, v in limits.items()}},
                      f, default=str)


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="7593,126025,167149,189909")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=1,
                    help="the seeds run are FIRST..FIRST+SEEDS-1 (so a run on further seeds can be --merge'd "
                         "with an earlier one)")
    ap.add_argument("--workers", default="4,32")
    ap.add_argument("--budget", default="4=32,32=8",
                    help="wall-clock budget in median full 52-epoch trainings "
                         "(W workers: W times that in worker time): one number for every W, or W=B pairs")
    ap.add_argument("--extend", type=float, default=4,
                    help="a method that has not reached a mark within the budget runs on for up to this many budgets")
    ap.add_argument("--extend-methods", default="all",
                    help="the methods that run on past the budget (random always does); the others' times to a "
                         "mark they missed within the budget are shown as not measured ('-')")
    ap.add_argument("--extend-all", action="store_true",
                    help="run every --extend-methods run on past the budget, also those that reached mark A within "
                         "it: for runs to be --merge'd with other methods that may raise the marks")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--merge", help="comma-separated --json files of earlier runs over other tasks or seeds, or of "
                                    "other methods on the same cells (same budget and extension): report on their "
                                    "cells together instead of running")
    return ap.parse_args()


def header(args: argparse.Namespace, tasks: list[str], runs: list[dict], budgets: dict, workers_list: list[int],
           extended: int, not_extended: list[str], refs: dict, pool: dict) -> list[str]:
    """The report's first lines: tasks, seeds, budgets, runs past the budget, the tasks' bests and training times."""
    return ["B3 search quality: YAHPO Gym LCBench surrogate (val_accuracy, 52 epochs, simulated time)",
            f"tasks {', '.join(tasks)}; seeds {', '.join(str(s) for s in sorted({r['seed'] for r in runs}))}; "
            "budget "
            + ", ".join(f"W={w}: {budgets[w]:g}" for w in workers_list) + " median full trainings of "
            f"wall clock (x W of worker time); {extended} runs that missed mark A within the budget ran on for "
            f"up to {args.extend:g} budgets"
            + ("; not run on past the budget (times past it not measured, '-'): " + ", ".join(not_extended)
               if not_extended else ""),
            "task bests (ref): " + ", ".join(f"{t} {refs[t]:.2f}" for t in tasks),
            "median full-training time (s, simulated): " + ", ".join(f"{t} {pool[t][1]:.0f}" for t in tasks), ""]


def select_methods(args: argparse.Namespace, merged: list[dict] | None) -> tuple[list[str], set[str]]:
    """The methods to report (random always; an earlier rule's runs in a merge next to their method) and those that
    run on past the budget."""
    methods = args.methods.split(",")
    if "random" not in methods:
        methods.insert(0, "random")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise SystemExit(f"--methods: unknown {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    extend_methods = set(methods if args.extend_methods == "all" else args.extend_methods.split(",") + ["random"])
    unselected = sorted(extend_methods - set(methods))
    if unselected:
        raise SystemExit(f"--extend-methods: {', '.join(unselected)} not in --methods ({', '.join(methods)})")
    if merged is not None:  # an earlier rule's runs of a method selected are reported next to it
        for earlier in sorted({r["method"] for r in merged} - set(METHODS)):
            base = earlier.rsplit("-rule", 1)[0]
            if base in methods:
                methods.insert(methods.index(base), earlier)
                if base in extend_methods:
                    extend_methods.add(earlier)
    return methods, extend_methods


def merged_cells(merged: list[dict], merged_limits: dict, merged_ran_on: dict, tasks: list[str],
                 workers_list: list[int], methods: list[str], extend_methods: set[str], limits: dict) -> list[dict]:
    """The merged runs of the W and methods asked for: every cell and method there, run with this budget and
    --extend-methods (else SystemExit naming what differs)."""
    runs = [r for r in merged if r["workers"] in workers_list and r["method"] in methods]
    seeds = sorted({r["seed"] for r in runs})
    missing = sorted({(t, s, w) for t in tasks for s in seeds for w in workers_list}
                     - {(r["task"], r["seed"], r["workers"]) for r in runs})
    absent = sorted(set(methods) - {r["method"] for r in runs})
    gaps = (([f"(task, seed, W) {missing}"] if missing else [])
            + ([f"methods {', '.join(absent)}"] if absent else []))
    if gaps:
        earlier = [m for m in absent if m in EVOLUTION_METHODS and any(n.startswith(m + "-rule") for n in methods)]
        hint = (f" ({', '.join(earlier)}: only runs of an earlier sampler: evolution rule, reported as "
                f"'-rule<N>'; run them again with this code and merge that file too)" if earlier else "")
        raise SystemExit(f"--merge: the files have no runs for {'; '.join(gaps)}{hint}; give the --workers and "
                         "--methods they were run with")
    if any(abs(merged_limits[f"{t}/{w}"] - limits[(t, w)]) > 1e-6 * limits[(t, w)] for (t, w) in limits):
        raise SystemExit("--merge: the files were run with another --budget; give the one they were run with")
    for path, (ran_on, ran) in merged_ran_on.items():
        if ran_on & set(methods) != extend_methods & ran:
            raise SystemExit(f"--merge: {path} ran on past the budget {', '.join(sorted(ran_on))}; give the "
                             "same --extend-methods")
    return runs


if __name__ == "__main__":
    if "--versions" in sys.argv:
        print(subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True).stdout)
        sys.exit(0)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
