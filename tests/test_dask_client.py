"""Which Dask client a run uses: the session's default client when one is open, else an embedded
cluster; counted in worker processes, and numba's compiled kernels are loaded from disk there."""

from __future__ import annotations

import re
import time

import numpy as np
import psutil
import pytest
from conftest import simulated_cuda
from distributed import Client, LocalCluster, get_task_stream

from cdfts_dask import cdf_ts
from cdfts_dask.dask_client import session_client


def _processes() -> int:
    return len(psutil.Process().children(recursive=True))


def _kernel_cache_stats() -> tuple[int, int]:
    """(loaded from numba's disk cache, compiled) over the CPU kernels, in this worker process."""
    from numba.core.dispatcher import Dispatcher

    from cdfts_dask.engine import cpu_kernels

    kernels = [k for k in vars(cpu_kernels).values() if isinstance(k, Dispatcher)]
    return (
        sum(sum(k.stats.cache_hits.values()) for k in kernels),
        sum(sum(k.stats.cache_misses.values()) for k in kernels),
    )


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(5).random((300, 3))


def test_the_sessions_default_client_is_used(X, client):
    """A user's ``Client`` (here one more client of the test session's cluster, set as the default) runs
    the iterations: no embedded cluster's worker processes appear."""
    ref = cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2, method="tiled", client=client)
    assert session_client() is None  # the fixture's client is not the default
    with Client(client.scheduler.address) as ambient:
        assert session_client() is ambient
        before = _processes()
        during = []
        with get_task_stream(client=ambient) as stream:
            out = cdf_ts(
                X, lam=0.2, delta=1e-12, max_iter=2, method="tiled",
                progress=lambda report: during.append(_processes()),
            )  # fmt: skip
        assert during == [before, before]  # no embedded cluster's worker processes appeared
        assert len(stream.data) > 0  # the ambient client's scheduler ran the iterations
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
        with pytest.warns(UserWarning, match="n_workers=3 is ignored: the session's default Dask client"):
            cdf_ts(X, lam=0.2, max_iter=1, method="tiled", n_workers=3)
    assert session_client() is None


@pytest.mark.parametrize("as_address", [False, True])
def test_n_workers_beside_a_given_client_is_ignored_with_a_warning(X, client, as_address):
    """Regression: ``cdf_ts(X, client=c, n_workers=3)`` dropped n_workers without a word."""
    given = client.scheduler.address if as_address else client
    with pytest.warns(UserWarning, match="n_workers=3 is ignored: the workers of the given client") as record:
        out = cdf_ts(X, lam=0.2, max_iter=1, method="tiled", client=given, n_workers=3)
    assert record[0].filename == __file__  # pointed at the caller of cdf_ts
    np.testing.assert_allclose(out, cdf_ts(X, lam=0.2, max_iter=1, method="dense"), rtol=0, atol=1e-9)


def test_a_closed_client_and_security_beside_a_given_client_are_named(X, client):
    """Regressions: a closed ``Client`` failed inside the run with "IOLoop is closed"; ``security=`` beside
    a given client was dropped without a word (that client keeps its own connection)."""
    closed = Client(client.scheduler.address)
    closed.close()
    with pytest.raises(ValueError, match=r"^client: the given Dask client is closed \(<Client: "):
        cdf_ts(X, max_iter=1, method="tiled", client=closed)
    from distributed.security import Security

    with pytest.warns(UserWarning, match="security is ignored: the given client's connection") as record:
        cdf_ts(X, lam=0.2, max_iter=1, method="tiled", client=client, security=Security())
    assert record[0].filename == __file__


@pytest.mark.parametrize("value", ["0", 0, "nan", "10 parsecs", "1e400", "-5s", -5])
def test_a_worker_wait_that_is_no_positive_finite_duration_is_refused_before_any_wait(X, client, value):
    """Regression: ``cdfts.worker-wait`` was read unchecked: ``0`` waited forever on a scheduler without
    workers (distributed reads a zero timeout as none), ``"nan"``, ``"10 parsecs"`` and ``"1e400"`` ended
    in a KeyError / OverflowError traceback, ``"-5s"`` in "could not convert string to float: '1-5'".
    Now one ValueError naming the value, before any waiting (here on workers that are already up)."""
    import dask

    message = "the Dask configuration value cdfts.worker-wait must be a positive duration such as "
    message += f"'5 minutes', got {value!r}"
    message = "^" + re.escape(message) + "$"
    with dask.config.set({"cdfts.worker-wait": value}):
        with pytest.raises(ValueError, match=message):
            cdf_ts(X, max_iter=1, method="tiled", client=client)


