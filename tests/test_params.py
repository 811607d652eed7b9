"""RunParams: one validation and one method choice for cdf_ts, CDFTS and cdfts transform."""

from __future__ import annotations

import pytest
from conftest import ROOT

from cdfts_dask.params import DENSE_MAX_N, RunParams


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ({}, "dense"),
        ({"n_workers": 1}, "tiled"),  # a worker count asks for the engine, in the API as in the CLI
        ({"tile_size": 64}, "tiled"),
        ({"dtype": "float32"}, "tiled"),
        ({"backend": "cuda"}, "tiled"),
        ({"method": "dense"}, "dense"),
    ],
)
def test_auto_method(kwargs, expected):
    assert RunParams(**kwargs).for_points(100).method == expected


def test_auto_method_is_the_engine_above_dense_max_n_or_with_a_client():
    assert RunParams().for_points(DENSE_MAX_N).method == "dense"
    assert RunParams().for_points(DENSE_MAX_N + 1).method == "tiled"
    assert RunParams().for_points(100, client="tcp://127.0.0.1:8786").method == "tiled"
    # the README states the bound (found by the second mutation audit of the checks, 2026-12-07: moved by
    # one, the code and this test agreed while the README said otherwise)
    readme = (ROOT / "README.md").read_text()
    assert f"dense for n <= {DENSE_MAX_N} unless" in readme and f"dense up to {DENSE_MAX_N} points" in readme


def test_every_entry_point_has_the_defaults_of_run_params():
    """The defaults are written at each entry point (a signature, an argparse option): they must stay
    those of RunParams, the one parameter model (found by a code-health review, 2026-11-25: delta=0.015
    was written in 7 places and no test kept them equal)."""
    import inspect
    from dataclasses import fields

    from cdfts_dask import CDFTS, cdf_ts, oracle
    from cdfts_dask.cli import build_parser

    model = {f.name: f.default for f in fields(RunParams)}
    for entry in (cdf_ts, CDFTS.__init__, oracle.cdf_ts_dense):
        signature = inspect.signature(entry).parameters
        given = {name: signature[name].default for name in model if name in signature}
        assert given == {name: model[name] for name in given}, entry
        assert {"lam", "delta", "max_iter", "estimator", "k"} <= set(given), entry
    cli = vars(build_parser().parse_args(["transform", "in.csv", "out.csv"]))
    names = ("lam", "delta", "max_iter", "estimator", "k", "method", "tile_size", "dtype")
    as_cli = {name: name for name in names} | {"n_workers": "workers"}
    assert {name: cli[option] for name, option in as_cli.items()} == {name: model[name] for name in as_cli}
    assert model["backend"] == ("cuda" if cli["gpu"] else "cpu")


@pytest.mark.parametrize(
    "kwargs,error,pattern",
    [
        ({"lam": 1.5}, ValueError, "lam"),
        ({"delta": 0}, ValueError, "delta"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"estimator": "kde"}, ValueError, "estimator"),
        ({"method": "fast"}, ValueError, "method"),
        ({"tile_size": 0}, ValueError, "tile_size"),
        ({"n_workers": 2.5}, TypeError, "n_workers"),
        ({"dtype": "float16"}, ValueError, "dtype"),
        ({"backend": "numpy"}, ValueError, "backend"),
        ({"estimator": "knn"}, ValueError, "k is required with estimator='knn'"),
        ({"k": 3}, ValueError, "k is only used with estimator='knn'"),
        ({"estimator": "knn", "k": 2.5}, TypeError, "k must be an integer"),
    ],
)
def test_every_field_is_checked_when_made(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        RunParams(**kwargs)


def test_k_is_checked_against_n_and_dense_refuses_the_engine_only_options():
    assert RunParams(estimator="knn", k=3).for_points(10).k == 3
    with pytest.raises(ValueError, match="k must lie in"):
        RunParams(estimator="knn", k=10).for_points(10)
    with pytest.raises(ValueError, match="method='dense'"):
        RunParams(method="dense", dtype="float32").for_points(10)
