"""Scale benchmark of the sampled fit + chunked transform (docs/BENCHMARKS.md, "Past one machine").

For each n: a synthetic n x d Zarr store (three Gaussian blobs of different
spreads) is generated chunk by chunk; on a fresh LocalCluster of ``--workers``
single-threaded worker processes, ``CDFTS(n_references=s, max_iter=T,
delta=1e-12)`` is fitted on the Zarr input (the drawn rows are read chunk-wise,
the fit runs on the cluster) and transforms the store Zarr to Zarr, chunk by
chunk.  Printed per n: fit and transform wall seconds, pair evaluations
(transform ``n s T``, fit ``2 s^2 T``) per second, the workers' CPU seconds,
the cores the workers actually got (:func:`cdfts_dask.bench.core_capacity`),
and each worker's peak resident memory (VmHWM).

The same run measures the engine's exact shift pass for comparison: one
iteration at ``--compare-n`` on the same kind of cluster (wall pair rate of
the shift pass), and, immune to other processes, the thread CPU time of the
shift body on one core for the engine (``cpu.shift_part``, references =
targets) and for the model's replay (``CDFTSModel.transform_block``).

    python docs/scripts/scale_bench.py --sizes 1e6,1e7 --references 2000 --iterations 10 --workers 2 \\
        --dir /tmp/cdfts-scale
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import dask.array as da
import numpy as np
import zarr

from cdfts_dask import CDFTS, bench
from cdfts_dask.engine import cpu, plan

ROWS_PER_CHUNK = 250_000


def write_points(path: Path, n: int, d: int) -> float:
    """Blobs generated and written chunk by chunk (seconds taken); reused when already there."""
    if path.exists() and zarr.open_array(str(path), mode="r").shape == (n, d):
        return 0.0
    tic = time.perf_counter()
    shutil.rmtree(path, ignore_errors=True)
    out = zarr.create_array(str(path), shape=(n, d), dtype="f8", chunks=(min(n, ROWS_PER_CHUNK), d))
    centres = np.random.default_rng(0).uniform(size=(3, d)) * 10
    for start in range(0, n, ROWS_PER_CHUNK):
        rows = min(ROWS_PER_CHUNK, n - start)
        rng = np.random.default_rng(start + 1)
        which = rng.integers(0, 3, size=rows)
        out[start : start + rows] = centres[which] + rng.normal(size=(rows, d)) * np.array([0.2, 1.0, 3.0])[
            which, None
        ]
    return time.perf_counter() - tic


def _cpu(c) -> dict:
    return c.run(time.process_time)


def scale_run(path: Path, out: Path, s: int, iterations: int, workers: int) -> dict:
    from distributed import Client, LocalCluster

    n, d = zarr.open_array(str(path), mode="r").shape
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None, silence_logs=40) as lc:
        with Client(lc) as c:
            warm = CDFTS(max_iter=1, n_references=50, random_state=0, client=c)  # numba caches, imports
            warm.fit(np.random.default_rng(0).random((100, d)))
            warm.transform(da.random.random((1000, d))).compute()
            est = CDFTS(lam=0.1, delta=1e-12, max_iter=iterations, n_references=s, random_state=0, client=c)
            cpu0 = _cpu(c)
            tic = time.perf_counter()
            est.fit(str(path))
            fit_s = time.perf_counter() - tic
            cpu1 = _cpu(c)
            tic = time.perf_counter()
            est.transform(str(path), output=str(out))
            transform_s = time.perf_counter() - tic
            cpu2 = _cpu(c)
            peaks = c.run(bench._peak_rss_mib)
            cores = bench.core_capacity(c)
    T = est.n_iter_
    return {
        "n": n, "d": d, "s": s, "T": T, "workers": workers, "fit_s": fit_s, "transform_s": transform_s,
        "total_s": fit_s + transform_s, "transform_pairs": float(n) * s * T, "fit_pairs": 2.0 * s * s * T,
        "fit_cpu_s": sum(cpu1[w] - cpu0[w] for w in cpu0),
        "transform_cpu_s": sum(cpu2[w] - cpu1[w] for w in cpu0),
        "peak_mib": sorted(peaks.values()), "cores": cores,
    }  # fmt: skip


def kernel_rates(d: int, s: int, rows: int = 20_000) -> tuple[float, float]:
    """Pairs per thread-CPU second on one core: the engine's shift body (n = s references = targets,
    ``cpu.shift_part``) and the model's replay of one iteration on ``rows`` new points against s
    references (``CDFTSModel.transform_block``, the same kernel plus the normalisations)."""
    from cdfts_dask.model import CDFTSModel, ModelIteration

    X = cpu.prepare(bench.data(s, d), "float64")
    m = plan.diameter(cpu.diameter_part(X, 0, 1))
    counts = cpu.counts_part(X, 0, 1, plan.count_threshold(m, 0.1))
    shift_plan = plan.epsilon_plan(m, 0.1, counts, cpu.column_mean(X), "float64")
    cpu.shift_part(X, 0, 100, shift_plan)  # compiled / cache loaded
    t0 = time.thread_time()
    cpu.shift_part(X, 0, s, shift_plan)
    engine_rate = s * s / (time.thread_time() - t0)
    it = ModelIteration(X, m, np.zeros(d), np.ones(d), counts=counts)
    model = CDFTSModel(np.zeros(d), np.ones(d), [it], 0.1, "epsilon", None)
    Y = bench.data(rows, d, seed=1)
    model.transform_block(Y[:100])
    t0 = time.thread_time()
    model.transform_block(Y)
    model_rate = rows * s / (time.thread_time() - t0)
    return engine_rate, model_rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1e6,1e7", help="comma-separated n")
    p.add_argument("-d", "--dims", type=int, default=8)
    p.add_argument("--references", type=int, default=2000)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--compare-n", type=int, default=20000, help="n of the exact engine iteration compared")
    p.add_argument("--dir", default="/tmp/cdfts-scale", help="where the Zarr stores go (about 2 n d 8 bytes)")
    args = p.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    engine_k, model_k = kernel_rates(args.dims, args.references)
    print(f"one core, thread CPU time: engine shift body {engine_k:.3g} pairs/s, model replay "
          f"{model_k:.3g} pairs/s (model / engine = {model_k / engine_k:.2f})", flush=True)  # fmt: skip
    s_iter, ref, shift, *_rest, cores = bench.engine_iteration(
        bench.data(args.compare_n, args.dims), args.workers, "float64", 0.1, "epsilon", None, repeat=1
    )
    shift_pps = args.compare_n**2 / shift
    print(f"engine exact iteration n={args.compare_n}: shift pass {shift:.2f} s = {shift_pps:.3g} pairs/s "
          f"(wall, {args.workers} workers, {cores:.2f} cores available)", flush=True)  # fmt: skip
    for n in (int(float(v)) for v in args.sizes.split(",")):
        src, out = work / f"points-{n}.zarr", work / f"points-{n}-cdfts.zarr"
        gen = write_points(src, n, args.dims)
        r = scale_run(src, out, args.references, args.iterations, args.workers)
        shutil.rmtree(out, ignore_errors=True)
        rate = r["transform_pairs"] / r["transform_s"]
        print(
            f"n={n:.0e} d={r['d']} s={r['s']} T={r['T']} workers={r['workers']}: fit {r['fit_s']:.1f} s, "
            f"transform {r['transform_s']:.1f} s, total {r['total_s']:.1f} s (data written in {gen:.0f} s); "
            f"transform {rate:.3g} pairs/s wall = {rate / shift_pps:.2f} x the engine's shift pass; "
            f"worker CPU {r['transform_cpu_s']:.0f} s -> {r['transform_pairs'] / r['transform_cpu_s']:.3g} "
            f"pairs per CPU s; cores available {r['cores']:.2f}; peak RSS per worker "
            f"{', '.join(f'{m:.0f}' for m in r['peak_mib'])} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
