"""The CPU task bodies (numba kernels) equal the dense oracle, bit for bit where it matters.

Membership must be bit-identical to the oracle's ``S / m <= lam``; lattice data
puts many pairs exactly on the lambda boundary to exercise that.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from points import (
    assert_step_is_the_oracles,
    awkward,
    blobs,
    bodies_step,
    float32_misordered,
    ill_conditioned_rho_cases,
    normalised,
    rounded32,
)

from cdfts_dask import oracle
from cdfts_dask.engine import cpu, plan
from cdfts_dask.engine import cpu_kernels as kern

ILL_CONDITIONED = ill_conditioned_rho_cases()


@pytest.mark.parametrize("n", [2, 3, 17, 257, 1000])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 1), ("knn", 7), ("knn", "big")])
def test_cpu_bodies_equal_oracle(n, estimator, k):
    if k == "big":
        k = max(1, n - 2)  # the large-k partition fallback
    k = None if k is None else min(k, n - 1)
    X = normalised(awkward(n, 3, seed=n))
    lam = 0.3 if n < 20 else 0.1
    ref = oracle.cdf_ts_step(X, lam, estimator, k)
    m, stats, Xn, delta = bodies_step(cpu, X, lam, estimator, k, rows=max(1, n // 3 + 1))
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= 1e-9
    assert abs(delta - ref.delta) <= 1e-9


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 7)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("d", [1, 8, 13, 16, 17])
def test_reference_pass_equals_oracle_across_dimensions(d, dtype, estimator, k):
    """The count and k-th kernels take rows four at a time, their ``sq`` summed in registers 8 columns at
    a time (the first through a buffer above d = 8; k-NN panels of 233 rows and 1 leave short groups): counts
    and radii equal the oracle's."""
    X = normalised(awkward(700, d, seed=d))
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, 0.15, estimator, k)
    _, stats, _, _ = bodies_step(cpu, X, 0.15, estimator, k, dtype=dtype, parts=3)
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)


def test_threshold_is_the_exact_boundary():
    rng = np.random.default_rng(3)
    for m, lam in zip(rng.uniform(0.1, 3, 50), rng.uniform(0.01, 0.99, 50), strict=True):
        T = plan.sq_thresholds(m, lam)[0]
        assert np.sqrt(T) / m <= lam
        assert np.sqrt(np.nextafter(T, np.inf)) / m > lam


def test_thresholds_of_repeated_radii_are_each_radius_bisected_alone():
    """Each distinct radius is bisected once; every element still gets its own exact boundary
    (repeated, unsorted, 0, >= 1, NaN and inf radii included)."""
    rng = np.random.default_rng(4)
    repeated = rng.choice([0.0, 0.1, 0.25, 1.0, 2.0, np.nan, np.inf], 40)
    radius = np.concatenate([repeated, rng.uniform(0, 1, 20)])
    T = plan.sq_thresholds(1.7, radius)
    assert T.shape == radius.shape
    alone = np.array([plan.sq_thresholds(1.7, r)[0] for r in radius])
    np.testing.assert_array_equal(T.view(np.int64), alone.view(np.int64))
    finite = np.isfinite(radius)
    assert np.all(np.sqrt(T[finite]) / 1.7 <= radius[finite])
    assert np.all(np.sqrt(np.nextafter(T[finite], np.inf)) / 1.7 > radius[finite])


def test_triangle_panels_cover_the_rows():
    for n, parts in [(1, 1), (2, 5), (10, 3), (1000, 7)]:
        spans = plan.triangle_panels(n, parts)
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(b > a for a, b in spans)
        assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))


@pytest.mark.parametrize("n,parts", [(1000, 4), (1000, 7), (4096, 64), (100_000, 16)])
def test_triangle_panels_hold_equal_shares_of_the_pairs(n, parts):
    """Rows [a, b) own the pairs (i, j > i) for i in [a, b): each panel holds n (n - 1) / 2 / parts of
    them to within a row's worth (n pairs), as the docstring's boundaries promise."""
    spans = plan.triangle_panels(n, parts)
    pairs = [sum(n - 1 - i for i in range(a, b)) for a, b in spans]
    assert len(spans) == parts and sum(pairs) == n * (n - 1) // 2
    assert max(abs(p - n * (n - 1) / 2 / parts) for p in pairs) <= n


