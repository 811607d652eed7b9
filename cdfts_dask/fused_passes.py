"""Task bodies of the fused CPU engine (NumPy points, numba kernels from :mod:`cdfts_dask.fused`).

Every function takes the full point array ``X`` (n x d, one copy per worker)
and returns O(n) or O(panel) results; none allocates more than a few
``BLOCK``-sized buffers per panel row besides its outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import fused, passes


def triangle_panels(n: int, parts: int) -> list[tuple[int, int]]:
    """Row ranges ``[a, b)`` splitting the upper triangle of an n x n pair space into ~equal areas.

    Rows [0, x) own ``x n - x^2 / 2`` pairs above the diagonal, so the i-th
    boundary is ``x_i = n - sqrt(n^2 - i n^2 / parts)``.
    """
    parts = max(1, min(parts, n))
    cuts = {int(round(n - math.sqrt(max(0.0, n * n * (1 - i / parts))))) for i in range(parts + 1)}
    bounds = sorted(min(n, c) for c in cuts)
    bounds[0], bounds[-1] = 0, n
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=False) if b > a]


def as64(X) -> np.ndarray:
    return np.ascontiguousarray(X, dtype=np.float64)


def cast(X, dtype: str) -> np.ndarray:
    """The points in the kernels' working precision (C-contiguous)."""
    return np.ascontiguousarray(X, dtype=dtype)


def diameter_candidates(X):
    """``(L, candidates)``: a lower bound on max sq and the points that may exceed it (float64)."""
    L, cand = fused.diameter_candidates(as64(X))
    return float(L), cand


def panel_max_sq(X, cand, start: int, stop: int) -> float:
    """Largest float64 sq over candidate pairs whose first index lies in [start, stop)."""
    X64 = as64(X)
    XT = np.ascontiguousarray(X64[cand].T)
    return float(fused.max_sq_upper(X64, XT, np.asarray(cand, dtype=np.int64), start, stop))


def kd_order(X64: np.ndarray, leaf: int) -> tuple[np.ndarray, np.ndarray]:
    """Point order and block bounds of a k-d split: halve at the median of the widest column
    until blocks hold at most ``leaf`` points (compact blocks give tight bounding boxes)."""
    n = X64.shape[0]
    order = np.arange(n)
    stack = [(0, n)]
    bounds = []
    while stack:
        a, b = stack.pop()
        if b - a <= leaf:
            bounds.append(a)
            continue
        idx = order[a:b]
        pts = X64[idx]
        col = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
        half = (b - a) // 2
        part = np.argpartition(pts[:, col], half, kind="introselect")
        order[a:b] = idx[part]
        stack.append((a + half, b))
        stack.append((a, a + half))
    starts = np.array(sorted(bounds) + [n], dtype=np.int64)
    return order.astype(np.int64), starts


def diameter_blocks(X, part: int, parts: int) -> float:
    """Largest float64 sq over this part's share of block pairs (bounding-box pruned).

    Deterministic set-up repeated by every part (O(n d log n)): a lower bound
    L from farthest-point sweeps, k-d blocks of at most ``BLOCK`` points and
    their bounding boxes.  Parts split the block-pair triangle evenly.
    """
    X64 = as64(X)
    L, _ = fused.diameter_candidates(X64)
    order, bounds = kd_order(X64, fused.BLOCK)
    Xs = X64[order]
    lo = np.minimum.reduceat(Xs, bounds[:-1], axis=0)
    hi = np.maximum.reduceat(Xs, bounds[:-1], axis=0)
    spans = triangle_panels(len(bounds) - 1, parts)
    if part >= len(spans):
        return L
    b0, b1 = spans[part]
    return float(fused.block_max_sq(X64, order, bounds, lo, hi, L, b0, b1))


def diameter_from(L: float, *maxima: float) -> float:
    """``m = sqrt(max sq)``: sqrt is monotone and correctly rounded, so this is the oracle's ``max S``."""
    return float(np.sqrt(max((L, *maxima))))


def panel_counts(X, start: int, stop: int, T: float, dtype: str):
    """Contribution of the pairs (z, y >= z), z in [start, stop), to every point's epsilon count."""
    Xc = cast(X, dtype)
    n, d = Xc.shape
    Tlo, Thi = fused.guard_band(np.array([T]), d, dtype)
    counts = np.zeros(n, dtype=np.int64)
    fused.count_upper(Xc, np.ascontiguousarray(Xc.T), start, stop, np.float64(T), Tlo[0], Thi[0], counts)
    return counts


def sum_counts(*parts):
    return np.sum(np.stack(parts), axis=0)


