"""Messages go through the ``cdfts_dask`` logger: silent by default, on stderr with ``verbose``,
routable by the application; ``progress=True`` draws a bar of each iteration's tasks."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from cdfts_dask import CDFTS, cdf_ts
from cdfts_dask.log import logger
from cdfts_dask.oracle import cdf_ts_dense


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(6).random((200, 3))


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "cdfts_dask"]


def test_silent_unless_asked(X, capsys):
    cdf_ts(X, max_iter=2)
    assert capsys.readouterr() == ("", "")


def test_messages_reach_the_applications_logging(X, caplog, capsys):
    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2)
    msgs = _messages(caplog)
    deltas = cdf_ts_dense(X, lam=0.2, delta=1e-12, max_iter=2).deltas
    start = "CDF-TS of n = 200 points, d = 3 (lambda = 0.2, epsilon estimator)"
    assert msgs[0] == f"{start}: dense NumPy oracle in this process"
    expected = [f"iteration {t}: Delta {d:.6f}" for t, d in enumerate(deltas, 1)]
    assert [m.split(",")[0] for m in msgs[1:3]] == expected
    assert msgs[3].startswith(f"stopped at max_iter = 2 after 2 iteration(s) (Delta {deltas[1]:.6f}) in ")
    assert len(msgs) == 4
    assert capsys.readouterr().err == ""  # routed by the application, not printed by the library


def test_verbose_prints_on_stderr_and_cleans_up(X, capsys):
    handlers = list(logger.handlers)
    CDFTS(lam=0.2, max_iter=1, verbose=True).fit(X)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("cdfts: CDF-TS of n = 200 points, d = 3")
    assert err[1].startswith("cdfts: iteration 1: Delta ") and err[1].endswith("pairs/s")
    assert logger.handlers == handlers  # the stderr handler was only there for the call
    with pytest.raises(TypeError, match="verbose must be True or False, got 'yes'"):
        cdf_ts(X, verbose="yes")


def test_verbose_prints_each_message_once_beside_a_root_handler(X, capsys):
    """Regression: with a root handler (``logging.basicConfig(level=logging.INFO)``), ``verbose=True``
    printed every message twice, on stderr and through the root handler (the logger still propagated).
    Now on stderr only during the call; afterwards the application's handler gets them again."""
    import io

    root = logging.getLogger()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2, verbose=True)
        printed = capsys.readouterr().err.splitlines()
        assert stream.getvalue() == ""
        assert len(printed) == 4 and all(line.startswith("cdfts: ") for line in printed)
        assert logger.propagate
        cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2)  # not verbose: the application's handler alone
        assert capsys.readouterr().err == ""
        assert [line[: len("iteration 1")] for line in stream.getvalue().splitlines()[1:3]] == [
            "iteration 1", "iteration 2"
        ]  # fmt: skip
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def test_overlapping_verbose_calls_print_once_and_leave_the_logger_as_they_found_it(capsys):
    """Regression (a review of the fix above): each verbose block saved and restored the logger's level and
    propagation itself, so two that overlap (threads) and end out of order left the logger silent for the
    application's handlers for good, and each printed every message on its own handler (twice).  The
    level restored is the application's own (WARNING here), not the library's NOTSET: a mutation audit
    (2026-12-08) found the restore to NOTSET passing, as every test had left the level NOTSET."""
    from cdfts_dask.log import verbosity

    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.WARNING)  # an application's choice, to be found again after the calls
    try:
        first, second = verbosity(True), verbosity(True)
        first.__enter__()
        second.__enter__()
        logger.info("both running")
        first.__exit__(None, None, None)  # the first ends before the second
        logger.info("one running")
        assert not logger.propagate and logger.level == logging.INFO
        second.__exit__(None, None, None)
        assert (logger.level, logger.propagate) == (logging.WARNING, propagate)
    finally:
        logger.setLevel(level)
    assert capsys.readouterr().err.splitlines() == ["cdfts: both running", "cdfts: one running"]
    assert [h for h in logger.handlers if not isinstance(h, logging.NullHandler)] == []


