"""Downsampling of metric series for charts: M4 buckets, a shared min/max grid, and a mergeable series summary."""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterable, Sequence

# A point is (x, y, t): x the position on the chosen axis (steps, epochs or seconds), y the value, t the report time.
XY = tuple[float, float | None]
"""A point to put on a grid: (x, y); a y of None is skipped."""
Extremes = dict[int, list[float]]
"""{bucket: [min_x, min_y, max_x, max_y]} of one series."""


def m4(xs: list[float], n_buckets: int, lo: float | None = None, hi: float | None = None,
       ys: list[float] | None = None) -> list[int]:
    """Indices to keep from a series sorted by x: first, last, min and max of each of `n_buckets` equal-width buckets.

    Drawn as a line at one bucket per pixel column this is pixel-identical to the full series (M4, Jugel et al.,
    VLDB 2014): every extreme stays visible. With `ys` None only the first/last per bucket are kept.
    Bucket edges are found by bisection and extremes by C-level min/max over slices: O(buckets) Python steps.
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
    width = ((hi - lo) or 1.0) / n_buckets
    keep: list[int] = []
    start = bisect.bisect_left(xs, lo)
    for b in range(n_buckets):
        end = n if b == n_buckets - 1 else bisect.bisect_left(xs, lo + (b + 1) * width, start)
        if end <= start:
            continue
        last = end - 1
        if ys is None or last - start < 2:
            picked = {start, last}
        else:
            seg = ys[start:end]
            picked = {start, start + seg.index(min(seg)), start + seg.index(max(seg)), last}
        keep.extend(sorted(picked))
        start = end
    return keep


def grid_slots(n_buckets: int, lo: float, hi: float) -> tuple[float, float, list[float]]:
    """(lo, bucket width, x of every slot) of a grid of `n_buckets` over [lo, hi], 2 slots per bucket."""
    if n_buckets < 1:
        raise ValueError("n_buckets must be >= 1")
    span = hi - lo
    if span <= 0:
        span, lo = 1.0, lo - 0.5
    width = span / n_buckets
    return lo, width, [lo + (b + (0.25 if s == 0 else 0.75)) * width for b in range(n_buckets) for s in (0, 1)]


def place(extremes: Extremes, n_buckets: int, lo: float, width: float) -> list[float | None]:
    """One series' y values on the grid from {bucket: (min_x, min_y, max_x, max_y)}: min and max in x order."""
    ys: list[float | None] = [None] * (2 * n_buckets)
    for b, (mn_x, mn_y, mx_x, mx_y) in extremes.items():
        if mn_x == mx_x and mn_y == mx_y:
            ys[2 * b + (0 if mn_x < lo + (b + 0.5) * width else 1)] = mn_y
        elif mn_x <= mx_x:
            ys[2 * b], ys[2 * b + 1] = mn_y, mx_y
        else:
            ys[2 * b], ys[2 * b + 1] = mx_y, mn_y
    return ys


def extremes(points: Iterable[XY], lo: float, width: float, n_buckets: int, hi: float) -> Extremes:
    """{bucket: (min_x, min_y, max_x, max_y)} of (x, y) points within [lo, hi]."""
    out: Extremes = {}
    last = n_buckets - 1
    for p in points:
        x, y = p[0], p[1]
        if x < lo or x > hi or y is None:
            continue
        b = int((x - lo) / width)
        if b > last:
            b = last
        e = out.get(b)
        if e is None:
            out[b] = [x, y, x, y]
        else:
            if y < e[1]:
                e[0], e[1] = x, y
            if y > e[3]:
                e[2], e[3] = x, y
    return out


def grid(series: Iterable[Iterable[XY]], n_buckets: int, lo: float, hi: float
         ) -> tuple[list[float], list[list[float | None]]]:
    """Put many series on one shared x grid of 2 slots per bucket (for aligned multi-line charts).

    Each series is a list of (x, y) points in any order. In every bucket a series keeps its min and its max
    point, in x order, in slot 0 and slot 1 (a lone point goes to the slot of its half of the bucket); slots
    without a point are None. Returns (slot x positions, one y list per series).
    """
    lo2, width, xs = grid_slots(n_buckets, lo, hi)
    return xs, [place(extremes(points, lo2, width, n_buckets, max(hi, lo2 + width * n_buckets)), n_buckets, lo2, width)
                for points in series]