@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (17, 3), (600, 4), (1500, 8), (2000, 2), (2000, 16)])
def test_block_pruned_diameter_is_exact(n, d):
    """k-d leaf and leaf-group bounding boxes prune pairs (at d = 2 nearly all; at d = 16 few, where group
    pairs are computed whole), but the maximum equals the oracle's ``max S`` bit for bit, for any number
    of parts, more parts than groups included, each building its own k-d index or all sharing one."""
    for X in (blobs(n, d, seed=n), awkward(n, d, seed=n), np.ones((n, d))):
        X = normalised(X)
        expected = oracle.pairwise_distances(X).max()
        for parts, index in ((1, None), (3, None), (3, cpu.pair_index(X)), (40, cpu.pair_index(X))):
            assert plan.diameter(*[cpu.diameter_part(X, i, parts, index) for i in range(parts)]) == expected


def _pairs_tested_one_by_one(X: np.ndarray, lam: float) -> tuple[np.ndarray, int]:
    """``(counts, tested)``: the count kernel over all group pairs, and how many pairs it tested alone."""
    n, d = X.shape
    T = plan.count_threshold(plan.diameter(cpu.diameter_part(X, 0, 1)), lam)
    Tlo, Thi = plan.guard_band(np.array([T]), d, X.dtype)
    index = cpu.pair_index(X)
    Xs, XsT = cpu._in_order(X, index.order)
    in_order = np.zeros(n, dtype=np.int64)
    tested = kern.count_leaf_pairs(Xs, XsT, *index.boxes, T, Tlo[0], Thi[0], 0, len(index.glo), in_order,
                                   kern.columns_token(d))  # fmt: skip
    counts = np.empty(n, dtype=np.int64)
    counts[index.order] = in_order
    return counts, tested


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n,d,lam", [(2, 1, 0.5), (17, 3, 0.3), (1500, 8, 0.1), (2000, 2, 0.05),
                                     (2000, 2, 0.9), (1200, 16, 0.2)])  # fmt: skip
def test_box_pruned_counts_are_exact(n, d, lam, dtype):
    """The count pass skips leaf pairs whose boxes lie beyond the threshold and counts whole those within
    it, testing only the rest pair by pair (blobs; lattice ties on the boundary and duplicates; all
    points equal: every pair inside).  The counts equal the oracle's for any number of parts, more parts
    than groups included, each building its own k-d index or all sharing one."""
    for X in (blobs(n, d, seed=n), awkward(n, d, seed=n), np.ones((n, d))):
        Xw = cpu.prepare(normalised(X), dtype)
        T = plan.count_threshold(plan.diameter(cpu.diameter_part(Xw, 0, 1)), lam)
        expected = oracle.cdf_ts_step(Xw.astype(np.float64), lam, "epsilon", None).counts
        for parts, index in ((1, None), (3, None), (3, cpu.pair_index(Xw)), (40, cpu.pair_index(Xw))):
            counts = sum(cpu.counts_part(Xw, i, parts, T, index) for i in range(parts))
            np.testing.assert_array_equal(counts, expected, err_msg=f"{parts} parts")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n,d,k", [(2, 1, 1), (40, 3, 39), (1500, 2, 10), (1500, 8, 1), (1200, 16, 63)])
def test_box_pruned_kth_radii_are_exact(n, d, k, dtype):
    """Each row leaf visits the others nearest box first and stops where their boxes are farther than its
    rows' current k + 1-th ``sq`` (blobs at d = 2 rule out most; lattice ties and duplicates; all points
    equal; k up to the buffer's edge and n - 1): the radii equal the oracle's for any number of parts,
    more parts than leaves included, each building its own k-d index or all sharing one."""
    k = min(k, n - 1)
    for X in (blobs(n, d, seed=n), awkward(n, d, seed=n), np.ones((n, d))):
        Xw = cpu.prepare(normalised(X), dtype)
        s = oracle.pairwise_distances(Xw.astype(np.float64))
        for parts, index in ((1, None), (3, None), (3, cpu.pair_index(Xw)), (70, cpu.pair_index(Xw))):
            kth = sum(cpu.kth_part(Xw, part, parts, k, index) for part in range(parts))
            np.testing.assert_array_equal(kth, oracle.kth_neighbour_radius(s, k), err_msg=f"{parts} parts")


