"""``dtype="float32"``: exact neighbourhoods, positions within a documented tolerance of the oracle.

Contract (docs/BENCHMARKS.md): float32 kernels compute sq in float32 and
re-check pairs in a guard band around the threshold in float64, so counts and
k-NN radii equal the float64 oracle's on the float32-rounded points *exactly*;
rho is float32 and A, B accumulate in float64, so one iteration is within
1e-6 (max abs) of the oracle step on the rounded points, boundary ties included
(exact membership), and a few iterations within 1e-5 of the float64 oracle run
on the data below (duplicates included), as long as no two distinct points are
closer than float32 resolution (those become duplicates when rounded; under k-NN
a radius of 0 instead of ~1e-10 changes rho without bound: a discontinuity of
the algorithm, see docs/BENCHMARKS.md) and no pair lies exactly on the
neighbourhood's edge of the float64 run (rounding to float32 can move it across:
README's ``dtype`` row).
"""

from __future__ import annotations

import numpy as np
import pytest
from points import (
    assert_bodies_step_is_the_oracles,
    awkward,
    blobs,
    bodies_step,
    float32_sq,
    float32_subnormal_rounding_cases,
    float32_underflow_cases,
    float32_worst_rounded_case,
    normalised,
    rounded32,
)

from cdfts_dask import cdf_ts, oracle
from cdfts_dask.engine import cpu

ONE_STEP_TOL = 1e-6
RUN_TOL = 1e-5

UNDERFLOW = float32_underflow_cases()
SUBNORMAL = float32_subnormal_rounding_cases()


@pytest.mark.parametrize("n", [2, 17, 400])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 3)])
def test_float32_kernels_exact_membership(n, estimator, k):
    k = None if k is None else min(k, n - 1)
    X = normalised(awkward(n, 3, seed=n))
    lam = 0.3 if n < 20 else 0.1
    ref = oracle.cdf_ts_step(rounded32(X), lam, estimator, k)
    m, stats, Xn, _ = bodies_step(cpu, X, lam, estimator, k, dtype="float32")
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= ONE_STEP_TOL


def test_float32_guard_band_catches_boundary_pairs():
    """On a lattice many float32 sq land within rounding of T; counts still match exactly."""
    g = np.arange(11) / 10
    X = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)
    for lam in (0.1 / np.sqrt(3), 0.2 / np.sqrt(3), 0.1):
        ref = oracle.cdf_ts_step(rounded32(X), lam)
        _, counts, Xn, _ = bodies_step(cpu, X, lam, "epsilon", None, dtype="float32")
        np.testing.assert_array_equal(counts, ref.counts)
        assert np.abs(Xn - ref.X).max() <= ONE_STEP_TOL


@pytest.mark.parametrize("name,X,lam,estimator,k", UNDERFLOW, ids=[case[0] for case in UNDERFLOW])
def test_float32_pairs_whose_sq_underflows_are_decided_in_float64(name, X, lam, estimator, k):
    """Regression: where a float32 ``sq`` may have underflowed (at most ``plan.exact_below``), it decided
    membership (a guard band rounded to 0 counted a pair outside the neighbourhood in: counts [2 2 1 1]
    for [1 1 1 1]) and rho (1, as for a point and itself, off by 0.06 in the positions); both are now
    taken from the float64 ``sq``, as the oracle on the rounded points does."""
    assert_bodies_step_is_the_oracles(cpu, X, lam, estimator, k, "float32", parts=2)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 10)])
def test_float32_engine_within_tolerance(client, estimator, k):
    X = blobs(700, 4, seed=5)
    X0 = normalised(X)
    out, info = cdf_ts(
        X0,
        delta=1e-12,
        max_iter=1,
        estimator=estimator,
        k=k,
        client=client,
        tile_size=128,
        dtype="float32",
        return_info=True,
    )
    assert out.dtype == np.float32
    ref = oracle.cdf_ts_step(rounded32(X0), 0.1, estimator, k)
    assert np.abs(out - ref.X).max() <= ONE_STEP_TOL
    assert abs(info.deltas[0] - ref.delta) <= ONE_STEP_TOL
    # Delta is the float64 mean of |X_new - X| over the float32 positions (found by a mutation audit: the
    # difference and its sum taken in float32 passed the tolerance above, 1e-7 off)
    moved = np.abs(out.astype(np.float64) - rounded32(X0))  # rounded32: the float32 points, as float64
    assert info.deltas[0] == pytest.approx(moved.mean(), rel=1e-13, abs=0)
    run = cdf_ts(X, delta=1e-12, max_iter=4, estimator=estimator, k=k, client=client, dtype="float32")
    ref_run = oracle.cdf_ts_dense(X, delta=1e-12, max_iter=4, estimator=estimator, k=k)
    assert np.abs(run - ref_run.X).max() <= RUN_TOL


