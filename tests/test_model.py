"""A fitted run is a model (../shared/DESIGN.md section 5): out-of-sample transform, stores, apply."""

from __future__ import annotations

import dataclasses

import dask.array as da
import numpy as np
import pytest
import zarr
from conftest import DATA, load_csv, simulated_cuda, slow_unless
from faultkit import rewrite_attributes

from cdfts_dask import CDFTS, cdf_ts
from cdfts_dask import model as fitted
from cdfts_dask.cli import main
from cdfts_dask.row_lookup import NOT_FOUND


def blobs(n: int = 240, d: int = 3, seed: int = 0, duplicates: int = 0, constant: bool = False):
    """Two blobs of different density; ``duplicates`` copies of point 0; a constant last column."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(0, 1, (n // 2, d)), rng.normal(4, 0.3, (n - n // 2, d))])
    if duplicates:
        X[1 : duplicates + 1] = X[0]
    if constant:
        X[:, -1] = 2.5
    return X


CASES = [
    pytest.param("epsilon", None, 0, False, id="epsilon"),
    pytest.param("epsilon", None, 12, True, id="epsilon-duplicates-constant"),
    pytest.param("knn", 9, 0, False, id="knn"),
    pytest.param("knn", 9, 12, True, id="knn-duplicates-constant"),  # radius 0 at the duplicates
]


SETTINGS = [(64, 2), (100, 1), (None, 2)]  # tiles that do not divide n = 150, one and two workers
#: the quick suite: each setting once, each estimator at least once (the whole suite runs all twelve)
QUICK = {("epsilon", (100, 1)), ("epsilon-duplicates-constant", (None, 2)),
         ("knn-duplicates-constant", (64, 2))}  # fmt: skip


@pytest.mark.parametrize(
    "estimator,k,dups,constant,tile,workers",
    [pytest.param(*case.values, *setting, id=f"{setting[0]}-{setting[1]}-{case.id}",
                  marks=slow_unless((case.id, setting) in QUICK))
     for setting in SETTINGS for case in CASES],
)  # fmt: skip
def test_transform_of_fit_points_equals_fit_transform_tiled(
    estimator, k, dups, constant, tile, workers, client, client1
):
    X = blobs(duplicates=dups, constant=constant)
    est = CDFTS(lam=0.15, delta=1e-3, max_iter=6, estimator=estimator, k=k, method="tiled", tile_size=tile,
                client=client if workers == 2 else client1)  # fmt: skip
    Y = est.fit_transform(X)
    assert est.model_.n_iter == est.n_iter_ >= 2
    assert np.array_equal(est.transform(X), Y)  # fit points take their stored outputs
    assert np.array_equal(est.model_.replay(X), Y)  # the replay on the fit's device sums as the fit did
    dense = cdf_ts(X, lam=0.15, delta=1e-3, max_iter=6, estimator=estimator, k=k, method="dense")
    assert np.abs(Y - dense).max() <= 1e-9


@pytest.mark.parametrize("estimator,k,dups,constant", CASES)
def test_transform_of_fit_points_equals_fit_transform_dense(estimator, k, dups, constant):
    """The dense oracle sums in another order than the kernel: its replay of a fit point agrees to
    ~1e-14, except under k-NN at k + 1 or more duplicates (radius 0: rho jumps at s = 0, so the
    replay's ulp moves a duplicate by up to q).  transform() gives every fit point its output."""
    X = blobs(duplicates=dups, constant=constant)
    est = CDFTS(lam=0.15, estimator=estimator, k=k, method="dense").fit(X)
    assert np.array_equal(est.transform(X), est.embedding_)
    new = np.random.default_rng(3).normal(1, 2, (30, 3))
    both = est.transform(np.concatenate([new, X]))
    assert np.array_equal(both[:30], est.model_.replay(new)) and np.array_equal(both[30:], est.embedding_)
    if not (estimator == "knn" and dups > k):
        assert np.abs(est.model_.replay(X) - est.embedding_).max() <= 1e-9


def test_blooddonation_knn_fit_transforms_its_points_to_its_embedding(shared_datasets):
    """The real case: one point 29 times among 604.  The dense fit's replay of its points moves the
    copies by up to ~0.1 (radius 0 under k-NN, rho jumps at s = 0); transform() looks them up."""
    X, _ = load_csv(shared_datasets / "anomaly" / "blooddonation.csv")
    est = CDFTS(estimator="knn", k=5).fit(X)
    assert est.model_.n_iter == est.n_iter_ >= 2
    assert np.array_equal(est.transform(X), est.embedding_)
    dense = cdf_ts(X, estimator="knn", k=5, method="dense")
    assert np.array_equal(est.embedding_, dense)


def test_a_fit_point_is_found_by_value_after_the_initial_normalisation():
    """Fit points are recognised by value (-0.0 as 0.0), not by nearness: a row an ulp away is
    replayed.  A model without ``outputs`` replays every row."""
    X = blobs(duplicates=12)
    X[:, 0] -= X[:, 0].min()  # a column whose minimum is 0.0: its normalised zero can be written -0.0
    est = CDFTS(lam=0.15, estimator="knn", k=9, method="dense").fit(X)
    model = est.model_
    rows = model.fit_point_rows(model.normalised(X))
    assert np.array_equal(X[rows], X) and np.array_equal(rows[13:], np.arange(13, len(X)))
    Y = X.copy()
    at_zero, moved = int(np.argmin(X[:, 0])), 20
    Y[at_zero, 0] = -0.0
    Y[moved, 1] = np.nextafter(X[moved, 1], np.inf)
    rows = model.fit_point_rows(model.normalised(Y))
    assert rows[at_zero] == at_zero and rows[moved] == NOT_FOUND
    out = est.transform(Y)
    assert np.array_equal(out[at_zero], est.embedding_[at_zero])
    assert np.array_equal(out[moved], model.replay(Y[moved : moved + 1])[0])
    without = dataclasses.replace(model, outputs=None)
    assert (without.fit_point_rows(model.normalised(X)) == NOT_FOUND).all()
    assert np.array_equal(without.transform_block(X), model.replay(X))
    with pytest.raises(ValueError, match=r"one row per fit point \(240 x 3\), got shape \(3, 3\)"):
        dataclasses.replace(model, outputs=X[:3])


def test_float32_fit_replays_in_float32(client):
    X = blobs(duplicates=5)
    est = CDFTS(lam=0.15, max_iter=4, method="tiled", dtype="float32", client=client, tile_size=64)
    Y = est.fit_transform(X)
    Z = est.transform(X)
    assert Z.dtype == Y.dtype == np.float32 and np.array_equal(Z, Y)
    replayed = est.model_.replay(X)
    assert replayed.dtype == np.float32 and np.array_equal(replayed, Y)


# -- the replay on the CUDA device (numba's CUDA simulator without a GPU) ----------------------------------


@pytest.fixture
def cuda_tiles_of_16(monkeypatch):
    """Replays in this process stage references in tiles of 16 (so n_f = 60 spans four, the last partial)."""
    from cdfts_dask.engine import cuda

    monkeypatch.setattr(cuda, "THREADS", 16)


CUDA_CASES = [  # k-NN: fewer than k + 1 copies, so no radius is 0 (rho jumps at s = 0 there: see below)
    pytest.param("epsilon", None, 9, id="epsilon-duplicates", marks=pytest.mark.slow),
    pytest.param("knn", 5, 3, id="knn-duplicates", marks=pytest.mark.slow),
]


@simulated_cuda
@pytest.mark.parametrize("estimator,k,dups", CUDA_CASES)
def test_cuda_replay_equals_fit_transform_and_the_cpu_replay(estimator, k, dups, client, cuda_tiles_of_16):
    """``CDFTS(backend="cuda")``: the fit on the workers' (simulated) device with panels of 25 rows (not
    dividing 60), the replay in this process on the device; both equal the oracle, the CPU replay of the
    same model, and each other, in and out of sample."""
    X = blobs(60, duplicates=dups, constant=True)
    est = CDFTS(lam=0.2, delta=1e-9, max_iter=3, estimator=estimator, k=k, client=client, tile_size=25,
                backend="cuda")  # fmt: skip
    Y = est.fit_transform(X)
    assert est.model_.n_iter == 3
    dense = cdf_ts(X, lam=0.2, delta=1e-9, max_iter=3, estimator=estimator, k=k, method="dense")
    assert np.abs(Y - dense).max() <= 1e-9
    new = np.random.default_rng(4).normal(1.5, 2.5, (23, 3))  # some beyond the fit range
    both = np.concatenate([X, new])
    on_cuda = est.model_.replay(both, "cuda")
    on_cpu = est.model_.replay(both, "cpu")
    assert np.abs(on_cuda[:60] - Y).max() <= 1e-9 and np.abs(on_cpu[:60] - Y).max() <= 1e-9
    assert np.abs(on_cuda - on_cpu).max() <= 1e-9
    transformed = est.transform(both)  # on the fit's device: fit points looked up, new points replayed
    assert np.array_equal(transformed[:60], Y) and np.array_equal(transformed[60:], on_cuda[60:])


@simulated_cuda
@pytest.mark.slow
def test_cuda_replay_of_knn_radius_zero_is_the_cuda_fit(client, cuda_tiles_of_16):
    """k + 1 or more duplicates: radius 0 there, where rho jumps at s = 0, so a replay must sum as the fit
    did (an ulp apart, a duplicate no longer meets its own reference at s = 0).  The replay on the fit's
    device does (the same kernel, the same references, the same column mean)."""
    X = blobs(60, duplicates=8)
    est = CDFTS(lam=0.2, delta=1e-9, max_iter=3, estimator="knn", k=3, client=client, tile_size=25,
                backend="cuda")  # fmt: skip
    Y = est.fit_transform(X)
    assert np.array_equal(est.model_.replay(X, "cuda"), Y)
    dense = cdf_ts(X, lam=0.2, delta=1e-9, max_iter=3, estimator="knn", k=3, method="dense")
    assert np.abs(Y - dense).max() <= 1e-9


@simulated_cuda
@pytest.mark.slow
def test_cuda_float32_fit_replays_in_float32(client, cuda_tiles_of_16):
    X = blobs(60, duplicates=5)
    est = CDFTS(lam=0.2, max_iter=3, dtype="float32", client=client, tile_size=25, backend="cuda")
    Y = est.fit_transform(X)
    Z = est.model_.replay(X, "cuda")
    assert Z.dtype == np.float32 and np.abs(Z - Y).max() <= 1e-6
    assert np.abs(est.model_.replay(X, "cpu") - Z).max() <= 1e-6


@simulated_cuda
def test_a_cuda_transform_without_a_client_starts_the_gpu_cluster(tmp_path, recorded_cuda_clusters):
    """``backend="cuda"`` and no client: a chunked transform's embedded cluster is dask-cuda's
    ``LocalCUDACluster`` (one worker per GPU), as a fit's is (a mutation audit: a CPU ``LocalCluster``
    there passed the tests).  dask-cuda is replaced by a recorder here (no GPU); the simulated replay
    equals the CPU one to rounding."""
    X, new = blobs(60, 2), blobs(20, 2, seed=3)
    est = CDFTS(lam=0.15, max_iter=2).fit(X)
    out = fitted.apply(est.model_, da.from_array(new, chunks=(8, 2)), tmp_path / "o.zarr", backend="cuda")
    assert len(recorded_cuda_clusters) == 1
    assert np.abs(out[...] - est.transform(new)).max() <= 1e-12


@simulated_cuda
@pytest.mark.slow
def test_cuda_replay_chunked_on_workers_and_in_this_process(client, cuda_tiles_of_16, monkeypatch):
    """A dask array on the workers (one task per row chunk), a NumPy array in chunks in this process: both
    the one-block replay, by the CUDA shift body; the model's device copies (and its fit-point lookup)
    are made once per process (whatever the number of chunks) and never pickled; fit points run nothing
    on the device."""
    import pickle

    from cdfts_dask.engine import cuda

    calls = {"shift_targets": 0, "prepare": 0}

    def counted(name):
        body = getattr(cuda, name)

        def spy(*args):
            calls[name] += 1
            return body(*args)

        monkeypatch.setattr(cuda, name, spy)

    counted("shift_targets")
    counted("prepare")
    X = blobs(60, duplicates=4)
    est = CDFTS(lam=0.2, max_iter=2, method="dense").fit(X)
    new = blobs(60, seed=7)  # no fit point among them: every row is replayed
    whole = est.model_.transform_block(new, "cuda")
    assert calls["shift_targets"] == 2  # one per iteration
    chunked = fitted.transform_numpy(est.model_, new, row_chunk=17, backend="cuda")
    assert np.array_equal(chunked, whole) and calls["shift_targets"] == 2 + 4 * 2  # 4 chunks x 2 iterations
    per_iteration = 3 + 10  # references, lo, span and the plan's 10 arrays
    assert calls["prepare"] == 2 * per_iteration + 1 + 4  # the model once, then each block's points
    assert est.model_.on_device("cuda") is est.model_.on_device("cuda")
    assert np.array_equal(est.model_.transform_block(X, "cuda"), est.embedding_)  # fit points: looked up
    assert calls["shift_targets"] == 10 and calls["prepare"] == 2 * per_iteration + 1 + 4
    unpickled = pickle.loads(pickle.dumps(est.model_))
    assert unpickled._resident == {} and "_fit_point_index" not in vars(unpickled)
    lazy = fitted.transform_dask(est.model_, da.from_array(new, chunks=(17, 3)), backend="cuda")
    assert np.array_equal(client.compute(lazy).result(), whole)
    assert np.abs(est.model_.replay(X, "cuda") - est.embedding_).max() <= 1e-9
    with pytest.raises(ValueError, match="backend must be one of .*'gpu'"):
        fitted.transform_numpy(est.model_, X, backend="gpu")


@pytest.fixture(scope="module")
def syn_model():
    X, _ = load_csv(DATA / "syn.csv")
    return X, CDFTS(lam=0.1, delta=0.01).fit(X)


def test_rows_are_independent(syn_model):
    X, est = syn_model
    rng = np.random.default_rng(1)
    A, B = rng.uniform(X.min(0), X.max(0), (37, 2)), X[rng.permutation(len(X))[:50]]
    joint = est.transform(np.concatenate([A, B]))
    assert np.array_equal(joint, np.concatenate([est.transform(A), est.transform(B)]))
    chunked = fitted.transform_numpy(est.model_, np.concatenate([A, B]), row_chunk=8)  # threaded chunks
    assert np.array_equal(chunked, joint)


def test_a_fit_point_maps_to_its_output(syn_model):
    X, est = syn_model
    rng = np.random.default_rng(2)
    new = rng.uniform(X.min(0), X.max(0), (20, 2))
    rows = [3, 700, 1499]
    Y = est.transform(np.concatenate([new, X[rows]]))
    assert np.array_equal(Y[20:], est.embedding_[rows])
    assert np.abs(est.model_.replay(X[rows]) - est.embedding_[rows]).max() <= 1e-9


def test_points_outside_the_fit_range_are_allowed(syn_model):
    X, est = syn_model
    far = np.array([[X[:, 0].max() + 3 * np.ptp(X[:, 0]), X[:, 1].mean()],
                    [X[:, 0].min() - 1.0, X[:, 1].min()]])  # fmt: skip
    Y = est.transform(far)
    assert np.isfinite(Y).all()
    assert Y[0, 0] > 1.0 and Y[1, 0] < 0.0  # beyond the fitted range: outside [0, 1]
    assert est.transform(X[:1]).shape == (1, 2)  # one row is fine


@pytest.mark.parametrize("method,backend", [("dense", "cpu"), ("tiled", "cpu"),
                                            pytest.param("tiled", "cuda", marks=simulated_cuda)])  # fmt: skip
def test_a_column_constant_in_the_fit_is_0_on_every_new_row(method, backend, client):
    """DESIGN section 5: ``y <- (y - lo_0) / span(lo_0, hi_0)  # constant column -> 0``.  Regression (a
    fuzz review): a new row kept ``y - lo_0`` in the column's raw units there, which moved its other
    coordinates too, by an amount that depended on the unit ([0, 0, 1] and [0, 0, 1000] gave 1.04 and
    202 in that column, and other values in the first two)."""
    X = blobs(60, 3, constant=True)
    engine = {"backend": backend, "tile_size": 16, "client": client} if method == "tiled" else {}
    est = CDFTS(lam=0.2, delta=1e-12, max_iter=3, method=method, **engine).fit(X)
    new = np.array([[0.3, -0.2, 2.5], [0.3, -0.2, 3.5], [0.3, -0.2, 2502.5], [0.3, -0.2, -7.0]])
    Y = est.transform(new)
    assert not Y[:, 2].any()
    np.testing.assert_array_equal(Y, np.repeat(Y[:1], 4, axis=0))  # the rows differ only there
    assert not np.array_equal(Y[0], est.transform(new[:1] + [0.5, 0, 0])[0])  # the other columns count
    np.testing.assert_array_equal(est.model_.replay(new, backend=backend), Y)


def test_feature_count_and_bad_values_are_refused(syn_model):
    X, est = syn_model
    with pytest.raises(ValueError, match="X has 3 features, but CDFTS is expecting 2"):
        est.transform(np.ones((4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        est.transform(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="X has 3 features .columns., but the model was fitted on 2"):
        fitted.transform_numpy(est.model_, np.ones((4, 3)))
    for bad, message in [(X[None], r"Y must be 2-dimensional .* got shape \(1, 1500, 2\)"),
                         (np.ones((4, 3)), "Y has 3 features .columns., but the model was fitted on 2"),
                         (np.array([[0.1, np.inf]]), "Y contains NaN or inf .first at row 0, column 1")]:
        with pytest.raises(ValueError, match=message):
            est.model_.replay(bad)
    with pytest.raises(ValueError, match="backend must be one of .*got 'gpu'"):
        est.model_.replay(X, "gpu")


def test_a_point_whose_replay_overflows_is_refused_with_its_row():
    """Regression: a finite row far beyond the fit's range (1.7e308) came back as inf, with only a NumPy
    RuntimeWarning; now the row is named, in memory and in a dask chunk (by its global row)."""
    X = np.random.RandomState(0).rand(50, 2)
    est = CDFTS().fit(X)
    far = np.concatenate([X[:3], [[0.5, 1.7e308]]])
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"X row 3 .* too far outside .* float64"):
        est.transform(far)
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"Y row 3 .* too far outside"):
        est.model_.replay(far)
    lazy = est.transform(da.from_array(np.concatenate([X, far]), chunks=(20, 2)))
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"X row 53 .* too far outside"):
        lazy.compute(scheduler="sync")
    assert np.isfinite(est.transform([[0.5, 1e300]])).all()  # far, but representable: transformed


def test_a_point_just_beyond_a_range_near_the_float64_limit_is_transformed_as_in_smaller_units():
    """Found by a fuzz audit (2026-12-06): a new point 6 % beyond a column's fit range that spans most of
    float64 ([-1e308, 7e307]) was refused as "too far outside", because ``X - lo`` overflowed though the
    answer is about 1.17; a sampled fit refused its own non-drawn rows so.  Min-max normalisation and
    the replay are exact under a power-of-two scaling, so the same data scaled by 2**-1000 must give the
    same bits; it does now (the overflowing entries are normalised in quarter units)."""
    scale = 2.0**-1000
    F = np.array([[-1e308, 0.0], [7e307, 1.0], [0.0, 0.5]])
    y = np.array([[8e307, 0.5], [-1.7e308, 0.25]])
    out = CDFTS(method="dense", max_iter=1).fit(F).transform(y)
    assert np.array_equal(out, CDFTS(method="dense", max_iter=1).fit(F * scale).transform(y * scale))
    X = np.array([[1.7976931348623157e308, 6.23e306], [8.85e307, -2.25e307], [-1.20e308, -8.09e306],
                  [-1.7976931348623157e308, -4.79e307]])  # fmt: skip
    sampled = dict(n_references=2, random_state=204, lam=0.75, max_iter=1, method="dense")
    assert np.array_equal(cdf_ts(X, **sampled), cdf_ts(X * scale, **sampled))


def test_dask_input_gives_a_lazy_chunked_transform(syn_model):
    X, est = syn_model
    Xd = da.from_array(X, chunks=(400, 1))  # column chunks too: rows are gathered per row block
    out = est.transform(Xd)
    assert isinstance(out, da.Array) and out.chunks[0] == Xd.chunks[0]
    graph = dict(out.__dask_graph__())
    models = [key for key in graph if str(key).startswith("cdfts-model")]
    assert len(models) == 1  # the model is one shared node, not copied into every task
    transform_tasks = [key for key in graph if isinstance(key, tuple) and key[0] == out.name]
    assert len(transform_tasks) == len(Xd.chunks[0])  # one task per row chunk
    assert np.array_equal(out.compute(scheduler="threads"), est.transform(X))


def test_nan_in_a_dask_chunk_is_reported_with_its_row(syn_model):
    X, est = syn_model
    bad = X.copy()
    bad[1234, 1] = np.inf
    with pytest.raises(ValueError, match=r"row 1234, column 1"):
        est.transform(da.from_array(bad, chunks=(500, 2))).compute(scheduler="sync")


def test_zarr_path_to_zarr_chunkwise_on_workers(syn_model, tmp_path, client):
    X, est = syn_model
    src = tmp_path / "in.zarr"
    zarr.create_array(str(src), shape=X.shape, dtype="f8", chunks=(256, 2))[...] = X
    est.set_params(client=client)
    try:
        out = est.transform(str(src), output=tmp_path / "out.zarr")
    finally:
        est.set_params(client=None)
    assert isinstance(out, zarr.Array) and out.chunks == (256, 2)
    assert dict(out.attrs) == {"model_iterations": est.model_.n_iter}  # as written here (a mutation audit)
    assert np.array_equal(out[...], est.transform(X))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "out.zarr"]  # no partial left behind
    for writes_over_its_input in (lambda: est.transform(str(src), output=src),
                                  lambda: cdf_ts(str(src), n_references=100, output=src)):  # fmt: skip
        with pytest.raises(ValueError, match="is the input.*choose another output path"):
            writes_over_its_input()
    assert np.array_equal(zarr.open_array(str(src), mode="r")[...], X)


