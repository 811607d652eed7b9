"""LGD clustering (after Li, Yang, Qin and Zhu, Knowledge-Based Systems 2019), simplified.

LGD works on the k-NN graph.  Its *local gap density* of a point counts its
k nearest neighbours and divides by their average distance; points that are
dense *relative to their own neighbours* are core points, so cores are found
in sparse clusters as well as dense ones.  Here:

* ``g(i) = k / mean_{j in kNN(i)} D[i, j]`` (row i = i's view);
* i is a core point when ``g(i) >= tau * max_{j in kNN(i) + {i}} g(j)``;
* k-NN edges between two core points are kept (all others are treated as
  potential cross-cluster edges and cut); the ``c`` largest connected
  components of the core graph are the sub-clusters (``c`` = the number of
  classes, as in the paper's grid);
* like DP, every remaining point, in decreasing order of g, takes the label
  of its nearest point of higher g (or of its nearest labelled point).

Approximation: this follows the published abstract's construction, not the
authors' code (which we do not have); see docs/REPRODUCTION.md.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from .dp import peaks, peaks_sorted


def knn_indices(D: np.ndarray, k: int) -> np.ndarray:
    """Indices of each row's k nearest *other* points, nearest first (n x k)."""
    Dx = D.copy()
    np.fill_diagonal(Dx, np.inf)
    k = min(k, D.shape[0] - 1)
    part = np.argpartition(Dx, k - 1, axis=1)[:, :k]
    order = np.argsort(np.take_along_axis(Dx, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def local_gap_density(D: np.ndarray, nn: np.ndarray) -> np.ndarray:
    """``g(i) = k / mean kNN distance`` (infinite where all k neighbours coincide with i)."""
    mean = np.take_along_axis(D, nn, axis=1).mean(axis=1)
    with np.errstate(divide="ignore"):
        return nn.shape[1] / mean


def lgd(
    D: np.ndarray, k: int, tau: float, c: int, nn: np.ndarray | None = None, nbr: np.ndarray | None = None
) -> np.ndarray:
    """LGD labels (every point labelled) for k neighbours, core threshold tau and c clusters.

    ``nn`` may hold precomputed :func:`knn_indices` for any k' >= k (its first k columns are used);
    ``nbr`` a precomputed :func:`.dp.neighbour_order` of D (same result, faster).
    """
    n = D.shape[0]
    k = min(k, n - 1)
    nn = knn_indices(D, k) if nn is None or nn.shape[1] < k else nn[:, :k]
    g = local_gap_density(D, nn)
    finite = np.isfinite(g)
    g = np.where(finite, g, 2.0 * g[finite].max() if finite.any() else 1.0)
    core = g >= tau * np.maximum(g, g[nn].max(axis=1))
    rows = np.repeat(np.arange(n), nn.shape[1])
    cols = nn.ravel()
    keep = core[rows] & core[cols]
    graph = sparse.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(n, n))
    _, comp = connected_components(graph, directed=True, connection="weak")
    labels = np.full(n, -1, dtype=np.int64)
    sizes = np.bincount(comp[core], minlength=comp.max() + 1)
    biggest = [cid for cid in np.argsort(-sizes, kind="stable")[: max(1, c)] if sizes[cid] > 0]
    for lab, cid in enumerate(biggest):
        labels[core & (comp == cid)] = lab
    pk = peaks(D, g) if nbr is None else peaks_sorted(D, g, nbr)
    top = pk.order[0]
    if labels[top] < 0:
        labelled = np.flatnonzero(labels >= 0)
        labels[top] = labels[labelled[np.argmin(D[top, labelled])]] if labelled.size else 0
    for i in pk.order[1:]:  # every higher-ranked point is labelled by now
        if labels[i] < 0:
            labels[i] = labels[pk.parent[i]]
    return labels
