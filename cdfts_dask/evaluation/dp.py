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
    """The c points of largest ``rho * delta``, always including the top-ranked point."""
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