def test_transform_output_never_replaces_the_model_store_or_a_folder_and_writes_every_format(tmp_path):
    """Regression: ``CDFTS.transform(X, output=...)`` checked only "output is the input": it replaced the
    fit's own checkpoint store (the model) by the output array, deleted a folder of user files, and
    wrote ``out.npy`` as a Zarr folder.  Now the output is checked as ``cdf_ts``'s is, before any work,
    and ``.npy`` / ``.csv`` are written as such."""
    X = blobs(120, 2)
    store = tmp_path / "model.zarr"
    est = CDFTS(lam=0.15, max_iter=2, checkpoint=store).fit(X)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "important.txt").write_text("keep me")
    refusals = {
        store: "is the model .*refusing to overwrite it",
        store / "inside.zarr": "is inside the model",
        tmp_path / "results": "unsupported file type",
        tmp_path / "results.zarr": None,  # a fresh name: fine (checked below)
        tmp_path / "no-such-dir" / "o.npy": "directory does not exist",
    }
    (tmp_path / "results.zarr").mkdir()
    (tmp_path / "results.zarr" / "important.txt").write_text("keep me too")
    refusals[tmp_path / "results.zarr"] = "is an existing directory that is not a Zarr array"
    for output, message in refusals.items():
        with pytest.raises(ValueError, match=message):
            est.transform(X[:5], output=output)
    assert fitted.load(store).n_iter == 2
    assert (tmp_path / "results" / "important.txt").read_text() == "keep me"
    assert (tmp_path / "results.zarr" / "important.txt").read_text() == "keep me too"
    new = np.random.default_rng(3).normal(1, 2, (40, 2))
    expected = est.transform(new)
    npy = est.transform(new, output=tmp_path / "o.npy")
    assert np.array_equal(npy, expected) and np.array_equal(np.load(tmp_path / "o.npy"), expected)
    est.transform(new, output=tmp_path / "o.csv")
    assert np.array_equal(np.loadtxt(tmp_path / "o.csv", delimiter=",", skiprows=1), expected)
    lazy = est.transform(da.from_array(new, chunks=(15, 2)), output=tmp_path / "d.npy")
    assert isinstance(lazy, da.Array) and lazy.chunks == ((15, 15, 10), (2,))
    assert np.array_equal(np.load(tmp_path / "d.npy"), expected) and np.array_equal(lazy.compute(), expected)
    assert np.array_equal(est.transform(new, output=tmp_path / "o.zarr")[...], expected)


