"""CDFTS is a real scikit-learn transformer: the estimator checks, pipelines, search, feature names."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, load_csv
from sklearn.base import clone
from sklearn.cluster import DBSCAN
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_estimator

from cdfts_dask import CDFTS

#: estimator checks that do not apply here, with the reason (none is skipped silently)
NOT_APPLICABLE = {
    "check_array_api_input": "CDFTS computes with NumPy/numba (or CuPy through its own backend), not the "
    "array API; scikit-learn skips this check unless SCIPY_ARRAY_API=1",
}


def test_passes_the_scikit_learn_estimator_checks():
    results = check_estimator(CDFTS(), on_fail=None)
    assert len(results) > 40
    for r in results:
        if r["check_name"] in NOT_APPLICABLE:
            assert r["status"] in ("skipped", "passed")
        else:
            assert r["status"] == "passed", (r["check_name"], r["exception"])
    names = {r["check_name"] for r in results}
    for check in ("check_transformer_general", "check_methods_subset_invariance", "check_fit_idempotent",
                  "check_n_features_in_after_fitting", "check_estimators_pickle", "check_estimators_nan_inf"):
        assert check in names  # fmt: skip


@pytest.fixture(scope="module")
def syn():
    return load_csv(DATA / "syn.csv")


@pytest.fixture(scope="module")
def small(syn):
    """Every fifth point of syn (300): for the tests of data handling, where the size does not matter."""
    X, y = syn
    return X[::5], y[::5]


def test_pipeline_with_dbscan(syn):
    X, y = syn
    pipe = make_pipeline(CDFTS(lam=0.1, delta=0.01), DBSCAN(eps=0.04, min_samples=5))
    labels = pipe.fit_predict(X)
    assert labels.shape == (len(X),) and adjusted_rand_score(y, labels) > 0.9
    direct = DBSCAN(eps=0.04, min_samples=5).fit_predict(CDFTS(lam=0.1, delta=0.01).fit_transform(X))
    assert np.array_equal(labels, direct)


def test_grid_search_with_a_scorer(small):
    X, y = small

    def ari(estimator, X, y):  # clustering quality of the pipeline on the held-out fold
        return adjusted_rand_score(y, estimator.fit_predict(X))

    search = GridSearchCV(
        make_pipeline(CDFTS(delta=0.05), DBSCAN(min_samples=5)),
        {"cdfts__lam": [0.05, 0.1], "dbscan__eps": [0.03, 0.04]},
        scoring=ari,
        cv=KFold(2, shuffle=True, random_state=0),
    ).fit(X, y)
    assert set(search.best_params_) == {"cdfts__lam", "dbscan__eps"}
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    # a supervised pipeline: CDFTS.transform maps the held-out fold with the training fold's run
    knn = GridSearchCV(make_pipeline(CDFTS(delta=0.05), KNeighborsClassifier()),
                       {"cdfts__lam": [0.05, 0.2]}, scoring="accuracy", cv=2).fit(X, y)  # fmt: skip
    assert knn.best_score_ > 0.6


def test_feature_names_and_set_output(small):
    import pandas as pd
    X, _ = small
    frame = pd.DataFrame(X, columns=["width", "height"])
    est = CDFTS(lam=0.1, delta=0.01).set_output(transform="pandas")
    out = est.fit_transform(frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["width", "height"]
    assert list(est.get_feature_names_out()) == ["width", "height"]
    assert np.abs(est.transform(frame).to_numpy() - out.to_numpy()).max() <= 1e-9
    plain = CDFTS(lam=0.1, delta=0.01).fit(X)
    assert list(plain.get_feature_names_out()) == ["x0", "x1"]
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        est.transform(X)


def test_a_dask_or_zarr_input_without_names_is_warned_about_as_numpy_is(small, tmp_path, monkeypatch):
    """Regression (found by an API audit, 2026-11-29): after ``fit(DataFrame)``, ``transform(ndarray)``
    warns (scikit-learn's check) but ``transform(dask_array)`` and a Zarr path said nothing; and a large
    CSV with a header after a fit without names said nothing either (the warning scikit-learn gives a
    DataFrame then)."""
    import warnings

    import dask.array as da
    import pandas as pd
    import zarr

    X, _ = small
    zarr.create_array(str(tmp_path / "x.zarr"), shape=X.shape, dtype="f8")[...] = X
    named = CDFTS(lam=0.1, delta=0.01).fit(pd.DataFrame(X, columns=["width", "height"]))
    for Y in (da.from_array(X, chunks=(40, 2)), str(tmp_path / "x.zarr")):
        with pytest.warns(UserWarning, match="X does not have valid feature names, but CDFTS was fitted"):
            named.transform(Y)
    plain = CDFTS(lam=0.1, delta=0.01).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain.transform(da.from_array(X, chunks=(40, 2)))  # neither has names: no word
    with pytest.warns(UserWarning, match="X has feature names, but CDFTS was fitted without"):
        plain.transform(pd.DataFrame(X, columns=["width", "height"]))  # scikit-learn's own, for comparison
    from cdfts_dask import csv_blocks

    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)  # every CSV read as a large one
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", header="width,height", comments="")
    with pytest.warns(UserWarning, match="X has feature names, but CDFTS was fitted without"):
        plain.transform(str(tmp_path / "x.csv"))


@pytest.mark.parametrize("n_references", [None, 150])  # fit_transform: the run's result / a replay
def test_dataframe_in_keeps_its_index_and_column_names_out(small, n_references):
    import pandas as pd
    X, _ = small
    index = pd.Index([f"p{i}" for i in range(len(X))][::-1], name="point")  # not a RangeIndex
    frame = pd.DataFrame(X, columns=["width", "height"], index=index)
    params = dict(lam=0.1, delta=0.01, n_references=n_references, random_state=0)
    est = CDFTS(**params).set_output(transform="pandas")
    plain = CDFTS(**params)
    out = est.fit_transform(frame)
    assert isinstance(out, pd.DataFrame) and out.index.equals(index) and out.index.name == "point"
    assert list(out.columns) == list(est.get_feature_names_out()) == ["width", "height"]
    assert np.array_equal(out.to_numpy(), plain.fit_transform(X))  # the same numbers as for the array
    part = frame.iloc[200:260]
    new = est.transform(part)
    assert isinstance(new, pd.DataFrame) and new.index.equals(part.index)
    assert list(new.columns) == ["width", "height"]
    assert np.array_equal(new.to_numpy(), plain.transform(X[200:260]))


def test_fitted_attributes(syn):
    X, _ = syn
    with pytest.raises(NotFittedError):
        CDFTS().transform(X)
    est = clone(CDFTS(lam=0.1, delta=0.01)).fit(X)
    assert isinstance(est.deltas_, np.ndarray) and est.deltas_.shape == (est.n_iter_,) == (5,)
    assert est.n_features_in_ == 2 and est.converged_ and est.model_.n_iter == 5
    # stopped by max_iter before Delta <= delta: not converged (found by a mutation audit, 2026-12-07)
    short = CDFTS(lam=0.1, delta=0.01, max_iter=2).fit(X)
    assert short.n_iter_ == 2 and short.deltas_[-1] > 0.01 and short.converged_ is False
    with pytest.raises(ValueError, match="Found array with 1 sample"):
        CDFTS().fit(X[:1])


def test_a_fit_over_an_existing_checkpoint_is_refused_before_its_input_is_read(tmp_path, small, monkeypatch):
    """Without ``resume``, a fit whose checkpoint store holds a run is refused before the input file is read
    (found by a mutation audit, 2026-12-07: the estimator's early check made as if resuming passed, the
    run's own check refusing it only after the input was read)."""
    from cdfts_dask import estimator

    X, _ = small
    store, path = tmp_path / "run.zarr", tmp_path / "in.csv"
    np.savetxt(path, X, delimiter=",")
    CDFTS(max_iter=1, checkpoint=store).fit(X)

    def not_read(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr(estimator, "read_table", not_read)
    with pytest.raises(FileExistsError, match=r"run.zarr' already exists; pass resume=True"):
        CDFTS(max_iter=1, checkpoint=store).fit(str(path))


def test_a_csv_path_is_fitted_with_its_column_names(tmp_path, small):
    """A CSV path's header is its feature names, checked at transform as a DataFrame's are.
    Regression: a CSV with the fitted columns in another order was transformed without a word (the
    values of one column replayed as the other's); a column named like a label was fitted silently
    (``cdf_ts`` on the same path warns)."""
    X = small[0][:60]  # d = 2
    fit_csv, swapped_csv, labelled_csv = (tmp_path / f"{name}.csv" for name in ("fit", "swapped", "labelled"))
    np.savetxt(fit_csv, X, delimiter=",", header="height,weight", comments="")
    np.savetxt(swapped_csv, X[:, ::-1], delimiter=",", header="weight,height", comments="")
    est = CDFTS(lam=0.2, max_iter=2).fit(str(fit_csv))
    assert list(est.feature_names_in_) == ["height", "weight"]
    assert np.array_equal(est.transform(str(fit_csv)), est.embedding_)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):  # as after a DataFrame
        assert np.array_equal(est.transform(X), est.embedding_)
    with pytest.raises(ValueError, match="feature names should match"):
        est.transform(str(swapped_csv))
    np.savetxt(labelled_csv, np.column_stack([X, X[:, 0] > 0]), delimiter=",", header="a,b,class",
               comments="")  # fmt: skip
    with pytest.warns(UserWarning, match="column 'class' .* is named like a label"):
        CDFTS(lam=0.2, max_iter=1).fit(str(labelled_csv))


def test_clone_shares_the_client_and_fit_transform_returns_a_copy(small, client):
    """Regressions: ``clone(CDFTS(client=Client))`` (hence GridSearchCV, cross_val_score) failed with
    "cannot pickle '_asyncio.Task'" (scikit-learn deep-copies parameters); ``fit_transform`` returned
    ``embedding_`` itself, so editing the output edited the fitted attribute; the HTML repr warned
    about an unknown docstring section."""
    import warnings

    est = CDFTS(lam=0.2, max_iter=2, client=client, tile_size=32)
    twin = clone(est)
    assert twin.client is client and twin.get_params() == est.get_params() and not hasattr(twin, "model_")
    X, y = small
    search = GridSearchCV(make_pipeline(est, KNeighborsClassifier(3)), {"cdfts__lam": [0.2, 0.3]}, cv=2)
    assert search.fit(X, y).best_params_["cdfts__lam"] in (0.2, 0.3)
    out = CDFTS(lam=0.2, max_iter=2).fit(X)
    Y = out.fit_transform(X)
    Y[:] = -1.0
    assert out.embedding_.min() >= 0
    # nor is embedding_ the model's own outputs, which a transform of the fit points returns (found by a
    # mutation audit, 2026-12-07: an embedding_ that was model_.outputs itself passed)
    fit_rows = out.transform(X[:5])
    out.embedding_[:] = -1.0
    np.testing.assert_array_equal(out.transform(X[:5]), fit_rows)
    assert fit_rows.min() >= 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out._repr_html_()


@pytest.mark.parametrize(
    "refused, message",
    [
        pytest.param(dict(lam=2.0), "lam must lie", id="lam-out-of-range"),
        pytest.param(dict(estimator="knn", k=10_000), "k must lie", id="k-above-n"),
    ],
)
def test_a_refused_refit_leaves_the_estimator_unfitted(small, refused, message):
    """Regression: a refit on a DataFrame with swapped columns, refused for a bad parameter, left the new
    frame's ``feature_names_in_`` beside the old fit's ``model_``; with the parameter put back, a
    ``transform`` of the swapped frame passed the name check and replayed the columns the wrong way
    round (6.6-7.2 away, no error)."""
    import pandas as pd

    X, _ = small
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1] * 10})
    est = CDFTS(lam=0.1, max_iter=3).fit(frame)
    # what the fit set, found on the estimator (not from CDFTS._FITTED, the list the fit's clean-up uses:
    # a name left out of it passed; found by a mutation audit, 2026-12-07)
    set_by_the_fit = sorted(name for name in vars(est) if name.endswith("_") and not name.startswith("_"))
    expected = {"model_", "embedding_", "sample_indices_", "n_features_in_", "feature_names_in_"}
    assert expected <= set(set_by_the_fit), set_by_the_fit
    params = est.get_params()
    with pytest.raises(ValueError, match=message):
        est.set_params(**refused).fit(frame[["b", "a"]])
    est.set_params(**params)
    assert [name for name in set_by_the_fit if hasattr(est, name)] == []
    with pytest.raises(NotFittedError):
        est.transform(frame[["b", "a"]])
    first = CDFTS(delta=-1.0)  # a first fit refused: NotFittedError at transform, not AttributeError
    with pytest.raises(ValueError, match="delta"):
        first.fit(X)
    with pytest.raises(NotFittedError):
        first.transform(X)
    assert np.array_equal(est.fit(frame).transform(frame), CDFTS(lam=0.1, max_iter=3).fit_transform(frame))