def test_boxes_decide_most_count_pairs_of_blobs():
    """Where boxes decide (blobs at d = 2 and 3: 18% and 35% of the pairs left at n = 3000; at d = 8 the
    boxes of 3000 points are too large, 59%), the kernel tests well under all pairs one by one (and the
    counts stay exact); on two far stacks of equal points it tests none (each leaf pair wholly inside
    or beyond)."""
    for d in (2, 3):
        X = normalised(blobs(3000, d, seed=d))
        counts, tested = _pairs_tested_one_by_one(X, 0.1)
        S = oracle.pairwise_distances(X)
        expected = np.count_nonzero(S / S.max() <= 0.1, axis=1)
        np.testing.assert_array_equal(counts, expected)
        assert 0 < tested < 0.5 * 3000 * 2999 / 2, (d, tested)
    counts, tested = _pairs_tested_one_by_one(np.repeat(np.eye(2, 3), 150, axis=0), 0.1)
    assert tested == 0 and np.all(counts == 150)


def test_the_pair_index_holds_boxes_that_contain_its_leaves():
    """What one task hands every part of an iteration: each leaf's float64 box the tightest around its
    points, each group's box around its leaves'; the same index on every call."""
    X = normalised(awkward(1000, 3, seed=6))
    index = cpu.pair_index(X)
    Xs = X[index.order]
    starts = index.bounds[:-1]
    np.testing.assert_array_equal(index.lo, np.minimum.reduceat(Xs, starts))
    np.testing.assert_array_equal(index.hi, np.maximum.reduceat(Xs, starts))
    groups = np.arange(0, len(starts), kern.KD_GROUP)
    np.testing.assert_array_equal(index.glo, np.minimum.reduceat(index.lo, groups))
    np.testing.assert_array_equal(index.ghi, np.maximum.reduceat(index.hi, groups))
    again = cpu.pair_index(X.copy())
    assert all(np.array_equal(a, b) for a, b in zip(index, again, strict=True))


@pytest.mark.parametrize("X", [blobs(1000, 3, seed=1), awkward(1000, 2, seed=2), np.ones((100, 2))],
                         ids=["blobs", "ties", "constant"])  # fmt: skip
def test_kd_leaves_are_a_deterministic_split_into_small_compact_leaves(X):
    """The diameter's k-d split: a permutation of the points into leaves of at most ``leaf`` points,
    each half of a split at most the other's size + 1, the same on every call (every part repeats it)."""
    order, starts = kern.kd_leaves(X, 32)
    assert np.array_equal(np.sort(order), np.arange(len(X)))
    sizes = np.diff(starts)
    assert starts[0] == 0 and starts[-1] == len(X) and sizes.min() >= 16 and sizes.max() <= 32
    again = kern.kd_leaves(X.copy(), 32)
    assert np.array_equal(order, again[0]) and np.array_equal(starts, again[1])
    if len(X) == 1000 and X.shape[1] == 3:  # blobs: a leaf's box is a small part of the data's
        Xs = X[order]
        span = np.maximum.reduceat(Xs, starts[:-1]) - np.minimum.reduceat(Xs, starts[:-1])
        assert np.median(span.prod(axis=1)) < 0.01 * np.prod(X.max(0) - X.min(0))


def test_large_k_pass_in_sub_panels_equals_oracle():
    """k + 1 > 64 takes the partition path; a tiny budget forces many sub-panels of full rows."""
    X = normalised(blobs(300, 3, seed=4))
    s = oracle.pairwise_distances(X)
    m = s.max()
    for budget in (8 * 300 * 7, 8 * 300 * 1000):  # 7-row sub-panels; one sub-panel
        kth = sum(cpu.kth_part(X, part, 5, 150, budget_bytes=budget) for part in range(5))  # parts of 60 rows
        assert np.array_equal(kth / m, oracle.kth_neighbour_radius(s / m, 150))


