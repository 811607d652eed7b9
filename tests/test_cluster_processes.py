"""A real cluster: ``dask scheduler`` + two ``dask worker`` processes, driven by ``cdfts transform``."""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import dask
import dask.array as da
import numpy as np
import pytest
import zarr
from faultkit import SYN, dask_processes, run_cli

import cdfts_dask


@pytest.mark.slow
def test_cli_on_a_real_scheduler_equals_embedded_run(tmp_path):
    X = np.loadtxt(SYN, delimiter=",", skiprows=1)[:, :-1]
    expected = cdfts_dask.cdf_ts(X, lam=0.1, delta=0.01, max_iter=3, method="dense")
    out = tmp_path / "out.npy"
    with dask_processes(2) as (address, procs):
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
            pids = set(c.run(lambda: __import__("os").getpid()).values())
        assert len(pids) == 2  # two distinct worker processes
        res = run_cli(
            "transform",
            SYN,
            out,
            "--label",
            "label",
            "--lam",
            "0.1",
            "--delta",
            "0.01",
            "--max-iter",
            "3",
            "--scheduler",
            address,
            "--tile-size",
            "400",
            "--quiet",
        )
        assert all(p.poll() is None for p in procs), "a cluster process died during the run"
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-9)


def test_a_scheduler_without_workers_is_refused_after_a_bounded_wait(tmp_path, monkeypatch):
    """Regression: a scheduler with no workers made a run on a lazy input (a dask array, a Zarr store: no
    scatter to time out) wait forever, its start line saying "0 workers"; a NumPy input failed after 30 s
    in Dask's scatter with "No valid workers found".  Now the run waits ``cdfts.worker-wait`` for a
    first worker, then stops with one line naming the scheduler; so does the command line (exit 2)."""
    X = np.random.default_rng(0).random((40, 2))
    np.save(tmp_path / "in.npy", X)
    with dask_processes(0) as (address, _), dask.config.set({"cdfts.worker-wait": "1s"}):
        for points in (da.from_array(X, chunks=20), X):
            message = rf"^client: the Dask scheduler at {address} has no workers \(waited 1 s, Dask config"
            with pytest.raises(ValueError, match=message):
                cdfts_dask.cdf_ts(points, max_iter=1, method="tiled", client=address)
        monkeypatch.setenv("DASK_CDFTS__WORKER_WAIT", "1s")  # the command line's Dask configuration
        res = run_cli("transform", tmp_path / "in.npy", tmp_path / "out.npy", "--scheduler", address)
    last = res.stderr.splitlines()[-1]
    assert res.returncode == 2 and last.startswith("cdfts transform: error: client: the Dask"), res.stderr
    assert "has no workers" in last and "Traceback" not in res.stderr
    assert not (tmp_path / "out.npy").exists()


def test_a_run_whose_scheduler_is_killed_names_it_and_resumes_from_its_checkpoint(tmp_path):
    """Regression: a scheduler killed mid-run (a restarted scheduler pod, a cut network) ended the run
    with Dask's bare ``CommClosedError: in <TCP (closed) ConnectionPool.ncores ...>`` or, after Dask's
    30 s of reconnect attempts, ``Timed out trying to connect to tcp://...``: neither said that the
    run's data on the cluster was gone nor how to go on.  Now ``WorkersLost`` names the scheduler and
    the checkpoint to resume, and the resume on another cluster ends with the undisturbed result."""
    X = np.loadtxt(SYN, delimiter=",", skiprows=1)[:, :-1]
    expected = cdfts_dask.cdf_ts(X, delta=1e-12, max_iter=3, method="dense")
    store = tmp_path / "run.zarr"
    with dask_processes(1) as (address, procs):

        def kill_the_scheduler(report):
            if report.iteration == 1:  # iteration 1 is in the checkpoint by now
                procs[0].kill()

        message = (
            rf"^lost the connection to the Dask scheduler at {address} \(\w+: .*\), and with it the run's "
            rf"data on the cluster; once the scheduler is back, continue it .* resume=True \(--resume\) "
            rf"and checkpoint '{store}'$"
        )
        with pytest.raises(cdfts_dask.WorkersLost, match=message):
            cdfts_dask.cdf_ts(X, delta=1e-12, max_iter=3, method="tiled", client=address,
                              checkpoint=store, progress=kill_the_scheduler)  # fmt: skip
    resumed = cdfts_dask.cdf_ts(X, delta=1e-12, max_iter=3, method="tiled", n_workers=1, checkpoint=store,
                                resume=True)  # fmt: skip
    np.testing.assert_allclose(resumed, expected, rtol=0, atol=1e-9)


def _killing(X: np.ndarray, pid: int):
    """X as a dask array of one block whose computation, on a worker, SIGKILLs the process ``pid`` first:
    a scheduler lost mid-computation, whatever the timing (a lambda: pickled by value, for the worker)."""
    kill_first = lambda b: __import__("os").kill(pid, 9) or b  # noqa: E731
    return da.from_array(X, chunks=X.shape).map_blocks(kill_first, meta=X[:0])  # meta: not called here


