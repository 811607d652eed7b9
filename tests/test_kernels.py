"""The fused numba kernels and the fused Dask engine equal the dense oracle (1e-9, float64).

Membership must be bit-identical to the oracle's ``S / m <= lam``; lattice data
puts many pairs exactly on the lambda boundary to exercise that.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_tiled_equals_oracle

from cdfts_dask import cdf_ts, fused, oracle
from cdfts_dask import fused_passes as fp
from cdfts_dask.oracle import cdf_ts_dense


def _blobs(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(3, d)) * 10
    which = rng.integers(0, 3, size=n)
    return centres[which] + rng.normal(size=(n, d)) * np.array([0.2, 1.0, 3.0])[which, None]


def _awkward(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Blobs with duplicated points, a constant column and lattice coordinates (boundary ties)."""
    rng = np.random.default_rng(seed)
    X = _blobs(n, d, seed)
    X[: n // 3] = np.round(rng.uniform(size=(n // 3, d)) * 10) / 10  # lattice: many equal distances
    if n >= 4:
        X[n // 2 :: 3] = X[: len(X[n // 2 :: 3])]  # duplicates
    if d >= 2:
        X[:, -1] = 3.0  # constant column
    return X


def _kernel_step(X, lam, estimator, k, dtype="float64", parts=3, tile=None):
    """One iteration with the fused task bodies run in-process (no Dask)."""
    n, d = X.shape
    X = fp.cast(X, dtype)
    cand_pair = fp.diameter_candidates(X)
    L, cand = cand_pair
    m = fp.diameter_from(
        L, *[fp.panel_max_sq(X, cand, a, b) for a, b in fp.triangle_panels(len(cand), parts)]
    )
    if estimator == "epsilon":
        T = float(fused.sq_thresholds(m, lam)[0])
        counts = fp.sum_counts(*[fp.panel_counts(X, a, b, T, dtype) for a, b in fp.triangle_panels(n, parts)])
        radius, q, stats = np.full(n, lam), (counts / n) ** (1 / d), counts
    else:
        rows = tile or max(1, n // parts)
        kth = np.concatenate([fp.panel_kth_distance(X, a, min(n, a + rows), k) for a in range(0, n, rows)])
        radius, q = kth / m, np.full(n, (k / n) ** (1 / d))
        stats = radius
    plan = fp.shift_plan(X, m, radius, q, dtype)
    rows = tile or max(1, n // parts)
    Y = np.concatenate([fp.panel_shift(X, a, min(n, a + rows), plan, dtype) for a in range(0, n, rows)])
    return m, stats, oracle.minmax_normalise(Y)[0]


@pytest.mark.parametrize("n", [2, 3, 17, 257, 1000])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 1), ("knn", 7), ("knn", "big")])
def test_fused_kernels_equal_oracle(n, estimator, k):
    if k == "big":
        k = max(1, n - 2)  # the large-k partition fallback
    k = None if k is None else min(k, n - 1)
    X = oracle.minmax_normalise(_awkward(n, 3, seed=n))[0]
    lam = 0.3 if n < 20 else 0.1
    ref = oracle.cdf_ts_step(X, lam, estimator, k)
    m, stats, Xn = _kernel_step(X, lam, estimator, k, tile=max(1, n // 3 + 1))
    assert m == ref.neighbourhood.m
    if estimator == "epsilon":
        np.testing.assert_array_equal(stats, ref.neighbourhood.counts)
    else:
        np.testing.assert_array_equal(stats, ref.neighbourhood.radius)
    assert np.abs(Xn - ref.X).max() <= 1e-9


def test_threshold_is_the_exact_boundary():
    rng = np.random.default_rng(3)
    for m, lam in zip(rng.uniform(0.1, 3, 50), rng.uniform(0.01, 0.99, 50), strict=True):
        T = fused.sq_thresholds(m, lam)[0]
        assert np.sqrt(T) / m <= lam
        assert np.sqrt(np.nextafter(T, np.inf)) / m > lam


def test_triangle_panels_cover_the_rows():
    for n, parts in [(1, 1), (2, 5), (10, 3), (1000, 7)]:
        spans = fp.triangle_panels(n, parts)
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(b > a for a, b in spans)
        assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))


def test_all_points_coincide(client):
    X = np.ones((20, 3))
    ref = cdf_ts_dense(X, delta=1e-12, max_iter=2)
    out = cdf_ts(X, delta=1e-12, max_iter=2, method="tiled", client=client, tile_size=6)
    assert np.abs(out - ref.X).max() <= 1e-9


@pytest.mark.parametrize(
    "n,tile,estimator,k",
    [
        (2, 1, "epsilon", None),
        (5, 2, "knn", 1),
        (97, 10, "epsilon", None),
        (97, 10, "knn", 5),
        (300, 64, "knn", 150),
        (640, 128, "epsilon", None),
        (2000, 333, "epsilon", None),
        (2000, 333, "knn", 10),
    ],
)
def test_fused_engine_equals_oracle(client, n, tile, estimator, k):
    X = _awkward(n, 4, seed=n + 1)
    lam = 0.3 if n < 20 else 0.1
    iters = 2 if n >= 2000 else 3
    assert_tiled_equals_oracle(X, client, tile, estimator, k, lam=lam, max_iter=iters)


def test_default_tile_size_one_worker(client1):
    X = _blobs(1200, 5, seed=2)
    ref = cdf_ts_dense(X, delta=1e-12, max_iter=2)
    out = cdf_ts(X, delta=1e-12, max_iter=2, method="tiled", client=client1)
    assert np.abs(out - ref.X).max() <= 1e-9


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 4)])
def test_engine_shift_variants(client, symmetric, dtype, estimator, k):
    """Both shift layouts (symmetric pairs / target panels), one TiledEngine.step against the oracle."""
    from cdfts_dask.engine import TiledEngine

    X = oracle.minmax_normalise(_awkward(211, 3, seed=11))[0]
    ref = oracle.cdf_ts_step(fp.as64(fp.cast(X, dtype)), 0.1, estimator, k)
    eng = TiledEngine(client, 50, dtype=dtype, symmetric=symmetric)
    st = eng.step(client.scatter(X, broadcast=True, hash=False), 211, 3, 0.1, estimator, k)
    tol = 1e-9 if dtype == "float64" else 1e-6
    assert np.abs(st.X.result() - ref.X).max() <= tol
    assert abs(st.delta - ref.delta) <= tol and st.m == ref.neighbourhood.m
    expected = ref.neighbourhood.counts if estimator == "epsilon" else ref.neighbourhood.radius
    np.testing.assert_array_equal(st.stats.result(), expected)


