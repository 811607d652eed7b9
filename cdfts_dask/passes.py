"""Per-panel task bodies of one CDF-TS iteration, executed on Dask workers.

A *panel* is a contiguous block of rows ``[start, stop)``.  Each task streams
over the other axis in chunks of ``tile`` points, so the largest temporary it
creates is a ``(stop - start) x tile`` tile, whatever n is.  Each function
takes the full point array ``X`` (n x d, held once per worker) and returns
only O(panel) results.
"""

from __future__ import annotations

import numpy as np

from . import kernels
from .normalise import column_span


def chunks(start: int, stop: int, size: int):
    """Consecutive ``(lo, hi)`` ranges of at most ``size`` covering ``[start, stop)``."""
    for lo in range(start, stop, size):
        yield lo, min(lo + size, stop)


def panel_max_distance(X, start: int, stop: int, tile: int) -> float:
    """Largest distance between a panel row and any point at index >= start.

    Over all panels this covers every unordered pair once (the distance
    matrix is symmetric), so the maximum over panels is ``m``.
    """
    best = 0.0
    rows = X[start:stop]
    for lo, hi in chunks(start, X.shape[0], tile):
        best = max(best, float(kernels.sq_distances(rows, X[lo:hi]).max()))
    return float(np.sqrt(best))


def panel_counts(X, start: int, stop: int, tile: int, m: float, lam: float):
    """Epsilon-neighbourhood counts ``c(z) = |{y : S(z, y) / m <= lam}|`` for the panel rows."""
    xp = kernels.namespace(X)
    counts = xp.zeros(stop - start, dtype=xp.int64)
    rows = X[start:stop]
    for lo, hi in chunks(0, X.shape[0], tile):
        counts += kernels.count_within(kernels.distances(rows, X[lo:hi]), m, lam)
    return counts


def panel_kth_distance(X, start: int, stop: int, k: int, budget: int):
    """Absolute distance from each panel row to its k-th nearest other point, and the panel's max.

    Rows are handled in sub-panels of ``max(1, budget // n)`` full rows, so the
    task never holds more than about ``budget`` distances however large n or
    k (up to n - 1) is; np.partition selects the (k+1)-th smallest entry of
    each row (the row includes the point's own zero distance).
    """
    xp = kernels.namespace(X)
    n = X.shape[0]
    kth = xp.empty(stop - start, dtype=X.dtype)
    best = 0.0
    for lo, hi in chunks(start, stop, max(1, budget // n)):
        S = kernels.distances(X[lo:hi], X)
        kth[lo - start : hi - start] = xp.partition(S, k, axis=1)[:, k]
        best = max(best, float(S.max()))
    return kth, best


def panel_shift(X, start: int, stop: int, tile: int, m: float, radius, q):
    """Shifted (not yet normalised) positions of the target points ``X[start:stop]``.

    ``y_new = mean(X) + y * A(y) - B(y)`` with ``A(y) = mean_z rho(z, y)`` and
    ``B(y) = mean_z rho(z, y) z``, streaming over reference chunks z.
    """
    xp = kernels.namespace(X)
    n = X.shape[0]
    targets = X[start:stop]
    if m == 0:  # all points coincide
        return targets.copy()
    A = xp.zeros(stop - start, dtype=X.dtype)
    B = xp.zeros_like(targets)
    for lo, hi in chunks(0, n, tile):
        refs = X[lo:hi]
        rho = kernels.shift_ratios(kernels.distances(refs, targets), m, radius[lo:hi], q[lo:hi])
        col_sums, rho_t_x = kernels.accumulate_shift(rho, refs)
        A += col_sums
        B += rho_t_x
    return X.mean(axis=0) + targets * (A / n)[:, None] - B / n


def column_range(Y):
    """Column minima and maxima of a block."""
    return Y.min(axis=0), Y.max(axis=0)


def normalise_panel(Y, X_old, start: int, stop: int, lo, hi):
    """Min-max normalise a shifted panel with the global ``lo``/``hi``; return it and sum |new - old|."""
    Z = (Y - lo) / column_span(lo, hi)
    return Z, float(kernels.namespace(Y).abs(Z - X_old[start:stop]).sum())
