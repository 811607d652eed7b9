"""DBSCAN (Ester et al. 1996) on a precomputed, possibly asymmetric, distance matrix.

Point i's epsilon-neighbourhood is ``{j : D[i, j] <= eps}`` (row i, i itself
included); i is a core point when that set has at least ``minpts`` members,
i.e. when ``core(i) <= eps`` with ``core(i)`` the distance to i's
(minpts-1)-th nearest other point; clusters are the points density-reachable
from core points; the rest is noise (label -1).

:class:`DBSCANSweep` is the DBSCAN of the evaluation.  A parameter search
calls DBSCAN hundreds of times per dataset, so it computes the clusterings
of scikit-learn's ``DBSCAN(metric="precomputed")`` (the reference the tests
compare it with) for every eps of a grid at once, HDBSCAN-style: with the mutual reachability distance
``MR(i, j) = max(core(i), core(j), min(D[i, j], D[j, i]))``, the core points
at eps are those with ``core(i) <= eps`` and two core points share a cluster
iff they are joined by a path of MR <= eps, i.e. by minimum-spanning-tree
edges of weight <= eps.  A border point j joins the cluster of
``b(j) = argmin_{i != j} max(core(i), D[i, j])`` when that value is <= eps
(b(j) is then a core point with j in its neighbourhood, a valid DBSCAN
assignment; scikit-learn picks whichever core reaches j first).  For an
asymmetric D, core points are linked when either sees the other
(weak connectivity), as in scikit-learn's expansion.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components


def core_distances(D: np.ndarray, minpts: int) -> np.ndarray:
    """Distance from each point to its (minpts-1)-th nearest other point (0 for minpts = 1; inf for
    minpts > n: no point has that many neighbours, none is core, all are noise)."""
    if minpts <= 1:
        return np.zeros(D.shape[0])
    if minpts > D.shape[0]:
        return np.full(D.shape[0], np.inf)
    Dx = D.copy()
    np.fill_diagonal(Dx, -np.inf)
    return np.partition(Dx, minpts - 1, axis=1)[:, minpts - 1]


def prim_mst(W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum spanning tree of the complete graph with symmetric weights W (dense Prim, O(n^2)).

    Returns the n - 1 edges as ``(u, v, weight)`` arrays.
    """
    n = W.shape[0]
    in_tree = np.zeros(n, dtype=bool)
    best = np.full(n, np.inf)
    link = np.zeros(n, dtype=np.int64)
    u = np.empty(max(n - 1, 0), dtype=np.int64)
    v = np.empty_like(u)
    w = np.empty(max(n - 1, 0))
    current = 0
    in_tree[0] = True
    for step in range(n - 1):
        row = W[current]
        closer = row < best
        best = np.where(closer, row, best)
        link = np.where(closer, current, link)
        best[in_tree] = np.inf
        nxt = int(best.argmin())
        u[step], v[step], w[step] = link[nxt], nxt, best[nxt]
        in_tree[nxt] = True
        current = nxt
    return u, v, w


class DBSCANSweep:
    """DBSCAN labels for one distance matrix and minpts, for any eps, in O(n) per eps after O(n^2) setup."""

    def __init__(
        self, D: np.ndarray, minpts: int, core: np.ndarray | None = None, sym: np.ndarray | None = None
    ):
        """``core`` (:func:`core_distances`) and ``sym`` (``min(D, D.T)``) may be passed precomputed
        when several minpts share one D (see :func:`sweeps`)."""
        n = D.shape[0]
        self.core = core_distances(D, minpts) if core is None else core
        sym = np.minimum(D, D.T) if sym is None else sym
        mr = np.maximum(sym, self.core[:, None])
        np.maximum(mr, self.core[None, :], out=mr)
        u, v, w = prim_mst(mr)
        del mr
        order = np.argsort(w, kind="stable")
        self.edge_w, self.edge_u, self.edge_v = w[order], u[order], v[order]
        reach = np.maximum(self.core[:, None], D)  # reach[i, j]: j within core point i's eps at eps >= reach
        np.fill_diagonal(reach, np.inf)
        self.border_of = reach.argmin(axis=0)
        self.border_w = reach[self.border_of, np.arange(n)]
        self.n = n

    def critical_values(self) -> np.ndarray:
        """Sorted distinct eps at which the labels can change: :meth:`labels` (eps) depends on eps
        only through which of these are <= eps (MST edges, core distances, border reaches)."""
        return np.unique(np.concatenate([self.edge_w, self.core, self.border_w]))

    def labels(self, eps: float) -> np.ndarray:
        n = self.n
        m = int(np.searchsorted(self.edge_w, eps, side="right"))
        graph = sparse.csr_array((np.ones(m), (self.edge_u[:m], self.edge_v[:m])), shape=(n, n))
        _, comp = connected_components(graph, directed=False)
        is_core = self.core <= eps
        labels = np.full(n, -1, dtype=np.int64)
        if is_core.any():
            _, labels[is_core] = np.unique(comp[is_core], return_inverse=True)
        border = ~is_core & (self.border_w <= eps)
        labels[border] = labels[self.border_of[border]]
        return labels


def sweeps(D: np.ndarray, minpts_values):
    """:class:`DBSCANSweep` for each minpts, sharing one row sort (core distances) and ``min(D, D.T)``."""
    Dx = D.copy()
    np.fill_diagonal(Dx, -np.inf)
    Dx.sort(axis=1)  # column m-1 = distance to the (m-1)-th nearest other point = core_distances(D, m)
    sym = np.minimum(D, D.T)
    for minpts in minpts_values:
        if minpts <= 1 or minpts > D.shape[0]:
            core = core_distances(D, minpts)  # zeros / inf: no sort needed
        else:
            core = Dx[:, minpts - 1].copy()
        yield minpts, DBSCANSweep(D, minpts, core=core, sym=sym)
