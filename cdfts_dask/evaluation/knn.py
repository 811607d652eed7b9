"""The k-th nearest neighbour anomaly detector (Ramaswamy et al. 2000).

``score(i) = k-th smallest D[i, j] over j != i`` (row i = i's view, so it
works on DScale's asymmetric matrix); larger = more anomalous.
"""

from __future__ import annotations

import numpy as np


def knn_scores(D: np.ndarray, k: int) -> np.ndarray:
    """Distance from each point to its k-th nearest other point (1 <= k <= n - 1)."""
    n = D.shape[0]
    if not 1 <= k <= n - 1:
        raise ValueError(f"k must be in [1, n - 1] = [1, {n - 1}], got {k}")
    Dx = D.copy()
    np.fill_diagonal(Dx, -np.inf)  # i itself is always the 0-th neighbour
    return np.partition(Dx, k, axis=1)[:, k]


def knn_sorted(D: np.ndarray) -> np.ndarray:
    """Rows sorted with the diagonal first: column k is :func:`knn_scores` (D, k) for every k at once."""
    Dx = D.copy()
    np.fill_diagonal(Dx, -np.inf)
    Dx.sort(axis=1)
    return Dx
