"""DBSCAN on a dissimilarity matrix exactly as the DScale authors ran it (``Mdbscan.m``).

Source followed: ``Dependancies/Mdbscan.m`` of Ye Zhu's MATLAB code for DScale
(repository ``zhuye88/Distance-Scaling``, "A Distance Scaling Method to Improve
Density-based Clustering", PAKDD 2018; the same file ships in
``zhuye88/Density-ratio-based-clustering``).  Its ``main.m`` calls
``Mdbscan(data, minpts, eps, DScale(SimMatrix, eta, d))``, so row i of the
(asymmetric) DScale matrix is i's neighbourhood.  Re-implemented here from its
semantics; no code is copied.

With ``N(i) = {j : D[i, j] <= eps}`` (row i, i itself included) and i a core
point when ``|N(i)| >= minpts``, points are visited in index order; a point
already *touched* is skipped, otherwise:

* ``|N(i)| = 1``: i is noise and is touched (so no later expansion adds it);
* ``1 < |N(i)| < minpts``: i stays unlabelled (a later cluster may reach it);
* i core: a new cluster starts.  **Every** point of ``N(i)`` gets the new
  label and is queued -- also points touched by an earlier cluster or marked
  noise (they are re-labelled and walked again).  Each queued point p is
  touched and labelled; if p is core, each *untouched* point of ``N(p)`` is
  touched, labelled and queued.

Unlabelled points are noise at the end.  This is not textbook DBSCAN: with an
asymmetric matrix a later core point takes over the points in its own row
that an earlier cluster had reached, and a point marked noise early is never
added by a later expansion (only by a later cluster's *starting* row).  On a
symmetric matrix the result is textbook DBSCAN up to which cluster a border
point joins.  Within one cluster the labels do not depend on the order in
which the queue is walked (every label written is the new one, and the set
walked is the closure of ``N(i)``), so neighbour lists are walked nearest
first here (MATLAB walks them by index).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .dp import neighbour_order


@njit(cache=True, nogil=True)
def _mdbscan(nbr: np.ndarray, counts: np.ndarray, minpts: int) -> tuple[np.ndarray, int]:
    """Labels (-1 noise, clusters 0..) from neighbour lists ``nbr[i, :counts[i]] = N(i)``, and the
    number of clusters started."""
    n = nbr.shape[0]
    label = np.zeros(n, dtype=np.int64)  # MATLAB's class: 0 unlabelled, -1 noise, 1.. clusters
    touched = np.zeros(n, dtype=np.bool_)
    queue = np.empty(2 * n, dtype=np.int64)  # N(i) once, plus every point at most once more
    no = 1
    for i in range(n):
        if touched[i]:
            continue
        ci = counts[i]
        if ci == 1:
            label[i] = -1
            touched[i] = True
        elif ci > 1 and ci < minpts:
            label[i] = 0
        if ci >= minpts:
            tail = 0
            for t in range(ci):  # the whole row, touched or not
                q = nbr[i, t]
                label[q] = no
                queue[tail] = q
                tail += 1
            head = 0
            while head < tail:
                p = queue[head]
                head += 1
                touched[p] = True
                label[p] = no
                cp = counts[p]
                if cp >= minpts:
                    for t in range(cp):
                        q = nbr[p, t]
                        if not touched[q]:
                            touched[q] = True
                            queue[tail] = q
                            tail += 1
                            label[q] = no
            no += 1
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = label[i] - 1 if label[i] > 0 else -1
    return out, no - 1


def check_matrix(D) -> np.ndarray:
    """D as a square float64 array with a zero diagonal, or a ``ValueError`` naming the problem."""
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"D must be a square matrix, got shape {D.shape}")
    if np.isnan(D).any():
        raise ValueError("D must not contain NaN")
    if np.any(np.diagonal(D) != 0):
        raise ValueError("D must have a zero diagonal (each point at distance 0 from itself)")
    return D


def neighbour_counts(D: np.ndarray, eps: float) -> np.ndarray:
    """``|N(i)| = |{j : D[i, j] <= eps}|`` per row."""
    return np.count_nonzero(D <= eps, axis=1)


def dbscan_matrix(D, eps: float, minpts: int) -> np.ndarray:
    """``Mdbscan.m`` on the dissimilarity matrix D (row i = i's view): labels, -1 = noise."""
    D = check_matrix(D)
    if not isinstance(minpts, (int, np.integer)) or minpts < 1:
        raise ValueError(f"minpts must be a positive integer, got {minpts!r}")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    return _mdbscan(neighbour_order(D), neighbour_counts(D, eps), int(minpts))[0]


def dbscan_matrix_counts(nbr: np.ndarray, counts: np.ndarray, minpts: int) -> tuple[np.ndarray, bool]:
    """:func:`dbscan_matrix` from neighbour lists and counts (``counts`` a column of
    :func:`.dp.density_all`), for a grid search; also whether every larger eps gives the same labels.

    That holds when one cluster was started, no point is noise and every point is core: the first
    cluster then grows from point 0 over core paths that persist at any larger eps.
    """
    labels, started = _mdbscan(nbr, np.ascontiguousarray(counts), int(minpts))
    final = started == 1 and labels.min() == 0 and counts.min() >= minpts
    return labels, bool(final)
