"""Dask's own latency per dependent task on this machine: the floor under an engine iteration's hops.

A chain of 7 trivial tasks (``x + 1``) on a LocalCluster of 2 single-threaded worker processes, all on
one worker, then alternating between the two (each hop's input then crosses to the other worker);
10 repetitions each, best and median, in milliseconds.

    python docs/scripts/dask_hop_latency.py
"""

from __future__ import annotations

import time

from distributed import Client, LocalCluster


def inc(x: int) -> int:
    return x + 1


def chain_ms(client: Client, workers: list[str], alternate: bool, hops: int = 6) -> float:
    tic = time.perf_counter()
    future = client.submit(inc, 0, pure=False, workers=[workers[0]])
    for i in range(hops):
        future = client.submit(inc, future, pure=False, workers=[workers[(i + 1) % 2 if alternate else 0]])
    future.result()
    return (time.perf_counter() - tic) * 1e3


if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=40) as cluster:
        with Client(cluster) as client:
            workers = sorted(client.nthreads())
            for alternate in (False, True):
                times = sorted(chain_ms(client, workers, alternate) for _ in range(10))
                where = "alternating between 2 workers" if alternate else "on one worker"
                print(f"7-task chain {where}: best {times[0]:.1f} ms, median {times[5]:.1f} ms")
