"""Random configurations against the dense oracle, for as long as asked: a wider net than the test suite's
fixed cases.

    python docs/scripts/random_configs_check.py engine --seconds 600 --seed 1
    python docs/scripts/random_configs_check.py engine --seconds 600 --seed 2 --engine-n 2000 5000
    python docs/scripts/random_configs_check.py cuda-sim --seconds 600 --seed 7
    python docs/scripts/random_configs_check.py model --seconds 420 --seed 4
    python docs/scripts/random_configs_check.py resume --seconds 300 --seed 5

* ``engine``: ``cdf_ts(method="tiled")`` on a 2-worker local cluster against ``cdf_ts_dense`` (float64,
  1e-9 after 1-3 iterations): n 2-700 (``--engine-n LO HI`` for others), d 1-19, blobs, lattice points
  with duplicates and a constant column (tests/points.py ``awkward``), uniform points, small integer grids;
  lambda 0.01-0.9, both estimators, k 1-79 (k + 1 > 64: the large-k path), tile sizes 1-257 or the default.
* ``cuda-sim``: the CUDA task bodies under numba's CUDA simulator (blocks of 16 threads; some cases with
  360 bytes of shared memory, so tiles are smaller than blocks), one iteration, against the oracle step:
  m and the counts or radii exact, positions within 1e-9 (float64) or 1e-6 (float32, against the oracle
  on the float32-rounded points); n 2-44, d 1-11.
* ``model``: ``CDFTS(method="tiled")`` against ``CDFTS(method="dense")`` (exact and sampled fits): the
  embeddings and the transforms of new points within 1e-9, and the tiled model's transform of its own fit
  points equal to its embedding (1e-9).  The dense model's own replay is not compared at fit points: with
  the k-NN estimator and more than k duplicates it can differ (README, "One caveat").
* ``resume``: a checkpointed run of 1-3 iterations, then ``resume=True`` to 1-5 (fewer than stored
  returns a stored iteration), each part dense or tiled, against one uninterrupted oracle run: positions
  and Deltas within 1e-9, as many iterations.

Prints a line per mismatch or error (with the configuration to reproduce it), progress every 100 cases,
and at the end the number of cases and the largest difference; exits 1 if anything mismatched.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))


def points(rng, n: int, d: int, kinds: list[str], cfg: dict) -> np.ndarray:
    from points import awkward, blobs

    kind, seed = str(rng.choice(kinds)), int(rng.integers(1 << 30))
    if kind == "blobs":
        X = blobs(n, d, seed)
    elif kind == "awkward":
        X = awkward(n, d, seed)
    elif kind == "uniform":
        X = np.random.default_rng(seed).uniform(size=(n, d))
    else:
        X = np.random.default_rng(seed).integers(0, 4, size=(n, d)).astype(float)
    cfg |= {"n": n, "d": d, "kind": kind, "seed": seed}
    return X


def engine_case(
    rng, client, cfg: dict, n_range: tuple[int, int] = (2, 700)
) -> list[tuple[str, float, float]]:
    from cdfts_dask import cdf_ts
    from cdfts_dask.oracle import cdf_ts_dense

    n, d = int(rng.integers(*n_range)), int(rng.integers(1, 20))
    X = points(rng, n, d, ["blobs", "awkward", "uniform", "grid"], cfg)
    lam = float(rng.choice([0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.9]))
    estimator = str(rng.choice(["epsilon", "knn"]))
    k = int(rng.integers(1, max(2, min(n - 1, 80)))) if estimator == "knn" else None
    tile = int(rng.choice([1, 3, 7, 16, 64, 100, 257])) if rng.random() < 0.7 else None
    iters = int(rng.integers(1, 4))
    cfg |= {"lam": lam, "estimator": estimator, "k": k, "tile_size": tile, "max_iter": iters}
    run = {"lam": lam, "delta": 1e-12, "max_iter": iters, "estimator": estimator, "k": k}
    ref = cdf_ts_dense(X, **run).X
    got = cdf_ts(X, method="tiled", client=client, tile_size=tile, **run)
    return [("positions", float(np.abs(got - ref).max()), 1e-9)]


def cuda_sim_case(rng, client, cfg: dict) -> list[tuple[str, float, float]]:
    from points import bodies_step, normalised, rounded32

    from cdfts_dask import oracle
    from cdfts_dask.engine import cuda, cuda_kernels

    n, d = int(rng.integers(2, 45)), int(rng.integers(1, 12))
    X = normalised(points(rng, n, d, ["blobs", "awkward", "grid"], cfg))
    lam = float(rng.choice([0.05, 0.1, 0.2, 0.4, 0.8]))
    estimator = str(rng.choice(["epsilon", "knn"]))
    k = int(rng.integers(1, n)) if estimator == "knn" else None
    dtype = str(rng.choice(["float64", "float32"]))
    parts, rows = int(rng.integers(1, 4)), int(rng.integers(1, n + 1))
    shared = 360 if rng.random() < 0.3 else 48 * 1024
    cfg |= {"lam": lam, "estimator": estimator, "k": k, "dtype": dtype, "parts": parts, "rows": rows,
            "shared_bytes": shared}  # fmt: skip
    cuda.THREADS, cuda_kernels.STATIC_SHARED_BYTES = 16, shared
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, lam, estimator, k)
    m, stats, Xn, _ = bodies_step(cuda, X, lam, estimator, k, dtype=dtype, parts=parts, rows=rows)
    want = ref.counts if estimator == "epsilon" else ref.radius
    exact = m == ref.m and np.array_equal(stats, want)
    return [
        ("m, counts or radii (0: exact)", 0.0 if exact else np.inf, 0.0),
        (f"positions {dtype}", float(np.abs(Xn - ref.X).max()), 1e-9 if dtype == "float64" else 1e-6),
    ]


def model_case(rng, client, cfg: dict) -> list[tuple[str, float, float]]:
    from cdfts_dask import CDFTS

    n, d = int(rng.integers(3, 400)), int(rng.integers(1, 10))
    X = points(rng, n, d, ["blobs", "awkward"], cfg)
    new = np.random.default_rng(cfg["seed"] + 1).normal(size=(int(rng.integers(1, 60)), d))
    new = new * X.std(axis=0) + X.mean(axis=0)
    lam = float(rng.choice([0.05, 0.1, 0.2, 0.4]))
    estimator = str(rng.choice(["epsilon", "knn"]))
    k = int(rng.integers(1, min(n - 1, 40) + 1)) if estimator == "knn" else None
    s = int(rng.integers(2, n + 1)) if rng.random() < 0.3 else None
    if s is not None and k is not None:
        k = min(k, s - 1)
    tile = int(rng.choice([1, 5, 33, 128])) if rng.random() < 0.6 else None
    run = {"lam": lam, "delta": 1e-12, "max_iter": int(rng.integers(1, 5)), "estimator": estimator, "k": k,
           "n_references": s, "random_state": cfg["seed"]}  # fmt: skip
    cfg |= {"tile_size": tile, **run}
    dense = CDFTS(method="dense", **run).fit(X)
    tiled = CDFTS(method="tiled", client=client, tile_size=tile, **run).fit(X)
    fit_rows = slice(None) if tiled.sample_indices_ is None else tiled.sample_indices_  # s >= n: exact
    return [
        ("embedding, tiled - dense", float(np.abs(tiled.embedding_ - dense.embedding_).max()), 1e-9),
        ("transform of new points", float(np.abs(tiled.transform(new) - dense.transform(new)).max()), 1e-9),
        *[  # fit points take their outputs, whatever the fit
            (f"{name} transform of fit points - embedding",
             float(np.abs(est.transform(X)[fit_rows] - est.embedding_).max()), 0.0)
            for name, est in (("dense", dense), ("tiled", tiled))
        ],  # fmt: skip
        (  # and a tiled fit's replay (no lookup) sums as the fit did
            "tiled replay of fit points - embedding",
            float(np.abs(tiled.model_.replay(X[fit_rows]) - tiled.embedding_).max()),
            1e-9,
        ),
    ]


def resume_case(rng, client, cfg: dict) -> list[tuple[str, float, float]]:
    import tempfile

    from cdfts_dask import cdf_ts
    from cdfts_dask.oracle import cdf_ts_dense

    n, d = int(rng.integers(2, 300)), int(rng.integers(1, 8))
    X = points(rng, n, d, ["blobs", "awkward", "grid"], cfg)
    lam = float(rng.choice([0.05, 0.1, 0.2, 0.4]))
    estimator = str(rng.choice(["epsilon", "knn"]))
    k = int(rng.integers(1, min(n - 1, 30) + 1)) if estimator == "knn" else None
    first, total = int(rng.integers(1, 4)), int(rng.integers(1, 6))
    methods = [str(rng.choice(["dense", "tiled"])) for _ in range(2)]
    tile = int(rng.choice([1, 7, 64])) if rng.random() < 0.6 else None
    cfg |= {"lam": lam, "estimator": estimator, "k": k, "first": first, "total": total, "methods": methods,
            "tile_size": tile}  # fmt: skip
    run = {"lam": lam, "delta": 1e-12, "estimator": estimator, "k": k}

    def engine(method: str) -> dict:
        tiled = {"method": "tiled", "client": client, "tile_size": tile}
        return tiled if method == "tiled" else {"method": "dense"}

    ref = cdf_ts_dense(X, max_iter=total, **run)
    with tempfile.TemporaryDirectory() as tmp:
        store = f"{tmp}/run.zarr"
        cdf_ts(X, max_iter=first, checkpoint=store, **run, **engine(methods[0]))
        got, info = cdf_ts(X, max_iter=total, checkpoint=store, resume=True, return_info=True, **run,
                           **engine(methods[1]))  # fmt: skip
    # a store holding more iterations than asked returns the asked one (CheckpointWarning, ignored here)
    deltas = float(np.abs(np.asarray(info.deltas) - ref.deltas[: len(info.deltas)]).max())
    return [
        ("positions after resume", float(np.abs(got - ref.X).max()), 1e-9),
        ("Deltas after resume", deltas, 1e-9),
        ("iterations (0: as the oracle's)", float(info.n_iter != len(ref.deltas)), 0.0),
    ]


CASES = {"engine": engine_case, "cuda-sim": cuda_sim_case, "model": model_case, "resume": resume_case}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=sorted(CASES))
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--engine-n",
        type=int,
        nargs=2,
        default=(2, 700),
        metavar=("LO", "HI"),
        help="engine: n drawn from [LO, HI) (default 2 700; the oracle holds a few n x n arrays)",
    )
    args = parser.parse_args()
    if args.what == "cuda-sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    warnings.simplefilter("ignore")  # label-column and n_workers remarks: not what is checked here
    rng = np.random.default_rng(args.seed)
    case = CASES[args.what]
    if args.what == "engine":
        case = functools.partial(engine_case, n_range=tuple(args.engine_n))
    runs = failures = 0
    worst: dict[str, float] = {}
    client = cluster = None
    if args.what != "cuda-sim":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
    try:
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            cfg: dict = {}
            try:
                checks = case(rng, client, cfg)
            except Exception as error:  # noqa: BLE001 - report the configuration, then go on
                print("ERROR", repr(error), cfg, flush=True)
                failures += 1
                continue
            runs += 1
            for name, error, _ in checks:
                worst[name] = max(worst.get(name, 0.0), error)
            bad = [(name, error) for name, error, tolerance in checks if error > tolerance]
            if bad:
                failures += 1
                print("MISMATCH", bad, cfg, flush=True)
            if runs % 100 == 0:
                print(f"{runs} cases", flush=True)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    largest = ", ".join(f"{name} {value:.3g}" for name, value in worst.items())
    print(f"{args.what}: {runs} cases, {failures} mismatches or errors; largest differences: {largest}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
