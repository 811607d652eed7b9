"""GPU backend (CuPy + dask-cuda): equals the oracle to 1e-9 in float64.

Skipped (with the reason) where CuPy, a CUDA device or dask-cuda is missing.
These tests were written without a GPU and have not been run yet.
"""

from __future__ import annotations

import numpy as np
import pytest

from cdfts_dask import cdf_ts, oracle


def _cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception as exc:  # CUDA driver missing or broken
        pytest.skip(f"no usable CUDA device: {exc}")
    return cupy


def _data(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = (
        rng.normal(size=(n, d)) * rng.choice([0.2, 1.0, 3.0], size=(n, 1))
        + rng.integers(0, 3, size=(n, 1)) * 4
    )
    X[: n // 4] = np.round(rng.uniform(size=(n // 4, d)) * 10) / 10  # lattice: boundary ties
    X[n // 2 :: 5] = X[: len(X[n // 2 :: 5])]  # duplicates
    return oracle.minmax_normalise(X)[0]


@pytest.mark.gpu
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 5)])
def test_gpu_tiles_equal_oracle(estimator, k):
    """The GPU task bodies, run in-process on one device, reproduce one oracle step."""
    cupy = _cupy()
    from cdfts_dask import fused, gpu

    X = _data(333, 3, seed=1)
    ref = oracle.cdf_ts_step(X, 0.1, estimator, k)
    Xd = gpu.to_device(X)
    n, d = X.shape
    tile = 100
    parts = [(a, min(n, a + tile)) for a in range(0, n, tile)]
    m = gpu._diameter(*[gpu.panel_max_sq(Xd, a, b, tile) for a, b in parts])
    assert m == ref.neighbourhood.m
    if estimator == "epsilon":
        T = float(fused.sq_thresholds(m, 0.1)[0])
        counts = np.concatenate([gpu.panel_counts(Xd, a, b, tile, T) for a, b in parts])
        np.testing.assert_array_equal(counts, ref.neighbourhood.counts)
        plan, _ = gpu._plan_epsilon(Xd, m, 0.1, counts)
    else:
        kth = np.concatenate([gpu.panel_kth(Xd, a, b, k) for a, b in parts])
        np.testing.assert_array_equal(kth / m, ref.neighbourhood.radius)
        plan, _ = gpu._plan_knn(Xd, m, k, kth)
    Z, total, lo, hi = gpu._finish(Xd, *[gpu.panel_shift(Xd, a, b, tile, plan) for a, b in parts])
    assert isinstance(Z, cupy.ndarray)
    assert np.abs(cupy.asnumpy(Z) - ref.X).max() <= 1e-9
    assert abs(total / (n * d) - ref.delta) <= 1e-9


@pytest.mark.gpu
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 7)])
def test_gpu_backend_equals_oracle(estimator, k, tmp_path):
    """``backend="cupy"`` end to end on a LocalCUDACluster, with a checkpoint written from the device."""
    _cupy()
    pytest.importorskip("dask_cuda", reason="dask-cuda is not installed")
    X = _data(500, 4, seed=2)
    ref = oracle.cdf_ts_dense(X, delta=1e-12, max_iter=3, estimator=estimator, k=k)
    out, info = cdf_ts(
        X,
        delta=1e-12,
        max_iter=3,
        estimator=estimator,
        k=k,
        backend="cupy",
        tile_size=128,
        checkpoint=tmp_path / "run.zarr",
        return_info=True,
    )
    assert isinstance(out, np.ndarray)
    assert np.abs(out - ref.X).max() <= 1e-9
    assert np.allclose(info.deltas, ref.deltas, rtol=0, atol=1e-9)


def test_gpu_rejects_float32():
    """Validated before any GPU is touched (runs everywhere)."""
    with pytest.raises(ValueError, match="float64' only"):
        cdf_ts(_data(50, 2), backend="cupy", dtype="float32")


@pytest.mark.parametrize("n,tile,k", [(37, 8, 1), (200, 64, 100), (150, 150, 149)])
def test_gpu_reference_passes_on_numpy_equal_oracle(n, tile, k):
    """The GPU module's array-API reference passes, run on NumPy arrays here (no GPU needed).

    This checks their logic (panels, sub-panels, thresholds, selection), not CuPy itself.
    """
    from cdfts_dask import fused, gpu

    X = _data(n, 3, seed=n)
    s, nb = oracle.neighbourhood(X, 0.2)
    parts = [(a, min(a + tile, n)) for a in range(0, n, tile)]
    m = np.sqrt(max(gpu.panel_max_sq(X, a, b, tile) for a, b in parts))
    assert m == nb.m
    T = float(fused.sq_thresholds(m, 0.2)[0])
    counts = np.concatenate([gpu.panel_counts(X, a, b, tile, T) for a, b in parts])
    assert np.array_equal(counts, nb.counts)
    kth = np.concatenate([gpu.panel_kth(X, a, b, k, tile * tile) for a, b in parts])
    assert np.array_equal(kth / m, oracle.kth_neighbour_radius(s, k))
