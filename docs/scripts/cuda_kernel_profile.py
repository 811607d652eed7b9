"""Seconds and pairs per second of each CUDA kernel alone, no Dask: the GPU's ``cdfts bench --kernels``.

On the device (CuPy points, one launch over all n rows, best of ``--repeat``
after a launch on 300 points that compiles), for the synthetic points of
``cdfts bench`` at lambda = 0.1:

* ``max_sq``: the diameter kernel (pairs j > i: n^2 / 2);
* ``diameter_part``: the whole diameter pass as the graph runs it (one part: its set-up, launches and
  maximum), its rate over the same n^2 / 2 pairs (a device that prunes pairs visits fewer);
* ``count_rows``: the epsilon counts (full rows: n^2 pairs);
* ``counts_part``: the whole count pass as the graph runs it (one part: its set-up, launches and counts
  on the host), its rate over the same n^2 pairs (a device that decides pairs by boxes tests fewer);
* ``kth_smallest_sq``: the k-NN radii for k = 10 (n^2 pairs);
* ``shift_sums``: the shift pass's sums (n^2 pairs);

then the diameter's ``sq`` (``repr``) and a digest of the shift sums' bits (SHA-256 of A and B after the
last launch, all n targets): kernel variants that must give the same bits (the ``ab`` stage of
gpu_figures.sh) print the same line.

    python docs/scripts/cuda_kernel_profile.py --n 2e5 --dtype float64,float32

Needs a GPU (CuPy, numba-cuda); under ``NUMBA_ENABLE_CUDASIM=1`` it runs on
NumPy arrays (a check of the script on tiny n, not a timing).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time

import numpy as np
from numba import cuda as numba_cuda

from cdfts_dask.bench import data
from cdfts_dask.engine import cuda, cuda_kernels, plan


def best_seconds(launch, repeat: int) -> float:
    """Best wall seconds of ``launch()`` with the device synchronised before and after."""
    best = math.inf
    for _ in range(repeat):
        if not cuda_kernels.SIMULATOR:
            numba_cuda.synchronize()
        tic = time.perf_counter()
        launch()
        if not cuda_kernels.SIMULATOR:
            numba_cuda.synchronize()
        best = min(best, time.perf_counter() - tic)
    return best


def profile(n: int, d: int, dtype: str, lam: float, k: int, repeat: int) -> tuple[list, str]:
    """``(kernel, seconds, pairs per second)`` of each kernel on n synthetic points, and the line of
    bits: the diameter's ``sq`` and the digest of the shift sums."""
    X = cuda.prepare(data(n, d), dtype)
    max_sq, count_rows, _, shift_sums = cuda._kernels(d, X.dtype)
    kth = cuda_kernels.kth_kernel(d, k + 1, dtype, cuda.THREADS)
    threads, w = cuda.THREADS, min(n, 300)
    out = cuda.xp.zeros(n)
    counts = cuda.xp.zeros(n, dtype=np.int64)
    m = plan.diameter(cuda.diameter_part(X, 0, 1))
    T = plan.count_threshold(m, lam)
    Tlo, Thi = plan.guard_band(np.array([T]), d, X.dtype)
    band = (np.float64(T), Tlo[0], Thi[0])
    counts_host = cuda.counts_part(X, 0, 1, T)
    shift_plan = plan.epsilon_plan(m, lam, counts_host, cuda.column_mean(X), dtype)
    names = ("T", "Tlo", "Thi", "rin", "a", "bm", "lam", "q")
    coef = [cuda.xp.asarray(getattr(shift_plan, name)) for name in names] + [float(shift_plan.m[0])]
    A, B = cuda.xp.zeros(n), cuda.xp.zeros((n, d))
    diameters = []  # the diameter pass's results, the last one on all n points
    launches = {
        "max_sq": (lambda r: max_sq[cuda._blocks(r), threads](X, 0, r, out), n * n / 2),
        "diameter_part": (lambda r: diameters.append(cuda.diameter_part(X[:r], 0, 1)), n * n / 2),
        "count_rows": (lambda r: count_rows[cuda._blocks(r), threads](X, 0, r, *band, counts), n * n),
        "counts_part": (lambda r: cuda.counts_part(X[:r], 0, 1, T), n * n),
        f"kth_smallest_sq k={k}": (lambda r: kth[cuda._blocks(r), threads](X, 0, r, out), n * n),
        "shift_sums": (lambda r: shift_sums[cuda._blocks(r), threads](X[:r], X[:r], *coef, A, B), n * n),
    }
    rows = []
    for name, (launch, pairs) in launches.items():
        launch(w)  # compile
        seconds = best_seconds(lambda launch=launch: launch(n), repeat)
        rows.append((name, seconds, pairs / seconds))
    digest = hashlib.sha256(cuda.to_host(A).tobytes() + cuda.to_host(B).tobytes()).hexdigest()[:16]
    return rows, f"diameter sq {diameters[-1]!r}, shift sums sha256 {digest}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=float, default=2e5)
    p.add_argument("-d", type=int, default=8)
    p.add_argument("--dtype", default="float64,float32")
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    n = int(a.n)
    for dtype in a.dtype.split(","):
        print(f"n = {n}, d = {a.d}, {dtype}, lambda = {a.lam}")
        rows, bits = profile(n, a.d, dtype, a.lam, a.k, a.repeat)
        for name, seconds, rate in rows:
            print(f"  {name:22s} {seconds:9.4f} s  {rate:9.3g} pairs/s")
        print(f"  bits: {bits}")


if __name__ == "__main__":
    main()
