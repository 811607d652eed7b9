"""Milliseconds per iteration of whole tiled runs at small n, where an iteration is mostly Dask's task hops.

For each worker count, size and estimator: ``cdf_ts(X, method="tiled", client=client, max_iter=10)``
on the bench's synthetic blobs (d = 8), with a ``delta`` no run reaches, on a warm local cluster of
single-threaded workers; the best of ``--repeat`` runs, divided by 10.  Unlike ``cdfts bench`` (one
iteration, timed until its new positions exist) this is the steady state of a run: what the client
waits for between iterations.  Compare two revisions by running it with each on ``PYTHONPATH``, one
after the other:

    python docs/scripts/iteration_overhead.py --workers 1 --sizes 300,2000,7200
"""

from __future__ import annotations

import argparse
import time

from distributed import Client

from cdfts_dask import cdf_ts
from cdfts_dask.bench import data
from cdfts_dask.dask_client import local_cluster

ITERATIONS = 10


def ms_per_iteration(client: Client, n: int, estimator: str, repeat: int) -> float:
    X = data(n, 8)
    k = 10 if estimator == "knn" else None
    cdf_ts(X, method="tiled", client=client, max_iter=2, estimator=estimator, k=k)  # warm: numba, imports
    best = float("inf")
    for _ in range(repeat):
        tic = time.perf_counter()
        cdf_ts(X, method="tiled", client=client, max_iter=ITERATIONS, delta=1e-300, estimator=estimator, k=k)
        best = min(best, time.perf_counter() - tic)
    return 1e3 * best / ITERATIONS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts (default: 1,2)")
    parser.add_argument("--sizes", default="300,2000,7200", help="n (default: 300,2000,7200)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case, best kept (default: 3)")
    args = parser.parse_args()
    for workers in (int(w) for w in args.workers.split(",")):
        with local_cluster(workers) as cluster, Client(cluster) as client:
            for n in (int(float(s)) for s in args.sizes.split(",")):
                for estimator in ("epsilon", "knn"):
                    ms = ms_per_iteration(client, n, estimator, args.repeat)
                    print(f"workers={workers} n={n} {estimator}: {ms:.1f} ms per iteration", flush=True)


if __name__ == "__main__":
    main()
