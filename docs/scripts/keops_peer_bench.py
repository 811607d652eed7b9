"""The engine beside its peer: one CDF-TS iteration (epsilon estimator) with KeOps, in one process.

KeOps (``pip install pykeops``) is the library an expert would use to write
this reduction without an n x n matrix; ``../shared/peers/keops_cdfts.py``
is the iteration written with it (CPU through OpenMP with ``--device cpu``,
which hides any GPU from it; CUDA with ``--device cuda``).  For every size
this script, in one process, on the same normalised points (``cdfts_dask.bench.data``):

* times ``keops_step`` (best of ``--repeat``, after a compile run on 300
  points), with the CPU seconds it used (its OpenMP threads);
* times the tiled engine's iteration on a fresh local cluster of
  ``--workers`` single-threaded worker processes (``bench.engine_iteration``,
  the figure ``cdfts bench`` prints), with the workers' CPU seconds; with
  ``--device cuda``, on ``--workers`` GPUs (one dask-cuda worker each), beside
  KeOps on the same GPU (KeOps takes and returns NumPy arrays, so its figure
  includes copying the points to the device and the results back);
* checks both against the dense oracle's iteration where n <= ``--check-max``
  (largest coordinate difference; the engine's neighbourhoods are exact, KeOps
  tests ``T - sq >= 0`` on its own float sums).

    python docs/scripts/keops_peer_bench.py --sizes 7200,20000 -d 6 --repeat 3
    python docs/scripts/keops_peer_bench.py --sizes 100000 -d 8 --repeat 1 --check-max 0
    python docs/scripts/keops_peer_bench.py --device cuda --workers 1 --sizes 20000,100000 -d 8

``x_peer`` is KeOps' seconds over the engine's (above 1: the engine is faster).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np

from cdfts_dask import bench, cdf_ts, oracle

PEER = Path(__file__).resolve().parents[3] / "shared" / "peers" / "keops_cdfts.py"


def load_peer(path: Path):
    """``keops_step(X, lam)`` from the peer's file."""
    spec = importlib.util.spec_from_file_location("keops_cdfts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.keops_step


def timed_cpu(f) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="7200", help="comma-separated n")
    p.add_argument("-d", type=int, default=6)
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--check-max", type=int, default=20000, help="largest n checked against the oracle")
    p.add_argument("--peer", type=Path, default=PEER, help="path of keops_cdfts.py")
    p.add_argument(
        "--device", default="cpu", choices=["cpu", "cuda"],
        help="the device of both (cuda: --workers counts GPUs; cpu: the GPUs are hidden from KeOps too)",
    )
    a = p.parse_args()
    if a.device == "cpu":
        # KeOps takes the GPU whenever it finds one: on a GPU host, a "cpu" row would time KeOps on the GPU
        # beside the engine on CPUs.  Hiding the GPUs before pykeops loads keeps both on the CPU.
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    keops_step = load_peer(a.peer)
    where = f"{a.workers} GPU(s)" if a.device == "cuda" else f"{a.workers} single-threaded workers"
    print(f"cores {os.cpu_count()}, engine on {where}, {a.dtype}, lam {a.lam}")
    print("       n   d   keops_s  keops_cpu  engine_s  engine_cpu  x_peer  keops_err  engine_err")
    for n in (int(s) for s in a.sizes.split(",")):
        X = bench.data(n, a.d)
        Xp = X.astype(a.dtype)
        keops_step(Xp[:300], a.lam)  # KeOps compiles its reductions once per dtype and d
        keops = min(timed_cpu(lambda Xp=Xp: keops_step(Xp, a.lam)) for _ in range(a.repeat))
        engine = bench.engine_iteration(
            X, a.workers, a.dtype, a.lam, "epsilon", None, a.repeat, backend=a.device
        )
        errors = ["-", "-"]
        if n <= a.check_max:
            ref = oracle.cdf_ts_step(X, a.lam, "epsilon", None).X
            errors[0] = f"{np.abs(keops_step(Xp, a.lam) - ref).max():.1e}"
            out = cdf_ts(
                X, lam=a.lam, method="tiled", n_workers=a.workers, max_iter=1, dtype=a.dtype, backend=a.device
            )
            errors[1] = f"{np.abs(out - ref).max():.1e}"
        print(
            f"{n:8d} {a.d:3d} {keops[0]:9.3f} {keops[1]:10.2f} {engine[0]:9.3f} {engine[3]:11.2f}"
            f" {keops[0] / engine[0]:7.2f} {errors[0]:>10} {errors[1]:>11}"
        )


if __name__ == "__main__":
    main()
