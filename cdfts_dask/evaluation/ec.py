"""Extreme clustering (EC; Wang, Qi et al., Information Sciences 2021) as its authors wrote it.

Source followed: ``MATLAB version/Extreme_Clustering.m`` (with ``isGaussian =
false``) of the authors' repository ``qiqi12/extreme-clustering``; the
``Python version/Extreme_Clustering.py`` there is the same procedure except
where noted.  Re-implemented here from its semantics; no code is copied.

Every row of the distance matrix is sorted (stably, as MATLAB's ``sort``):
``b(i, 1) <= b(i, 2) <= ...`` are row i's distances and ``c(i, j)`` the
points they belong to (position 1 is normally i itself).  EC's one parameter
is the neighbourhood radius ``delta`` (the paper's eps):

1. *Density.*  ``r = mean_i b(i, floor(0.02 n))`` (the 2 %-nearest-neighbour
   distance averaged over the points; needs n >= 50) and
   ``density(i) = 1 + |{j : D[i, j] < r}|``.  It does not depend on delta.
2. *Extreme points.*  Points are visited in index order, skipping those
   marked.  Point i scans positions ``2, 3, ...`` of its row while the
   neighbour's density is ``<= density(i)`` and ``b < delta``, marking every
   neighbour of *equal* density it passes (marked points are not visited
   later).  i is an extreme point when the scan stopped at ``b >= delta``
   (no denser point within delta); here also when it ran off the end of the
   row (delta above every distance of the row, where the MATLAB code would
   index past the row).
3. *Labels.*  Extreme point number m gets label m, and so does every point
   of equal density at ``b < delta`` in its row (a later extreme point
   overwrites an earlier one's).  Every other point follows its chain of
   *nearest strictly denser points* (first position of its sorted row, from
   position 1, with a larger density) to the first labelled point and takes
   its label.
4. *Noise.*  A cluster with at most 5 % of the mean cluster size
   (``num <= 0.05 * mean(num)``; the Python version has ``<``) becomes noise
   (label -1).

Labels are returned as 0, 1, ... in order of the extreme points; -1 = noise.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .dp import neighbour_order
from .mdbscan import check_matrix

#: clusters of at most this fraction of the mean cluster size are noise (Extreme_Clustering.m)
NOISE_FRACTION = 0.05
#: the fewest points whose density radius is defined (the floor(0.02 n)-th neighbour must exist)
MIN_POINTS = 50


def density_radius(D: np.ndarray, nbr: np.ndarray) -> float:
    """``r = mean_i b(i, floor(0.02 n))`` (1-based column of the row-sorted distances)."""
    n = D.shape[0]
    col = int(np.floor(n * 0.02))
    if col < 1:
        raise ValueError(
            f"EC's density radius needs n >= {MIN_POINTS} points, got n={n}; pass density_radius"
        )
    idx = nbr[:, col - 1].astype(np.int64)
    return float(D[np.arange(n), idx].mean())


def ec_density(D: np.ndarray, radius: float) -> np.ndarray:
    """``density(i) = 1 + |{j : D[i, j] < radius}|``."""
    return np.count_nonzero(D < radius, axis=1) + 1


def denser_parent(density: np.ndarray, nbr: np.ndarray) -> np.ndarray:
    """Each point's first neighbour in its sorted row with a strictly larger density (-1: none)."""
    higher = density[nbr] > density[:, None]
    first = higher.argmax(axis=1)
    parent = nbr[np.arange(len(density)), first].astype(np.int64)
    parent[~higher.any(axis=1)] = -1
    return parent


@njit(cache=True, nogil=True)
def _ec_labels(D, nbr, density, parent, delta):
    """Steps 2 and 3: labels 1..m before the noise step, and m (the number of extreme points)."""
    n = D.shape[0]
    status = np.zeros(n, dtype=np.bool_)
    extreme = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        if status[i]:
            continue
        j = 1
        while j < n:
            q = nbr[i, j]
            if not (density[i] >= density[q] and D[i, q] < delta):
                break
            if density[i] == density[q]:
                status[q] = True
            j += 1
        if j >= n or D[i, nbr[i, j]] >= delta:
            extreme[m] = i
            m += 1
    label = np.zeros(n, dtype=np.int64)
    for e in range(m):
        i = extreme[e]
        label[i] = e + 1
        j = 1
        while j < n and D[i, nbr[i, j]] < delta:
            q = nbr[i, j]
            if density[i] == density[q]:
                label[q] = e + 1
            j += 1
    for i in range(n):
        if label[i] != 0:
            continue
        q = i
        while q >= 0 and label[q] == 0:  # q < 0 cannot happen: the densest points are labelled
            q = parent[q]
        lab = label[q] if q >= 0 else 0
        q = i
        while q >= 0 and label[q] == 0:
            label[q] = lab
            q = parent[q]
    return label, m


def remove_small_clusters(label: np.ndarray, m: int, fraction: float = NOISE_FRACTION) -> np.ndarray:
    """Step 4: clusters 1..m with ``size <= fraction * mean size`` become noise; the rest are
    renumbered 0, 1, ... in order; -1 = noise."""
    if m == 0:
        return np.full(len(label), -1, dtype=np.int64)
    size = np.bincount(label[label > 0], minlength=m + 1)[1:]
    keep = (size > fraction * size.mean()) & (size > 0)
    new_id = np.full(m + 1, -1, dtype=np.int64)
    new_id[1:][keep] = np.arange(int(keep.sum()))
    return new_id[np.maximum(label, 0)]


class ExtremeClustering:
    """EC on one distance matrix for any delta: the sorted rows, densities and chains are shared."""

    def __init__(self, D, radius: float | None = None, nbr: np.ndarray | None = None):
        """``radius`` overrides the density radius (default: :func:`density_radius`); ``nbr`` may hold
        a precomputed :func:`.dp.neighbour_order` of D."""
        self.D = check_matrix(D)
        self.nbr = neighbour_order(self.D) if nbr is None else nbr
        self.radius = density_radius(self.D, self.nbr) if radius is None else float(radius)
        self.density = ec_density(self.D, self.radius)
        self.parent = denser_parent(self.density, self.nbr)

    def labels(self, delta: float) -> np.ndarray:
        """EC labels for neighbourhood radius ``delta`` (-1 = noise)."""
        label, m = _ec_labels(self.D, self.nbr, self.density, self.parent, float(delta))
        return remove_small_clusters(label, m)


def extreme_clustering(D, delta: float, radius: float | None = None) -> np.ndarray:
    """EC labels of the points of D (row i = i's view) for neighbourhood radius delta; -1 = noise."""
    return ExtremeClustering(D, radius).labels(delta)