@pytest.mark.parametrize("value", [None, "90", 2.5, "5 minutes"])
def test_a_worker_wait_of_none_or_a_duration_runs(X, client, value):
    """None (YAML ``null``) waits for a first worker without a limit; here the workers are up."""
    import dask

    with dask.config.set({"cdfts.worker-wait": value}):
        out = cdf_ts(X, lam=0.2, max_iter=1, method="tiled", client=client)
    np.testing.assert_allclose(out, cdf_ts(X, lam=0.2, max_iter=1, method="dense"), rtol=0, atol=1e-9)


def test_a_run_waits_the_worker_wait_asked_for_a_first_worker(X):
    """Found by a mutation audit (2026-12-08): the wait for a first worker cut to 1 s, whatever
    ``cdfts.worker-wait`` said, passed every test (they wait 1 s for workers that never come): a job
    whose workers were still queued was then refused at once.  A worker joining after 2 s of a 30 s
    wait is waited for, and the run equals the oracle."""
    import threading

    import dask

    options = dict(n_workers=0, processes=False, dashboard_address=":0", silence_logs=50)
    wait = dask.config.set({"cdfts.worker-wait": "30s"})
    with LocalCluster(**options) as cluster, Client(cluster) as c, wait:
        joins = threading.Timer(2.0, cluster.scale, args=(1,))
        joins.start()
        try:
            tic = time.monotonic()
            out = cdf_ts(X, lam=0.2, max_iter=1, method="tiled", client=c)
            waited = time.monotonic() - tic
        finally:
            joins.cancel()
    assert waited > 1.5, waited
    np.testing.assert_allclose(out, cdf_ts(X, lam=0.2, max_iter=1, method="dense"), rtol=0, atol=1e-9)


@pytest.mark.parametrize("limit,pausing", [("200MiB", True), ("200MiB", False), ("1GiB", True), (0, True)])
def test_workers_whose_memory_limit_pauses_them_before_any_data_are_named(limit, pausing):
    """Found by a memory audit (2026-12-06): on workers of 150-250 MiB (Dask pauses at 80 %) the run
    waited on paused workers without a word, for ever; now a warning names them, the limit, the
    workers' own pause fraction and what is enough, before any work.  Workers that never pause (pausing
    off: their nanny restarts them, a run then ends with WorkersLost), without a limit (0) or with a
    limit well above the footprint say nothing."""
    import warnings

    import dask

    from cdfts_dask.dask_client import dask_client

    options = dict(n_workers=1, threads_per_worker=1, dashboard_address=":0", silence_logs=50)
    config = {} if pausing else {"distributed.worker.memory.pause": False}
    with dask.config.set(config), LocalCluster(memory_limit=limit, **options) as cluster:
        with Client(cluster) as c, warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with dask_client(c):
                pass
    memory = [str(w.message) for w in said if "memory limit" in str(w.message)]
    if limit != "200MiB" or not pausing:
        assert memory == []
        return
    named = r"workers tcp://127\.0\.0\.1:\d+ have a memory limit of 200 MiB, and Dask pauses a worker at 80%"
    assert len(memory) == 1 and re.search(named, memory[0]), memory
    assert "give each worker at least 384 MiB" in memory[0], memory[0]


def _set_status(status: str, dask_worker=None) -> None:
    from distributed.core import Status

    dask_worker.status = Status[status]