def test_every_entry_point_applies_a_model_to_in_memory_input_here_for_every_output_format(
    tmp_path, capsys, monkeypatch
):
    """Regression: a sampled ``cdf_ts``, ``CDFTS.transform`` and ``cdfts apply`` each had their own copy
    of "apply the model, write the output", and they differed: for NumPy input the first two started an
    embedded cluster to write a ``.zarr`` output (and only that format), ``cdfts apply`` did not.  Now all
    three go through ``model.apply``: in-memory input is replayed in this process whatever the output's
    format, and every entry point writes the same numbers."""
    from cdfts_dask import dask_client as connections

    X, new = blobs(120, 2), np.random.default_rng(3).normal(1, 2, (40, 2))
    store = tmp_path / "model.zarr"
    est = CDFTS(lam=0.15, max_iter=2, checkpoint=store).fit(X)
    expected = est.transform(new)
    np.save(tmp_path / "new.npy", new)
    sampled = cdf_ts(X, n_references=60, random_state=0, max_iter=2, n_workers=1)

    def no_cluster(*args, **kwargs):
        raise AssertionError("a Dask cluster was asked for to replay in-memory input")

    monkeypatch.setattr(connections, "dask_client", no_cluster)
    read = {".npy": np.load, ".csv": lambda p: np.loadtxt(p, delimiter=",", skiprows=1),
            ".zarr": lambda p: zarr.open_array(str(p), mode="r")[...]}  # fmt: skip
    for fmt, reader in read.items():
        returned = est.transform(new, output=tmp_path / f"est{fmt}")
        if fmt == ".zarr":  # as every .zarr output is returned (an exact cdf_ts's, the workers'): opened
            assert isinstance(returned, zarr.Array) and returned.read_only  # read-only (it was NumPy)
            assert dict(returned.attrs) == {"model_iterations": 2}  # as the workers' (it was {})
        np.testing.assert_array_equal(returned[...], expected)
        assert _apply(capsys, store, tmp_path / "new.npy", tmp_path / f"cli{fmt}", "--quiet") == (0, "")
        assert np.array_equal(reader(tmp_path / f"est{fmt}"), expected)
        assert np.array_equal(reader(tmp_path / f"cli{fmt}"), expected)
    # the sampled fit runs on its cluster (opened by the run itself); its output is written here
    out = cdf_ts(X, n_references=60, random_state=0, max_iter=2, n_workers=1, output=tmp_path / "s.zarr")
    assert isinstance(out, zarr.Array) and out.read_only and np.array_equal(out[...], sampled)
    assert dict(out.attrs) == {"model_iterations": 2}