def test_a_fitted_estimator_with_a_client_pickles_and_deep_copies_with_its_address(small, client):
    """Regression: ``pickle.dumps`` of a fitted ``CDFTS(client=Client)`` failed ("cannot pickle
    '_asyncio.Task' object"), and with it joblib and saving the model.  A live connection cannot be
    copied: the copy holds its scheduler's address and fits there; a client no other process can reach
    (closed, or an in-process cluster's ``inproc://``) becomes None; an address string is kept."""
    import copy
    import pickle

    from distributed import Client, LocalCluster

    X, _ = small
    est = CDFTS(max_iter=2, client=client, tile_size=64, method="tiled").fit(X)
    for twin in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        assert twin.client == client.scheduler.address and est.client is client
        assert np.array_equal(twin.transform(X[:20] + 0.01), est.transform(X[:20] + 0.01))
        assert {k: v for k, v in twin.get_params().items() if k != "client"} == {
            k: v for k, v in est.get_params().items() if k != "client"
        }
    assert np.array_equal(twin.fit(X).embedding_, est.embedding_)  # on the same cluster, by its address
    by_address = pickle.loads(pickle.dumps(CDFTS(client="tcp://10.0.0.5:8786")))
    assert by_address.client == "tcp://10.0.0.5:8786"
    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as own,
    ):
        assert pickle.loads(pickle.dumps(CDFTS(client=own))).client is None  # inproc://: this process only
    assert pickle.loads(pickle.dumps(CDFTS(client=own))).client is None  # closed


