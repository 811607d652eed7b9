"""Out-of-core input: a Zarr path (or dask array) is read chunk-wise by the workers, never by the client."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import cdfts_dask
from cdfts_dask.lazy import lazy_input

zarr = pytest.importorskip("zarr")


def make_zarr(path, X: np.ndarray, rows_per_chunk: int):
    arr = zarr.create_array(str(path), shape=X.shape, dtype=X.dtype, chunks=(rows_per_chunk, X.shape[1]))
    arr[...] = X
    return str(path)


def test_zarr_input_tiled_equals_dense(tmp_path, client):
    X = np.random.default_rng(1).random((300, 3))
    path = make_zarr(tmp_path / "in.zarr", X, 64)  # 5 chunks, read by 5 worker tasks
    ref = cdfts_dask.cdf_ts(X, max_iter=3, method="dense")
    out = cdfts_dask.cdf_ts(
        path, max_iter=3, method="tiled", client=client, tile_size=100, output=tmp_path / "out.zarr"
    )
    assert isinstance(out, zarr.Array)
    np.testing.assert_allclose(out[...], ref, rtol=0, atol=1e-9)


def test_dask_array_input_stays_on_workers(client):
    """Lazy in, lazy out: with the caller's client the result is a dask array whose data is still on
    the workers (chunked like the input) until the caller computes it."""
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(2).random((200, 2))
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    out = cdfts_dask.cdf_ts(da.from_array(X, chunks=(50, 2)), max_iter=2, method="tiled", client=client)
    assert isinstance(out, da.Array) and out.chunks == ((50, 50, 50, 50), (2,))
    assert any(type(v).__name__ == "Future" for v in dict(out.dask).values())  # not fetched to the client
    np.testing.assert_allclose(client.compute(out).result(), ref, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_dask_array_out_outlives_an_embedded_cluster():
    """Without a client the run's cluster closes at the end: the dask array returned holds the data."""
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(4).random((150, 2))
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    dense = cdfts_dask.cdf_ts(da.from_array(X, chunks=(40, 2)), max_iter=2, method="dense")
    tiled = cdfts_dask.cdf_ts(da.from_array(X, chunks=(40, 2)), max_iter=2, method="tiled", n_workers=1)
    for out in (dense, tiled):
        assert isinstance(out, da.Array) and out.chunks == ((40, 40, 40, 30), (2,))
        np.testing.assert_allclose(out.compute(scheduler="sync"), ref, rtol=0, atol=1e-9)


def test_nan_in_a_zarr_chunk_is_reported_by_the_worker(tmp_path, client):
    X = np.random.default_rng(3).random((100, 2))
    X[77, 1] = np.nan
    path = make_zarr(tmp_path / "bad.zarr", X, 25)
    with pytest.raises(ValueError, match=r"contains NaN or inf \(first at row 77, column 1"):
        cdfts_dask.cdf_ts(path, method="tiled", client=client)


def test_only_metadata_is_read_on_the_client(tmp_path, monkeypatch):
    X = np.random.default_rng(4).random((40, 3))
    path = make_zarr(tmp_path / "in.zarr", X, 10)

    def boom(*args, **kwargs):  # any client-side read of the values fails the test
        raise AssertionError("client read the array values")

    monkeypatch.setattr(zarr.Array, "__getitem__", boom)
    lazy = lazy_input(path)
    assert lazy.shape == (40, 3)


def _client_peak(path, client, tile: int, out) -> int:
    """tracemalloc peak (bytes) of this process while cdf_ts runs on ``path`` and writes ``out``."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        cdfts_dask.cdf_ts(path, max_iter=1, method="tiled", client=client, tile_size=tile, output=out)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_client_memory_does_not_grow_with_input(tmp_path, client):
    """Quadruple n at fixed d (same number of chunks, panels and tasks): the client's peak stays flat.

    Loading on the client (the in-memory path) grows the peak by ~3x the
    extra input bytes (read + float64 copy + scatter); here it may grow by
    at most a quarter of them.
    """
    d = 128
    sizes = {}
    for n in (96, 384, 1536):
        X = np.random.default_rng(n).random((n, d))
        sizes[n] = (make_zarr(tmp_path / f"in{n}.zarr", X, n // 4), X.nbytes)
    _client_peak(sizes[96][0], client, 24, tmp_path / "warm.zarr")  # imports, first-use caches
    small = _client_peak(sizes[384][0], client, 96, tmp_path / "out_small.zarr")
    large = _client_peak(sizes[1536][0], client, 384, tmp_path / "out_large.zarr")
    grown_input = sizes[1536][1] - sizes[384][1]  # 1.18 MB
    assert large - small < grown_input / 4, (small, large, grown_input)
    assert large < sizes[1536][1] + small, (small, large)  # never a full copy of the input
