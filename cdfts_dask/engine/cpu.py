"""CPU task bodies: NumPy points, numba kernels (:mod:`cdfts_dask.engine.cpu_kernels`).

The interface every device module offers to :mod:`cdfts_dask.engine.graph`
(the same names, arguments and results on :mod:`cdfts_dask.engine.cuda`):

* ``HOST``: whether the points live in host memory (then ``prepare`` runs on the client);
* ``prepare(X, dtype)``: the points in the working dtype, resident on the device;
* ``panel_rows(n, threads)``: rows per panel task, for the cluster's worker threads (GPUs: one each);
* ``pair_index(X)``: what the diameter, count and k-NN parts of one iteration share, built once
  by one task and handed to them (here the k-d leaves and their boxes); each part builds its own
  when given None.  A device whose parts share nothing has ``pair_index = None`` instead of a
  function (CUDA: its parts sweep full rows), and the graph submits no task for it;
* ``diameter_part(X, part, parts, index)``: largest float64 ``sq`` over this part's pairs;
* ``counts_part(X, part, parts, T, index)``: the epsilon counts that the part-th of
  ``parts`` shares of the pairs contributes, an n-vector (parts are summed): here
  from the pairs ``(z, y >= z)`` of k-d leaf pairs, to both points; on CUDA from
  full rows;
* ``kth_part(X, part, parts, k, index)``: distance from the rows of the part-th of ``parts``
  shares to their k-th nearest other point, an n-vector (0 elsewhere; parts are summed);
* ``column_mean(X)``: float64 column means (the shift's ``mean(X)``), on the host;
* ``shift_part(X, a, b, plan)``: shifted, not yet normalised, rows [a, b);
* ``shift_targets(P, Y, plan)``: the same for targets Y against references P
  (a fitted model's out-of-sample transform, :mod:`cdfts_dask.model`);
* ``concat(*parts)``: row blocks or vector pieces joined in order (tree reductions);
* ``finish(X, *shifted)``: normalise the shifted row blocks (in order):
  ``(X_new, sum |X_new - X|, lo, hi)``, deterministically (the graph runs it
  twice on the same blocks, for the summary and for the positions, and
  requires the same ``lo``, ``hi`` of both; ``lo``, ``hi`` on the host);
* ``to_host(X)``: a NumPy array.

Every function takes the full point array ``X`` (n x d, one copy per
worker) and returns O(n) or O(panel) results; none allocates more than a few
``BLOCK``-sized buffers per panel row besides its outputs.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..normalise import column_span
from . import cpu_kernels as kern
from .plan import (
    ShiftPlan,
    chunks,
    exact_below,
    guard_band,
    kth_buffered,
    share,
    sq_bound_factors,
    triangle_panels,
)

#: the k-NN large-k fallback holds at most this many bytes of ``sq`` per sub-panel
KNN_PANEL_BYTES = 64 * 2**20
#: panel tasks per worker thread (load balance) and the fewest rows worth a task
TASKS_PER_WORKER = 4
MIN_ROWS = 256
MAX_ROWS = 4096
#: NumPy points in host memory
HOST = True


def prepare(X, dtype: str) -> np.ndarray:
    """The points in the kernels' working precision (C-contiguous; X itself when it already is)."""
    return np.ascontiguousarray(X, dtype=dtype)


def to_host(X) -> np.ndarray:
    return np.asarray(X)


def panel_rows(n: int, threads: int) -> int:
    """About four tasks per worker thread, each of 256 to 4096 rows (never more than n)."""
    return max(1, min(n, MAX_ROWS, max(MIN_ROWS, math.ceil(n / (TASKS_PER_WORKER * threads)))))


class KdIndex(NamedTuple):
    """The k-d split of the points X that the diameter, count and k-NN parts of one iteration share.

    ``order``: the points' permutation into leaves of at most ``KD_LEAF``
    points (leaf L is ``order[bounds[L]:bounds[L + 1]]``, leaves in
    depth-first order, so each group of ``KD_GROUP`` consecutive leaves is a
    subtree); ``lo``/``hi``: each leaf's bounding box, ``glo``/``ghi``: each
    group's (float64, from the exact coordinates).  n + 2 d n / ``KD_LEAF``
    values, about a quarter of the points' at d = 8: every worker that runs
    a part receives it (the points themselves it has).
    """

    order: np.ndarray
    bounds: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    glo: np.ndarray
    ghi: np.ndarray

    @property
    def boxes(self) -> tuple:
        """``(bounds, lo, hi, glo, ghi)``, as the kernels take them."""
        return self.bounds, self.lo, self.hi, self.glo, self.ghi


