"""Downsampling of metric series for charts: M4 buckets, a shared min/max grid, and a mergeable series summary."""

from __future__ import annotations

import math
from array import array

# A point is (x, y, t): x the position on the chosen axis (steps, epochs or seconds), y the value, t the report time.


def m4(xs: list[float], n_buckets: int, lo: float | None = None, hi: float | None = None,
       ys: list[float] | None = None) -> list[int]:
    """Indices to keep from a series sorted by x: first, last, min and max of each of `n_buckets` equal-width buckets.

    Drawn as a line at one bucket per pixel column this is pixel-identical to the full series (M4, Jugel et al.,
    VLDB 2014): every extreme stays visible. With `ys` None only the first/last per bucket are kept.
    """
    n = len(xs)
    if n == 0:
        return []
    if n_buckets < 1:
        raise ValueError("n_buckets must be >= 1")
    if n <= 4 * n_buckets:
        return list(range(n))
    lo = xs[0] if lo is None else lo
    hi = xs[-1] if hi is None else hi
    span = (hi - lo) or 1.0
    scale = n_buckets / span
    keep: list[int] = []
    start = 0
    cur = min(int((xs[0] - lo) * scale), n_buckets - 1)
    for i in range(1, n + 1):
        b = min(int((xs[i] - lo) * scale), n_buckets - 1) if i < n else -1
        if b == cur:
            continue
        # bucket [start, i) is complete
        end = i - 1
        if ys is None or end - start < 2:
            picked = {start, end}
        else:
            seg = ys[start:i]
            lo_i = start + min(range(len(seg)), key=seg.__getitem__)
            hi_i = start + max(range(len(seg)), key=seg.__getitem__)
            picked = {start, lo_i, hi_i, end}
        keep.extend(sorted(picked))
        start, cur = i, b
    return keep


def grid(series: list[list[tuple]], n_buckets: int, lo: float, hi: float) -> tuple[list[float], list[list]]:
    """Put many series on one shared x grid of 2 slots per bucket (for aligned multi-line charts).

    Each series is a list of (x, y) points in any order. In every bucket a series keeps its min and its max
    point, in x order, in slot 0 and slot 1 (a lone point goes to the slot of its half of the bucket); slots
    without a point are None. Returns (slot x positions, one y list per series).
    """
    if n_buckets < 1:
        raise ValueError("n_buckets must be >= 1")
    span = hi - lo
    if span <= 0:
        span = 1.0
        lo = lo - 0.5
    width = span / n_buckets
    xs = [lo + (b + (0.25 if s == 0 else 0.75)) * width for b in range(n_buckets) for s in (0, 1)]
    out = []
    for points in series:
        mins: dict[int, tuple] = {}
        maxs: dict[int, tuple] = {}
        for p in points:
            x, y = p[0], p[1]
            if x < lo or x > hi or y is None:
                continue
            b = min(int((x - lo) / width), n_buckets - 1)
            m = mins.get(b)
            if m is None or y < m[1]:
                mins[b] = (x, y)
            m = maxs.get(b)
            if m is None or y > m[1]:
                maxs[b] = (x, y)
        ys: list = [None] * (2 * n_buckets)
        for b, mn in mins.items():
            mx = maxs[b]
            if mn == mx:
                slot = 0 if mn[0] < lo + (b + 0.5) * width else 1
                ys[2 * b + slot] = mn[1]
            else:
                first, second = (mn, mx) if mn[0] <= mx[0] else (mx, mn)
                ys[2 * b] = first[1]
                ys[2 * b + 1] = second[1]
        out.append(ys)
    return xs, out


_NAN = float("nan")


class SeriesSummary:
    """Mergeable summary of one series over x = steps: count, min, max, last, and min/max points per leaf.

    Points may arrive in any order. Up to `leaves` points are kept raw; beyond that they are folded into at
    most `leaves` equal-width buckets whose width doubles when x outgrows them, each keeping its min and its
    max point exactly (x, y, t). Memory is bounded: 6 doubles per leaf.
    """

    __slots__ = ("cap", "n", "min_x", "min_y", "max_x", "max_y", "last_x", "last_y", "raw", "leaf", "width")

    def __init__(self, leaves: int = 256) -> None:
        self.cap = leaves
        self.n = 0
        self.min_x = self.min_y = self.max_x = self.max_y = self.last_x = self.last_y = None
        self.raw: array | None = array("d")  # x, y, t triples while n <= cap
        self.leaf: array | None = None  # per leaf: min_x, min_y, min_t, max_x, max_y, max_t (NaN = empty)
        self.width = 1

    def add(self, x: float, y: float, t: float) -> None:
        self.n += 1
        if self.min_y is None or y < self.min_y:
            self.min_x, self.min_y = x, y
        if self.max_y is None or y > self.max_y:
            self.max_x, self.max_y = x, y
        if self.last_x is None or x >= self.last_x:
            self.last_x, self.last_y = x, y
        if self.raw is not None:
            self.raw.extend((x, y, t))
            if len(self.raw) > 3 * self.cap:
                self._to_leaves()
            return
        self._fold((x, y, t), (x, y, t))

    def _to_leaves(self) -> None:
        raw, self.raw = self.raw, None
        top = max(raw[0::3])
        self.width = 1
        while (top + 1) / self.width > self.cap:
            self.width *= 2
        self.leaf = array("d", [_NAN]) * (6 * self.cap)
        for i in range(0, len(raw), 3):
            p = (raw[i], raw[i + 1], raw[i + 2])
            self._fold(p, p)

    def _fold(self, mn: tuple, mx: tuple) -> None:
        """Fold a min point and a max point that lie in one leaf (a single point is both)."""
        j = int(mn[0] // self.width)
        while j >= self.cap:
            self._coarsen()
            j = int(mn[0] // self.width)
        leaf, k = self.leaf, 6 * max(j, 0)
        if math.isnan(leaf[k]) or mn[1] < leaf[k + 1]:
            leaf[k], leaf[k + 1], leaf[k + 2] = mn
        if math.isnan(leaf[k + 3]) or mx[1] > leaf[k + 4]:
            leaf[k + 3], leaf[k + 4], leaf[k + 5] = mx

    def _coarsen(self) -> None:
        old = self.leaf
        self.leaf = array("d", [_NAN]) * (6 * self.cap)
        self.width *= 2
        for k in range(0, len(old), 6):
            if not math.isnan(old[k]):
                self._fold((old[k], old[k + 1], old[k + 2]), (old[k + 3], old[k + 4], old[k + 5]))

    def points(self) -> list[tuple[float, float, float]]:
        """The kept points (x, y, t) sorted by x: all of them while raw, else each leaf's min and max."""
        if self.raw is not None:
            r = self.raw
            pts = [(r[i], r[i + 1], r[i + 2]) for i in range(0, len(r), 3)]
        else:
            lf, pts = self.leaf, []
            for k in range(0, len(lf), 6):
                if math.isnan(lf[k]):
                    continue
                pts.append((lf[k], lf[k + 1], lf[k + 2]))
                if lf[k + 3] != lf[k] or lf[k + 4] != lf[k + 1]:
                    pts.append((lf[k + 3], lf[k + 4], lf[k + 5]))
        pts.sort()
        return pts

    def best(self, smaller_is_better: bool) -> tuple[float, float] | None:
        """(value, x) of the best point, or None when empty."""
        if self.n == 0:
            return None
        return (self.min_y, self.min_x) if smaller_is_better else (self.max_y, self.max_x)

    def nbytes(self) -> int:
        return (self.raw if self.raw is not None else self.leaf).buffer_info()[1] * 8
