"""The sampled fit (``n_references``): fit on s uniformly drawn points, then transform all n."""

from __future__ import annotations

import re
import warnings

import dask.array as da
import numpy as np
import pytest
import zarr
from conftest import DATA, load_csv

from cdfts_dask import CDFTS, cdf_ts
from cdfts_dask import model as fitted
from cdfts_dask.cli import main
from cdfts_dask.sampling import draw_indices, sampled_k


@pytest.fixture(scope="module")
def syn():
    return load_csv(DATA / "syn.csv")[0]


def test_s_at_least_n_is_the_exact_algorithm(syn):
    X = syn[::3]  # 500 of the 1500 points: four dense runs
    exact = cdf_ts(X, lam=0.1, delta=0.01)
    for s in (len(X), len(X) + 10):
        assert np.array_equal(cdf_ts(X, lam=0.1, delta=0.01, n_references=s, random_state=0), exact)
    est = CDFTS(lam=0.1, delta=0.01, n_references=len(X)).fit(X)
    assert est.sample_indices_ is None and np.array_equal(est.embedding_, exact)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 30)])
def test_sampled_fit_is_the_fit_on_the_drawn_rows_then_a_transform(syn, estimator, k):
    s = 300
    Y, info = cdf_ts(syn, lam=0.1, delta=0.01, estimator=estimator, k=k, n_references=s, random_state=7,
                     return_info=True)  # fmt: skip
    idx = info.sample_indices
    assert np.array_equal(idx, draw_indices(len(syn), s, 7)) and len(np.unique(idx)) == s
    k_s = sampled_k(k, s, len(syn))
    on_sample = cdf_ts(syn[idx], lam=0.1, delta=0.01, estimator=estimator, k=k_s)
    assert np.array_equal(Y[idx], on_sample)  # a drawn point maps to its fitted output
    assert np.abs(Y - fitted.transform_numpy(info.model, syn)).max() == 0
    assert info.model.n_references == s and (info.model.k == k_s)
    again = cdf_ts(syn, lam=0.1, delta=0.01, estimator=estimator, k=k, n_references=s, random_state=7)
    other = cdf_ts(syn, lam=0.1, delta=0.01, estimator=estimator, k=k, n_references=s, random_state=8)
    assert np.array_equal(again, Y) and not np.array_equal(other, Y)


def test_sampled_knn_fit_gives_every_copy_of_a_drawn_point_its_output():
    """More than k_s copies of one point among the drawn rows (radius 0 there, where rho jumps at s = 0):
    every copy, drawn or not, takes the drawn point's fitted output (a replay an ulp off the references
    would move them by up to q)."""
    rng = np.random.default_rng(3)
    X = rng.normal(0, 1, (200, 2))
    X[:40] = X[0]
    Y, info = cdf_ts(X, lam=0.1, delta=0.01, estimator="knn", k=20, n_references=100, random_state=1,
                     return_info=True)  # fmt: skip
    idx = info.sample_indices
    drawn_copies = int(np.count_nonzero(idx < 40))
    assert drawn_copies > info.model.k == sampled_k(20, 100, 200)
    on_sample = cdf_ts(X[idx], lam=0.1, delta=0.01, estimator="knn", k=info.model.k)
    assert np.array_equal(Y[idx], on_sample)
    assert (Y[:40] == on_sample[0]).all()


def test_knn_k_scales_with_the_sample():
    assert sampled_k(50, 1000, 100000) == 1  # round(0.5) = 0 -> at least 1
    assert sampled_k(50, 2000, 10000) == 10
    assert sampled_k(99, 40, 100) == 39  # round(39.6) = 40 > s - 1
    assert sampled_k(None, 10, 100) is None


def test_draw_is_uniform_without_replacement():
    counts = np.zeros(50)
    for seed in range(400):
        idx = draw_indices(50, 10, seed)
        assert len(np.unique(idx)) == 10 and np.all(np.diff(idx) > 0)
        counts[idx] += 1
    expected = 400 * 10 / 50
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected)  # each row drawn with probability s / n


