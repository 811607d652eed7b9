"""Where rounding decides (docs/ALGORITHM.md): the dense oracle and the tiled engine against a
50-digit evaluation of the same definition, on two inputs where both are more than 1e-9 from it.

    python docs/scripts/conditioning_check.py

1. A far outlier under k-NN: the point (f, f) among 79 uniform points in [0, 1]^2, k = 5, one
   iteration.  Its k-th neighbour radius r is about 1 - 1/f (in units of m), and rho outside its
   neighbourhood, ((s - r)(1 - q) / (1 - r) + q) / s, is (1 - q) / (1 - r) ~ f times as sensitive to
   s as s is to rounding: both methods are off the exact value by about 1e-16 f / n (and agree with
   each other: the engine evaluates such a reference in the oracle's order, plan.rho_float64).
2. A lattice, 0..10 in 1-D, lambda = 0.1: iteration 1 gives both methods the same points to 2e-16,
   but they lie symmetrically, with gaps within an ulp or two of lambda m: each method's rounding puts
   some on its own side of the threshold, the counts of iteration 2 differ, and so do the results, by
   1e-2.  The exact iteration (from the same float points) is a third answer.
"""

from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
from distributed import Client, LocalCluster

from cdfts_dask import cdf_ts
from cdfts_dask.normalise import minmax_normalise

getcontext().prec = 50


def exact_knn_step(X: np.ndarray, k: int) -> np.ndarray:
    """One k-NN iteration (DESIGN section 1) of the float points X in 50-digit decimal arithmetic."""
    n, d = X.shape
    P = [[Decimal(float(v)) for v in row] for row in X]
    S = [[sum((P[i][j] - P[z][j]) ** 2 for j in range(d)).sqrt() for i in range(n)] for z in range(n)]
    m = max(max(row) for row in S)
    s = [[v / m for v in row] for row in S]
    q = (Decimal(k) / n) ** (Decimal(1) / d)
    radius = [sorted(row)[k] for row in s]  # the k-th nearest other point (z itself at 0)
    A = [Decimal(0)] * n
    B = [[Decimal(0)] * d for _ in range(n)]
    for z in range(n):
        r = radius[z]
        for y in range(n):
            v = s[z][y]
            if v == 0:
                rho = Decimal(1)
            elif v <= r:
                rho = q / r
            else:
                rho = ((v - r) * (1 - q) / (1 - r) + q) / v
            A[y] += rho
            for j in range(d):
                B[y][j] += rho * P[z][j]
    mean = [sum(P[i][j] for i in range(n)) / n for j in range(d)]
    moved = [[mean[j] + P[y][j] * A[y] / n - B[y][j] / n for j in range(d)] for y in range(n)]
    lo = [min(row[j] for row in moved) for j in range(d)]
    hi = [max(row[j] for row in moved) for j in range(d)]
    return np.array([[float((row[j] - lo[j]) / (hi[j] - lo[j])) for j in range(d)] for row in moved])


def exact_lattice_run(xs: np.ndarray, lam: float, iterations: int) -> list[np.ndarray]:
    """Epsilon CDF-TS in rational arithmetic of 1-D points already normalised in float64 (the points
    both methods start from, taken exactly; d = 1: distances are |z - y|, exactly)."""
    xs = [Fraction(float(x)) for x in xs]
    lam = Fraction(lam)  # the float the user passes, exactly
    n, out = len(xs), []
    for _ in range(iterations):
        m = max(xs) - min(xs)
        counts = [sum(1 for y in xs if abs(z - y) / m <= lam) for z in xs]
        moved = []
        for y in xs:
            total = Fraction(0)
            for z, c in zip(xs, counts, strict=True):
                s, q = abs(z - y) / m, Fraction(c, n)
                rho = 1 if s == 0 else (q / lam if s <= lam else ((s - lam) * (1 - q) / (1 - lam) + q) / s)
                total += z + rho * (y - z)
            moved.append(total / n)
        lo, hi = min(moved), max(moved)
        xs = [(v - lo) / (hi - lo) for v in moved]
        out.append(np.array([float(v) for v in xs]))
    return out


def report(dense: np.ndarray, tiled: np.ndarray, exact: np.ndarray) -> str:
    def gap(a, b) -> str:
        return f"{np.abs(a - b).max():.2e}"

    return (
        f"|dense - exact| {gap(dense, exact)}, |tiled - exact| {gap(tiled, exact)}, "
        f"|dense - tiled| {gap(dense, tiled)}"
    )


if __name__ == "__main__":
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0")
    with cluster, Client(cluster) as c:
        rng = np.random.default_rng(2)
        print("1. k-NN (k = 5), 80 points, one at (f, f), one iteration")
        for f in (1e6, 1e9, 1e10, 1e12):
            X = rng.random((80, 2))
            X[0] = f
            exact = exact_knn_step(minmax_normalise(X)[0], 5)
            dense = cdf_ts(X, estimator="knn", k=5, max_iter=1, method="dense")
            tiled = cdf_ts(X, estimator="knn", k=5, max_iter=1, method="tiled", client=c, tile_size=32)
            print(f"   f = {f:g}:", report(dense, tiled, exact))
        print("2. epsilon, lambda = 0.1, the lattice 0..10 in 1-D")
        X = np.arange(11, dtype=np.float64)[:, None]
        exact = exact_lattice_run(minmax_normalise(X)[0][:, 0], 0.1, 3)
        for t in (1, 2, 3):
            dense = cdf_ts(X, lam=0.1, max_iter=t, delta=1e-12, method="dense")[:, 0]
            tiled = cdf_ts(X, lam=0.1, max_iter=t, delta=1e-12, method="tiled", client=c)[:, 0]
            print(f"   iteration {t}:", report(dense, tiled, exact[t - 1]))
