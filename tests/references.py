"""References the tests compare the package's algorithms against, built on well-kept libraries."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.cluster import DBSCAN


def sklearn_dbscan(D: np.ndarray, eps: float, minpts: int) -> np.ndarray:
    """Labels (-1 = noise) of scikit-learn's ``DBSCAN(metric="precomputed")`` on the distance matrix D,
    row i being i's view: a sparse matrix holding ``D[i, j] <= eps`` row by row (explicit zeros kept), so
    an asymmetric D is read by rows as :class:`cdfts_dask.evaluation.dbscan.DBSCANSweep` reads it."""
    mask = D <= eps
    rows, cols = np.nonzero(mask)
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))])
    graph = sparse.csr_matrix((D[rows, cols], cols, indptr), shape=D.shape)
    return DBSCAN(eps=eps, min_samples=minpts, metric="precomputed").fit(graph).labels_
