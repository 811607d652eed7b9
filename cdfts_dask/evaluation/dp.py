"""Density peaks clustering (DP; Rodriguez and Laio, Science 2014) on a distance matrix.

* density ``rho(i) = |{j : D[i, j] <= eps}|`` (epsilon-neighbourhood, i included);
* points are ranked by decreasing rho (ties: lower index first); ``delta(i)`` is
  the distance from i to its nearest higher-ranked point ``parent(i)``; the
  top-ranked point gets ``delta = max_j D[i, j]``;
* the ``c`` points with the largest ``gamma = rho * delta`` are the centres
  (the top-ranked point is always one: it has nowhere to link);
* every other point, in rank order, takes the label of ``parent(i)``.

DP labels every point (no noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Peaks:
    """Density, rank order, distance to and index of the nearest higher-ranked point."""

    rho: np.ndarray
    order: np.ndarray  # point indices by decreasing density
    delta: np.ndarray
    parent: np.ndarray  # -1 for the top-ranked point


def density(D: np.ndarray, eps: float) -> np.ndarray:
    """Epsilon-neighbourhood counts ``rho(i) = |{j : D[i, j] <= eps}|``."""
    return np.count_nonzero(D <= eps, axis=1)


def peaks(D: np.ndarray, rho: np.ndarray) -> Peaks:
    """Rank by density and find every point's nearest higher-ranked point (row i = i's view)."""
    n = len(rho)
    order = np.lexsort((np.arange(n), -rho))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    higher = rank[None, :] < rank[:, None]
    masked = np.where(higher, D, np.inf)
    parent = masked.argmin(axis=1)
    delta = masked[np.arange(n), parent]
    top = order[0]
    parent[top] = -1
    delta[top] = D[top].max()
    return Peaks(rho, order, delta, parent)


def neighbour_order(D: np.ndarray) -> np.ndarray:
    """Each row's column indices by increasing distance (stable: equal distances by column index)."""
    idx = np.argsort(D, axis=1, kind="stable")
    return idx.astype(np.int32) if D.shape[1] < 2**31 else idx


def peaks_sorted(D: np.ndarray, rho: np.ndarray, nbr: np.ndarray) -> Peaks:
    """:func:`peaks` from a precomputed :func:`neighbour_order` -- the *same* result.

    Instead of masking the whole n x n matrix for every density, each point walks
    its own neighbour list (nearest first) until it meets a higher-ranked point;
    because the list is stably sorted, the first hit is the nearest higher-ranked
    point with the lowest index among equally near ones, exactly ``argmin`` of the
    masked row.  Most points stop after a few neighbours; the scan width doubles.
    """
    n = len(rho)
    order = np.lexsort((np.arange(n), -rho))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    top = order[0]
    parent = np.full(n, -1, dtype=np.int64)
    pending = np.delete(np.arange(n), top)
    start, width = 0, 8
    while pending.size:
        cols = nbr[pending, start : start + width]
        hit = rank[cols] < rank[pending][:, None]
        found = hit.any(axis=1)
        first = hit.argmax(axis=1)
        parent[pending[found]] = cols[found, first[found]]
        pending = pending[~found]
        start += width
        width *= 2
    delta = np.empty(n)
    rest = parent >= 0
    delta[rest] = D[np.flatnonzero(rest), parent[rest]]
    delta[top] = D[top].max()
    return Peaks(rho, order, delta, parent)


def density_all(D: np.ndarray, eps_grid) -> np.ndarray:
    """``rho`` for every eps of an increasing grid at once: column e = :func:`density` (D, eps[e])."""
    eps_grid = np.asarray(eps_grid, dtype=np.float64)
    n, E = D.shape[0], len(eps_grid)
    out = np.empty((n, E), dtype=np.int64)
    step = max(1, 2**22 // max(D.shape[1], 1))
    for a in range(0, n, step):
        b = min(n, a + step)
        first = np.searchsorted(eps_grid, D[a:b], side="left")  # D[i, j] <= eps[e] iff e >= first
        flat = (first + (E + 1) * np.arange(b - a)[:, None]).ravel()
        counts = np.bincount(flat, minlength=(b - a) * (E + 1)).reshape(b - a, E + 1)
        out[a:b] = np.cumsum(counts, axis=1)[:, :E]
    return out


def link(pk: Peaks, centres: np.ndarray) -> np.ndarray:
    """Label centres 0..c-1; every other point inherits its parent's label (the label of the
    centre reached by following parents), computed by pointer jumping."""
    n = len(pk.rho)
    root = pk.parent.copy()
    root[centres] = centres
    top = pk.order[0]
    if root[top] < 0:  # the densest point is always a centre in practice; keep the chain closed
        root[top] = top
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))) + 1)):
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    lab_of = np.full(n, -1, dtype=np.int64)
    lab_of[centres] = np.arange(len(centres))
    return lab_of[root]


def choose_centres(pk: Peaks, c: int) -> np.ndarray:
    """The c points of largest ``rho * delta`` (ties: lower index first), always including the top-ranked
    point."""
    gamma = pk.rho * pk.delta
    centres = np.argsort(-gamma, kind="stable")[:c]
    top = pk.order[0]
    if top not in centres:
        centres[-1] = top
    return centres


def density_peaks(D: np.ndarray, eps: float, c: int) -> np.ndarray:
    """DP labels of the points of D with density radius eps and c centres."""
    pk = peaks(D, density(D, eps))
    return link(pk, choose_centres(pk, c))