def pair_index(X) -> KdIndex:
    """The k-d split of X (:class:`KdIndex`; :func:`~cdfts_dask.engine.cpu_kernels.kd_leaves` on the
    exact float64 coordinates), built once per iteration by one task and handed to every diameter, count
    and k-NN part (O(n d log n): about 0.04 s at n = 1e5, d = 8, where a count part's own work is 0.15
    s).  Deterministic: a part given None builds the same."""
    X64 = np.ascontiguousarray(X, dtype=np.float64)
    order, bounds = kern.kd_leaves(X64, kern.KD_LEAF)
    Xs = X64[order]
    lo = np.minimum.reduceat(Xs, bounds[:-1], axis=0)
    hi = np.maximum.reduceat(Xs, bounds[:-1], axis=0)
    group_starts = np.arange(0, len(lo), kern.KD_GROUP)
    glo, ghi = np.minimum.reduceat(lo, group_starts, axis=0), np.maximum.reduceat(hi, group_starts, axis=0)
    return KdIndex(order, bounds, lo, hi, glo, ghi)


def diameter_part(X, part: int, parts: int, index: KdIndex | None = None) -> float:
    """Largest float64 sq over this part's share of leaf-group pairs (bounding-box pruned).

    A lower bound L from farthest-point sweeps (O(n d)), then the leaf pairs
    of ``index`` (:func:`pair_index`; built here when None) whose boxes may
    hold a pair beyond it.  Parts split the triangle of group pairs (groups
    of ``KD_GROUP`` leaves) evenly.
    """
    X64 = np.ascontiguousarray(X, dtype=np.float64)
    L = kern.farthest_sq(X64)
    index = pair_index(X64) if index is None else index
    spans = triangle_panels(len(index.glo), parts)
    if part >= len(spans):
        return float(L)
    g0, g1 = spans[part]
    return float(kern.block_max_sq(X64, index.order, *index.boxes, L, g0, g1))


