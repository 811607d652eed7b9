"""iNNE: isolation using nearest-neighbour ensembles (Bandaragoda et al., Computational Intelligence 2018).

Each of ``t`` ensemble members draws ``psi`` points without replacement and
keeps one of each set of equal rows: the distinct points ``C`` (drawn again
while fewer than 2 are distinct).  Every ``c in C`` gets a hypersphere of
radius ``tau(c)`` = the distance to its nearest neighbour ``eta(c)`` in C.
x is covered by c when ``||x - c|| < tau(c)`` (strictly inside); a covered x
is scored by its smallest covering sphere ``c*``:
``I(x) = 1 - tau(eta(c*)) / tau(c*)``; an uncovered x scores 1.  The anomaly
score is the mean of I over the t members (larger = more anomalous).

The repeated rows dropped and the strict cover are those of the authors'
code (``zhuye88/iNNE``: ``function/Cigrid.m`` keeps ``unique(Ndata, 'rows')``
and redraws below 2; ``function/iNNE.m`` covers with ``D < radius``).  Their
newer ``iNNE.m`` marks the spheres that do not cover x with radius 1 before
taking the smallest, so where every covering sphere is wider than 1 a sphere
that does not cover x is chosen; that sentinel is not copied (the older
``iNNE.m`` scores by the nearest centre instead; both versions agree with
this one whenever a covering sphere is narrower than 1).
"""

from __future__ import annotations

import numpy as np

from ..oracle import pairwise_distances


def inne_scores(
    X: np.ndarray, psi: int, t: int = 100, seed: int = 0, D: np.ndarray | None = None
) -> np.ndarray:
    """iNNE anomaly scores of the rows of X (psi is capped at n; psi >= 2).

    ``D``, when given, is the points' distance matrix up to a constant factor (a view's
    relative distances): iNNE only compares and divides distances, so its columns replace
    the per-member distance computations (same scores up to floating-point rounding).
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if D is not None and D.shape != (n, n):
        raise ValueError(f"D must be {n} x {n}, got {D.shape}")
    psi = int(min(max(psi, 2), n))
    if len(np.unique(X, axis=0)) < 2:
        raise ValueError("iNNE needs at least 2 distinct points, got every row equal")
    rng = np.random.default_rng(seed)
    total = np.zeros(n)
    for _ in range(t):
        idx = _distinct_draw(X, psi, rng)
        psi_kept = len(idx)
        if D is None:
            C = X[idx]
            dcc = pairwise_distances(C)
            dxc = pairwise_distances(X, C)
        else:
            dxc = D[:, idx]
            dcc = dxc[idx]
        np.fill_diagonal(dcc, np.inf)
        eta = dcc.argmin(axis=1)
        tau = dcc[np.arange(psi_kept), eta]
        covered = dxc < tau[None, :]
        radius = np.where(covered, tau[None, :], np.inf)
        best = radius.argmin(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):  # an uncovered x's ratio is not used
            ratio = tau[eta[best]] / tau[best]
        total += np.where(covered.any(axis=1), 1.0 - ratio, 1.0)
    return total / t


def _distinct_draw(X: np.ndarray, psi: int, rng: np.random.Generator) -> np.ndarray:
    """Row indices of ``psi`` points drawn without replacement, one kept per set of equal rows
    (in the order of the sorted distinct rows, as ``unique(..., 'rows')``); drawn again while fewer
    than 2 rows are distinct."""
    while True:
        idx = rng.choice(X.shape[0], size=psi, replace=False)
        _, first = np.unique(X[idx], axis=0, return_index=True)
        if len(first) >= 2:
            return idx[first]