def test_a_run_whose_workers_are_all_paused_says_so_and_goes_on_when_they_resume(X, monkeypatch):
    """Found by a memory audit (2026-12-06): workers paused for memory mid-run (Dask's pause at 80 % of
    their limit) left the run waiting without a word.  Now it warns once, naming them, and the run
    goes on to the oracle's result once they resume.  (Pausing by memory is off here, so that Dask's
    own monitor does not resume the workers paused by hand.)"""
    import threading
    import time
    import warnings

    import dask

    from cdfts_dask import dask_client, oracle

    monkeypatch.setattr(dask_client, "STALL_POLL", 0.3)
    options = dict(n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=50)
    with dask.config.set({"distributed.worker.memory.pause": False}), LocalCluster(**options) as cluster:
        with Client(cluster) as c, warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            c.run(_set_status, "paused")

            def resume_once_warned() -> None:  # or after 60 s: the test then fails on the warning
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not any("paused for" in str(w.message) for w in said):
                    time.sleep(0.1)
                c.run(_set_status, "running")

            resume = threading.Thread(target=resume_once_warned)
            resume.start()
            Y = cdf_ts(X, max_iter=2, delta=1e-12, method="tiled", client=c)
            resume.join()
    paused = [str(w.message) for w in said if "paused for" in str(w.message)]
    named = r"workers tcp://\S+, tcp://\S+ have all been paused for at least 0\.3 s"
    assert len(paused) == 1 and re.search(named, paused[0]), paused
    assert "give each worker more memory" in paused[0], paused[0]
    assert np.abs(Y - oracle.cdf_ts_dense(X, delta=1e-12, max_iter=2).X).max() <= 1e-9


def test_a_run_whose_cluster_loses_every_worker_says_so_and_goes_on_when_workers_join(X, monkeypatch):
    """A run on a cluster whose workers all left mid-run (scaled down, killed with their nannies)
    waited for a new one without a word.  Now it warns once, naming the scheduler, and finishes with the
    oracle's result once workers join."""
    import threading
    import time
    import warnings

    from cdfts_dask import dask_client, oracle

    monkeypatch.setattr(dask_client, "STALL_POLL", 0.3)
    options = dict(n_workers=1, threads_per_worker=1, dashboard_address=":0", silence_logs=50)
    caught = warnings.catch_warnings(record=True)
    with LocalCluster(**options) as cluster, Client(cluster) as c, caught as said:
        warnings.simplefilter("always")

        def workers() -> dict:
            return c.sync(c.scheduler.identity)["workers"]

        def remove_the_worker_then_add_two() -> None:  # each wait ends after 60 s: the test then fails
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(c.processing().values()):
                time.sleep(0.02)
            cluster.scale(0)
            while time.monotonic() < deadline and (workers() or not any("no worker" in str(w.message)
                                                                         for w in said)):  # fmt: skip
                time.sleep(0.1)
            cluster.scale(2)

        chaos = threading.Thread(target=remove_the_worker_then_add_two)
        chaos.start()
        Y = cdf_ts(X, max_iter=2, delta=1e-12, method="tiled", client=c)
        chaos.join()
        scheduler = c.scheduler.address
    none = [str(w.message) for w in said if "no worker" in str(w.message)]
    assert len(none) == 1 and none[0].startswith(
        f"the Dask cluster (scheduler {scheduler}) has had no worker for at least 0.3 s"
    ), none
    assert f"start workers (dask worker {scheduler})" in none[0], none[0]
    assert np.abs(Y - oracle.cdf_ts_dense(X, delta=1e-12, max_iter=2).X).max() <= 1e-9


@simulated_cuda
def test_a_cuda_run_on_workers_without_the_gpu_array_module_is_refused(X, client, monkeypatch):
    """Regression: ``backend="cuda"`` on a cluster with CPU workers (the compose ``gpu`` profile adds GPU
    workers beside the CPU ones) sent CUDA tasks to workers without CuPy.  The session's workers have no
    CuPy: with the client's CUDA bodies holding CuPy arrays (as on a GPU machine), the run is refused
    before any work, naming the workers and their scheduler (the scheduler's address in place of the
    client's repr: found by a mutation audit, 2026-12-08)."""
    from types import SimpleNamespace

    from cdfts_dask.engine import cuda

    monkeypatch.setattr(cuda, "xp", SimpleNamespace(__name__="cupy"))
    workers = ", ".join(sorted(client.nthreads()))
    needs = (f"client: backend='cuda' needs CuPy on every worker, and the workers {workers} of the Dask "
             f"scheduler at {client.scheduler.address} have none (CPU workers beside the GPU")  # fmt: skip
    with pytest.raises(ValueError, match=f"^{re.escape(needs)}"):
        cdf_ts(X, max_iter=1, method="tiled", client=client, backend="cuda")