def test_cross_validation_in_joblib_workers_runs_on_the_given_client(small, client):
    """Regression: ``cross_val_score(..., n_jobs=2)`` pickles the pipeline into loky worker processes;
    the copy of ``CDFTS(client=Client, method="tiled")`` had ``client=None`` and tried to start an
    embedded cluster there (``cannot find context for 'loky'``, ``Nanny failed to start``).  The copy
    now connects to the client's scheduler by its address: the scores equal the in-process ones."""
    from sklearn.model_selection import cross_val_score

    X, y = small
    cv = KFold(2, shuffle=True, random_state=0)
    pipe = make_pipeline(CDFTS(lam=0.2, max_iter=2, client=client, method="tiled"), KNeighborsClassifier(3))
    in_workers = cross_val_score(pipe, X, y, cv=cv, n_jobs=2, error_score="raise")
    assert np.array_equal(in_workers, cross_val_score(pipe, X, y, cv=cv, error_score="raise"))


def test_the_embedding_of_a_dask_fit_outlives_the_client_and_pickles():
    """Regression: after an exact ``CDFTS(client=c).fit(dask_array)``, ``embedding_`` (and
    ``fit_transform``'s result) was a dask array of futures on ``c``: once ``c`` closed, or in a pickled
    copy, computing it failed with ``Missing dependency _positions-...``.  It is now built from the
    model's outputs, already fetched: still a dask array chunked like the input, equal to the values
    before."""
    import pickle

    import dask.array as da
    from distributed import Client, LocalCluster

    from cdfts_dask import cdf_ts

    X = np.random.default_rng(12).random((120, 2))
    chunked = da.from_array(X, chunks=(40, 2))
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as c,
    ):
        est = CDFTS(max_iter=2, client=c)
        Y = est.fit_transform(chunked)
        before = c.compute(est.embedding_).result()
        blob = pickle.dumps(est)
    assert np.abs(before - cdf_ts(X, max_iter=2, method="dense")).max() <= 1e-9
    for embedding in (est.embedding_, Y, pickle.loads(blob).embedding_):
        assert isinstance(embedding, da.Array) and embedding.chunks == chunked.chunks
        assert np.array_equal(embedding.compute(scheduler="sync"), before)


