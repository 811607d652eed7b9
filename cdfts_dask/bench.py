"""Benchmarks of the tiled engine, with every ratio measured in the same run.

For each size n (and dtype, worker count) one CDF-TS iteration is timed on
a fresh ``LocalCluster`` after a warm-up iteration (numba compilation and
data placement excluded; the timed run is the best of ``repeat``).  The
columns are defined in :data:`COLUMN_MEANINGS` (``cdfts bench`` prints them
above its table and in ``--help``).  Notes:

* ``cpu_s / workers`` close to ``s_iter`` means the workers were busy all
  along; a larger ``s_iter`` means waiting (scheduling, or other processes
  competing for the cores);
* ``cores`` (all workers spinning at once: CPU seconds / wall seconds) equals
  the worker count on an idle machine, less when other processes share the
  cores, and bounds the wall-clock worker scaling;
* ``x_gemm`` counts a pair evaluation as ``4 d + 3`` flops (the mean of the
  reference pass's ``3 d`` and the shift pass's ``3 d + 2 (d + 1) + 4``; sqrt
  and division count as one); the last line prints that roof in pair
  evaluations per second.
"""

from __future__ import annotations

import resource
import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np

from . import oracle
from .dask_client import local_cluster
from .engine import TiledEngine
from .normalise import minmax_normalise

#: every column of the table and what it measures (``-`` in a row: not measured)
COLUMN_MEANINGS = {
    "n": "points",
    "d": "dimensions",
    "dtype": "working precision of the engine",
    "workers": "worker processes (one thread each; GPUs with --gpu)",
    "s_iter": "seconds per iteration (best of --repeat)",
    "ref_pps": "pair evaluations per second of the reference pass (diameter + counts or k-NN radii)",
    "shift_pps": "pair evaluations per second of the shift pass (n^2 pairs, with the O(n d) finish)",
    "pps": "pair evaluations per second over the iteration: 2 n^2 / s_iter",
    "cpu_s": "CPU seconds of all worker processes together in the iteration",
    "cpu_max": "largest CPU seconds of one worker: the critical path on an idle machine",
    "peak_mib": "peak resident memory of all workers together (MiB; ~200 MiB interpreter baseline each)",
    "cores": "cores the workers actually got, measured right after (less than workers: shared machine)",
    "x_oracle": "speed-up over one iteration of the dense NumPy oracle on the same data, in this process",
    "x_gemm": "achieved flop rate / this machine's float64 GEMM rate (4 d + 3 flops per pair; CPU rows only)",
    "x_1w": "wall-clock speed-up over the 1-worker run of the same size",
    "x_1w_cpu": "the same from cpu_max (robust to other processes sharing the cores)",
}
COLUMNS = list(COLUMN_MEANINGS)


@dataclass
class Row:
    n: int
    d: int
    dtype: str
    workers: int
    s_iter: float
    ref_pps: float
    shift_pps: float
    pps: float
    cpu_s: float
    cpu_max: float
    peak_mib: float
    cores: float
    x_oracle: float | None = None
    x_gemm: float | None = None
    x_1w: float | None = None
    x_1w_cpu: float | None = None


def flops_per_pair(d: int) -> int:
    """Flops counted per pair evaluation (mean over the two passes)."""
    return 4 * d + 3


def gemm_flops(size: int = 1536, repeat: int = 3) -> float:
    """Best float64 GEMM rate (flop/s) of NumPy's BLAS on this machine, all cores."""
    rng = np.random.default_rng(0)
    a, b = rng.random((size, size)), rng.random((size, size))
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeat))
    return 2.0 * size**3 / best


def _timed(f) -> float:
    tic = time.perf_counter()
    f()
    return time.perf_counter() - tic


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Normalised points: three Gaussian blobs of different spreads (a CDF-TS use case)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(3, d)) * 10
    which = rng.integers(0, 3, size=n)
    X = centres[which] + rng.normal(size=(n, d)) * np.array([0.2, 1.0, 3.0])[which, None]
    return minmax_normalise(X)[0]


def oracle_seconds(X: np.ndarray, lam: float, estimator: str, k: int | None) -> float:
    """One dense oracle iteration on X, in this process."""
    return _timed(lambda: oracle.cdf_ts_step(X, lam, estimator, k))


