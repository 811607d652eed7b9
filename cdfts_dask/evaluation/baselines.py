"""scikit-learn anomaly detectors used as baselines: LOF and Isolation Forest.

* LOF (Breunig et al. 2000): score = ``-negative_outlier_factor_`` = the mean
  ratio of the neighbours' local reachability density to x's own;
* iForest (Liu et al. 2008): ``t`` trees on sub-samples of ``psi`` points;
  score = ``-score_samples`` (larger = shorter average path = more anomalous).
"""

from __future__ import annotations

import numpy as np


def lof_scores(D: np.ndarray, k: int) -> np.ndarray:
    """LOF scores of n points from their n x n distance matrix ``D`` (up to a constant factor), with
    ``k`` neighbours (at most n - 1).

    LOF only compares and divides distances, so the neighbours are searched in ``D``
    (``metric="precomputed"``): a view's relative distances, summed column by column, bit-identical
    on any machine and exactly tied on equidistant points.  Given the points, scikit-learn would
    compute distances itself, in an order that its search structure and the BLAS decide: on tied
    neighbours (dermatology, k = 54) that changed the score from one machine to another.
    """
    from sklearn.neighbors import LocalOutlierFactor

    n = D.shape[0]
    if D.shape != (n, n):
        raise ValueError(f"D must be a square distance matrix, got shape {D.shape}")
    lof = LocalOutlierFactor(n_neighbors=int(min(k, n - 1)), metric="precomputed")
    return -lof.fit(D).negative_outlier_factor_


def iforest_scores(X: np.ndarray, psi: int, t: int = 100, seed: int = 0) -> np.ndarray:
    from sklearn.ensemble import IsolationForest

    model = IsolationForest(n_estimators=t, max_samples=int(min(psi, X.shape[0])), random_state=seed)
    model.fit(X)
    return -model.score_samples(X)
