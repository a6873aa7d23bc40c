"""Unit tests of master/series/downsample.py: M4 keeps extremes, the shared grid, and the mergeable series summary."""

from __future__ import annotations

import math
import random

import pytest

from stalwart.master.series.downsample import SeriesSummary, extremes, grid, grid_slots, m4, place


def test_m4_keeps_everything_when_small():
    xs = list(range(10))
    assert m4(xs, 5, ys=[float(x) for x in xs]) == list(range(10))
    assert m4([], 5) == []


def test_m4_keeps_first_last_min_max_of_each_bucket():
    rng = random.Random(1)
    n = 100_000
    xs = list(range(n))
    ys = [rng.gauss(0, 1) for _ in range(n)]
    ys[31_337] = 50.0  # a spike must survive
    ys[77_001] = -40.0
    keep = m4(xs, 500, ys=ys)
    assert len(keep) <= 4 * 500
    assert keep == sorted(set(keep))
    kept = {i: ys[i] for i in keep}
    assert 31_337 in kept and 77_001 in kept
    assert keep[0] == 0 and keep[-1] == n - 1
    # every bucket's min and max are kept exactly
    width = (n - 1) / 500
    for b in range(0, 500, 37):
        members = [i for i in range(n) if min(int(i / width), 499) == b]
        assert min(ys[i] for i in members) == min(kept[i] for i in members if i in kept)
        assert max(ys[i] for i in members) == max(kept[i] for i in members if i in kept)


def test_m4_rejects_zero_buckets():
    with pytest.raises(ValueError):
        m4([1, 2, 3], 0)


def test_grid_keeps_min_and_max_per_bucket_in_x_order():
    a = [(0, 1.0), (1, 5.0), (2, -3.0), (3, 2.0), (10, 7.0)]
    b = [(5, 0.5)]
    xs, (ya, yb) = grid([a, b], 2, 0, 10)
    assert len(xs) == 4 and xs == sorted(xs)
    # bucket 0 = [0, 5): max 5.0 at x=1 comes before min -3.0 at x=2
    assert ya[0:2] == [5.0, -3.0]
    # bucket 1 = [5, 10]: a single point goes to the slot of its half of the bucket
    assert ya[2:4] == [None, 7.0]
    assert yb == [None, None, 0.5, None]