def test_labels_with_a_chunked_input_and_a_zarr_output_are_said_not_written(tmp_path, client):
    """A Zarr output holds the points only: labels given with a chunked (dask) input, as ``cdfts apply``
    gives a large CSV's --label column, are said not written, as for in-memory input, and the points are
    the model's (a mutation audit: the workers' Zarr path could have taken them without a word)."""
    X, new = blobs(120, 2), blobs(40, 2, seed=3)
    est = CDFTS(lam=0.15, max_iter=2).fit(X)
    said = r"a \.zarr output holds the transformed points only; the label column is not written"
    with pytest.warns(UserWarning, match=said):
        out = fitted.apply(est.model_, da.from_array(new, chunks=(16, 2)), tmp_path / "o.zarr", client=client,
                           labels=np.arange(40))  # fmt: skip
    assert isinstance(out, zarr.Array) and out.read_only
    np.testing.assert_array_equal(out[...], est.transform(new))


def test_a_lazy_transform_is_chunked_alike_with_and_without_an_output(tmp_path):
    """Regression (a review of model.apply): with an ``output`` the result was chunked like the input's
    columns too (one chunk per column here), without one as the lazy result (all columns in one)."""
    X = blobs(120, 3)
    est = CDFTS(lam=0.15, max_iter=2).fit(X)
    chunked = da.from_array(X[:100], chunks=(50, 1))
    lazy = est.transform(chunked)
    for fmt in (".npy", ".csv"):
        written = est.transform(chunked, output=tmp_path / f"o{fmt}")
        assert written.chunks == lazy.chunks == ((50, 50), (3,))
        np.testing.assert_array_equal(written.compute(), lazy.compute())


# -- a completed checkpoint store is a model ---------------------------------------------------------------


@pytest.mark.parametrize("estimator,k", [("epsilon", None), pytest.param("knn", 9, marks=pytest.mark.slow)])
def test_store_of_a_completed_run_is_the_same_model(estimator, k, tmp_path, client):
    X = blobs(duplicates=6, constant=True)
    store = tmp_path / "run.zarr"
    est = CDFTS(lam=0.15, max_iter=4, estimator=estimator, k=k, client=client, tile_size=80, checkpoint=store)
    Y = est.fit_transform(X)
    memory = CDFTS(lam=0.15, max_iter=4, estimator=estimator, k=k, client=client, tile_size=80).fit(X)
    loaded = fitted.load(store)
    assert loaded.n_iter == memory.model_.n_iter == est.n_iter_
    for a, b in zip(loaded.iterations, memory.model_.iterations, strict=True):
        assert np.array_equal(a.references, b.references) and a.m == b.m
        for name in ("counts", "radius"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or np.array_equal(x, y)
        assert np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)
    assert np.array_equal(loaded.outputs, memory.model_.outputs) and np.array_equal(loaded.outputs, Y)
    new = np.random.default_rng(5).normal(1, 2, (30, 3))
    assert np.array_equal(fitted.transform_numpy(loaded, new), memory.transform(new))
    assert np.array_equal(fitted.transform_numpy(loaded, X), Y)
    assert np.abs(loaded.replay(X) - Y).max() <= 1e-9


def test_resumed_run_is_a_model_of_all_its_iterations(tmp_path):
    X = blobs()
    store = tmp_path / "run.zarr"
    first = cdf_ts(X, lam=0.15, delta=1e-9, max_iter=2, checkpoint=store)
    Y, info = cdf_ts(X, lam=0.15, delta=1e-9, max_iter=5, checkpoint=store, resume=True, return_info=True)
    assert info.resumed_from == 2
    model = fitted.load(store)
    assert model.n_iter == 5 and np.array_equal(fitted.transform_numpy(model, X), Y)
    assert np.abs(model.replay(X) - Y).max() <= 1e-9
    assert np.array_equal(fitted.load(store, n_iter=2).outputs, first)


