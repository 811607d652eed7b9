"""Thread CPU seconds of the CPU diameter pass (``cpu.diameter_part`` over all its parts), no Dask.

    python docs/scripts/diameter_bench.py [--sizes 30000x2,30000x8,100000x8] [--parts 2] [--tag NAME]

For each ``n x d`` of the synthetic points of ``cdfts bench`` it prints the
tag, n, d, the seconds and the largest ``sq`` found (the same value on every
code version: compare two versions by running this script with ``PYTHONPATH``
set to each checkout in turn, alternating).
"""

from __future__ import annotations

import argparse
import time

from cdfts_dask.bench import data
from cdfts_dask.engine import cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="30000x2,30000x4,30000x8,30000x16,30000x32,100000x8")
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--tag", default="")
    a = p.parse_args()
    cpu.diameter_part(data(500, 3), 0, 1)  # compile / load the cached kernels
    for size in a.sizes.split(","):
        n, d = (int(float(v)) for v in size.split("x"))
        X = cpu.prepare(data(n, d), "float64")
        tic = time.thread_time()
        best = max(cpu.diameter_part(X, part, a.parts) for part in range(a.parts))
        print(a.tag, n, d, f"{time.thread_time() - tic:.3f}", repr(best), flush=True)


if __name__ == "__main__":
    main()