def test_float32_kth_radii_keep_the_pair_their_float32_sq_misorders(monkeypatch):
    """The float32 sweep of the k-th radius rules pairs out by float32 ``sq`` widened by its error bound:
    on points whose float32 ``sq`` misorders the two nearest pairs, the radii are still the float64
    oracle's on those points, bit for bit; with the bound set to 0 the nearer pair is ruled out."""
    _, near = float32_misordered()
    s = oracle.pairwise_distances(near.astype(np.float64))
    np.testing.assert_array_equal(cpu.kth_part(near, 0, 1, 1), oracle.kth_neighbour_radius(s, 1))
    monkeypatch.setattr(cpu, "sq_bound_factors", lambda d, dtype: (1.0, 1.0, 0.0))
    assert cpu.kth_part(near, 0, 1, 1)[0] > oracle.kth_neighbour_radius(s, 1)[0]


def test_float32_kth_radii_beyond_float32s_largest_sq_are_the_float64_ones():
    """Regression (found by a simulator audit, 2026-11-28): a row whose k-th ``sq`` passes float32's
    largest value ruled out the pairs whose float32 ``sq`` overflowed to inf (``inf <= worst * grow``
    failed), though their float64 ``sq`` was below ``worst``: a radius 1.3x too large (the CUDA body had
    it right).  Unreachable through cdf_ts (its points are normalised, sq <= d), not for the bodies."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        X = (rng.random((5, 2)) * 4e19 - 2e19).astype(np.float32)
        s = oracle.pairwise_distances(X.astype(np.float64))
        for index in (None, cpu.pair_index(X)):
            np.testing.assert_array_equal(cpu.kth_part(X, 0, 1, 1, index), oracle.kth_neighbour_radius(s, 1))


@pytest.mark.parametrize(
    "n_ref,d",
    [(60, 3), (61, 1), (62, 8), (63, 13), (61, 16), (kern.REF_CHUNK + 3, 17)],
)  # groups of 4 references whole and short (also at a chunk's end); d below, at and above the 8 columns
# summed in registers, and d = 16 where the columns before the last 8 go through the buffer
def test_shift_sums_with_other_targets_equal_the_dense_formula(n_ref, d):
    """References P and targets Y apart (an out-of-sample shift): A(y) = mean_z rho(z, y), B = mean rho z."""
    rng = np.random.default_rng(1)
    P = normalised(awkward(n_ref, d, seed=2))
    Y = np.vstack([rng.uniform(-0.2, 1.2, size=(25, d)), P[:5]])  # some outside [0, 1], some on refs
    m, lam = oracle.pairwise_distances(P).max(), 0.2
    counts = np.count_nonzero(oracle.pairwise_distances(P) / m <= lam, axis=1)
    radius, q = plan.neighbourhood_from_counts(counts, n_ref, d, lam)
    A, B = cpu.shift_sums(P, Y, plan.shift_plan(m, radius, q, P.mean(axis=0), "float64"))
    s = oracle.pairwise_distances(P, Y) / m
    nb = oracle.Neighbourhood(m, radius, q, counts)
    rho = oracle.shift_ratios(s, oracle.scaled_distances(s, nb))
    assert np.abs(A - rho.mean(axis=0)).max() <= 1e-12
    assert np.abs(B - rho.T @ P / n_ref).max() <= 1e-12


def _float32_rho(P32, Y32, shift_plan):
    """rho(z, y) as the float32 kernels define it, in NumPy: ``sq`` summed column by column in float32;
    in the guard band (or at most ``exact_below``) rho from the float64 ``sq`` of the upcast coordinates
    (``plan.rho_float64``), elsewhere 1 at sq = 0, r(z) inside, ``a + b / sqrt(sq)`` in float32 outside."""
    sq32 = np.zeros((len(P32), len(Y32)), np.float32)
    sq64 = np.zeros((len(P32), len(Y32)))
    for j in range(P32.shape[1]):
        e = P32[:, j, None] - Y32[None, :, j]
        sq32 += e * e
        e64 = P32[:, j, None].astype(np.float64) - Y32[None, :, j].astype(np.float64)
        sq64 += e64 * e64
    with np.errstate(divide="ignore"):
        outside = shift_plan.a[:, None] + shift_plan.bm[:, None] / np.sqrt(sq32)
    lo, hi = shift_plan.Tlo[:, None], shift_plan.Thi[:, None]
    fast = np.where(sq32 == 0, 1.0, np.where(sq32 <= lo, shift_plan.rin[:, None], outside))
    band = (sq32 <= plan.exact_below(P32.shape[1], "float32")) | ((sq32 > lo) & (sq32 <= hi) & (sq32 != 0))
    z_of = np.broadcast_to(np.arange(len(P32))[:, None], sq64.shape)
    exact = np.vectorize(plan.rho_float64)(
        sq64, shift_plan.T[z_of], shift_plan.lam[z_of], shift_plan.q[z_of], shift_plan.m[0]
    )
    return np.where(band, exact, fast.astype(np.float32).astype(np.float64)), sq32


def test_float32_shift_sums_take_membership_from_the_float64_sq_in_the_guard_band():
    """On a lattice many float32 ``sq`` lie within rounding of the thresholds; the shift's rho there
    follows the float64 ``sq`` (the guard band re-check), checked against NumPy; with the band closed
    (T_hi = T_lo: the band's pairs taken as outside) the same kernel is off, so the check has teeth."""
    g = np.arange(11) / 10
    P = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)[::3]
    P32 = P.astype(np.float32)
    Y32 = P32[::5] + np.float32(0.05)
    m = float(np.sqrt(3))
    radius = np.full(len(P), np.sqrt(0.02 / 3))  # thresholds at the lattice's sq = 0.02
    shift_plan = plan.shift_plan(m, radius, radius * 0.9, P32.astype(np.float64).mean(axis=0), "float32")
    rho, sq32 = _float32_rho(P32, P32, shift_plan)
    band = (sq32 > shift_plan.Tlo[:, None]) & (sq32 <= shift_plan.Thi[:, None])
    assert band.sum() > 100  # the lattice does put pairs in the band
    A, B = cpu.shift_sums(P32, P32, shift_plan)
    assert np.abs(A - rho.mean(axis=0)).max() <= 1e-12
    assert np.abs(B - rho.T @ P32.astype(np.float64) / len(P)).max() <= 1e-12
    rho_y, _ = _float32_rho(P32, Y32, shift_plan)
    assert np.abs(cpu.shift_sums(P32, Y32, shift_plan)[0] - rho_y.mean(axis=0)).max() <= 1e-12
    A_closed, _ = cpu.shift_sums(P32, P32, dataclasses.replace(shift_plan, Thi=shift_plan.Tlo))
    assert np.abs(A_closed - rho.mean(axis=0)).max() > 1e-11  # rho is continuous at the boundary: small