def test_grid_ignores_points_outside_the_range_and_handles_a_flat_range():
    xs, (ys,) = grid([[(-1, 9.0), (5, 1.0), (11, 9.0)]], 4, 0, 10)
    assert [v for v in ys if v is not None] == [1.0]
    xs, (ys,) = grid([[(3, 1.0)]], 4, 3, 3)
    assert [v for v in ys if v is not None] == [1.0]


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_summary_tracks_exact_totals_and_leaf_extremes(order):
    rng = random.Random(7)
    pts = [(s, math.sin(s / 50) + rng.random() * 0.1, 1000.0 + s) for s in range(0, 20_000, 2)]
    pts[1234] = (pts[1234][0], 9.0, pts[1234][2])
    if order == "shuffled":
        rng.shuffle(pts)
    s = SeriesSummary(leaves=128)
    for x, y, t in pts:
        s.add(x, y, t)
    assert s.n == len(pts)
    assert s.best(False) == (9.0, 2468)
    assert s.best(True)[0] == min(p[1] for p in pts)
    assert s.last_x == 19_998
    kept = s.points()
    assert len(kept) <= 2 * 128
    assert (2468, 9.0, 3468.0) in kept
    # kept points are real points, sorted by x, and each leaf's min and max are exact
    real = {(x, y, t) for x, y, t in pts}
    assert all(p in real for p in kept)
    assert [p[0] for p in kept] == sorted(p[0] for p in kept)
    w = s.width
    for leaf in range(0, 128, 17):
        members = [p for p in pts if int(p[0] // w) == leaf]
        if members:
            mins = [p for p in kept if int(p[0] // w) == leaf]
            assert min(p[1] for p in members) == min(p[1] for p in mins)
            assert max(p[1] for p in members) == max(p[1] for p in mins)
    assert s.nbytes() == 6 * 128 * 8


def test_summary_stays_raw_while_small():
    s = SeriesSummary(leaves=16)
    for i in range(10):
        s.add(i * 100, float(i), float(i))
    assert s.raw is not None and len(s.points()) == 10
    assert s.best(True) == (0.0, 0) and s.best(False) == (9.0, 900)
    assert SeriesSummary().best(True) is None


def test_summary_extremes_match_the_generic_path_on_every_axis():
    rng = random.Random(3)
    for n in (50, 5000):  # raw and folded summaries
        s = SeriesSummary(leaves=64)
        for step in rng.sample(range(1, 20_000), n):
            s.add(step, rng.gauss(0, 1), 5000.0 + step * 0.5)
        for scale, use_time in ((1.0, False), (0.01, False), (1.0, True)):
            lo, hi = s.x_range(scale, use_time)
            lo, width, _ = grid_slots(40, lo, hi)
            pts = [((t if use_time else x * scale), y) for x, y, t in s.points()]
            assert s.extremes(lo, width, 40, hi, scale, use_time) == extremes(pts, lo, width, 40, hi)
            ys = place(extremes(pts, lo, width, 40, hi), 40, lo, width)
            assert max(v for v in ys if v is not None) == s.max_y and min(v for v in ys if v is not None) == s.min_y


def test_extend_equals_adding_one_by_one():
    rng = random.Random(11)
    a, b = SeriesSummary(leaves=32), SeriesSummary(leaves=32)
    pts = [(s, rng.random(), 100.0 + s) for s in range(0, 3000, 3)]
    for x, y, t in pts:
        a.add(x, y, t)
    for k in range(0, len(pts), 97):
        chunk = pts[k:k + 97]
        b.extend([p[0] for p in chunk], [p[1] for p in chunk], [p[2] for p in chunk])
    assert a.points() == b.points() and a.width == b.width
    assert (a.n, a.min_x, a.min_y, a.max_x, a.max_y, a.last_x, a.first_x, a.t_lo, a.t_hi) == \
           (b.n, b.min_x, b.min_y, b.max_x, b.max_y, b.last_x, b.first_x, b.t_lo, b.t_hi)


def test_a_dense_series_gets_more_leaves_up_to_the_limit_and_keeps_leaf_extremes():
    pts = [(s, math.sin(s / 7.0) + (50.0 if s == 12_345 else 0.0), float(s)) for s in range(1, 20_001)]
    dense = SeriesSummary(leaves=64, max_leaves=256, density=8)
    for x, y, t in pts:
        dense.add(x, y, t)
    assert dense.cap == 256 and dense.nbytes() == 6 * 256 * 8
    w = dense.width
    assert dense.resolution() == w and w * 256 > 20_000 >= w * 128  # as fine as 256 leaves allow
    kept = dense.points()
    assert (12_345, pts[12_344][1], 12_345.0) in kept
    for leaf in range(0, 20_000 // w + 1, 13):
        members = [p for p in pts if int(p[0] // w) == leaf]
        mine = [p for p in kept if int(p[0] // w) == leaf]
        assert members and min(p[1] for p in members) == min(p[1] for p in mine)
        assert max(p[1] for p in members) == max(p[1] for p in mine)
    # fewer than `density` points a leaf: the leaves widen instead (and a plain summary never grows)
    sparse = SeriesSummary(leaves=64, max_leaves=256, density=8)
    plain = SeriesSummary(leaves=64)
    for x, y, t in pts[::50]:
        sparse.add(x * 50, y, t)
        plain.add(x * 50, y, t)
    assert sparse.cap == plain.cap == 64 and sparse.points() == plain.points()
    assert SeriesSummary(leaves=64).resolution() == 0.0  # raw: nothing merged