def test_a_float32_estimator_preserves_float32(client):
    """Regression: the ``preserves_dtype`` tag said float64 whatever ``dtype`` was, so scikit-learn's
    dtype check failed for ``CDFTS(dtype="float32")`` (its output is float32)."""
    from sklearn.utils.estimator_checks import check_transformer_preserve_dtypes

    est = CDFTS(dtype="float32", client=client, max_iter=2)
    assert est.__sklearn_tags__().transformer_tags.preserves_dtype == ["float32"]
    assert CDFTS().__sklearn_tags__().transformer_tags.preserves_dtype == ["float64"]
    check_transformer_preserve_dtypes("CDFTS", est)


def test_a_clone_reports_progress_to_the_same_callback(small):
    """``progress`` is shared by a clone, like ``client`` (``__sklearn_clone__``): a deep copy of a
    method of the caller's object reports to a copy of that object, which the caller never sees."""

    class Recorder:
        def __init__(self):
            self.iterations = []

        def report(self, report):
            self.iterations.append(report.iteration)

    recorder = Recorder()
    est = clone(CDFTS(lam=0.2, delta=1e-12, max_iter=2, progress=recorder.report))
    assert est.progress == recorder.report
    est.fit(small[0])
    assert recorder.iterations == [1, 2]


def test_a_refit_on_a_dask_array_forgets_the_column_names_of_an_earlier_fit(small):
    """scikit-learn's rule, kept for the inputs it never sees: a refit on data without column names
    drops ``feature_names_in_`` (else the old names stayed beside the new model)."""
    import dask.array as da
    import pandas as pd

    X = small[0]
    est = CDFTS(lam=0.2, max_iter=2).fit(pd.DataFrame(X, columns=["a", "b"]))
    assert list(est.feature_names_in_) == ["a", "b"]
    est.fit(da.from_array(X, chunks=(25, 2)))
    assert not hasattr(est, "feature_names_in_")
    plain = CDFTS(lam=0.2, max_iter=2).fit(X)
    assert list(est.get_feature_names_out()) == list(plain.get_feature_names_out())