KERNELS_CACHED_SCRIPT = """
import numpy as np
from cdfts_dask.engine import cpu, plan
from cdfts_dask.engine import cpu_kernels as kern

def state():
    eps, knn = cpu.per_d_kernels("epsilon", None), cpu.per_d_kernels("knn", 3)
    any_cached, eps3 = kern.kernels_cached(3, "float64", eps)
    return [any_cached, eps3, kern.kernels_cached(3, "float64", knn)[1],
            kern.kernels_cached(3, "float32", eps)[1], kern.kernels_cached(4, "float64", eps)[1]]

X = np.random.default_rng(0).uniform(size=(40, 3))
print(state())
m = plan.diameter(cpu.diameter_part(X, 0, 1))
counts = cpu.counts_part(X, 0, 1, plan.count_threshold(m, 0.2))
cpu.shift_part(X, 0, 40, plan.epsilon_plan(m, 0.2, counts, cpu.column_mean(X), "float64"))
print(state())
cpu.kth_part(X, 0, 1, 3)
print(state())
X5 = np.random.default_rng(0).uniform(size=(40, 5))
m5 = plan.diameter(cpu.diameter_part(X5, 0, 1))
radius5 = plan.knn_radius(cpu.kth_part(X5, 0, 1, 3), m5)
cpu.shift_part(X5, 0, 40, plan.knn_plan(m5, 3, radius5, cpu.column_mean(X5), "float64"))
print([kern.kernels_cached(5, "float64", cpu.per_d_kernels(e, 3))[1] for e in ("epsilon", "knn")])
"""