@pytest.mark.slow
def test_a_fresh_worker_process_loads_the_compiled_kernels_from_disk(X, client):
    cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2, method="tiled", client=client)  # fills numba's cache
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                     silence_logs=40) as cluster,
        Client(cluster, set_as_default=False) as fresh,
    ):  # fmt: skip
        cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2, method="tiled", client=fresh)
        hits, misses = fresh.run(_kernel_cache_stats).popitem()[1]
        assert misses == 0 and hits > 0  # a fresh worker process loaded the compiled kernels from disk


@pytest.mark.slow
def test_without_a_client_an_embedded_cluster_runs_and_closes(X):
    assert session_client() is None  # the test fixtures' clients are not the default
    before = _processes()
    during: list[int] = []
    count = lambda report: during.append(_processes())  # noqa: E731
    cdf_ts(X, lam=0.2, max_iter=1, method="tiled", n_workers=2, progress=count)
    assert during[0] >= before + 2  # two worker processes of its own
    assert session_client() is None  # and it is not left behind as the default client


def _a_sampled_fit_that_is_refused_before_its_draw(X):
    """``cdf_ts`` as a sampled fit without a client, in a process where that must be refused before the
    rows are drawn (the draw may read a large input): a draw fails the test.  The default method, which
    float32 makes the tiled engine (a review found the check looking at ``method="auto"`` itself)."""
    from cdfts_dask import sampling

    draw = sampling.draw_references

    def drawn(*args, **kwargs):
        raise AssertionError("the sampled fit drew its rows before it was refused")

    sampling.draw_references = drawn
    try:
        return cdf_ts(X, max_iter=1, n_references=20, random_state=0, dtype="float32")
    finally:
        sampling.draw_references = draw


def test_no_client_inside_a_dask_task_is_refused_and_the_workers_client_runs(X, client):
    """Regression: ``client.submit(cdf_ts, X, method="tiled")`` found no default client inside the task
    and started an embedded cluster inside the worker process (daemonic: ``daemonic processes are not
    allowed to have children``).  Now refused before any work, naming ``worker_client``, and that advice
    runs (three such tasks on two single-threaded workers: the tasks leave the thread pool meanwhile)."""
    import functools

    refused = r"^client=None inside a task on the Dask worker tcp://.*worker_client"
    exact = functools.partial(cdf_ts, method="tiled", max_iter=1)
    for run in (exact, _a_sampled_fit_that_is_refused_before_its_draw):  # the latter: before its draw
        with pytest.raises(ValueError, match=refused):
            client.submit(run, X, pure=False).result()

    def on_the_workers_client(points):
        from distributed import worker_client

        with worker_client() as c:
            return cdf_ts(points, lam=0.2, delta=1e-12, max_iter=2, method="tiled", client=c)

    tasks = [client.submit(on_the_workers_client, X, pure=False) for _ in range(3)]
    ref = cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2, method="dense")
    for out in client.gather(tasks):
        assert np.abs(out - ref).max() <= 1e-9


@pytest.mark.parametrize("sampled", [False, True])
@pytest.mark.parametrize("where", ["loky", "daemonic"])
def test_the_embedded_cluster_is_refused_where_it_cannot_start(X, where, sampled):
    """Regression: in a joblib / loky worker (``cross_val_score(..., n_jobs=2)`` of a ``CDFTS`` without a
    client) each spawned worker process failed (``cannot find context for 'loky'``, then ``Nanny failed
    to start`` and leaked semaphores); a daemonic process (a ``multiprocessing.Pool``'s) may start no
    process.  Both now refused before any work (a sampled fit: before it draws its rows), with what to
    pass instead."""
    import functools
    import multiprocessing

    from joblib import Parallel, delayed

    run = _a_sampled_fit_that_is_refused_before_its_draw if sampled else functools.partial(
        cdf_ts, method="tiled", max_iter=1
    )
    expected = r"^client=None: the embedded Dask cluster cannot start here: this process \(.*\) "
    expected += "runs under the 'loky' start method" if where == "loky" else "is daemonic"
    with pytest.raises(ValueError, match=expected + r".*pass client= .*method='dense'"):
        if where == "loky":
            Parallel(n_jobs=2)([delayed(run)(X), delayed(run)(X)])
        else:
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                pool.apply(run, (X,))


