"""B3's report (bench/search.py): the marks of each cell, per W the methods' regrets and times to the marks, ours
against each peer, how firm the speed-ups are, and the verdict against the targets."""

from __future__ import annotations

import math
import random
import statistics

from search_cost import fmt
from search_methods import OUR_ASHAS, OURS, PEERS, PRUNING_PEERS


def time_to(trace: list, threshold: float) -> float:
    for t, value in trace:
        if value >= threshold:
            return t
    return math.inf


def best_within(trace: list, limit: float) -> float:
    """The best accuracy a method had seen by `limit` (its trace may run past the budget)."""
    return max((value for t, value in trace if t <= limit), default=0.0)


def marks(runs: list[dict], limits: dict, methods: list[str]) -> dict:
    """(mark A, mark B) for each (task, seed, W) cell, from what the methods saw within the budget."""
    out = {}
    for cell in {(r["task"], r["seed"], r["workers"]) for r in runs}:
        limit = limits[(cell[0], cell[2])]
        best = {r["method"]: best_within(r["trace"], limit) for r in runs
                if (r["task"], r["seed"], r["workers"]) == cell and r["method"] in methods}
        out[cell] = (0.99 * max(best.values()), 0.99 * best["random"])
    return out


def med(values: list[float]) -> float:
    """The median; NaN when empty or when any value is NaN (a time that was not measured)."""
    if not values or any(math.isnan(v) for v in values):
        return math.nan
    return statistics.median(values)


class WorkersReport:
    """The report on the cells of W workers: each method's regret and times to marks A and B, per cell."""

    def __init__(self, runs: list[dict], refs: dict, limits: dict, cell_marks: dict, workers: int,
                 methods: list[str], extend: float, extended: set[str]) -> None:
        self.workers, self.methods, self.extend, self.extended = workers, methods, extend, extended
        self.cell_marks = cell_marks
        self.cells = sorted({(r["task"], r["seed"]) for r in runs if r["workers"] == workers})
        self.by = {(r["method"], r["task"], r["seed"]): r for r in runs if r["workers"] == workers}
        self.limit = {c: limits[(c[0], workers)] for c in self.cells}
        self.regret = {m: [refs[c[0]] - self.best(m, c) for c in self.cells] for m in methods}
        self.ta = {m: [self.time_to_mark(m, c, 0) for c in self.cells] for m in methods}
        self.tb = {m: [self.time_to_mark(m, c, 1) for c in self.cells] for m in methods}

    def cap(self, t: float) -> float:
        """A mark unreached after `extend` budgets counts as `extend` (a bound in the missing method's favour)."""
        return self.extend if math.isinf(t) else max(t, 1e-9)

    def best(self, m: str, cell: tuple) -> float:
        return best_within(self.by[(m, *cell)]["trace"], self.limit[cell])

    def time_to_mark(self, m: str, cell: tuple, which: int) -> float:
        run = self.by[(m, *cell)]
        mark = self.cell_marks[(*cell, self.workers)][which]
        t = time_to(run.get("trace_ext", run["trace"]), mark) / self.limit[cell]
        if t > 1.0 and (m not in self.extended or "trace_ext" not in run):
            # missed within the budget and not run on past it (by --extend-methods, or in a merged file
            # whose own mark was lower): not measured
            return math.nan
        return t if t <= self.extend else math.inf

    def speedups(self, times_: dict, m: str) -> list[float]:
        """Per cell: random search's time to the mark over m's."""
        return [self.cap(a) / self.cap(b) for a, b in zip(times_["random"], times_[m], strict=True)]

    def speed(self, times_: dict, m: str) -> float:
        return med(self.speedups(times_, m))

    def table(self) -> list[str]:
        """Each method's median regret, marks reached, median times to the marks and speed-ups, trials."""
        cells, ta, tb = self.cells, self.ta, self.tb
        lines = [f"W = {self.workers} workers ({len(cells)} task x seed cells; times in units of the budget; "
                 f"'reached' counts marks reached within the budget)",
                 f"{'method':<12} {'med regret':>10} {'mark A reached':>14} {'med tA':>7} {'speedup A':>9} "
                 f"{'med tB':>7} {'speedup B':>9} {'trials':>7}"]
        for m in self.methods:
            reached = sum(1 for t in ta[m] if t <= 1.0)
            trials = med([self.by[(m, *c)]["trials"] for c in cells])
            lines.append(f"{m:<12} {fmt(med(self.regret[m]), 3):>10} {reached:>10}/{len(cells):<3} "
                         f"{fmt(med(ta[m])):>7} {times(self.speed(ta, m)):>9} {fmt(med(tb[m])):>7} "
                         f"{times(self.speed(tb, m)):>9} {trials:>7.0f}")
        return lines + [""]

    def versus_peers(self) -> list[str]:
        """Each of ours against each peer: regret ratio and per-cell time to mark A ratio."""
        lines = ["ours vs each peer: median regret ours/peer (< 1 better) | "
                 "median per-cell time to mark A peer/ours (> 1 faster)"]
        peers = [p for p in ["random"] + PEERS if p in self.methods]
        lines.append(f"{'':<12}" + "".join(f"{p:>15}" for p in peers))
        for ours in [m for m in OURS if m != "random" and m in self.methods]:
            row = f"{ours:<12}"
            for peer in peers:
                rr = _ratio(med(self.regret[ours]), med(self.regret[peer]))
                tr = med([self.cap(b) / self.cap(a) for a, b in zip(self.ta[ours], self.ta[peer], strict=True)])
                row += f"{fmt(rr) + ' | ' + fmt(tr):>15}"
            lines.append(row)
        return lines + [""]

    def firmness(self) -> list[str]:
        """How firm each of our ASHAs' median speed-up to mark A is (a bootstrap interval over the cells)."""
        lines = ["how firm the median speed-up to mark A is: per-cell ratios random/ours, and a bootstrap 90% "
                 "interval of their median (2,000 resamples of the cells)"]
        for ours in [m for m in OUR_ASHAS if m in self.methods and m in self.extended]:
            ratios = self.speedups(self.ta, ours)
            unmeasured = sum(math.isnan(x) for x in ratios)
            if unmeasured:
                lines.append(f"{ours:<17} -: its time to mark A was not measured in {unmeasured} of {len(ratios)} "
                             "cells")
                continue
            low, high = bootstrap_median(ratios)
            lines.append(f"{ours:<17} median {times(med(ratios))}, 90% [{times(low)}, {times(high)}]; cells >= 3x "
                         f"{sum(x >= 3 for x in ratios)}/{len(ratios)}, < 1x {sum(x < 1 for x in ratios)}")
        return lines + [""]