def test_tiled_start_line_and_progress_bar(X, client, caplog, capsys):
    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        cdf_ts(X, lam=0.2, max_iter=2, delta=1e-12, method="tiled", client=client, progress=True)
    start = _messages(caplog)[0]
    assert start.startswith("CDF-TS of n = 200 points, d = 3 (lambda = 0.2, epsilon estimator): tiled engine")
    assert ", 2 workers" in start
    err = capsys.readouterr().err
    assert "iteration 1: " in err and "iteration 2: " in err and "task" in err  # a tqdm bar per iteration
    with pytest.raises(TypeError, match="progress must be True, False, None or a callable, got 'bar'"):
        cdf_ts(X, progress="bar")
    # a callable receives the reports and draws no bar (found by a mutation audit, 2026-12-07)
    reports = []
    cdf_ts(X, lam=0.2, max_iter=2, delta=1e-12, method="tiled", client=client, progress=reports.append)
    assert [r.iteration for r in reports] == [1, 2] and "task" not in capsys.readouterr().err


class _InProcessClient:
    """Stands in for a ``distributed.Client`` whose one worker is this process (``run`` calls here)."""

    def run(self, func, *args):
        return {"tcp://here": func(*args)}


@pytest.mark.parametrize(
    "any_cached,d_cached,expected",
    [(False, False, "compiling the numba kernels, first run only (cached on disk for later runs)"),
     (True, False, "compiling the numba kernels for d = 5, float32: a few seconds, once (cached on disk)"),
     (True, True, None), (None, None, None)],
)  # fmt: skip
def test_compiling_is_said_for_a_first_run_and_for_a_new_number_of_columns(
    monkeypatch, caplog, any_cached, d_cached, expected
):
    from cdfts_dask import api
    from cdfts_dask.engine import cpu_kernels

    asked = []

    def cached(d, dtype, kernels):
        asked.append((d, dtype, kernels))
        return None if any_cached is None else (any_cached, d_cached)

    monkeypatch.setattr(cpu_kernels, "kernels_cached", cached)
    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        api._say_if_compiling(_InProcessClient(), 5, "float32", "knn", 10)
    assert _messages(caplog) == ([] if expected is None else [expected])
    assert asked == [(5, "float32", ("kth_leaf_pairs", "shift_accumulate"))]  # one call per worker


def test_a_verbose_call_leaves_later_calls_silent_for_the_applications_handlers(X, capsys):
    """Found by a mutation audit (2026-12-07): the logger's level not restored after a verbose call passed
    every test (the tests before had left it at INFO): with ``logging.basicConfig()`` (a root handler at
    WARNING), every later call, not verbose, then printed its INFO lines through that handler."""
    import io

    root, stream = logging.getLogger(), io.StringIO()
    handler, level = logging.StreamHandler(stream), logger.level
    root.addHandler(handler)
    logger.setLevel(logging.NOTSET)  # as the library leaves it: the application decides
    try:
        cdf_ts(X, max_iter=1, verbose=True)
        assert capsys.readouterr().err.startswith("cdfts: CDF-TS of n = 200 points")
        cdf_ts(X, max_iter=1)
        assert stream.getvalue() == "" and capsys.readouterr().err == ""
        assert logger.level == logging.NOTSET
    finally:
        root.removeHandler(handler)
        logger.setLevel(level)


def test_the_start_line_counts_workers_not_threads(X, caplog):
    """Found by a mutation audit (2026-12-07): the start line's worker count taken as the threads' passed
    every test (their workers have one thread each); a worker of two threads is one worker."""
    from distributed import Client, LocalCluster

    options = dict(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0")
    with LocalCluster(silence_logs=50, **options) as cluster, Client(cluster) as c:
        with caplog.at_level(logging.INFO, logger="cdfts_dask"):
            cdf_ts(X, max_iter=1, method="tiled", client=c)
    start = _messages(caplog)[0]
    assert start.endswith(", 1 worker") or ", 1 worker, dashboard " in start, start


@pytest.mark.parametrize(
    "workers, link, line",
    [({"tcp://a:1": 1}, None, "tiled engine, 1 worker"),
     ({"tcp://a:1": 1, "tcp://b:1": 2}, "http://127.0.0.1:8787/status",
      "tiled engine, 2 workers, dashboard http://127.0.0.1:8787/status")],
    ids=["no-dashboard", "dashboard"],
)  # fmt: skip
def test_the_start_line_names_the_dashboard_only_where_there_is_one(caplog, workers, link, line):
    """Found by a mutation audit (2026-12-08): a cluster without a dashboard (distributed without bokeh,
    or the dashboard disabled) said as ``dashboard None`` passed every test (their clusters have one)."""
    from cdfts_dask.log import say_started

    class Cluster:  # a client's view of its workers and of its dashboard (None where there is none)
        dashboard_link = link

        def nthreads(self):
            return workers

    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        say_started("tiled engine", Cluster())
    assert _messages(caplog) == [line]