@pytest.mark.parametrize("verbose", [1, "yes", None])
def test_the_estimator_refuses_a_verbose_that_is_not_a_bool(small, verbose):
    """As ``cdf_ts`` does (``verbose must be True or False``)."""
    with pytest.raises(TypeError, match="verbose must be True or False"):
        CDFTS(verbose=verbose, max_iter=1).fit(small[0])


def test_a_chunked_transform_to_zarr_runs_on_the_estimators_client(small, client, tmp_path):
    """``transform(dask X, output=".zarr")`` is written chunk by chunk by the workers of the estimator's
    ``client`` (mutation audit: with ``client`` dropped, an embedded cluster was started instead)."""
    import dask.array as da
    from distributed import get_task_stream

    X = small[0]
    est = CDFTS(lam=0.2, max_iter=2, client=client).fit(X)
    with get_task_stream(client) as stream:
        out = est.transform(da.from_array(X, chunks=(20, 2)), output=tmp_path / "o.zarr")
    assert len(stream.data) > 0
    assert np.array_equal(out[...], est.embedding_)


def test_a_fit_on_a_dask_array_sets_n_features_in(small):
    """scikit-learn's ``n_features_in_``, also for the inputs it never sees (a dask array)."""
    import dask.array as da

    X = small[0]
    est = CDFTS(lam=0.2, max_iter=2).fit(da.from_array(X, chunks=(25, 2)))
    assert est.n_features_in_ == X.shape[1] == CDFTS(lam=0.2, max_iter=2).fit(X).n_features_in_
