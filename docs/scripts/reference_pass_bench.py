"""Thread CPU seconds of one iteration's CPU reference pass as the graph splits it, no Dask.

    python docs/scripts/reference_pass_bench.py [--sizes 2e4,1e5] [-d 8] [--threads 2] [--repeat 3]

For the synthetic points of ``cdfts bench`` and a cluster of ``--threads``
worker threads, it runs the parts the graph would submit (a diameter part per
thread, then ``graph.REFERENCE_TASKS_PER_THREAD`` count or k-NN parts per
thread, fewer where there are fewer shift panels) one after another in this
process, and prints the CPU seconds of all of them together (best of
``--repeat``): once with every part building its own k-d split
(``index=None``, as the graph runs them up to ``graph.SHARED_INDEX_MIN_N``),
once with one ``cpu.pair_index`` task's split shared by all (above it, that
task's seconds included), and the ratio.
"""

from __future__ import annotations

import argparse
import time

from cdfts_dask.bench import data
from cdfts_dask.engine import cpu, graph, plan


def _thread_seconds(func, *args):
    tic = time.thread_time()
    value = func(*args)
    return time.thread_time() - tic, value


def reference_pass_seconds(X, threads: int, estimator: str, shared: bool, k: int = 10) -> float:
    """CPU seconds of the diameter and count (or k-NN) parts of one iteration on ``threads`` threads."""
    n = len(X)
    panels = len(plan.chunks(0, n, cpu.panel_rows(n, threads)))
    dparts, rparts = threads, min(panels, graph.REFERENCE_TASKS_PER_THREAD * threads)
    seconds, index = _thread_seconds(cpu.pair_index, X) if shared else (0.0, None)
    maxima = []
    for part in range(dparts):
        t, max_sq = _thread_seconds(cpu.diameter_part, X, part, dparts, index)
        seconds += t
        maxima.append(max_sq)
    T = plan.count_threshold(plan.diameter(*maxima), 0.1)
    for part in range(rparts):
        if estimator == "epsilon":
            seconds += _thread_seconds(cpu.counts_part, X, part, rparts, T, index)[0]
        else:
            seconds += _thread_seconds(cpu.kth_part, X, part, rparts, k, index)[0]
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="2e4,1e5")
    p.add_argument("-d", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    small = cpu.prepare(data(500, a.d), "float64")
    cpu.counts_part(small, 0, 1, 0.01)  # compile / load the cached kernels
    cpu.kth_part(small, 0, 1, 10)
    for n in (int(float(v)) for v in a.sizes.split(",")):
        X = cpu.prepare(data(n, a.d), "float64")
        for estimator in ("epsilon", "knn"):
            own, shared = (
                min(reference_pass_seconds(X, a.threads, estimator, s) for _ in range(a.repeat))
                for s in (False, True)
            )
            print(
                f"n={n} d={a.d} threads={a.threads} {estimator}: reference pass CPU, each part its own k-d "
                f"split {own:.3f} s, one shared split {shared:.3f} s ({own / shared:.2f}x)",
                flush=True,
            )


if __name__ == "__main__":
    main()