def quality_report(runs: list[dict], refs: dict, limits: dict, cell_marks: dict, workers_list: list[int],
                   methods: list[str], extend: float, extended: set[str]) -> tuple[list[str], dict, dict]:
    """The report's lines, and per W each method's median regret and (speed-up to mark A, to mark B)."""
    lines: list[str] = []
    regret_summary: dict = {}
    speed_summary: dict = {}
    for workers in workers_list:
        part = WorkersReport(runs, refs, limits, cell_marks, workers, methods, extend, extended)
        lines += part.table() + part.versus_peers() + part.firmness()
        regret_summary[workers] = {m: med(part.regret[m]) for m in methods}
        speed_summary[workers] = {m: (part.speed(part.ta, m), part.speed(part.tb, m)) for m in methods}
    return lines, regret_summary, speed_summary


def verdict(workers_list: list[int], regret_summary: dict, speed_summary: dict) -> list[str]:
    """Per W and each of our ASHAs: >= 3x faster than random to mark A, and a regret no worse than the pruning
    peers'."""
    lines = []
    for w in workers_list:
        s = speed_summary[w]
        r = regret_summary[w]
        peers = [p for p in PRUNING_PEERS if p in r]
        for ours in [m for m in OUR_ASHAS if m in r]:
            sa, sb = s[ours]
            if math.isnan(sa):
                speed = "time to mark A not measured (not in --extend-methods"
            else:
                speed = f"{sa:.2f}x faster than random to mark A, the 1% mark ({'meets' if sa >= 3 else 'misses'} >= 3x"
            if peers:
                no_worse = "meets" if all(r[ours] <= r[p] + 1e-9 for p in peers) else "MISSES"
                regret = "vs " + ", ".join(f"{p} {r[p]:.3f}" for p in peers) + f" ({no_worse} 'no worse')"
            else:
                regret = "(no pruning peer in --methods to compare with)"
            lines.append(f"W={w}: {ours} {speed}; mark B {times(sb)}); median regret {r[ours]:.3f} {regret}")
    return lines


def bootstrap_median(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """A 90% percentile-bootstrap interval of the median of `values` (seeded, so a report is reproducible)."""
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return meds[int(0.05 * rounds)], meds[int(0.95 * rounds) - 1]


def times(x: float) -> str:
    """A speed-up as '2.50x', or '-' when it was not measured."""
    return "-" if math.isnan(x) else fmt(x) + "x"


def _ratio(a: float, b: float) -> float:
    if b == 0:
        return math.inf if a > 0 else 1.0
    return a / b