def _busy(seconds: float) -> float:
    """Spin for ``seconds`` of CPU time; return it."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass
    return time.process_time() - t0


def core_capacity(client, seconds: float = 0.5) -> float:
    """Cores the workers actually get: CPU seconds of all workers spinning at once / wall seconds.

    Equals the worker count on an idle machine; less when other processes share the cores.
    """
    addresses = sorted(client.nthreads())  # every worker (scheduler_info() may list only 5)
    tic = time.perf_counter()
    futures = [client.submit(_busy, seconds, workers=[a], pure=False) for a in addresses]
    cpu = sum(client.gather(futures))
    return cpu / (time.perf_counter() - tic)


def _peak_rss_mib() -> float:
    """This process's resident-memory high-water mark (``VmHWM``; ``ru_maxrss`` would include
    the parent's peak from before ``exec``, which a spawned worker inherits)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def engine_iteration(
    X: np.ndarray,
    workers: int,
    dtype: str,
    lam: float,
    estimator: str,
    k: int | None,
    repeat: int = 3,
    tile_size: int | None = None,
    backend: str = "cpu",
) -> tuple[float, float, float, float, float, float, float]:
    """``(s_iter, reference s, shift s, worker CPU s summed, largest worker CPU s, peak MiB, cores)``.

    Measured on a fresh local cluster (``dask_cuda.LocalCUDACluster``, one
    worker per GPU, for ``backend="cuda"``); the best of ``repeat`` iterations,
    each until the new points are computed, where they stay (on the GPU for
    ``backend="cuda"``), as between the iterations of a run."""
    from distributed import Client

    n, d = X.shape
    with local_cluster(workers, gpu=backend == "cuda") as cluster, Client(cluster) as c:
        eng = TiledEngine(c, tile_size, dtype=dtype, backend=backend)
        small = X[: min(n, 500)]  # warm-up: numba cache loading, worker imports
        _computed(eng.step(eng.prepare(eng.put(small)), len(small), d, lam, estimator, k).X)
        Xf = eng.prepare(eng.put(X))
        best = (np.inf, np.inf, np.inf, np.inf, np.inf)
        for _ in range(repeat):
            timings: dict = {}
            cpu0 = c.run(time.process_time)
            tic = time.perf_counter()
            _computed(eng.step(Xf, n, d, lam, estimator, k, timings=timings).X)
            total = time.perf_counter() - tic
            cpu1 = c.run(time.process_time)
            cpu = [cpu1[w] - cpu0[w] for w in cpu0]
            ref, shift = timings["reference"], timings["shift"]
            best = min(best, (total, ref, shift, sum(cpu), max(cpu)))
        peak = sum(c.run(_peak_rss_mib).values())
        cores = core_capacity(c)
    return (*best, peak, cores)


def run(
    sizes: list[int],
    d: int = 6,
    dtypes: tuple[str, ...] = ("float64",),
    workers: tuple[int, ...] = (2,),
    lam: float = 0.1,
    estimator: str = "epsilon",
    k: int | None = None,
    repeat: int = 3,
    oracle_max: int = 10000,
    tile_size: int | None = None,
    report=None,
    backend: str = "cpu",
) -> tuple[list[Row], float | None]:
    """Measure every (n, dtype, workers); return the rows and the host's float64 GEMM rate (flop/s), which
    only CPU rows are compared with (None for ``backend="cuda"``: a host GEMM says nothing of a GPU)."""
    gemm = gemm_flops() if backend == "cpu" else None
    rows: list[Row] = []
    for n in sizes:
        X = data(n, d)
        kk = None if estimator == "epsilon" else min(k or 10, n - 1)
        if kk is not None and kk != (k or 10):
            warnings.warn(f"n = {n}: k = {k or 10} is more than n - 1; measured with k = {kk}", stacklevel=2)
        t_oracle = oracle_seconds(X, lam, estimator, kk) if n <= oracle_max else None
        for dtype in dtypes:
            one_worker = None
            for w in workers:
                s, ref, shift, cpu, cpu_max, peak, cores = engine_iteration(
                    X, w, dtype, lam, estimator, kk, repeat, tile_size, backend
                )
                pairs = float(n) * n
                row = Row(
                    n, d, dtype, w, s, pairs / ref, pairs / shift, 2 * pairs / s, cpu, cpu_max, peak, cores
                )
                row.x_oracle = t_oracle / s if t_oracle else None
                row.x_gemm = row.pps * flops_per_pair(d) / gemm if gemm else None
                if w == 1:
                    one_worker = (s, cpu_max)
                elif one_worker:
                    row.x_1w = one_worker[0] / s
                    row.x_1w_cpu = one_worker[1] / cpu_max
                rows.append(row)
                if report:
                    report(row)
    return rows, gemm


def format_row(row: Row) -> str:
    """One line of the table (``-`` where a ratio was not measured)."""
    r = asdict(row)

    def f(key, fmt):  # fmt: the column's alignment and width first (">8.1f"): "-" keeps its place
        return format("-", fmt.split(".")[0]) if r[key] is None else format(r[key], fmt)

    return (
        f"{row.n:>7d} {row.d:>3d} {row.dtype:>8s} {row.workers:>7d} {row.s_iter:>9.4f} {row.ref_pps:>9.3g} "
        f"{row.shift_pps:>9.3g} {row.pps:>9.3g} {row.cpu_s:>8.3f} {row.cpu_max:>8.3f} "
        f"{row.peak_mib:>8.0f} {row.cores:>5.2f} "
        f"{f('x_oracle', '>8.1f')} {f('x_gemm', '>6.3f')} {f('x_1w', '>5.2f')} {f('x_1w_cpu', '>8.2f')}"
    )


