"""scikit-learn anomaly detectors used as baselines: LOF and Isolation Forest.

* LOF (Breunig et al. 2000): score = ``-negative_outlier_factor_`` = the mean
  ratio of the neighbours' local reachability density to x's own;
* iForest (Liu et al. 2008): ``t`` trees on sub-samples of ``psi`` points;
  score = ``-score_samples`` (larger = shorter average path = more anomalous).
"""

from __future__ import annotations

import numpy as np


def lof_scores(X: np.ndarray, k: int) -> np.ndarray:
    from sklearn.neighbors import LocalOutlierFactor

    lof = LocalOutlierFactor(n_neighbors=int(min(k, X.shape[0] - 1)))
    lof.fit(X)
    return -lof.negative_outlier_factor_


def iforest_scores(X: np.ndarray, psi: int, t: int = 100, seed: int = 0) -> np.ndarray:
    from sklearn.ensemble import IsolationForest

    model = IsolationForest(n_estimators=t, max_samples=int(min(psi, X.shape[0])), random_state=seed)
    model.fit(X)
    return -model.score_samples(X)