_NAN = float("nan")


class SeriesSummary:
    """Mergeable summary of one series over x = steps: count, min, max, last, and min/max points per leaf.

    Points may arrive in any order. Up to `leaves` points are kept raw; beyond that they are folded into
    equal-width buckets (leaves), each keeping its min and its max point exactly (x, y, t). When x outgrows
    the leaves, a dense series (at least `density` points a leaf) gets twice as many leaves, up to
    `max_leaves`, so that long series keep enough detail for a chart of their own; otherwise the leaf width
    doubles. Memory is bounded: 6 doubles per leaf.
    """

    __slots__ = ("cap", "max_cap", "density", "n", "min_x", "min_y", "max_x", "max_y", "last_x", "last_y", "first_x",
                 "t_lo", "t_hi", "raw", "leaf", "width")

    def __init__(self, leaves: int = 256, max_leaves: int | None = None, density: int = 48) -> None:
        self.cap = leaves
        self.max_cap = leaves if max_leaves is None else max(leaves, max_leaves)
        self.density = density
        self.n = 0
        # All None until the first point (n == 0), all set from then on.
        self.min_x: float | None = None
        self.min_y: float | None = None
        self.max_x: float | None = None
        self.max_y: float | None = None
        self.last_x: float | None = None
        self.last_y: float | None = None
        self.first_x: float | None = None  # smallest x
        self.t_lo: float | None = None  # the range of report times
        self.t_hi: float | None = None
        self.raw: array[float] | None = array("d")  # x, y, t triples while n <= cap
        # per leaf: min_x, min_y, min_t, max_x, max_y, max_t (NaN = empty); empty while the points are raw
        self.leaf: array[float] = array("d")
        self.width = 1

    def add(self, x: float, y: float, t: float) -> None:
        """Add one point (x steps, y value, t report time)."""
        self.n += 1
        if self.min_y is None or y < self.min_y:
            self.min_x, self.min_y = x, y
        if self.max_y is None or y > self.max_y:
            self.max_x, self.max_y = x, y
        if self.last_x is None or x >= self.last_x:
            self.last_x, self.last_y = x, y
        if self.first_x is None or x < self.first_x:
            self.first_x = x
        if self.t_lo is None or t < self.t_lo:
            self.t_lo = t
        if self.t_hi is None or t > self.t_hi:
            self.t_hi = t
        raw = self.raw
        if raw is not None:
            raw.extend((x, y, t))
            if len(raw) > 3 * self.cap:
                self._to_leaves(raw)
            return
        self._fold((x, y, t), (x, y, t))

    def extend(self, xs: Sequence[float], ys: Sequence[float], ts: Sequence[float]) -> None:
        """Add many points at once (the same result as add() for each, several times faster)."""
        n = len(xs)
        if n == 0:
            return
        if n < 8 or self.raw is not None:
            for i in range(n):
                self.add(xs[i], ys[i], ts[i])
            return
        # Leaves exist only once points were added, so every running figure is set.
        assert self.first_x is not None and self.t_lo is not None and self.t_hi is not None
        self.n += n
        i = min(range(n), key=ys.__getitem__)
        if self.min_y is None or ys[i] < self.min_y:
            self.min_x, self.min_y = xs[i], ys[i]
        i = max(range(n), key=ys.__getitem__)
        if self.max_y is None or ys[i] > self.max_y:
            self.max_x, self.max_y = xs[i], ys[i]
        i = max(range(n), key=xs.__getitem__)
        if self.last_x is None or xs[i] >= self.last_x:
            self.last_x, self.last_y = xs[i], ys[i]
        self.first_x = min(self.first_x, min(xs))
        self.t_lo, self.t_hi = min(self.t_lo, min(ts)), max(self.t_hi, max(ts))
        top = max(xs)
        while top // self.width >= self.cap:
            self._make_room()
        leaf, w = self.leaf, self.width
        for x, y, t in zip(xs, ys, ts, strict=False):
            k = 6 * int(x // w)
            v = leaf[k + 1]
            if v != v or y < v:
                leaf[k], leaf[k + 1], leaf[k + 2] = x, y, t
            v = leaf[k + 4]
            if v != v or y > v:
                leaf[k + 3], leaf[k + 4], leaf[k + 5] = x, y, t

    def _to_leaves(self, raw: array[float]) -> None:
        """Fold the raw points (`self.raw`, given narrowed) into leaves."""
        self.raw = None
        top = max(raw[0::3])
        self.width = 1
        while (top + 1) / self.width > self.cap:
            self.width *= 2
        self.leaf = array("d", [_NAN]) * (6 * self.cap)
        for i in range(0, len(raw), 3):
            p = (raw[i], raw[i + 1], raw[i + 2])
            self._fold(p, p)

    def _fold(self, mn: tuple[float, float, float], mx: tuple[float, float, float]) -> None:
        """Fold a min point and a max point that lie in one leaf (a single point is both)."""
        j = int(mn[0] // self.width)
        while j >= self.cap:
            self._make_room()
            j = int(mn[0] // self.width)
        leaf, k = self.leaf, 6 * max(j, 0)
        if math.isnan(leaf[k]) or mn[1] < leaf[k + 1]:
            leaf[k], leaf[k + 1], leaf[k + 2] = mn
        if math.isnan(leaf[k + 3]) or mx[1] > leaf[k + 4]:
            leaf[k + 3], leaf[k + 4], leaf[k + 5] = mx

    def _make_room(self) -> None:
        """x outgrew the leaves: twice as many leaves for a dense series (while under max_leaves), else wider ones."""
        if self.cap < self.max_cap and self.n >= self.density * self.cap:
            self.leaf.extend(array("d", [_NAN]) * (6 * self.cap))
            self.cap *= 2
        else:
            self._coarsen()

    def resolution(self) -> float:
        """The x distance (steps) within which points may have been merged: 0 while every point is kept."""
        return 0.0 if self.raw is not None else float(self.width)

    def _coarsen(self) -> None:
        """Double the leaf width, folding every pair of neighbouring leaves into one."""
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

    def extremes(self, lo: float, width: float, n_buckets: int, hi: float, scale: float = 1.0,
                 use_time: bool = False) -> Extremes:
        """Like `extremes(self.points(), ...)` without building the points: x is steps * scale, or the report time."""
        out: Extremes = {}
        last = n_buckets - 1
        arr: array[float]
        pairs: tuple[tuple[int, int, int], ...]
        if self.raw is not None:
            arr, stride, pairs = self.raw, 3, ((0, 1, 2),)
        else:
            arr, stride, pairs = self.leaf, 6, ((0, 1, 2), (3, 4, 5))
        xo = 2 if use_time else 0
        for k in range(0, len(arr), stride):
            for ix, iy, it in pairs:
                y = arr[k + iy]
                if y != y:  # NaN: an empty leaf
                    continue
                x = arr[k + it] if xo else arr[k + ix] * scale
                if x < lo or x > hi:
                    continue
                b = int((x - lo) / width)
                if b > last:
                    b = last
                e = out.get(b)
                if e is None:
                    out[b] = [x, y, x, y]
                else:
                    if y < e[1]:
                        e[0], e[1] = x, y
                    if y > e[3]:
                        e[2], e[3] = x, y
        return out

    def x_range(self, scale: float = 1.0, use_time: bool = False) -> tuple[float, float] | None:
        """(min, max) of x: steps * scale, or report times."""
        if use_time:
            return None if self.t_lo is None or self.t_hi is None else (self.t_lo, self.t_hi)
        return None if self.first_x is None or self.last_x is None else (self.first_x * scale, self.last_x * scale)

    def best(self, smaller_is_better: bool) -> tuple[float, float] | None:
        """(value, x) of the best point, or None when empty."""
        if smaller_is_better:
            return None if self.min_y is None or self.min_x is None else (self.min_y, self.min_x)
        return None if self.max_y is None or self.max_x is None else (self.max_y, self.max_x)

    def nbytes(self) -> int:
        """Memory the kept points take (the raw triples, else the leaves)."""
        return (self.raw if self.raw is not None else self.leaf).buffer_info()[1] * 8