def legend() -> str:
    """The column meanings, one ``# name: meaning`` line each (printed above the table)."""
    return "\n".join(f"# {name:>9s}: {meaning}" for name, meaning in COLUMN_MEANINGS.items())


#: the printed width of each column of :data:`COLUMNS`, in order
WIDTHS = (7, 3, 8, 7, 9, 9, 9, 9, 8, 8, 8, 5, 8, 6, 5, 8)


def header() -> str:
    """The table's first line: :data:`COLUMNS`, right-aligned in :data:`WIDTHS`."""
    return " ".join(f"{name:>{width}s}" for name, width in zip(COLUMNS, WIDTHS, strict=True))


def kernel_profile(n: int, d: int, dtype: str = "float64", lam: float = 0.1, k: int = 10) -> dict:
    """Thread CPU seconds of each CPU task body over all n points on one core, no Dask
    (immune to other processes).

    Returns seconds and pair rates of the diameter (k-d pruned), the count pass
    (k-d pruned; its rate over all n^2 / 2 unordered pairs), the k-NN radii for
    k (n^2 pairs) and the shift pass (n^2 ordered pairs).
    """
    from .engine import cpu, plan

    X = cpu.prepare(data(n, d), dtype)

    def cpu_seconds(f):
        t0 = time.thread_time()
        out = f()
        return time.thread_time() - t0, out

    small = X[: min(n, 300)]
    cpu.counts_part(small, 0, 1, 0.01)  # compile / load caches
    t_diam, sq_max = cpu_seconds(lambda: cpu.diameter_part(X, 0, 1))
    m = plan.diameter(sq_max)
    t_count, counts = cpu_seconds(lambda: cpu.counts_part(X, 0, 1, plan.count_threshold(m, lam)))
    k = min(k, n - 1)
    cpu.kth_part(small, 0, 1, k)
    t_kth, _ = cpu_seconds(lambda: cpu.kth_part(X, 0, 1, k))
    shift_plan = plan.epsilon_plan(m, lam, counts, cpu.column_mean(X), dtype)
    cpu.shift_part(X, 0, min(n, 300), shift_plan)
    t_shift, _ = cpu_seconds(lambda: cpu.shift_part(X, 0, n, shift_plan))
    return {
        "diameter_s": t_diam,
        "count_s": t_count,
        "count_pairs_per_s": n * n / 2 / t_count,
        "kth_s": t_kth,
        "kth_pairs_per_s": n * n / t_kth,
        "shift_s": t_shift,
        "shift_pairs_per_s": n * n / t_shift,
    }


def _computed(future) -> None:
    """Wait until ``future`` is computed, leaving its value on its worker; raise the task's error if any."""
    from distributed import wait

    wait(future)
    if future.status != "finished":
        future.result()  # raises the error


def user_call(n: int = 7200, d: int = 6, workers: int = 2, lam: float = 0.1, repeat: int = 5) -> dict:
    """The user-visible call against the dense oracle, in one run on the same data.

    Times ``cdf_ts(X, method="tiled", client=client, max_iter=1)`` on a local
    cluster of ``workers`` single-threaded processes exactly as a user calls
    it (validation, scatter, the iteration, fetching the result; the cluster
    already running and warm), and ``cdf_ts(X, method="dense", max_iter=1)``
    (one iteration of the oracle, validation included) in this process: the
    best of ``repeat`` for the tiled call and its step, of ``max(1, repeat // 2)``
    for the slower oracle (fewer runs can only make ``dense_s``, and so
    ``x_dense``, larger).  ``step_s`` is the engine iteration alone on
    already scattered points, so ``call_s - step_s`` is the per-call overhead.
    """
    from distributed import Client

    from .api import cdf_ts

    X = data(n, d)
    cluster = local_cluster(workers)

    def best(f, times: int) -> float:
        return min(_timed(f) for _ in range(times))

    with cluster, Client(cluster) as c:
        cdf_ts(X[: min(n, 500)], method="tiled", client=c, max_iter=1)  # warm-up: numba caches, imports
        call = best(lambda: cdf_ts(X, lam=lam, method="tiled", client=c, max_iter=1), repeat)
        engine = TiledEngine(c)
        Xf = engine.prepare(engine.put(minmax_normalise(X)[0]))
        step = best(lambda: engine.step(Xf, n, d, lam, "epsilon", None).X.result(), repeat)
    dense = best(lambda: cdf_ts(X, lam=lam, method="dense", max_iter=1), max(1, repeat // 2))
    return dict(call_s=call, step_s=step, overhead_s=call - step, dense_s=dense, x_dense=dense / call)