def test_a_resume_interrupted_before_it_finished_is_no_model(tmp_path):
    """Regression: a finished store resumed with a larger max_iter and killed after iteration 5 still
    said status='max_iter': model.load took it as a 5-iteration model (first run: 3, asked for: 8)."""
    X = blobs()
    store = tmp_path / "run.zarr"
    cdf_ts(X, lam=0.15, delta=1e-9, max_iter=3, checkpoint=store)

    def killed_after_iteration_5(report):
        if report.iteration == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cdf_ts(X, lam=0.15, delta=1e-9, max_iter=8, checkpoint=store, resume=True,
               progress=killed_after_iteration_5)  # fmt: skip
    attrs = zarr.open_group(str(store), mode="r").attrs
    assert attrs["status"] == "running" and attrs["completed"] == 5 and attrs["params"]["max_iter"] == 8
    with pytest.raises(ValueError, match=r"is not complete \(status='running', 5 iteration\(s\) done\)"):
        fitted.load(store)
    Y = cdf_ts(X, lam=0.15, delta=1e-9, max_iter=8, checkpoint=store, resume=True)
    assert fitted.load(store).n_iter == 8 and np.array_equal(fitted.load(store).outputs, Y)


def test_a_store_resumed_to_fewer_iterations_is_the_model_of_what_that_run_returned(tmp_path):
    """Regression: resumed with max_iter=3 on a store of 5 iterations, the run returned iteration 3 but
    model.load (and cdfts apply) replayed all 5 (0.03 away on new points)."""
    X = blobs()
    rng = np.random.default_rng(5)
    new = rng.normal(1, 2, (30, 3))
    store = tmp_path / "run.zarr"
    cdf_ts(X, lam=0.15, delta=1e-9, max_iter=5, checkpoint=store)
    with pytest.warns(UserWarning, match="this run stops at iteration 3"):
        est = CDFTS(lam=0.15, delta=1e-9, max_iter=3, checkpoint=store, resume=True).fit(X)
    fresh = CDFTS(lam=0.15, delta=1e-9, max_iter=3).fit(X)
    model = fitted.load(store)
    assert est.n_iter_ == 3 and model.n_iter == 3 and fitted.load(store, n_iter=5).n_iter == 5
    assert np.abs(fitted.transform_numpy(model, new) - fresh.transform(new)).max() <= 1e-9
    assert np.array_equal(fitted.transform_numpy(model, new), est.transform(new))
    five = fitted.transform_numpy(fitted.load(store, n_iter=5), new)
    assert np.abs(five - fresh.transform(new)).max() > 1e-3  # the later iterations are another model
    group = zarr.open_group(str(store), mode="a")
    for bad in (0, 6, "3", True):
        rewrite_attributes(group, result_iteration=bad)
        with pytest.raises(ValueError, match=f"'result_iteration' \\({bad!r}\\) is not an iteration number"):
            fitted.load(store)
    rewrite_attributes(group, drop=("result_iteration",))  # a store written before it was recorded
    assert fitted.load(store).n_iter == 5
    # n_iter names a stored iteration: before, 1.5 and True loaded 1 iteration, 10**6 silently 5,
    # and -1 raised KeyError 'iterations/-0001'
    for bad, error in ((1.5, TypeError), (True, TypeError), ("2", TypeError), (0, ValueError),
                       (-1, ValueError), (6, ValueError), (10**6, ValueError)):  # fmt: skip
        with pytest.raises(error, match=r"n_iter must (be an integer|lie in \[1, 5\])"):
            fitted.load(store, n_iter=bad)
    assert fitted.load(store, n_iter=np.int64(2)).n_iter == 2


def test_knn_reference_whose_radius_reaches_m_holds_every_new_point_inside():
    """A k-NN reference whose k-th neighbour is at the largest distance m (radius 1: always with a
    sample of two) has the whole space as its neighbourhood: rho = r(z) = q for a new point beyond m
    too.  Regression: such points got rho = 0 (the outside formula divides by 1 - radius = 0), and the
    output jumped as a point crossed distance m.  With both references of radius 1 the replay has a
    closed form: y <- mean + q (y - mean) in the normalised units, then the end-of-iteration range."""
    X = np.array([[0.0, 0.0], [1.0, 0.5]])
    est = CDFTS(estimator="knn", k=1, max_iter=1).fit(X)
    it = est.model_.iterations[0]
    assert np.array_equal(it.radius, [1.0, 1.0])
    rng = np.random.default_rng(8)
    Y = np.concatenate([rng.normal(0, 3, (40, 2)), [[2.0, 1.0], [-1.0, -0.5]]])  # most beyond m
    model = est.model_
    P, q = it.references, 0.5 ** (1 / 2)  # P = [[0, 0], [1, 1]]: X normalised
    y = (Y - model.lo) / (model.hi - model.lo)
    expected = (P.mean(0) + q * (y - P.mean(0)) - it.lo) / (it.hi - it.lo)
    assert np.abs(est.transform(Y) - expected).max() <= 1e-12
    m = np.sqrt(1.25)
    direction = (X[1] - X[0]) / m
    across = est.transform(X[0] + np.outer([1 - 1e-12, 1 + 1e-12], direction * m))  # both sides of m
    assert np.abs(across[0] - across[1]).max() <= 1e-9


def test_store_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="is not a cdfts-dask run store"):
        fitted.load(tmp_path / "nothing.zarr")
    zarr.create_array(str(tmp_path / "array.zarr"), shape=(3, 2), dtype="f8")
    with pytest.raises(ValueError, match="is not a cdfts-dask run store"):
        fitted.load(tmp_path / "array.zarr")
    zarr.open_group(str(tmp_path / "group.zarr"), mode="w").attrs["format"] = "something/else"
    with pytest.raises(ValueError, match="format='something/else'"):
        fitted.load(tmp_path / "group.zarr")
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(), lam=0.15, max_iter=2, checkpoint=store)
    rewrite_attributes(zarr.open_group(str(store), mode="a"), status="running")  # as a killed run leaves it
    with pytest.raises(ValueError, match=r"is not complete \(status='running', 2 iteration\(s\) done\)"):
        fitted.load(store)
    group = zarr.open_group(str(store), mode="a")
    rewrite_attributes(group, status="converged")
    rewrite_attributes(group["iterations/00000"], drop=("lo", "hi"))  # written before stores kept the range
    with pytest.raises(ValueError, match="written before stores kept the input range"):
        fitted.load(store)