def test_dask_and_zarr_inputs_draw_the_same_rows(syn, tmp_path, client):
    X = syn[::3]  # 500 points in chunks of 128: the last chunk partial
    ref = cdf_ts(X, lam=0.1, delta=0.01, n_references=200, random_state=3)
    lazy = cdf_ts(da.from_array(X, chunks=(128, 2)), lam=0.1, delta=0.01, n_references=200, random_state=3,
                  client=client)  # fmt: skip
    assert np.abs(lazy - ref).max() <= 1e-9  # the sample is fitted by the tiled engine on the client
    src = tmp_path / "in.zarr"
    zarr.create_array(str(src), shape=X.shape, dtype="f8", chunks=(128, 2))[...] = X
    out = cdf_ts(str(src), lam=0.1, delta=0.01, n_references=200, random_state=3, client=client,
                 output=tmp_path / "out.zarr")  # fmt: skip
    assert isinstance(out, zarr.Array) and np.array_equal(out[...], lazy.compute())
    # without an output a Zarr path gives NumPy, as the exact fit does; only a dask array gives a dask array
    # (found by a mutation audit, 2026-12-07: every lazy input answered lazily passed)
    plain = cdf_ts(str(src), lam=0.1, delta=0.01, n_references=200, random_state=3, client=client)
    assert isinstance(lazy, da.Array) and isinstance(plain, np.ndarray) and np.array_equal(plain, out[...])


def test_estimator_with_references(syn):
    est = CDFTS(lam=0.1, delta=0.01, n_references=250, random_state=0)
    Y = est.fit_transform(syn)
    assert est.embedding_.shape == (250, 2) and est.sample_indices_.shape == (250,)
    assert np.array_equal(Y, est.transform(syn))
    assert np.array_equal(Y, cdf_ts(syn, lam=0.1, delta=0.01, n_references=250, random_state=0))


def test_a_column_constant_in_the_drawn_rows_is_warned_about():
    """A rare value missed by the draw (a 0/1 flag in 1 % of the rows, absent from 50 references) makes
    its column constant in the fit, which gives it no scale: it is 0 on every row (DESIGN section 5), so
    the flag is lost (the exact fit gives 0.99 there), and that is said.  Regression: the column's span
    was taken as 1 and the flagged rows kept its raw units (1.06 for a 0/1 flag, 489 for 0/1000), the
    output depending on the unit.  A column constant in all of X, and a draw that holds the value, say
    nothing."""
    rng = np.random.RandomState(0)
    X = np.c_[rng.rand(1000, 2), (rng.rand(1000) < 0.01).astype(float)]
    flagged = int(np.flatnonzero(X[:, 2])[0])
    outputs = []
    for unit in (1.0, 1000.0):
        with pytest.warns(UserWarning, match=r"column\(s\) 2 of X are constant in the 50 drawn references"):
            Y, info = cdf_ts(X * [1, 1, unit], n_references=50, random_state=1, return_info=True)
        assert X[info.sample_indices, 2].sum() == 0
        outputs.append(Y)
    assert outputs[0][flagged, 2] == 0.0 and not outputs[0][:, 2].any()
    assert np.array_equal(outputs[0], outputs[1])  # nothing depends on the column's unit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cdf_ts(np.c_[X[:, :2], np.ones(1000)], n_references=50, random_state=1)  # constant everywhere
        cdf_ts(X, n_references=600, random_state=1)  # the draw holds flagged rows
    lazy = da.from_array(X, chunks=(250, 3))  # out of core: X's columns are not scanned, so "may vary"
    with pytest.warns(UserWarning, match=r"column\(s\) 2 .* but may vary in X"):
        CDFTS(n_references=50, random_state=1).fit(lazy)


@pytest.mark.parametrize(
    "value,error",
    [(0, ValueError), (1, ValueError), (-3, ValueError), (True, TypeError), (2.5, TypeError),
     ("9", TypeError)],
)  # fmt: skip
def test_bad_n_references(syn, value, error):
    """One message for every bad value (0 once said '>= 1' and 1 '>= 2')."""
    with pytest.raises(error, match=rf"^n_references must be an integer >= 2 \(or None for the exact fit\), "
                                    rf"got {re.escape(repr(value))}$"):  # fmt: skip
        cdf_ts(syn, n_references=value)


