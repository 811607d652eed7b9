"""Public API: inputs of every kind, outputs, the estimator conventions, validation."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import zarr

from cdfts_dask import CDFTS, cdf_ts, paths
from cdfts_dask.oracle import cdf_ts_dense


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(21)
    return np.vstack([rng.normal(0, 0.1, (50, 3)), rng.normal(1, 0.6, (70, 3))])


@pytest.fixture(scope="module")
def expected(X):
    return cdf_ts_dense(X, lam=0.2, delta=0.01).X


def test_numpy_dask_zarr_and_path_inputs_agree(tmp_path, X, expected):
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", header="a,b,c", comments="")
    z = zarr.create_array(str(tmp_path / "x.zarr"), shape=X.shape, dtype="f8", chunks=(50, 3))
    z[...] = X
    inputs = [
        X,
        X.tolist(),
        da.from_array(X, chunks=(40, 3)),
        z,
        tmp_path / "x.npy",
        str(tmp_path / "x.csv"),
        str(tmp_path / "x.zarr"),
    ]
    for inp in inputs:
        assert np.abs(cdf_ts(inp, lam=0.2, delta=0.01, method="dense") - expected).max() <= 1e-12


def test_output_to_zarr(tmp_path, X, expected, client):
    out = cdf_ts(
        X, lam=0.2, delta=0.01, method="tiled", client=client, tile_size=32, output=tmp_path / "y.zarr"
    )
    assert isinstance(out, zarr.Array)
    assert np.abs(out[...] - expected).max() <= 1e-9
    assert out.attrs["converged"] is True
    assert [p.name for p in tmp_path.iterdir()] == ["y.zarr"]  # no temporary left behind


@pytest.mark.parametrize("how", ["dense", "tiled", "sampled"])
def test_dask_array_in_npy_and_csv_out_writes_the_file(tmp_path, X, expected, client, how):
    """Regression: with a dask array in, ``output="o.npy"`` / ``"o.csv"`` returned the dask array and
    wrote no file (the sampled fit: the .npy write failed, the .csv was computed cell by cell)."""
    kw = {"dense": dict(method="dense"), "tiled": dict(method="tiled", client=client, tile_size=32),
          "sampled": dict(n_references=80, random_state=3)}[how]  # fmt: skip
    lazy_in = da.from_array(X, chunks=(40, 3))
    want = expected if how != "sampled" else cdf_ts(X, lam=0.2, delta=0.01, **kw)
    for name in ("o.npy", "o.csv"):
        out = cdf_ts(lazy_in, lam=0.2, delta=0.01, output=tmp_path / name, **kw)
        assert isinstance(out, da.Array) and out.chunks == lazy_in.chunks
        written = np.load(tmp_path / name) if name.endswith(".npy") else np.loadtxt(
            tmp_path / name, delimiter=",", skiprows=1)  # fmt: skip
        assert np.array_equal(written, out.compute())
        assert np.abs(written - want).max() <= (1e-9 if how == "tiled" else 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv", "o.npy"]


def test_auto_method_and_scheduler_address(X, expected, client):
    assert np.abs(cdf_ts(X, lam=0.2, delta=0.01) - expected).max() <= 1e-12  # auto -> dense
    addr = client.scheduler.address
    assert np.abs(cdf_ts(X, lam=0.2, delta=0.01, client=addr, tile_size=50) - expected).max() <= 1e-9


@pytest.mark.slow
def test_embedded_local_cluster_by_default(X, expected):
    out = cdf_ts(X, lam=0.2, delta=0.01, method="tiled", n_workers=1, tile_size=64)
    assert np.abs(out - expected).max() <= 1e-9


def test_estimator_conventions(X, expected):
    est = CDFTS(lam=0.2, delta=0.01)
    assert est.get_params()["lam"] == 0.2
    assert est.set_params(max_iter=50) is est and est.max_iter == 50
    Y = est.fit_transform(X)
    assert np.abs(Y - expected).max() <= 1e-12
    assert est.n_iter_ == len(est.deltas_) >= 1
    assert est.converged_ and est.deltas_[-1] <= 0.01 and est.n_features_in_ == 3
    assert repr(est) == "CDFTS(delta=0.01, lam=0.2, max_iter=50)"  # scikit-learn's repr: sorted names
    with pytest.raises(ValueError, match="Invalid parameter 'lambda'"):
        est.set_params(**{"lambda": 0.3})


def test_sklearn_clone_and_pipeline(X, expected):
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler

    est = clone(CDFTS(lam=0.2, delta=0.01))
    assert est.get_params() == CDFTS(lam=0.2, delta=0.01).get_params()
    assert np.abs(est.fit(X).embedding_ - expected).max() <= 1e-12
    pipe = make_pipeline(MinMaxScaler(), CDFTS(lam=0.2, delta=0.01))  # CDF-TS min-max normalises first anyway
    assert np.abs(pipe.fit_transform(X) - expected).max() <= 1e-9
    assert pipe[-1].n_iter_ >= 1 and pipe[-1].n_features_in_ == X.shape[1]


def test_progress_callback(X):
    """One report per iteration: its number, Delta (the run's), seconds, n, and the pair evaluations per
    second it counts, 2 n^2 per iteration (a reference and a shift pass; found by a mutation audit,
    2026-12-07: n^2 passed), infinite for a zero duration."""
    from cdfts_dask.runner import IterationReport

    reports = []
    _, info = cdf_ts(X, lam=0.2, delta=1e-12, max_iter=3, method="dense", progress=reports.append,
                     return_info=True)  # fmt: skip
    assert [r.iteration for r in reports] == [1, 2, 3]
    assert [r.delta for r in reports] == info.deltas and all(r.n == len(X) for r in reports)
    assert all(r.seconds > 0 and r.pairs_per_second == 2 * len(X) ** 2 / r.seconds for r in reports)
    assert IterationReport(1, 0.5, 2.0, 1000).pairs_per_second == 1e6
    assert IterationReport(1, 0.5, 0.0, 1000).pairs_per_second == float("inf")


def test_each_progress_report_times_its_own_iteration(X, monkeypatch):
    """A report's seconds are its iteration's, not the run's so far (found by a mutation audit,
    2026-12-07: timing from the run's start passed).  Under a clock that advances one second per reading,
    and is read once before and once after each iteration's step, every iteration took one second."""
    from cdfts_dask import runner

    class OneSecondPerReading:
        now = 0.0

        def perf_counter(self) -> float:
            self.now += 1.0
            return self.now

    monkeypatch.setattr(runner, "time", OneSecondPerReading())
    reports = []
    cdf_ts(X, lam=0.2, delta=1e-12, max_iter=3, method="dense", progress=reports.append)
    assert [(r.iteration, r.seconds) for r in reports] == [(1, 1.0), (2, 1.0), (3, 1.0)]


@pytest.mark.parametrize(
    "kwargs,exc,message",
    [
        (dict(lam=0.0), ValueError, r"lam must lie in the open interval \(0, 1\), got 0.0"),
        (dict(lam=1), ValueError, "lam must lie in the open interval"),
        (dict(lam="0.1"), TypeError, "lam must be a real number, got '0.1'"),
        (dict(delta=0), ValueError, "delta must be a positive finite number, got 0"),
        (dict(delta=-1.0), ValueError, "delta must be a positive"),
        (dict(max_iter=0), ValueError, "max_iter must be >= 1, got 0"),
        (dict(estimator="gauss"), ValueError, "estimator must be one of"),
        (dict(estimator="knn"), ValueError, "k is required"),
        (dict(estimator="knn", k=0), ValueError, r"k must lie in \[1, n - 1\] = \[1, 119\], got k=0"),
        (dict(estimator="knn", k=120), ValueError, "got k=120"),
        (dict(k=3), ValueError, "k is only used with estimator='knn'"),
        (dict(method="gpu"), ValueError, "method must be one of"),
        (dict(tile_size=0), ValueError, "tile_size must be >= 1, got 0"),
        (dict(resume=True), ValueError, "resume=True needs a checkpoint"),
    ],
)
def test_bad_parameters(X, kwargs, exc, message):
    with pytest.raises(exc, match=message):
        cdf_ts(X, **kwargs)


@pytest.mark.parametrize(
    "data,exc,message",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0]]), ValueError, r"NaN or inf \(first at row 0, column 1: nan\)"),
        (np.array([[0.0, 1.0], [np.inf, 2.0]]), ValueError, "NaN or inf"),
        (np.array([["a", "b"], ["c", "d"]]), TypeError, "must be numeric"),
        (np.zeros((1, 3)), ValueError, r"has 1 row\(s\)"),
        (np.zeros((5, 0)), ValueError, "zero columns"),
        (np.zeros(5), ValueError, "must be 2-dimensional"),
        ("/nonexistent/x.csv", ValueError, "file not found"),
    ],
)
def test_bad_input(data, exc, message):
    with pytest.raises(exc, match=message):
        cdf_ts(data)