def test_a_store_that_lost_iteration_0_is_named_damaged(tmp_path, capsys):
    """Regression: with ``iterations/00000/zarr.json`` gone, model.load raised a bare KeyError and
    ``cdfts apply`` printed a 51-line traceback (exit 1)."""
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(), lam=0.15, max_iter=2, checkpoint=store)
    (store / "iterations" / "00000" / "zarr.json").unlink()
    with pytest.raises(ValueError, match=r"run\.zarr' is damaged: iteration 0 is missing"):
        fitted.load(store)
    np.save(tmp_path / "x.npy", blobs())
    assert main(["apply", str(store), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "iteration 0 is missing" in err[0], err


def _edit(store, node: str, edit) -> None:
    """Edit one node's attributes by hand (no fresh checksum), as a user or a damaged file would."""
    group = zarr.open_group(str(store), mode="a")
    target = group if node == "root" else group[node]
    attrs = dict(target.attrs)
    edit(attrs)
    target.attrs.put(attrs)


ATTRIBUTE_EDITS = {
    "iteration-m-times-1.5": ("iterations/00002", lambda a: a.update(m=a["m"] * 1.5)),
    "iteration-lo-minus-0.1": ("iterations/00001", lambda a: a.update(lo=[v - 0.1 for v in a["lo"]])),
    "last-iteration-hi-plus-0.1": ("iterations/00003", lambda a: a.update(hi=[v + 0.1 for v in a["hi"]])),
    "input-hi-plus-1": ("iterations/00000", lambda a: a.update(hi=[v + 1 for v in a["hi"]])),
    "iteration-m-removed": ("iterations/00002", lambda a: a.pop("m")),
    "iteration-m-times-1.5-and-its-checksum-removed": (
        "iterations/00002", lambda a: (a.update(m=a["m"] * 1.5), a.pop("attributes_digest"))
    ),
    "root-lam-0.3-and-its-checksum-removed": (
        "root", lambda a: (a["params"].update(lam=0.3), a.pop("attributes_digest"))
    ),
    "counts-checksum-removed": ("iterations/00001", lambda a: a["digests"].pop("counts")),
    "lam-0.3": ("root", lambda a: a["params"].update(lam=0.3)),
    "dtype-int8": ("root", lambda a: a["params"].update(dtype="int8")),
    "estimator-knn": ("root", lambda a: a["params"].update(estimator="knn")),
    "result-iteration-2": ("root", lambda a: a.update(result_iteration=2)),
    "params-removed": ("root", lambda a: a.pop("params")),
}


@pytest.mark.parametrize("edit", list(ATTRIBUTE_EDITS))
def test_a_store_whose_attributes_were_edited_is_no_model(tmp_path, capsys, edit):
    """Regression: only the arrays carried checksums.  An edited m, lo, hi, lam, dtype or result_iteration
    loaded as a model whose transform of new points moved by 0.07-0.95 (exit 0); a removed attribute was a
    KeyError (a traceback from ``cdfts apply``); a removed checksum of the counts let their chunk go
    unchecked.  Now the root and every iteration carry the SHA-256 of their attributes."""
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(60, 2), lam=0.15, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    fitted.load(store)  # intact
    node, change = ATTRIBUTE_EDITS[edit]
    _edit(store, node, change)
    with pytest.raises(ValueError, match=r"^model: .*damaged: .*(checksum|no checksums)"):
        fitted.load(store)
    np.savetxt(tmp_path / "new.csv", blobs(10, 2, seed=3), delimiter=",")
    code, err = _apply(capsys, store, tmp_path / "new.csv", tmp_path / "o.npy")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("cdfts apply: error: model: "), err
    assert not (tmp_path / "o.npy").exists()


def test_a_store_of_an_unknown_format_version_is_no_model(tmp_path):
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(60, 2), lam=0.15, max_iter=1, method="dense", checkpoint=store)
    rewrite_attributes(zarr.open_group(str(store), mode="a"), format_version=99)
    with pytest.raises(ValueError, match=r"^model: .* format_version=99"):
        fitted.load(store)


# -- cdfts apply -------------------------------------------------------------------------------------------


def _blobs_run_store(tmp_path):
    """A completed run store (a model for ``cdfts apply``) of 60 blob points in 3-D, two iterations."""
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(60), lam=0.2, max_iter=2, checkpoint=store)
    return store


def _apply(capsys, *args) -> tuple[int, str]:
    code = main(["apply", *map(str, args)])
    return code, capsys.readouterr().err


def test_cli_apply_replays_a_transform_run(tmp_path, capsys, client):
    store, out, again = tmp_path / "run.zarr", tmp_path / "out.csv", tmp_path / "again.csv"
    assert main(["transform", str(DATA / "syn.csv"), str(out), "--label", "label", "--delta", "0.01",
                 "--checkpoint", str(store), "--quiet"]) == 0  # fmt: skip
    code, err = _apply(capsys, store, DATA / "syn.csv", again, "--label", "label")
    assert code == 0 and "applied 5 iteration(s) fitted on 1500 references" in err
    first, second = out.read_text().splitlines(), again.read_text().splitlines()
    assert first[0] == second[0] == "x0,x1,label"
    a = np.loadtxt(out, delimiter=",", skiprows=1)
    b = np.loadtxt(again, delimiter=",", skiprows=1)
    assert np.array_equal(a[:, -1], b[:, -1]) and np.abs(a[:, :-1] - b[:, :-1]).max() <= 1e-9
    X, _ = load_csv(DATA / "syn.csv")
    src = tmp_path / "in.zarr"
    zarr.create_array(str(src), shape=X.shape, dtype="f8", chunks=(300, 2))[...] = X
    code, err = _apply(capsys, store, src, tmp_path / "out.zarr", "--scheduler", client.scheduler.address,
                       "--quiet")  # fmt: skip
    assert code == 0 and err == ""
    assert np.abs(zarr.open_array(str(tmp_path / "out.zarr"), mode="r")[...] - a[:, :-1]).max() <= 1e-9


@simulated_cuda
def test_cli_apply_on_the_gpu_equals_the_cpu(tmp_path, capsys):
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(60, duplicates=3), lam=0.2, max_iter=2, checkpoint=store)
    np.save(tmp_path / "new.npy", np.random.default_rng(6).normal(1, 2, (30, 3)))
    for out, flags in (("cpu.npy", []), ("gpu.npy", ["--gpu"])):
        assert _apply(capsys, store, tmp_path / "new.npy", tmp_path / out, "--quiet", *flags) == (0, "")
    assert np.abs(np.load(tmp_path / "gpu.npy") - np.load(tmp_path / "cpu.npy")).max() <= 1e-9


def test_cli_apply_says_when_it_does_not_use_the_cluster(tmp_path, capsys):
    """Regression: an in-memory INPUT is replayed in this process; --workers (or --scheduler, even an
    unreachable one) was dropped without a word."""
    store = _blobs_run_store(tmp_path)
    np.save(tmp_path / "new.npy", blobs(30))
    code, err = _apply(capsys, store, tmp_path / "new.npy", tmp_path / "out.npy", "--workers", "1", "--quiet")
    lines = err.strip().splitlines()
    assert code == 0 and len(lines) == 1 and "--scheduler/--workers are not used" in lines[0]
    expected = fitted.transform_numpy(fitted.load(store), blobs(30))
    assert np.array_equal(np.load(tmp_path / "out.npy"), expected)



def test_cli_apply_of_a_zarr_input_with_a_label_column_passes_it_through(tmp_path, capsys):
    """A Zarr INPUT with ``--label`` is read here, its label column set aside and written last, not sent
    to the workers whole (found by the second mutation audit of the command line, 2026-12-07: sent
    whole, its 4 columns were refused against the model's 3)."""
    store = _blobs_run_store(tmp_path)
    X, labels = blobs(30), np.arange(30) % 3
    new = zarr.create_array(str(tmp_path / "new.zarr"), shape=(30, 4), dtype="f8", chunks=(10, 4))
    new[...] = np.c_[X, labels]
    out = tmp_path / "out.csv"
    assert _apply(capsys, store, tmp_path / "new.zarr", out, "--label", "-1", "--quiet") == (0, "")
    Y = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(Y[:, -1], labels)
    np.testing.assert_array_equal(Y[:, :3], fitted.transform_numpy(fitted.load(store), X))


def test_cli_apply_gpu_asks_for_the_cuda_backend(tmp_path, capsys, monkeypatch):
    """``--gpu`` reaches the replay as ``backend="cuda"`` (the replay itself runs here on the CPU backend:
    without a GPU only the option's way there is checked; found by the second mutation audit of the
    command line, 2026-12-07: dropped, the replay ran on the CPU without a word)."""
    from cdfts_dask.cli import apply as apply_command

    store = _blobs_run_store(tmp_path)
    np.save(tmp_path / "new.npy", blobs(30))
    backends = []
    replay = apply_command.model.apply

    def on_the_cpu(*args, backend, **kwargs):
        backends.append(backend)
        return replay(*args, backend="cpu", **kwargs)

    monkeypatch.setattr(apply_command.model, "apply", on_the_cpu)
    assert _apply(capsys, store, tmp_path / "new.npy", tmp_path / "out.npy", "--gpu", "--quiet") == (0, "")
    assert backends == ["cuda"]
    assert _apply(capsys, store, tmp_path / "new.npy", tmp_path / "out.npy", "--quiet") == (0, "")
    assert backends == ["cuda", "cpu"]

