"""The tiled Dask engine equals the dense oracle (1e-9, float64) on every path."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_tiled_equals_oracle

from cdfts_dask import cdf_ts


def _data(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(3, d)) * 10
    scales = np.array([0.2, 1.0, 3.0])
    which = rng.integers(0, 3, size=n)
    return centres[which] + rng.normal(size=(n, d)) * scales[which, None]


@pytest.mark.parametrize(
    "n,tile", [(2, 1), (2, 2), (3, 2), (17, 5), (64, 16), (300, 64), (300, 300), (301, 100)]
)
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 1), ("knn", "half")])
def test_tiled_equals_oracle(client, n, tile, estimator, k):
    if k == "half":
        k = max(1, n // 2)
    assert_tiled_equals_oracle(_data(n, 3, seed=n), client, tile, estimator, k, lam=0.3 if n < 20 else 0.1)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 40)])
def test_one_worker_and_larger_n(client1, estimator, k):
    assert_tiled_equals_oracle(_data(1500, 4, seed=7), client1, 256, estimator, k, max_iter=2)


def test_two_workers_larger_n_uneven_tiles(client):
    assert_tiled_equals_oracle(_data(2500, 2, seed=8), client, 333, max_iter=2)


def test_syn_reference_deltas_on_engine(client, syn):
    X, _ = syn
    _, info = cdf_ts(X, lam=0.1, delta=0.01, method="tiled", client=client, tile_size=400, return_info=True)
    assert np.allclose(info.deltas, [0.16476, 0.03125, 0.01524, 0.01092, 0.00864], atol=1e-5)


def test_duplicates_constant_columns_and_identical_points(client):
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.uniform(size=40), np.zeros(40)])
    X = np.vstack([X, X[:8], X[:8]])
    for est, k in [("epsilon", None), ("knn", 1), ("knn", 2)]:
        assert_tiled_equals_oracle(X, client, 7, est, k)
    same = cdf_ts(np.ones((9, 3)), method="tiled", client=client, tile_size=4)
    assert np.all(same == 0.0)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 30)])
def test_graph_grows_linearly_with_n(client, estimator, k):
    """Tasks per iteration are proportional to the number of panels n / tile, not its square."""
    from distributed import get_task_stream

    counts = []
    for n in (400, 1600):
        X = _data(n, 2, seed=n)
        with get_task_stream(client) as ts:
            cdf_ts(X, lam=0.1, delta=1e-12, max_iter=1, method="tiled", client=client, tile_size=100,
                   estimator=estimator, k=k)
        counts.append(len(ts.data))
    ratio = counts[1] / counts[0]
    assert ratio < 6, counts  # 4x the panels; a quadratic graph would give ~16x


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 2000)])
def test_memory_per_task_is_bounded_by_the_tile(estimator, k):
    """Run each pass's task body for one panel in this process and trace its allocations.

    n = 4000 would need 128 MB for one n x n float64 matrix; a task with
    tile 100 may hold only a few tile^2 (80 kB) temporaries plus O(n d).
    """
    import tracemalloc

    from cdfts_dask import passes

    n, tile = 4000, 100
    X = np.random.default_rng(0).uniform(size=(n, 3))
    tracemalloc.start()
    if estimator == "epsilon":
        m = passes.panel_max_distance(X, 0, tile, tile)
        passes.panel_counts(X, 0, tile, tile, m, 0.1)
        radius, q = np.full(n, 0.1), np.full(n, 0.5)
    else:
        kth, m = passes.panel_kth_distance(X, 0, tile, k, tile * tile)
        radius, q = np.full(n, kth.mean() / m), np.full(n, 0.5)
    passes.panel_shift(X, 0, tile, tile, m, radius, q)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2_000_000, peak


def test_large_k_pass_in_sub_panels_equals_oracle():
    """k + 1 > 64 takes the partition path; a tiny budget forces many sub-panels of full rows."""
    from cdfts_dask import fused_passes
    from cdfts_dask.oracle import kth_neighbour_radius, neighbourhood

    X = _data(300, 3, seed=4)
    Xn = (X - X.min(0)) / (X.max(0) - X.min(0))
    s, nb = neighbourhood(Xn, 0.1)
    for budget in (8 * 300 * 7, 8 * 300 * 1000):  # 7-row sub-panels; one sub-panel
        kth = np.concatenate(
            [fused_passes.panel_kth_distance(Xn, a, min(a + 64, 300), 150, budget) for a in range(0, 300, 64)]
        )
        assert np.array_equal(kth / nb.m, kth_neighbour_radius(s, 150))
