"""Time and peak Python memory of ``read_table`` on a 500k x 8 CSV, for this tree and another.

    git archive 63dd116 | tar -x -C /tmp/before     # the tree before the pandas reader
    python docs/scripts/csv_read_bench.py /tmp/before .

Both reads run in one process, one after the other (tracemalloc slows both).
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np


def main(roots: list[str]) -> None:
    X = np.random.default_rng(0).random((500_000, 8))
    np.savetxt("/tmp/csv_read_bench.csv", X, delimiter=",", fmt="%.17g")
    for root in roots:
        sys.path.insert(0, root)
        for name in [m for m in sys.modules if m.startswith("cdfts_dask")]:
            del sys.modules[name]
        from cdfts_dask.inputs import read_table

        tracemalloc.start()
        tic = time.perf_counter()
        Y = read_table("/tmp/csv_read_bench.csv")[0]
        seconds = time.perf_counter() - tic
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        sys.path.remove(root)
        assert np.array_equal(Y, X)
        print(f"{root}: {seconds:.2f} s, peak {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