def test_the_embedded_gpu_cluster_is_started_as_the_cpu_one(X, recorded_cuda_clusters):
    """``backend="cuda"`` without a client: dask-cuda's ``LocalCUDACluster`` gets the embedded cluster's
    settings (local host, quiet logs) and its workers are started with SIGINT blocked, so Ctrl-C reaches
    only this process, which closes the cluster.  dask-cuda is replaced by a recorder here (no GPU)."""
    import signal

    # Python's own handler to start from: a suite started in the background (``cmd &``) inherits SIGINT
    # ignored, and the check below would then fail whatever the code does
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        out = cdf_ts(X[:40], lam=0.2, max_iter=1, backend="cuda")  # simulated kernels: few points
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert out.shape == (40, 3)
    (seen,) = recorded_cuda_clusters
    assert seen["sigint_blocked"]  # the workers it starts inherit the block
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # lifted afterwards
    assert seen["n_workers"] is None and seen["host"] == "127.0.0.1" and seen["silence_logs"] == 40
    assert after is signal.default_int_handler  # this process's handler is back


_CTRL_C_DURING_START = """
import os, signal, sys
import distributed
from cdfts_dask import dask_client

def sigint_blocked():
    status = open("/proc/self/status").read()
    return bool(int(status.split("SigBlk:")[1].split()[0], 16) & (1 << (signal.SIGINT - 1)))

if __name__ == "__main__":
    made = []
    real = distributed.LocalCluster

    def started_then_interrupted(*args, **kwargs):  # a Ctrl-C once the workers run, before the start ends
        cluster = real(*args, **kwargs)
        made.append(cluster)
        with distributed.Client(cluster) as client:
            print("workers block SIGINT:", set(client.run(sigint_blocked).values()), flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        return cluster

    distributed.LocalCluster = started_then_interrupted
    try:
        dask_client.local_cluster(2)
        print("no KeyboardInterrupt")
    except KeyboardInterrupt:
        print("KeyboardInterrupt, cluster", made[0].status.name)
    print("SIGINT blocked here:", sigint_blocked())
"""


def test_a_ctrl_c_while_the_embedded_cluster_starts_is_kept_and_its_workers_never_see_one(tmp_path):
    """Regression (a new-user audit, 2026-11-29): SIGINT was ignored by this process while the embedded
    cluster started (so that its workers inherited the ignore): a Ctrl-C in that second was lost and the
    whole run went on to exit 0.  SIGINT is now blocked there instead, in this thread and so in the
    event loop's thread that spawns the workers (which inherit the block), and a Ctrl-C meanwhile is kept
    for this process: KeyboardInterrupt as the start ends, the cluster closed.  Python's resource tracker
    would lift the block when first started (CPython ends it with SIG_UNBLOCK): started first."""
    import subprocess
    import sys

    from conftest import ROOT, cli_env

    script = tmp_path / "ctrl_c.py"
    script.write_text(_CTRL_C_DURING_START)
    run = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert run.stdout.splitlines() == [
        "workers block SIGINT: {True}", "KeyboardInterrupt, cluster closed", "SIGINT blocked here: False"
    ], run.stdout + run.stderr


# -- found by a mutation audit of the cluster handling (2026-12-07) ---------------------------------------