@pytest.mark.parametrize(
    "value,error",
    [(-1, ValueError), (2**32, ValueError), ("a", TypeError), (1.5, TypeError), (True, TypeError),
     # a numpy Generator: scikit-learn's draw cannot take one (the second mutation audit, 2026-12-07)
     (np.random.default_rng(0), TypeError)],
)  # fmt: skip
@pytest.mark.parametrize("n_references", [None, 100])  # refused whether or not rows are drawn
def test_bad_random_state_is_named(syn, value, error, n_references):
    """Regression: -1 gave numpy's 'Seed must be between 0 and 2**32 - 1', 'a' scikit-learn's message,
    neither naming random_state, and only when rows were drawn."""
    with pytest.raises(error, match=rf"^random_state must be None, an integer in \[0, 2\*\*32 - 1\] or a "
                                    rf"numpy.random.RandomState, got {re.escape(repr(value))}$"):  # fmt: skip
        cdf_ts(syn, n_references=n_references, random_state=value)


def test_cli_bad_random_state_is_one_line(tmp_path, capsys):
    code = main(["transform", str(DATA / "syn.csv"), str(tmp_path / "out.npy"), "--label", "label",
                 "--references", "100", "--random-state", "-1"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--random-state must be None" in err[0] and "got -1" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_cli_transform_with_references(syn, tmp_path, capsys):
    out = tmp_path / "out.npy"
    assert main(["transform", str(DATA / "syn.csv"), str(out), "--label", "label", "--delta", "0.01",
                 "--references", "300", "--random-state", "4", "--quiet"]) == 0  # fmt: skip
    expected = cdf_ts(syn, lam=0.1, delta=0.01, n_references=300, random_state=4)
    assert np.array_equal(np.load(out), expected)


def test_a_sampled_fit_written_to_zarr_connects_with_the_callers_security(syn, tmp_path, monkeypatch):
    """Regression: the sampled fit's ``.zarr`` output (and ``CDFTS.transform(output=".zarr")``) opened
    its cluster without ``security``: a TLS scheduler given by address failed only after the whole fit,
    and an embedded cluster started without TLS."""
    from distributed.security import Security

    from cdfts_dask import dask_client as connections

    given, calls = Security(), []
    real = connections.dask_client

    def recording(*args, **kwargs):
        calls.append(kwargs.get("security"))
        return real(*args, **kwargs)

    monkeypatch.setattr(connections, "dask_client", recording)
    chunked = da.from_array(syn, chunks=(50, -1))  # a dask array's Zarr output is written by the workers
    out = cdf_ts(chunked, n_references=60, random_state=0, max_iter=2, output=tmp_path / "o.zarr",
                 security=given, n_workers=1)  # fmt: skip
    want = cdf_ts(syn, n_references=60, random_state=0, max_iter=2)
    np.testing.assert_allclose(out[...], want, rtol=0, atol=1e-9)  # n_workers=1: tiled, another sum order
    est = CDFTS(n_references=60, random_state=0, max_iter=2, security=given).fit(syn)
    est.transform(chunked[:10], output=tmp_path / "p.zarr")
    assert len(calls) >= 2 and all(security is given for security in calls), calls


def test_a_sampled_resume_names_what_differs_from_the_stored_draw(syn, tmp_path):
    """Regression: a sampled resume with another random_state or n_references was refused as "made from
    other input data (fingerprint differs)", and one with another k named the k of the s references
    (k=4), not the k given.  The store now keeps how its rows were drawn, and the refusal names it."""
    from cdfts_dask.store import StoreMismatch

    X, store = syn[::2], tmp_path / "run.zarr"
    kw = dict(lam=0.1, delta=1e-9, n_references=80, random_state=3, checkpoint=store)
    first = cdf_ts(X, max_iter=2, **kw)
    refusals = {
        "random_state=3, this run has random_state=4": dict(kw, random_state=4),
        "n_references=80, this run has n_references=90": dict(kw, n_references=90),
        "rows=750, this run has rows=749": dict(kw, X=X[:-1]),
        "made by a sampled fit, this run is an exact one": dict(kw, n_references=None),
    }
    for message, args in refusals.items():
        with pytest.raises(StoreMismatch, match=message):
            cdf_ts(args.pop("X", X), max_iter=3, resume=True, **args)
    knn = dict(kw, estimator="knn", k=100, checkpoint=tmp_path / "knn.zarr")
    cdf_ts(X, max_iter=1, **knn)
    k_s, other = sampled_k(100, 80, len(X)), sampled_k(300, 80, len(X))
    with pytest.raises(StoreMismatch, match=rf"k={k_s}, this run has k={other} \(the k of a sampled fit's 80 "
                                            r"references, from k=300 given for 750 rows\)"):  # fmt: skip
        cdf_ts(X, max_iter=2, resume=True, **dict(knn, k=300))
    again = cdf_ts(X, max_iter=2, resume=True, **kw)  # the same draw: the stored run, nothing refused
    np.testing.assert_array_equal(again, first)
    resumed = cdf_ts(X, max_iter=3, resume=True, **kw)
    np.testing.assert_allclose(resumed, cdf_ts(X, max_iter=3, **dict(kw, checkpoint=None)), rtol=0, atol=1e-9)
    unseeded = tmp_path / "unseeded.zarr"
    said = r"sampled fit \(n_references=80\) without an integer random_state: the store .* cannot be resumed"
    with pytest.warns(UserWarning, match=said):
        cdf_ts(X, max_iter=1, **dict(kw, random_state=None, checkpoint=unseeded))  # said when it is made
    with warnings.catch_warnings():  # refused, and not told that the store it refuses "will be" made
        warnings.simplefilter("error", UserWarning)  # (found by a mutation audit, 2026-12-07)
        with pytest.raises(StoreMismatch, match=r"without an integer random_state.*\(--random-state\)"):
            cdf_ts(X, max_iter=2, resume=True, **dict(kw, random_state=None, checkpoint=unseeded))
    with pytest.warns(UserWarning, match=said):  # resume=True on a store not made yet makes one: said too
        cdf_ts(X, max_iter=1, resume=True, **dict(kw, random_state=None, checkpoint=tmp_path / "new.zarr"))


def test_knn_k_on_the_sample_is_k_s_over_n_rounded_to_the_nearest():
    """DESIGN section 5: ``k_s = max(1, round(k s / n))`` (Python's round: halves to even), not the
    floor; the fit of a sampled k-NN run uses it."""
    assert sampled_k(9, 30, 100) == 3  # 2.7
    assert sampled_k(19, 40, 100) == 8  # 7.6
    assert sampled_k(7, 50, 100) == 4  # 3.5: to even
    assert sampled_k(5, 50, 100) == 2  # 2.5: to even
    X = np.random.default_rng(4).normal(0, 1, (100, 2))
    _, info = cdf_ts(X, lam=0.1, estimator="knn", k=9, n_references=30, random_state=0, max_iter=1,
                     return_info=True)  # fmt: skip
    assert info.model.k == 3


def test_the_replay_cluster_has_the_workers_asked_for_and_says_so(tmp_path, caplog):
    """A sampled fit of a dask array written to Zarr replays the model on an embedded cluster of
    ``n_workers`` workers, and its start line says so as a fit's does (mutation audit: ``n_workers``
    dropped on its way to the replay went unnoticed: nothing reported that cluster's size).  The
    output is the model's replay of every row."""
    import logging

    X = np.random.default_rng(5).random((90, 2))
    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        Y = cdf_ts(da.from_array(X, chunks=30), n_references=30, random_state=0, n_workers=1, max_iter=2,
                   output=tmp_path / "o.zarr", checkpoint=tmp_path / "m.zarr")  # fmt: skip
    assert re.search(r"model transform of 90 points: cpu, 1 worker\b(?!s)", caplog.text), caplog.text
    np.testing.assert_array_equal(Y[...], fitted.transform_numpy(fitted.load(tmp_path / "m.zarr"), X))