def test_dask_array_of_unknown_chunk_sizes_is_named_before_work(X):
    """Regression: ``ValueError: cannot convert float NaN to integer`` from deep inside."""
    unknown = da.from_array(X, chunks=(40, 3))
    unknown = unknown[unknown[:, 0] > -10]  # boolean indexing: row counts unknown until computed
    assert np.isnan(unknown.shape[0])
    with pytest.raises(ValueError, match=r"X is a dask array of unknown chunk sizes .*compute_chunk_sizes"):
        cdf_ts(unknown, lam=0.2)
    est = CDFTS(lam=0.2, max_iter=1).fit(X)
    with pytest.raises(ValueError, match=r"X is a dask array of unknown chunk sizes"):
        est.transform(unknown)
    assert np.array_equal(est.transform(unknown.compute_chunk_sizes()).compute(), est.transform(X))


def test_an_array_input_never_has_its_file_or_store_overwritten(tmp_path, X):
    """Regression: a path input was checked against ``output`` / ``checkpoint``, an array reading the same
    file was not: ``cdf_ts(da.from_zarr(p), output=p)``, ``CDFTS().fit(X).transform(zarr.open_array(p),
    output=p)`` and ``cdf_ts(np.load(q, mmap_mode="r"), output=q)`` finished with exit 0 and the input
    replaced by the output.  Now every array that reads a local file is refused as the path is, before
    any work."""
    store, npy = tmp_path / "x.zarr", tmp_path / "x.npy"
    zarr.create_array(str(store), shape=X.shape, dtype="f8", chunks=(50, 3))[...] = X
    np.save(npy, X)
    memmap = np.load(npy, mmap_mode="r")
    est = CDFTS(lam=0.2, max_iter=1).fit(X)
    on_store = [da.from_zarr(str(store)), da.from_zarr(str(store), inline_array=True) * 1.0,
                zarr.open_array(str(store), mode="r")]  # fmt: skip
    on_npy = [memmap, memmap[3:], np.asarray(memmap)]
    cases = [(arr, str(store), {}) for arr in on_store] + [(arr, str(npy), {}) for arr in on_npy]
    cases += [(on_store[0], str(store / "inside.zarr"), {}), (on_store[0], str(store), {"n_references": 60})]
    for arr, target, kw in cases:
        with pytest.raises(ValueError, match="(is|is inside) the input .*choose another output path"):
            cdf_ts(arr, lam=0.2, output=target, **kw)
        with pytest.raises(ValueError, match="(is|is inside) the input .*choose another output path"):
            est.transform(arr, output=target)
    with pytest.raises(ValueError, match="checkpoint .* is the input .*choose another checkpoint path"):
        CDFTS(lam=0.2, checkpoint=store).fit(on_store[2])
    assert np.array_equal(zarr.open_array(str(store), mode="r")[...], X) and np.array_equal(np.load(npy), X)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy", "x.zarr"]
    elsewhere = cdf_ts(on_store[0], lam=0.2, delta=0.01, method="dense", output=tmp_path / "y.npy")
    assert np.array_equal(np.load(tmp_path / "y.npy"), elsewhere.compute())  # another name: written