def test_the_embedded_cluster_has_at_most_four_single_threaded_workers(monkeypatch):
    """Found by a mutation audit (2026-12-07): the cap of the default worker count (``--workers``' help:
    "the cores, at most 4") raised to 8, and the embedded cluster's workers given two threads each,
    passed every test (this machine has two cores, and no test counted threads)."""
    from cdfts_dask import dask_client as module

    monkeypatch.setattr(module.os, "cpu_count", lambda: 16)
    assert module.default_workers() == 4
    monkeypatch.setattr(module.os, "cpu_count", lambda: None)
    assert module.default_workers() == 1
    monkeypatch.undo()
    with module.dask_client(None, 2) as c:
        assert sorted(c.nthreads().values()) == [1, 1]


@pytest.mark.parametrize(
    "thresholds,told",
    [({"tcp://a:1": (200 * 2**20, 0.9), "tcp://b:1": (200 * 2**20, 0.9)},
      ["limit of 200 MiB", "pauses a worker at 90% of it", "give each worker at least 384 MiB"]),
     ({"tcp://a:1": (300 * 2**20, 0.8), "tcp://b:1": (200 * 2**20, 0.5)},
      ["limit of 200/300 MiB", "pauses a worker at 50%/80% of it", "give each worker at least 640 MiB"])],
    ids=["90%", "mixed"],
)  # fmt: skip
def test_the_memory_warning_asks_for_enough_memory_at_any_pause_fraction(thresholds, told):
    """Found by a mutation audit (2026-12-07): the memory it asks for rounded, not rounded up, to 64 MiB
    passed (the test above checks a pause fraction of 80 % only); at 90 % that asked for 320 MiB, where
    a worker pauses at 288 MiB, below the 300 MiB it holds before any data.  And (2026-12-08) the memory
    asked of workers pausing at different fractions taken from the highest fraction passed: 384 MiB,
    where the worker pausing at 50 % then pauses at 192 MiB; it is taken from the lowest (640 MiB)."""
    import warnings

    from cdfts_dask.dask_client import warn_if_workers_would_pause

    class Workers:  # client.run(_memory_pause): each worker's (memory limit, pause fraction)
        def run(self, func):
            return thresholds

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        warn_if_workers_would_pause(Workers())
    assert len(said) == 1 and all(part in str(said[0].message) for part in told), said


class _ScriptedScheduler:
    """Stands in for a client whose scheduler's identity lists workers as ``script`` says, one entry per
    ask of the stall watcher; once the script is done, the ask fails (the watcher then stops) and
    ``done`` is set."""

    def __init__(self, script: list[dict[str, str]]):
        import threading
        from types import SimpleNamespace

        self.script, self.done = list(script), threading.Event()
        self.scheduler = SimpleNamespace(address="tcp://scheduler:8786", identity=self._identity)

    def _identity(self):
        if not self.script:
            self.done.set()
            raise OSError("the script is done")
        return {"workers": {a: {"status": s} for a, s in self.script.pop(0).items()}}

    def sync(self, func):
        return func()


@pytest.mark.parametrize(
    "script,said",
    [([{}, {"w": "running"}, {}, {"w": "running"}], []),  # never two asks in a row without a worker
     ([{}, {"w": "paused"}, {"w": "running"}], []),  # no worker, then all paused: two stalls, not one
     ([{"w": "paused", "v": "running"}] * 3, []),  # one worker paused, another runs tasks
     ([{}] * 6, ["no worker"]),  # said once, however long it lasts
     ([{}, {}, {"w": "running"}, {}, {}], ["no worker"]),  # and once only, if it comes back
     ([{"w": "paused"}] * 6, ["paused"])],
    ids=["no-worker-once", "two-stalls", "one-paused", "no-worker-long", "no-worker-again", "paused-long"],
)  # fmt: skip
def test_a_stall_is_said_once_and_only_after_two_asks_in_a_row_find_it(monkeypatch, script, said):
    """Found by a mutation audit (2026-12-07): the stall warnings were checked only once the run waited
    long enough to warn, then resumed at once; these passed: warning after one ask (a worker restarting
    between two asks would be said to be "no worker for at least 10 s"), counting two different stalls
    as one that lasted, warning again when the same stall comes back, warning when one worker of two is
    paused ("have all been paused")."""
    import warnings

    from cdfts_dask import dask_client as module

    monkeypatch.setattr(module, "STALL_POLL", 0.01)
    client = _ScriptedScheduler(script)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with module.warn_while_the_run_stalls(client):
            assert client.done.wait(30)
    messages = [str(w.message) for w in caught]
    assert len(messages) == len(said) and all(s in m for s, m in zip(said, messages, strict=True)), messages


