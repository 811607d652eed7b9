"""iNNE: isolation using nearest-neighbour ensembles (Bandaragoda et al., Computational Intelligence 2018).

Each of ``t`` ensemble members draws ``psi`` points ``C`` without
replacement; every ``c in C`` gets a hypersphere of radius ``tau(c)`` = the
distance to its nearest neighbour ``eta(c)`` in C.  A point x covered by
some sphere is scored by the smallest covering sphere ``c*``:
``I(x) = 1 - tau(eta(c*)) / tau(c*)``; an uncovered x scores 1.  The anomaly
score is the mean of I over the t members (larger = more anomalous).
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
    rng = np.random.default_rng(seed)
    total = np.zeros(n)
    for _ in range(t):
        idx = rng.choice(n, size=psi, replace=False)
        if D is None:
            C = X[idx]
            dcc = pairwise_distances(C)
            dxc = pairwise_distances(X, C)
        else:
            dxc = D[:, idx]
            dcc = dxc[idx]
        np.fill_diagonal(dcc, np.inf)
        eta = dcc.argmin(axis=1)
        tau = dcc[np.arange(psi), eta]
        covered = dxc <= tau[None, :]
        radius = np.where(covered, tau[None, :], np.inf)
        best = radius.argmin(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(tau[best] > 0, tau[eta[best]] / tau[best], 1.0)
        total += np.where(covered.any(axis=1), 1.0 - ratio, 1.0)
    return total / t