def test_a_scheduler_lost_mid_iteration_is_named_at_once():
    """Regression: a scheduler lost while an iteration's tasks ran (not between iterations) cancelled the
    run's futures, which the run took for lost workers: it waited for a worker to come back through the
    client's 30 s of reconnect attempts, then ended with ``(OSError: Timed out trying to connect ...)``
    and, from the client it had connected, Dask's ERROR record ``Failed to reconnect to scheduler``.  Now it
    ends at once with the futures' own error, and the client closes without a record."""
    from distributed import Client

    X = np.random.default_rng(0).random((20000, 2))  # an iteration of about a second on one worker
    with dask_processes(1) as (address, procs), Client(address, timeout="30s") as watcher:

        def kill_while_iteration_2_runs(report):
            def kill():
                while not any(watcher.processing().values()):
                    time.sleep(0.01)
                procs[0].kill()

            if report.iteration == 1:
                threading.Thread(target=kill, daemon=True).start()

        message = (
            rf"^lost the connection to the Dask scheduler at {address} "
            r"\((FutureCancelledError|CommClosedError): .*\), and with it the run's data on the cluster; "
            r"once the scheduler is back, run it again"
        )
        with pytest.raises(cdfts_dask.WorkersLost, match=message), _no_dask_records():
            cdfts_dask.cdf_ts(X, max_iter=3, delta=1e-12, method="tiled", client=address,
                              progress=kill_while_iteration_2_runs)  # fmt: skip


def test_a_transform_whose_scheduler_is_lost_says_so_and_writes_no_output(tmp_path):
    """Regression: the model's transform on a cluster (``CDFTS.transform`` of a chunked input, a sampled
    fit's replay, ``cdfts apply``) ended with Dask's bare error when the scheduler was lost.  Now
    ``WorkersLost`` names the scheduler and says that no output was written; the output is not there,
    and the same transform run again writes the model's result, leaving no temporary (one that the
    worker still running wrote into after the transform had removed it is removed then)."""
    X = np.random.default_rng(0).random((60, 2))
    est = cdfts_dask.CDFTS(max_iter=2, method="dense").fit(X)
    out = tmp_path / "out.zarr"
    with dask_processes(1) as (address, procs):
        est.set_params(client=address)
        message = (
            rf"^lost the connection to the Dask scheduler at {address} \(\w+: .*\) during the model's "
            r"transform of 60 points; no output was written and the model is unchanged: run it again, once "
            r"the scheduler is back$"
        )
        with pytest.raises(cdfts_dask.WorkersLost, match=message), _no_dask_records():
            est.transform(_killing(X, procs[0].pid), output=out)
    assert not out.exists()
    est.set_params(client=None, n_workers=1).transform(da.from_array(X, chunks=30), output=out)
    np.testing.assert_allclose(zarr.open_array(str(out), mode="r")[:], est.embedding_, rtol=0, atol=1e-9)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr"]  # no temporary the lost worker wrote


@contextlib.contextmanager
def _no_dask_records():
    """Fails the block, whether or not it raised, if ``distributed.client`` logs anything in it (its
    reconnect's ERROR records)."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    dask_log = logging.getLogger("distributed.client")
    dask_log.addHandler(handler)
    try:
        yield
    finally:
        dask_log.removeHandler(handler)
        assert not records, [r.getMessage() for r in records]  # in place of the block's own error


BLOCK_CDFTS = """
import sys


class NoCdfts:  # this worker's Python cannot import cdfts_dask, as where the package is not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "cdfts_dask":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NoCdfts())
"""


OTHER_VERSION = """
import cdfts_dask

cdfts_dask.__version__ = "0.0.0+other"  # this worker imports another version than the installed one
"""


def test_a_worker_importing_another_version_is_named_before_work(tmp_path):
    """Regression: the version check read the installed distribution's metadata, not the module the worker
    imports: a source checkout of another version ahead of it on the worker's path passed (and a checkout
    with no installed distribution at all was refused as version None)."""
    preload = tmp_path / "other_version.py"
    preload.write_text(OTHER_VERSION)
    X = np.random.default_rng(0).random((40, 2))
    with dask_processes(1, worker_args=("--preload", str(preload))) as (address, _):
        message = r"^client: the workers tcp://127.0.0.1:\d+ \(0\.0\.0\+other\) of the Dask scheduler at "
        with pytest.raises(ValueError, match=message + f"{address} have another cdfts-dask than this client"):
            cdfts_dask.cdf_ts(X, max_iter=1, method="tiled", client=address)


def test_a_worker_without_the_package_is_named_before_work(tmp_path):
    """Regression: a worker that cannot import cdfts_dask died reading the first task (distributed:
    "Failed to deserialize"), and the run then waited forever (or, with the progress line's kernel-cache
    question, failed with a 47-line traceback); a NumPy input failed after 60 s with
    "WorkerStartTimeoutError".  Now the run stops first, naming the worker and what to install."""
    blocker = tmp_path / "no_cdfts.py"
    blocker.write_text(BLOCK_CDFTS)
    X = np.random.default_rng(0).random((40, 2))
    with dask_processes(1, worker_args=("--preload", str(blocker))) as (address, procs):
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(1, timeout=60)
        message = rf"^client: the workers tcp://127.0.0.1:\d+ of the Dask scheduler at {address} cannot "
        with pytest.raises(ValueError, match=message + "import cdfts_dask .* install cdfts-dask "):
            cdfts_dask.cdf_ts(X, max_iter=1, method="tiled", client=address)
        assert all(p.poll() is None for p in procs), "the worker died"