def test_a_scheduler_that_does_not_answer_the_stall_watcher_does_not_hold_the_runs_end(monkeypatch):
    """Found by a mutation audit (2026-12-08): the watcher's thread joined without a limit as the block
    ends passed every test: a run whose scheduler stopped answering (a network cut) then waited at its
    very end for the watcher's unanswered ask.  The block ends within the join's 1 s."""
    import threading
    from types import SimpleNamespace

    from cdfts_dask import dask_client as module

    monkeypatch.setattr(module, "STALL_POLL", 0.01)
    asked, answer = threading.Event(), threading.Event()

    def identity():  # a scheduler that never answers, until the test ends
        asked.set()
        answer.wait(60)
        return {"workers": {}}

    client = SimpleNamespace(scheduler=SimpleNamespace(address="tcp://scheduler:8786", identity=identity),
                             sync=lambda func: func())  # fmt: skip
    try:
        with module.warn_while_the_run_stalls(client):
            assert asked.wait(30)
            tic = time.monotonic()
        assert time.monotonic() - tic < 10
    finally:
        answer.set()


class _LosingItsScheduler:
    """A client whose link sees the scheduler gone only at the ``after``-th look at its status."""

    def __init__(self, after: int):
        self.looks, self.after = 0, after

    @property
    def status(self) -> str:
        self.looks += 1
        return "running" if self.looks < self.after else "connecting"


def test_a_connection_error_before_the_client_sees_its_scheduler_gone_is_a_lost_scheduler():
    """Found by a mutation audit (2026-12-07): without the grace of ``SCHEDULER_LOSS_GRACE`` for an
    ``OSError`` (a ``CommClosedError`` that reaches the run before the client's own link notices the
    reset), the real-scheduler tests passed (the race goes either way there): the run would then end in
    Dask's bare error.  A ``KeyboardInterrupt`` is never taken for a lost scheduler, and another error
    is not waited on."""
    from distributed.comm.core import CommClosedError

    from cdfts_dask.dask_client import what_was_lost

    assert what_was_lost(_LosingItsScheduler(after=4), CommClosedError("in <TCP (closed)>")) == "scheduler"
    assert what_was_lost(_LosingItsScheduler(after=4), ValueError("a bad value")) is None
    assert what_was_lost(_LosingItsScheduler(after=1), KeyboardInterrupt()) is None


def test_a_dask_array_out_of_a_run_on_a_scheduler_address_outlives_the_call(X, client):
    """Found by a mutation audit (2026-12-07): the client connected to an address not marked as the
    run's own passed every test: the dask array returned then held futures of a client closed as the
    call ended (the embedded cluster's case is ``test_dask_array_out_outlives_an_embedded_cluster``)."""
    import dask.array as da

    out = cdf_ts(da.from_array(X, chunks=(100, 3)), max_iter=2, delta=1e-12, method="tiled",
                 client=client.scheduler.address)  # fmt: skip
    ref = cdf_ts(X, max_iter=2, delta=1e-12, method="dense")
    np.testing.assert_allclose(out.compute(scheduler="sync"), ref, rtol=0, atol=1e-9)


@simulated_cuda
def test_the_sessions_default_client_is_checked_as_a_given_one(X, client, monkeypatch):
    """Found by a mutation audit (2026-12-07): the checks of a cluster this run did not start skipped for
    the session's default client passed every test; here its workers have no CuPy for a CUDA run."""
    from types import SimpleNamespace

    from cdfts_dask.engine import cuda

    monkeypatch.setattr(cuda, "xp", SimpleNamespace(__name__="cupy"))
    with Client(client.scheduler.address) as ambient:
        assert session_client() is ambient
        with pytest.raises(ValueError, match=r"^client: backend='cuda' needs CuPy on every worker"):
            cdf_ts(X, max_iter=1, method="tiled", backend="cuda")