SLOW = pytest.mark.slow


def _tie_heavy():
    """The 9-point example of issue 9 (duplicates, equal gaps) and a lattice with duplicated points."""
    g = np.arange(5) / 4
    lattice = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)
    return [np.array([3.0, 2, 2, 1, 1, 0, 0, 0, 0])[:, None], np.vstack([lattice, lattice[::7]])]


@pytest.mark.parametrize(
    "estimator,k",
    [("knn", 1), pytest.param("knn", 3, marks=SLOW), pytest.param("epsilon", None, marks=SLOW)],
)  # k = 1 is the case that once failed (the 9-point example); the whole suite runs all three
def test_float32_run_on_tie_heavy_data_within_tolerance(client, estimator, k):
    """Four iterations with duplicates and exact ties stay within RUN_TOL of the float64 oracle run
    (before the oracle kept duplicates bit-identical, this example was 0.047 off, in float64 too)."""
    for X in _tie_heavy():
        ref = oracle.cdf_ts_dense(X, lam=0.05, delta=1e-12, max_iter=4, estimator=estimator, k=k)
        out = cdf_ts(X, lam=0.05, delta=1e-12, max_iter=4, estimator=estimator, k=k, client=client,
                     tile_size=4 if len(X) < 20 else 50, dtype="float32")  # fmt: skip
        assert np.abs(out - ref.X).max() <= RUN_TOL


def test_dtype_validation():
    X = blobs(30, 2)
    with pytest.raises(ValueError, match="dtype"):
        cdf_ts(X, dtype="float16")
    with pytest.raises(ValueError, match="dense"):
        cdf_ts(X, dtype="float32", method="dense")
    with pytest.raises(ValueError, match="backend"):
        cdf_ts(X, backend="tpu")


def test_a_float32_run_on_a_dask_array_says_float32(client):
    """Regression: the dask array returned for a dask array in declared float64 and computed float32."""
    import dask.array as da

    X = np.random.default_rng(3).random((90, 2))
    Y = cdf_ts(da.from_array(X, chunks=45), max_iter=1, dtype="float32", client=client, tile_size=32)
    assert Y.dtype == np.float32 and client.compute(Y).result().dtype == np.float32
    assert cdf_ts(X, max_iter=1, dtype="float32", client=client, tile_size=32).dtype == np.float32


@pytest.mark.parametrize("side", ["outside", "inside"])
@pytest.mark.parametrize("d", [1, 3, 8, 16])
def test_float32_step_decides_the_worst_rounded_pairs_in_float64(d, side):
    """A pair whose float32 ``sq`` is off its float64 ``sq`` by more than a quarter of the guard band
    ``g = 2 (d + 4) 2^-24`` (about d + 1.5 units of 2^-24 against the bound's d + 3; built greedily,
    column by column): with lam just below its s, the pair is outside while its float32 ``sq`` lies
    below the threshold; with lam at its s, inside while its float32 ``sq`` lies above.  Only a band as
    wide as the float32 error sends it to the float64 test (a band 8 times narrower, or one without its
    upper half, misjudged 4 of these 8 cases or more).  Counts equal the oracle's on the float32 points."""
    X32, lam, err = float32_worst_rounded_case(d, side)
    assert err > (d + 4) / 2  # the case under test: more than g / 4 off
    ref = assert_bodies_step_is_the_oracles(cpu, X32, lam, "epsilon", None, "float32", parts=1)
    assert ref.counts.tolist() == ([1, 1, 1] if side == "outside" else [2, 2, 1])


@pytest.mark.parametrize("name,X,lam,estimator,k", SUBNORMAL, ids=[case[0] for case in SUBNORMAL])
def test_float32_subnormal_sq_rounded_up_is_decided_in_float64(name, X, lam, estimator, k):
    """Pairs whose float32 ``sq`` is subnormal and rounded up, to nearly twice the float64 ``sq``
    (``points.float32_subnormal_rounding_cases``): inside the neighbourhood only when the below-floor
    band reaches up to ``plan.exact_below``, and the nearest neighbour only when the k-NN pre-filter is
    not trusted below ``plan.FLOAT32_SQ_FLOOR``.  Counts and radii equal the oracle's."""
    X64 = X.astype(np.float64)
    e = ((X64[1] - X64[[0, 2]]) ** 2).sum(axis=1)
    v = np.array([float32_sq(X[1], X[0]), float32_sq(X[1], X[2])], dtype=np.float64)
    assert (v > 1.8 * e).any() and (e > 0).all()  # the case under test: a float32 sq nearly twice the float64
    assert_bodies_step_is_the_oracles(cpu, X, lam, estimator, k, "float32", parts=1)