def panel_kth_distance(X, start: int, stop: int, k: int, budget_bytes: int = 64 * 2**20):
    """Distance from each panel row to its k-th nearest other point (float64, exact order statistics).

    Small k: a sorted buffer of the k + 1 smallest ``sq`` per row (numba).
    Large k: sub-panels of ``budget_bytes // (8 n)`` full rows of ``sq`` (at
    least one), each reduced by a partition, so the task's memory stays
    within about two budgets whatever n and k are.
    """
    X64 = as64(X)
    XT = np.ascontiguousarray(X64.T)
    if k + 1 <= 64:
        return np.sqrt(fused.kth_smallest_sq(X64, XT, start, stop, k))
    n = X64.shape[0]
    kth_sq = np.empty(stop - start)
    for lo, hi in passes.chunks(start, stop, max(1, budget_bytes // (8 * n))):
        sq = np.zeros((hi - lo, n))
        for j in range(X64.shape[1]):
            diff = X64[lo:hi, j, None] - XT[None, j]
            sq += diff * diff
        kth_sq[lo - start : hi - start] = np.partition(sq, k, axis=1)[:, k]
    return np.sqrt(kth_sq)


@dataclass
class ShiftPlan:
    """Per-reference constants of the shift pass (see :func:`cdfts_dask.fused.shift_accumulate`)."""

    T: np.ndarray
    Tlo: np.ndarray
    Thi: np.ndarray
    rin: np.ndarray
    a: np.ndarray
    bm: np.ndarray
    mean: np.ndarray


def shift_plan(X, m: float, radius, q, dtype: str) -> ShiftPlan:
    """Thresholds on sq and the rho coefficients per reference point z.

    rho inside ``= r(z) = q / lam(z)``; outside ``= a + b / s`` with
    ``a = (1 - q) / (1 - lam)``, ``b = q - lam a``, ``s = sqrt(sq) / m`` so
    ``b / s = (b m) / sqrt(sq)``.  lam(z) >= 1 leaves no point outside.
    """
    radius = np.asarray(radius, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    d = np.shape(X)[1]
    T = fused.sq_thresholds(m, radius)
    Tlo, Thi = fused.guard_band(T, d, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        rin = np.where(radius > 0, q / radius, 1.0)
        a = np.where(radius < 1, (1.0 - q) / (1.0 - radius), 0.0)
        bm = np.where(radius < 1, (q - radius * a) * m, 0.0)
    c = np.dtype(dtype).type
    return ShiftPlan(T, Tlo, Thi, rin.astype(c), a.astype(c), bm.astype(c), as64(X).mean(axis=0))


def panel_shift(X, start: int, stop: int, plan: ShiftPlan, dtype: str):
    """Shifted (not yet normalised) float64 positions of targets ``X[start:stop]``.

    ``y_new = mean(X) + y A(y) / n - B(y) / n``, A and B accumulated in float64.
    """
    Xc = cast(X, dtype)
    n, d = Xc.shape
    YT = np.ascontiguousarray(Xc[start:stop].T)
    A = np.zeros(stop - start)
    BT = np.zeros((d, stop - start))
    fused.shift_accumulate(Xc, YT, plan.T, plan.Tlo, plan.Thi, plan.rin, plan.a, plan.bm, A, BT)
    Y = as64(Xc[start:stop])
    return plan.mean + Y * (A / n)[:, None] - BT.T / n


def panel_shift_symmetric(X, start: int, stop: int, plan: ShiftPlan, dtype: str):
    """Partial ``(A, BT)`` (float64, all n targets) from the pairs (z, y > z), z in [start, stop).

    Each unordered pair's ``sq`` and ``1 / sqrt(sq)`` serve both ``rho(z, y)``
    and ``rho(y, z)`` (S is symmetric, rho is not); the panels are triangle-balanced.
    """
    Xc = cast(X, dtype)
    n, d = Xc.shape
    A = np.zeros(n)
    BT = np.zeros((d, n))
    fused.shift_symmetric(
        Xc,
        np.ascontiguousarray(Xc.T),
        start,
        stop,
        plan.T,
        plan.Tlo,
        plan.Thi,
        plan.rin,
        plan.a,
        plan.bm,
        A,
        BT,
    )
    return A, BT


def sum_partials(*parts):
    """Sum of ``(A, BT)`` partials."""
    A = parts[0][0].copy()
    BT = parts[0][1].copy()
    for a, bt in parts[1:]:
        A += a
        BT += bt
    return A, BT


def shifted_from_partials(X, plan: ShiftPlan, partials, dtype: str):
    """``y_new = mean(X) + y A(y) / n - B(y) / n`` for all points from summed partials."""
    Y = as64(cast(X, dtype))
    A, BT = partials
    n = Y.shape[0]
    return plan.mean + Y * (A / n)[:, None] - BT.T / n