@pytest.mark.parametrize("n,d", [(2, 1), (3, 2), (17, 3), (600, 4), (1500, 8)])
def test_block_pruned_diameter_is_exact(n, d):
    """k-d block bounding boxes prune pairs but the maximum equals the oracle's ``max S`` bit for bit."""
    for X in (_blobs(n, d, seed=n), _awkward(n, d, seed=n), np.ones((n, d))):
        X = oracle.minmax_normalise(X)[0]
        expected = oracle.pairwise_distances(X).max()
        for parts in (1, 3):
            maxima = [fp.diameter_blocks(X, i, parts) for i in range(parts)]
            assert fp.diameter_from(0.0, *maxima) == expected


def test_engine_above_single_task_diameter(client):
    """n above DIAMETER_SINGLE_MAX_N: the diameter is split into parts across the workers."""
    from cdfts_dask.fused_engine import DIAMETER_SINGLE_MAX_N

    n = DIAMETER_SINGLE_MAX_N + 100
    X = _awkward(n, 2, seed=3)
    ref = cdf_ts_dense(X, delta=1e-12, max_iter=1)
    out = cdf_ts(X, delta=1e-12, max_iter=1, method="tiled", client=client)
    assert np.abs(out - ref.X).max() <= 1e-9


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 3)])
def test_unfused_xp_engine_path(client, estimator, k):
    """The xp-generic unfused path (the GPU backend's building blocks) on NumPy still equals the oracle."""
    from cdfts_dask.engine import TiledEngine

    X = oracle.minmax_normalise(_awkward(150, 3, seed=4))[0]
    ref = oracle.cdf_ts_step(X, 0.1, estimator, k)
    Xf = client.scatter(X, broadcast=True, hash=False)
    st = TiledEngine(client, 40).step_xp(Xf, 150, 3, 0.1, estimator, k)
    assert np.abs(st.X.result() - ref.X).max() <= 1e-9
