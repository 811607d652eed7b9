"""Shared fixtures: the repository on sys.path (for worker processes and CLI subprocesses too),
a small embedded Dask cluster, and the bundled / shared datasets."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
SHARED_DATASETS = ROOT.parent / "shared" / "datasets"

#: without a GPU, the CUDA device's kernels run under numba's CUDA simulator (set before numba.cuda is
#: imported, here and in every worker process and CLI subprocess started by the tests)
HAS_GPU = Path("/dev/nvidiactl").exists()
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0" if HAS_GPU else "1")

#: Dask's worker profiler calls sys._current_frames() every 10 ms; on CPython <= 3.11 that call can deadlock
#: the whole worker process against a garbage collection (CPython gh-106883, fixed in 3.12 only), and the
#: CUDA simulator, which starts and ends a Python thread per simulated GPU thread, made it happen: a CI run
#: hung in test_simulated_device_through_the_graph_equals_oracle (worker threads all in futex waits, one in
#: Worker.trigger_profile -> a gc callback).  No test reads the profile: off in every cluster the tests start
#: (set before dask is imported, so this process, its LocalClusters' workers and CLI subprocesses see it).
os.environ["DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"] = "False"
#: under the simulator, every worker the tests start (session clusters, a run's own cluster, a CLI
#: subprocess's) preloads the shared-array lock of simulator_lock.py (it does nothing on a real GPU)
SIMULATOR_LOCK = Path(__file__).resolve().parent / "simulator_lock.py"
os.environ["DASK_DISTRIBUTED__WORKER__PRELOAD"] = repr([str(SIMULATOR_LOCK)])
if "dask" in sys.modules:  # a plugin imported dask first: the variables are read at import, so set them now
    import dask

    dask.config.set(
        {"distributed.worker.profile.enabled": False, "distributed.worker.preload": [str(SIMULATOR_LOCK)]}
    )

sys.path.insert(0, str(ROOT))
import simulator_lock  # noqa: E402, F401  (importing it locks the simulator in this process)

os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)



#: tests of the CUDA device's kernels run by numba's CUDA simulator (on NumPy arrays, small n)
simulated_cuda = pytest.mark.skipif(
    os.environ["NUMBA_ENABLE_CUDASIM"] in ("", "0"),
    reason="simulator tests: run with NUMBA_ENABLE_CUDASIM=1 (conftest.py sets it where no GPU exists)",
)


def slow_unless(quick: bool) -> list:
    """Marks of a parametrized case: none for a case of the quick suite, ``slow`` otherwise (the whole
    suite runs every case)."""
    return [] if quick else [pytest.mark.slow]


def load_csv(path) -> tuple[np.ndarray, np.ndarray]:
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    return table[:, :-1], table[:, -1].astype(int)


@pytest.fixture(scope="session")
def syn():
    return load_csv(DATA / "syn.csv")


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"../shared/datasets not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


def _cluster(n_workers: int):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
    )
    client = Client(cluster, set_as_default=False)  # tests pass it; client=None means no client
    return cluster, client


@pytest.fixture(scope="session")
def client():
    """Two single-threaded worker processes, shared by the whole session."""
    cluster, c = _cluster(2)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="session")
def client1():
    """One worker process."""
    cluster, c = _cluster(1)
    yield c
    c.close()
    cluster.close()


def cli_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def assert_tiled_equals_oracle(X, client, tile_size, estimator="epsilon", k=None, lam=0.1, max_iter=3, **kw):
    """The tiled engine's result and Delta history equal the dense oracle's to 1e-9 (float64)."""
    from cdfts_dask import cdf_ts
    from cdfts_dask.oracle import cdf_ts_dense

    ref = cdf_ts_dense(X, lam=lam, delta=1e-12, max_iter=max_iter, estimator=estimator, k=k)
    out, info = cdf_ts(
        X, lam=lam, delta=1e-12, max_iter=max_iter, estimator=estimator, k=k, method="tiled",
        client=client, tile_size=tile_size, return_info=True, **kw,
    )  # fmt: skip
    assert np.abs(out - ref.X).max() <= 1e-9
    assert np.allclose(info.deltas, ref.deltas, rtol=0, atol=1e-9)


@pytest.fixture
def recorded_cuda_clusters(monkeypatch) -> list[dict]:
    """dask-cuda replaced by a recorder (no GPU here): each ``LocalCUDACluster(**kwargs)`` started appends
    its kwargs, and whether SIGINT was blocked as it started, and gets a one-worker in-process
    ``LocalCluster`` (the simulated CUDA kernels run there)."""
    import signal
    import types

    from distributed import LocalCluster

    started: list[dict] = []

    def recording_cluster(**kwargs):
        blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        started.append({**kwargs, "sigint_blocked": blocked})
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")

    monkeypatch.setitem(sys.modules, "dask_cuda", types.SimpleNamespace(LocalCUDACluster=recording_cluster))
    return started