def test_a_default_client_that_lost_its_scheduler_is_refused_not_replaced_by_an_embedded_cluster(X):
    """Found by a mutation audit (2026-12-07): a session default client reconnecting to a scheduler that
    is gone was skipped, and the run started an embedded cluster on this machine, unasked, for work its
    user had sent to a cluster.  It is refused in one line naming the scheduler, before any work; once
    that client is closed, the run starts its own cluster (with no default client, as always)."""
    from faultkit import dask_processes

    with dask_processes(0) as (address, procs), Client(address, timeout="30s") as ambient:
        assert session_client() is ambient
        procs[0].kill()
        deadline = time.monotonic() + 10
        while ambient.status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ambient.status == "connecting"
        message = rf"^client: the session's default Dask client lost its scheduler at {address} and is"
        for run in (lambda: cdf_ts(X, max_iter=1, method="tiled"),
                    lambda: cdf_ts(X, max_iter=1, n_references=30, method="tiled")):  # fmt: skip
            with pytest.raises(ValueError, match=message):
                run()
    assert ambient.status == "closed" and session_client() is None
    np.testing.assert_allclose(cdf_ts(X, max_iter=1, method="tiled", n_workers=1),
                               cdf_ts(X, max_iter=1, method="dense"), rtol=0, atol=1e-9)  # fmt: skip


def _run_with_a_default_client(address: str, X: np.ndarray) -> np.ndarray:
    with Client(address):
        return cdf_ts(X, lam=0.2, max_iter=1, method="tiled")


def test_a_daemonic_process_with_a_default_client_runs_on_it(X, client):
    """Found by a mutation audit (2026-12-07): the refusal of the embedded cluster in a daemonic process
    made regardless of a session client passed every test; a ``multiprocessing.Pool`` worker that opens
    its own default client runs on that client's cluster."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out = pool.apply(_run_with_a_default_client, (client.scheduler.address, X))
    np.testing.assert_allclose(out, cdf_ts(X, lam=0.2, max_iter=1, method="dense"), rtol=0, atol=1e-9)


def test_an_error_in_a_message_of_ours_is_its_first_line_cut_at_200_characters():
    """Found by a mutation audit (2026-12-07): the cut of Dask's error at 200 characters in the
    one-line messages (``WorkersLost``) dropped passed every test."""
    from cdfts_dask.dask_client import first_line

    assert first_line(OSError("x" * 300 + "\nsecond line")) == "OSError: " + "x" * 200
    assert first_line(OSError("first line\nsecond line")) == "OSError: first line"
    assert first_line(TimeoutError()) == "TimeoutError: "


def test_a_model_applied_with_no_workers_is_refused_before_a_cluster_starts(tmp_path):
    """Found by a mutation audit (2026-12-07): the check of ``n_workers`` in ``dask_client`` dropped passed
    every test (``cdf_ts`` checks it first): ``model.apply(m, X, n_workers=0)`` then ran on the default
    number of workers (``0 or default_workers()``) without a word."""
    import dask.array as da

    from cdfts_dask import model

    X = np.random.default_rng(0).random((40, 2))
    cdf_ts(X, max_iter=1, method="dense", checkpoint=tmp_path / "run.zarr")
    fitted = model.load(tmp_path / "run.zarr")
    before = _processes()
    with pytest.raises(ValueError, match=r"^n_workers must be >= 1, got 0$"):
        model.apply(fitted, da.from_array(X, chunks=20), n_workers=0)
    assert _processes() == before


def _sampled_fit_on_the_workers_client(points):
    from distributed import worker_client

    with worker_client() as c:
        return cdf_ts(points, max_iter=1, n_references=50, random_state=0, method="tiled", client=c)


def test_a_sampled_fit_inside_a_task_runs_on_the_workers_client(X, client):
    """Found by a mutation audit (2026-12-07): the refusal of ``client=None`` inside a task made for any
    client passed every test (the tests ran the exact fit through ``worker_client``): a sampled fit, which
    checks this before its draw, was then refused with the very ``client=c`` the refusal advises."""
    out = client.submit(_sampled_fit_on_the_workers_client, X, pure=False).result()
    ref = cdf_ts(X, max_iter=1, n_references=50, random_state=0, method="tiled", client=client)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