@pytest.mark.slow  # compiles the kernels in a fresh cache: about 10 s
def test_kernels_cached_tells_which_number_of_columns_is_compiled(tmp_path):
    """In an empty numba cache nothing is cached; after an epsilon iteration's kernels ran on d = 3
    float64 points, those are, and the k-NN pass's is not until it runs; d = 3 in float32 and d = 4
    never are (they compile on first use).  After a k-NN iteration alone on d = 5, the epsilon count's
    kernel is not cached for d = 5 (found by a mutation audit: the count kernel dropped from the epsilon
    run's list, whose shift kernel the k-NN run had compiled, made the "compiling" message silent)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    script = [sys.executable, "-c", KERNELS_CACHED_SCRIPT]
    out = subprocess.run(script, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "[False, False, False, False, False]",
        "[True, True, False, False, False]",
        "[True, True, True, False, False]",
        "[False, True]",
    ]


@pytest.mark.parametrize("name,X,estimator,k,dtype", ILL_CONDITIONED, ids=[c[0] for c in ILL_CONDITIONED])
def test_references_whose_outside_rho_cancels_are_decided_in_float64(name, X, estimator, k, dtype):
    """Regression: a k-NN outlier's ``a + b / s`` cancelled (float32 2.7e-3 and float64 5e-5 off the
    oracle, exit 0), and ``r = q / lam`` of two points 1e-40 apart overflowed float32 (NaN positions).
    Such a reference's pairs are now decided in float64 in the oracle's order (``plan.rho_float64``)."""
    assert_step_is_the_oracles(cpu, X, estimator, k, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_pair_exactly_on_the_threshold_between_two_leaves_is_counted(dtype):
    """Two k-d leaves of 32 points (1-D, exact binary values) whose boxes are exactly lam m apart: the
    nearest pair across them lies on the threshold (s = lam, inside), so the leaf pair's box gap equals
    the threshold and must not rule it out.  The counts equal the exact ones (rational arithmetic)."""
    from fractions import Fraction

    left = np.arange(32) / 64  # 0 .. 31/64
    right = 47 / 64 + np.arange(32) * (17 / 64) / 31  # 47/64 .. 1: 47/64 - 31/64 = 1/4 = lam
    X = np.concatenate([left, right])[:, None]
    assert X.min() == 0 and X.max() == 1  # m = 1, already normalised
    lam = 0.25
    exact = [sum(abs(Fraction(z) - Fraction(y)) <= Fraction(lam) for y in X[:, 0]) for z in X[:, 0]]
    Xw = cpu.prepare(X, dtype)
    T = plan.count_threshold(plan.diameter(cpu.diameter_part(Xw, 0, 1)), lam)
    counts = cpu.counts_part(Xw, 0, 1, T)
    np.testing.assert_array_equal(counts, exact)
    np.testing.assert_array_equal(oracle.cdf_ts_step(X, lam).counts, exact)


def test_a_pair_just_beyond_the_threshold_between_two_leaves_is_not_counted():
    """Four k-d leaves of 24 points (1-D): leaves 0 and 1 are all within lam = 0.5 of each other but for
    their two extreme points, 0.5 + 1e-10 apart (a squared distance 4e-10 relatively above the
    threshold): the leaf pair's largest possible ``sq`` (its box bound) is above the threshold, so it
    must not be counted whole.  The counts equal the exact ones (rational arithmetic)."""
    from fractions import Fraction

    X = np.concatenate([np.linspace(0, 0.2, 24), np.linspace(0.3, 0.5 + 1e-10, 24), np.linspace(0.6, 1, 48)])
    X = X[:, None]
    lam = 0.5
    exact = [sum(abs(Fraction(z) - Fraction(y)) <= Fraction(lam) for y in X[:, 0]) for z in X[:, 0]]
    T = plan.count_threshold(plan.diameter(cpu.diameter_part(X, 0, 1)), lam)
    np.testing.assert_array_equal(cpu.counts_part(X, 0, 1, T), exact)
    np.testing.assert_array_equal(oracle.cdf_ts_step(X, lam).counts, exact)