def test_cli_apply_errors_are_one_line(tmp_path, capsys):
    store = tmp_path / "run.zarr"
    cdf_ts(blobs(d=3), lam=0.15, max_iter=2, checkpoint=store)
    np.save(tmp_path / "two.npy", np.ones((5, 2)))
    cases = [
        ((store, tmp_path / "two.npy", tmp_path / "o.npy"), "input has 2 features (columns), but the model "
         "was fitted on 3"),
        ((tmp_path / "two.npy", tmp_path / "two.npy", tmp_path / "o.npy"), "is not a cdfts-dask run store"),
        ((store, tmp_path / "two.npy", tmp_path / "two.npy"), "is the input"),
        ((store, tmp_path / "two.npy", store), "output '" + str(store) + "' is the model"),
        ((store, tmp_path / "two.npy", store / "o.npy"), "is inside the model"),
        ((store, store, tmp_path / "o.npy"), f"input: '{store}' is a Zarr group, not an array"),
        ((store, tmp_path / "two.npy", tmp_path / "o.txt"), "unsupported file type '.txt'"),
    ]  # fmt: skip
    zarr.open_group(str(tmp_path / "other.zarr"), mode="w")
    cases.append(((tmp_path / "other.zarr", tmp_path / "two.npy", tmp_path / "o.npy"), "format=None"))
    # an output folder that does not exist is refused before the model is read (the second mutation audit
    # of the command line, 2026-12-07: without the check, the points were transformed first)
    np.save(tmp_path / "three.npy", np.ones((5, 3)))
    missing = tmp_path / "nope" / "o.npy"
    message = f"output: directory does not exist: '{missing.parent}'"
    cases.append(((tmp_path / "two.npy", tmp_path / "three.npy", missing), message))  # MODEL is no store
    # a Zarr INPUT (read by the workers) of the wrong width: refused before a cluster is started
    zarr.create_array(str(tmp_path / "two.zarr"), shape=(20, 2), dtype="f8", chunks=(10, 2))[...] = 1.0
    message = "input has 2 features (columns), but the model was fitted on 3"
    cases.append(((store, tmp_path / "two.zarr", tmp_path / "o.npy"), message))
    for args, message in cases:
        code, err = _apply(capsys, *args)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and message in err
        assert lines[0].startswith("cdfts apply: error: ")
        assert not (tmp_path / "o.npy").exists()
    rewrite_attributes(zarr.open_group(str(store), mode="a"), status="running")
    code, err = _apply(capsys, store, DATA / "syn.csv", tmp_path / "o.csv")
    assert code == 2 and "is not complete" in err and "resume it first" in err



def test_cli_apply_refuses_a_label_like_column_unless_named(tmp_path, capsys):
    """As ``transform`` does: a model fitted on unnamed columns cannot tell that a CSV's ``label`` column is
    no feature, so ``apply`` refuses it unless ``--label`` or ``--no-label`` says what it is (found by the
    second mutation audit of the command line, 2026-12-07: without the rule, the labels were replayed as
    a feature, exit 0)."""
    store = tmp_path / "run.zarr"
    X = blobs(40, 2)
    cdf_ts(X, lam=0.15, max_iter=2, checkpoint=store)
    src, out = tmp_path / "new.csv", tmp_path / "out.csv"
    src.write_text("a,label\n" + "".join(f"{float(x)!r},{i % 2}\n" for i, x in enumerate(X[:, 0])))
    code, err = _apply(capsys, store, src, out)
    assert code == 2 and "input column 'label' looks like a label, not a feature: pass --label label" in err
    assert not out.exists()
    assert _apply(capsys, store, src, out, "--no-label", "--quiet") == (0, "")
    assert np.loadtxt(out, delimiter=",", skiprows=1).shape == (40, 2)

def test_an_input_read_from_inside_the_model_store_is_replayed(tmp_path, capsys):
    """Regression (left alone since stop 29, 2026-11-25): the model store was checked as a checkpoint,
    one the run writes, so an INPUT inside it (an array of the store, only read) was refused with
    "checkpoint ... contains the input ...; refusing to overwrite it: choose another checkpoint path",
    and MODEL given twice was told the same; the store is only read, and now only the output is kept
    out of it."""
    store = tmp_path / "run.zarr"
    X = blobs(60, 2)
    est = CDFTS(lam=0.15, max_iter=2, checkpoint=store).fit(X)
    inside = store / "iterations" / "00000" / "X"  # the fit's normalised input, an array of the store
    code, err = _apply(capsys, store, inside, tmp_path / "out.npy", "--quiet")
    assert code == 0 and err == "", err
    stored = zarr.open_array(str(inside), mode="r")[...]
    expected = fitted.transform_numpy(fitted.load(store), stored)
    assert np.array_equal(np.load(tmp_path / "out.npy"), expected)
    np.testing.assert_allclose(est.transform(str(inside)).compute(), expected, rtol=0, atol=1e-12)


@pytest.mark.slow  # an embedded cluster of its own, whose worker processes write to this process's stderr
def test_cli_apply_worker_failure_is_one_line(tmp_path, capfd):
    """Regression: a damaged Zarr chunk read by a worker printed Dask's 'Compute Failed' record and a
    traceback (from the embedded cluster's worker) before the one-line error."""
    store = _blobs_run_store(tmp_path)
    src = tmp_path / "in.zarr"
    zarr.create_array(str(src), shape=(400, 3), dtype="f8", chunks=(100, 3))[...] = blobs(400)
    chunk = src / "c" / "2" / "0"
    chunk.write_bytes(chunk.read_bytes()[:7])
    code = main(["apply", str(store), str(src), str(tmp_path / "out.npy"), "--workers", "1", "--quiet"])
    lines = capfd.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "cannot read the Zarr chunk at [200:300, 0:3]" in lines[0]
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_cli_apply_refuses_a_worker_count_below_one(tmp_path, capsys, workers):
    """Regression: ``cdfts apply ... --workers -2`` waited forever for workers that never start (``transform``
    refused it); ``--workers 0`` silently used the default count."""
    X = np.random.default_rng(2).random((40, 2))
    np.save(tmp_path / "in.npy", X)
    assert main(["transform", str(tmp_path / "in.npy"), str(tmp_path / "fit.npy"), "--max-iter", "1",
                 "--checkpoint", str(tmp_path / "m.zarr"), "--quiet"]) == 0  # fmt: skip
    code, err = _apply(capsys, tmp_path / "m.zarr", tmp_path / "in.npy", tmp_path / "o.zarr", "--workers", workers)  # noqa: E501
    assert code == 2 and err.strip() == f"cdfts apply: error: --workers must be >= 1, got {workers}", err
    assert not (tmp_path / "o.zarr").exists()