def _in_order(X, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Xs, XsT)``: the points in the k-d ``order``, in X's dtype, and their transpose (both
    C-contiguous; O(n d), copied by each part that has pairs to test rather than sent with the index to
    every worker)."""
    Xs = np.ascontiguousarray(X[order])
    return Xs, np.ascontiguousarray(Xs.T)


def counts_part(X, part: int, parts: int, T: float, index: KdIndex | None = None) -> np.ndarray:
    """Contribution of the part-th of ``parts`` shares of the pairs (z, y >= z) to every point's epsilon
    count (int64, n; the parts' vectors sum to the counts).

    Over the k-d leaves of ``index`` (:func:`pair_index`; built here when
    None); parts split the triangle of group pairs (groups of ``KD_GROUP``
    leaves) evenly.  Leaf pairs whose boxes lie wholly within or beyond the
    threshold are counted whole or skipped; the rest pair by pair
    (:func:`~cdfts_dask.engine.cpu_kernels.count_leaf_pairs`).
    """
    n, d = X.shape
    counts = np.zeros(n, dtype=np.int64)
    index = pair_index(X) if index is None else index
    spans = triangle_panels(len(index.glo), parts)
    if part >= len(spans):
        return counts
    g0, g1 = spans[part]
    Tlo, Thi = guard_band(np.array([T]), d, X.dtype)
    in_order = np.zeros(n, dtype=np.int64)
    band = (np.float64(T), Tlo[0], Thi[0])
    points = _in_order(X, index.order)
    kern.count_leaf_pairs(*points, *index.boxes, *band, g0, g1, in_order, kern.columns_token(d))
    counts[index.order] = in_order
    return counts


def kth_part(
    X, part: int, parts: int, k: int, index: KdIndex | None = None, budget_bytes: int = KNN_PANEL_BYTES
) -> np.ndarray:
    """Distance from each row of the part-th of ``parts`` shares to its k-th nearest other point, in an
    n-vector that is 0 outside those rows (float64, exact order statistics; parts are summed).

    Small k (k + 1 <= :data:`~cdfts_dask.engine.plan.KTH_BUFFER_MAX`): the
    parts split the k-d leaves of ``index`` (:func:`pair_index`; built here
    when None) evenly; each row leaf
    keeps its rows' k + 1 smallest ``sq`` and visits the groups of leaves
    nearest group box first (within a group, its leaves in index order),
    skipping a leaf whose box is farther than every row's current k + 1-th
    and stopping at the first group whose box is
    (:func:`~cdfts_dask.engine.cpu_kernels.kth_leaf_pairs`).
    Large k: the parts split the rows evenly, in sub-panels of
    ``budget_bytes // (8 n)`` full rows of ``sq`` (at least one), each
    reduced by a partition, so the task's memory stays within about two
    budgets whatever n and k are (``index`` unused).
    """
    n, d = X.shape
    out = np.zeros(n)
    if kth_buffered(k):
        index = pair_index(X) if index is None else index
        bounds = index.bounds
        leaves = share(len(bounds) - 1, part, parts)
        if leaves is None:
            return out
        _, grow, floor = sq_bound_factors(d, X.dtype)
        points = _in_order(X, index.order)
        kth_sq = kern.kth_leaf_pairs(*points, *index.boxes, *leaves, k, grow, floor, kern.columns_token(d))
        out[index.order[bounds[leaves[0]] : bounds[leaves[1]]]] = np.sqrt(kth_sq)
        return out
    rows = share(n, part, parts)
    if rows is None:
        return out
    X64 = np.ascontiguousarray(X, dtype=np.float64)
    XT = np.ascontiguousarray(X64.T)
    for lo_row, hi_row in chunks(*rows, budget_bytes // (8 * n)):
        sq = np.zeros((hi_row - lo_row, n))
        for j in range(d):
            diff = X64[lo_row:hi_row, j, None] - XT[None, j]
            sq += diff * diff
        out[lo_row:hi_row] = np.sqrt(np.partition(sq, k, axis=1)[:, k])
    return out


def per_d_kernels(estimator: str, k: int | None) -> tuple[str, ...]:
    """Names of the kernels compiled once per number of columns that a run of this estimator calls
    (:func:`~cdfts_dask.engine.cpu_kernels.kernels_cached`)."""
    if estimator == "epsilon":
        return "count_leaf_pairs", "shift_accumulate"
    return ("kth_leaf_pairs", "shift_accumulate") if kth_buffered(k) else ("shift_accumulate",)


def column_mean(X) -> np.ndarray:
    return np.asarray(X, dtype=np.float64).mean(axis=0)


def shift_sums(P: np.ndarray, Y: np.ndarray, plan: ShiftPlan) -> tuple[np.ndarray, np.ndarray]:
    """``A(y) = mean_z rho(z, y)`` and ``B(y) = mean_z rho(z, y) z`` over the references z in P.

    ``P`` (n_ref x d) are the references, in the plan's order (``plan.T[z]``
    etc. belong to ``P[z]``); ``Y`` (n_t x d) the targets, which may or may
    not be references themselves (an out-of-sample transform shifts new
    points with a fitted run's references).  Both C-contiguous, same dtype
    (float64, or float32 with exact float64 membership through the guard
    band).  rho is 1 where a target coincides with a reference.  Returns
    float64 ``A`` (n_t) and ``B`` (n_t x d); every target sums its
    references in the order 0..n_ref-1, so equal targets get bit-identical
    results, and the shifted target is ``plan.mean + y A(y) - B(y)``.
    """
    n_ref = P.shape[0]
    YT = np.ascontiguousarray(Y.T)
    A = np.zeros(Y.shape[0])
    BT = np.zeros((Y.shape[1], Y.shape[0]))
    tiny = P.dtype.type(exact_below(P.shape[1], P.dtype))
    band = (plan.T, plan.Tlo, plan.Thi)
    coefficients = (*band, plan.rin, plan.a, plan.bm, plan.lam, plan.q, float(plan.m[0]), tiny)
    kern.shift_accumulate(P, YT, *coefficients, A, BT, kern.columns_token(P.shape[1]))
    return A / n_ref, BT.T / n_ref


def shift_targets(P: np.ndarray, Y: np.ndarray, plan: ShiftPlan | None) -> np.ndarray:
    """Shifted (not yet normalised) float64 positions ``mean(P) + y A(y) - B(y)`` of the targets Y
    against the references P (see :func:`shift_sums`); a None plan (m = 0) moves nothing."""
    Y64 = np.asarray(Y, dtype=np.float64)
    if plan is None:  # all points coincide: nothing moves
        return Y64
    A, B = shift_sums(P, Y, plan)
    return plan.mean + Y64 * A[:, None] - B


def shift_part(X, a: int, b: int, plan: ShiftPlan | None) -> np.ndarray:
    """Shifted (not yet normalised) float64 positions ``mean(X) + y A(y) - B(y)`` of rows [a, b)."""
    return shift_targets(X, X[a:b], plan)


def finish(X, *shifted) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Min-max normalise the shifted row blocks (in order): ``(X_new, sum |X_new - X|, lo, hi)`` (O(n d)).

    ``X_new`` is in X's dtype; the sum is float64 over all n d entries.
    """
    Y = concat(*shifted)
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    Z = ((Y - lo) / column_span(lo, hi)).astype(X.dtype, copy=False)
    total = float(np.abs(Z.astype(np.float64) - np.asarray(X, dtype=np.float64)).sum())
    return Z, total, lo, hi


def concat(*parts) -> np.ndarray:
    """Consecutive row blocks (or vector pieces) joined in order."""
    return np.concatenate(parts)