def _read_open_file(open_file) -> np.ndarray:
    with open_file as f:
        return np.loadtxt(f, delimiter=",", skiprows=1)


def test_an_array_whose_tasks_read_a_csv_through_fsspec_never_has_it_overwritten(tmp_path, X):
    """Regression (found by a storage audit, 2026-11-29): ``cdf_ts(dd.read_csv(p).to_dask_array(
    lengths=True), output=p)`` replaced the input CSV, exit 0: each of ``dd.read_csv``'s tasks holds an
    fsspec ``OpenFile`` of p, which :func:`~cdfts_dask.paths.input_files` did not look into.  The same
    object in a delayed task (below) stands for it where dask.dataframe (pyarrow) is not installed."""
    import importlib.util

    import dask
    import fsspec

    src = tmp_path / "in.csv"
    np.savetxt(src, X, delimiter=",", header="a,b,c", comments="")
    before = src.read_bytes()
    task = dask.delayed(_read_open_file)(fsspec.open(str(src)))
    arrays = [da.from_delayed(task, shape=X.shape, dtype=np.float64)]
    if importlib.util.find_spec("pyarrow") is not None:
        import dask.dataframe as dd

        arrays.append(dd.read_csv(str(src)).to_dask_array(lengths=True))
    for arr in arrays:
        assert paths.input_files(arr) == [str(src)]
        with pytest.raises(ValueError, match="is the input .*choose another output path"):
            cdf_ts(arr, lam=0.2, method="dense", output=src)
    assert src.read_bytes() == before
    elsewhere = tmp_path / "out.csv"
    cdf_ts(arrays[0], lam=0.2, max_iter=1, method="dense", output=elsewhere)
    assert np.array_equal(np.loadtxt(elsewhere, delimiter=",", skiprows=1),
                          cdf_ts(X, lam=0.2, max_iter=1, method="dense"))  # fmt: skip


def _times_one(values):
    return np.asarray(values) * 1.0