def test_cli_apply_checks_a_csv_header_against_the_fitted_column_names(tmp_path, capsys):
    """Regression: ``cdfts apply`` read a CSV whose columns were the fit's in another order and replayed
    'weight' as 'height' (exit 0; 41.95 where 0.547 was right).  The run's column names (a CSV header,
    a DataFrame's columns) are kept in the store and the model; a header must match them."""
    import pandas as pd

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"height": rng.uniform(0, 100, 120), "weight": rng.uniform(0, 1, 120)})
    frame.to_csv(tmp_path / "fit.csv", index=False)
    frame[:10].to_csv(tmp_path / "new.csv", index=False)
    frame[:10][["weight", "height"]].to_csv(tmp_path / "swapped.csv", index=False)
    np.save(tmp_path / "new.npy", frame[:10].to_numpy())
    store = tmp_path / "m.zarr"
    assert main(["transform", str(tmp_path / "fit.csv"), str(tmp_path / "fit-out.csv"), "--max-iter", "2",
                 "--checkpoint", str(store), "--quiet"]) == 0  # fmt: skip
    assert fitted.load(store).feature_names == ["height", "weight"]
    assert _apply(capsys, store, tmp_path / "new.csv", tmp_path / "o.csv", "--quiet") == (0, "")
    assert _apply(capsys, store, tmp_path / "new.npy", tmp_path / "o.npy", "--quiet") == (0, "")  # no names
    fit_out = np.loadtxt(tmp_path / "fit-out.csv", delimiter=",", skiprows=1)
    assert np.array_equal(np.loadtxt(tmp_path / "o.csv", delimiter=",", skiprows=1), fit_out[:10])
    assert np.array_equal(np.load(tmp_path / "o.npy"), fit_out[:10])
    code, err = _apply(capsys, store, tmp_path / "swapped.csv", tmp_path / "o2.csv")
    assert code == 2 and not (tmp_path / "o2.csv").exists()
    assert err == ("cdfts apply: error: input has the columns ['weight', 'height'], but the model was fitted "
                   "on ['height', 'weight'] (same names in the same order; name 1 is 'weight', fitted "
                   "'height')\n")  # fmt: skip
    cdf_ts(frame, max_iter=2, checkpoint=tmp_path / "api.zarr")  # the API keeps a DataFrame's names too
    assert fitted.load(tmp_path / "api.zarr").feature_names == ["height", "weight"]
    est = CDFTS(max_iter=2).fit(frame)
    assert est.model_.feature_names == ["height", "weight"]
    assert CDFTS(max_iter=2).fit(frame.to_numpy()).model_.feature_names is None


def test_a_large_csv_keeps_its_column_names_in_the_store_and_the_estimator(tmp_path, capsys, monkeypatch):
    """Regression: a CSV of 64 MiB or more (read block-wise by the workers) kept no column names: its
    store had none, so ``cdfts apply`` replayed a header in another order by position (exit 0); neither
    did ``cdf_ts("x.csv")`` of any size, nor ``CDFTS().fit`` of a large CSV path."""
    import pandas as pd

    from cdfts_dask import csv_blocks

    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)  # every CSV read as a large one
    monkeypatch.setattr(csv_blocks, "CSV_BLOCK_BYTES", 2000)
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"height": rng.uniform(0, 100, 90), "weight": rng.uniform(0, 1, 90)})
    frame.assign(label=rng.integers(0, 3, 90)).to_csv(tmp_path / "fit.csv", index=False)
    frame.to_csv(tmp_path / "plain.csv", index=False)
    frame[:10][["weight", "height"]].to_csv(tmp_path / "swapped.csv", index=False)
    store = tmp_path / "m.zarr"
    assert main(["transform", str(tmp_path / "fit.csv"), str(tmp_path / "out.csv"), "--label", "label",
                 "--max-iter", "2", "--checkpoint", str(store), "--quiet"]) == 0  # fmt: skip
    assert fitted.load(store).feature_names == ["height", "weight"]
    code, err = _apply(capsys, store, tmp_path / "swapped.csv", tmp_path / "o.csv")
    assert code == 2 and "the model was fitted on ['height', 'weight']" in err
    assert not (tmp_path / "o.csv").exists()
    cdf_ts(str(tmp_path / "plain.csv"), max_iter=2, checkpoint=tmp_path / "api.zarr")
    assert fitted.load(tmp_path / "api.zarr").feature_names == ["height", "weight"]
    est = CDFTS(max_iter=2).fit(str(tmp_path / "plain.csv"))
    assert list(est.feature_names_in_) == ["height", "weight"] == est.model_.feature_names
    with pytest.raises(ValueError, match=r"X has the columns \['weight', 'height'\]"):
        est.transform(str(tmp_path / "swapped.csv"))
    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1 << 40)  # a small CSV path to cdf_ts too
    cdf_ts(str(tmp_path / "plain.csv"), max_iter=2, checkpoint=tmp_path / "small.zarr")
    assert fitted.load(tmp_path / "small.zarr").feature_names == ["height", "weight"]


@pytest.mark.parametrize("large", [False, True], ids=["small", "block-wise"])
def test_the_estimator_names_a_csv_headers_repeated_column_names(tmp_path, monkeypatch, large):
    """Regression: ``CDFTS().fit("x.csv")`` on a header ``a,a,b`` raised narwhals' ``DuplicateError``
    about a DataFrame the user never made, and a large CSV of that header was fitted with the repeated
    names kept (so a later transform could not tell its columns apart); both are refused, naming the
    file and the names, before any work.  The command line keeps accepting such a file."""
    from cdfts_dask import csv_blocks

    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1 if large else 1 << 40)
    path = tmp_path / "repeated.csv"
    np.savetxt(path, np.random.default_rng(0).random((30, 3)), delimiter=",", header="a,a,b", comments="")
    message = r"^X: the header of '.*repeated.csv' repeats column names \('a' 2 times\); .* rename the"
    with pytest.raises(ValueError, match=message):
        CDFTS(max_iter=1).fit(str(path))
    est = CDFTS(max_iter=1).fit(np.random.default_rng(1).random((30, 3)))
    with pytest.raises(ValueError, match=message):
        est.transform(str(path))
    assert main(["transform", str(path), str(tmp_path / "out.csv"), "--max-iter", "1", "--quiet"]) == 0
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "a,a,b"


@pytest.mark.parametrize("names", [["a"], "ab", [1, 2], 7, ["a", "b", "c"]])
def test_feature_names_that_are_not_one_string_per_column_are_refused(names):
    with pytest.raises(ValueError, match=r"^feature_names must be 2 strings \(one per column of X\), got "):
        cdf_ts(np.random.default_rng(0).random((20, 2)), max_iter=1, feature_names=names)


def test_the_estimator_checks_its_checkpoint_path_as_cdf_ts_does(tmp_path, client, monkeypatch):
    """Regressions: ``CDFTS.fit`` took its checkpoint as given where ``cdf_ts`` checks it first: a store
    inside the input Zarr store was written there, ``checkpoint=123`` made a store named '123', and a
    relative path was not made absolute on the client, so workers in another directory wrote the store
    there and the fit failed at the end ("not a cdfts-dask run store")."""
    X = blobs()
    source = tmp_path / "in.zarr"
    zarr.save_array(str(source), X)
    inside = source / "run.zarr"
    with pytest.raises(ValueError, match="checkpoint .* is inside the input"):
        CDFTS(checkpoint=inside, max_iter=2).fit(str(source))
    assert sorted(p.name for p in source.iterdir()) == ["c", "zarr.json"]
    with pytest.raises(TypeError, match="checkpoint must be a path .* got 123"):
        CDFTS(checkpoint=123, max_iter=2).fit(X)
    monkeypatch.chdir(tmp_path)  # the session's workers stay in the directory they started in
    est = CDFTS(client=client, method="tiled", max_iter=2, checkpoint="relative.zarr").fit(X)
    assert fitted.load(tmp_path / "relative.zarr").n_iter == est.n_iter_ == 2
    assert np.array_equal(est.embedding_, cdf_ts(X, client=client, method="tiled", max_iter=2))


def test_cli_apply_names_the_output_columns_as_fitted_when_the_input_has_none(tmp_path, capsys):
    """Regression (found by a review of the model paths, 2026-11-25): a model fitted on a CSV with the
    header `a,b`, applied to a `.npy` (or a CSV without header), wrote the output header `x0,x1`."""
    fit, store = tmp_path / "fit.csv", tmp_path / "run.zarr"
    X = blobs(40, 2)
    np.savetxt(fit, X, delimiter=",", header="a,b", comments="")
    assert main(["transform", str(fit), str(tmp_path / "fitted.csv"), "--checkpoint", str(store),
                 "--method", "dense", "--max-iter", "2", "--quiet"]) == 0  # fmt: skip
    np.save(tmp_path / "new.npy", blobs(10, 2, seed=4))
    code, err = _apply(capsys, store, tmp_path / "new.npy", tmp_path / "o.csv")
    assert code == 0, err
    assert (tmp_path / "o.csv").read_text().splitlines()[0] == "a,b"