def test_the_files_behind_an_input_are_found_in_keyword_arguments_and_inside_a_group(tmp_path, X):
    """A memmap given to a task by keyword is found (a task's keywords are a dict); a Zarr array inside a
    group is its own folder, not the group's: an output beside it in the group is written, one inside it
    refused (found by a mutation audit of the path checks, second pass: the keywords were not looked
    into, and the group taken for the input refused the output beside the array)."""
    import dask

    np.save(tmp_path / "x.npy", X)
    memmap = np.load(tmp_path / "x.npy", mmap_mode="r")
    by_keyword = da.from_delayed(dask.delayed(_times_one)(values=memmap), shape=X.shape, dtype=np.float64)
    assert paths.input_files(by_keyword) == [str(tmp_path / "x.npy")]
    with pytest.raises(ValueError, match="is the input .*choose another output path"):
        cdf_ts(by_keyword, lam=0.2, method="dense", output=tmp_path / "x.npy")
    group = zarr.open_group(str(tmp_path / "data.zarr"), mode="w")
    group.create_array("x", shape=X.shape, dtype="f8", chunks=(50, 3))[...] = X
    member = zarr.open_group(str(tmp_path / "data.zarr"), mode="r")["x"]
    assert paths.input_files(member) == [str(tmp_path / "data.zarr" / "x")]
    with pytest.raises(ValueError, match="is inside the input .*choose another output path"):
        cdf_ts(member, lam=0.2, method="dense", output=tmp_path / "data.zarr" / "x" / "y.zarr")
    beside = cdf_ts(member, lam=0.2, max_iter=1, method="dense", output=tmp_path / "data.zarr" / "y.zarr")
    assert np.array_equal(beside[...], cdf_ts(X, lam=0.2, max_iter=1, method="dense"))


def test_a_csv_output_keeps_the_inputs_column_names(tmp_path, X):
    """Regression: ``cdf_ts("in.csv", output="out.csv")`` and ``CDFTS().fit(frame).transform(frame,
    output="out.csv")`` wrote the header ``x0,x1,x2``, where ``cdfts transform`` keeps the input's."""
    import pandas as pd

    src = tmp_path / "in.csv"
    np.savetxt(src, X, delimiter=",", header="height,weight,age", comments="")
    frame = pd.DataFrame(X, columns=["height", "weight", "age"])
    cdf_ts(str(src), lam=0.2, max_iter=1, output=tmp_path / "a.csv")
    cdf_ts(frame, lam=0.2, max_iter=1, n_references=60, random_state=0, output=tmp_path / "b.csv")
    CDFTS(lam=0.2, max_iter=1).fit(frame).transform(frame, output=tmp_path / "c.csv")
    for name in ("a", "b", "c"):
        assert (tmp_path / f"{name}.csv").read_text().splitlines()[0] == "height,weight,age", name
    cdf_ts(X, lam=0.2, max_iter=1, output=tmp_path / "d.csv")  # no names: generic ones
    assert (tmp_path / "d.csv").read_text().splitlines()[0] == "x0,x1,x2"


def test_tile_size_reaches_the_engine(X, client):
    """A smaller ``tile_size`` splits each iteration into more panel tasks; the result is the oracle's
    either way (mutation audit: ``tile_size`` dropped on its way to the engine went unnoticed)."""
    from distributed import get_task_stream

    tasks = {}
    for tile in (16, len(X)):
        with get_task_stream(client) as stream:
            out = cdf_ts(X, lam=0.2, delta=0.01, max_iter=1, method="tiled", client=client, tile_size=tile)
        tasks[tile] = len(stream.data)
        assert np.abs(out - cdf_ts_dense(X, lam=0.2, delta=0.01, max_iter=1).X).max() <= 1e-9
    assert tasks[16] > tasks[len(X)]


def test_n_workers_sizes_the_embedded_cluster(X, caplog):
    """``n_workers`` is the embedded cluster's worker count, as its start line says (mutation audit:
    ``n_workers`` dropped on its way to the cluster went unnoticed)."""
    import logging
    import re

    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        out = cdf_ts(X, lam=0.2, delta=0.01, max_iter=1, method="tiled", n_workers=1)
    assert re.search(r"tiled engine, cpu float64, 1 worker\b(?!s)", caplog.text), caplog.text
    assert np.abs(out - cdf_ts_dense(X, lam=0.2, delta=0.01, max_iter=1).X).max() <= 1e-9


@pytest.mark.parametrize("k", [0, "n"])
def test_dscale_checks_k_against_n(X, k):
    """``dscale`` refuses a k outside [1, n - 1] as ``cdf_ts`` does (mutation audit: unchecked, k = 0 and
    k = n reached the oracle)."""
    from cdfts_dask import dscale

    k = len(X) if k == "n" else k
    with pytest.raises(ValueError, match=rf"k must lie in \[1, n - 1\] = \[1, {len(X) - 1}\], got k={k}"):
        dscale(X, estimator="knn", k=k)
