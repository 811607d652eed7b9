"""Per-column min-max normalisation to [0, 1]."""

from __future__ import annotations

import numpy as np


def column_span(lo, hi):
    """``hi - lo`` with 1 in place of 0, so that a column constant in the range it is normalised by maps
    to ``X - lo`` (0 on the points that range came from; never NaN); NumPy or CuPy."""
    span = hi - lo
    return span + (span == 0)


def minmax_normalise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``((X - lo) / (hi - lo), lo, hi)`` with ``lo``/``hi`` the column minima/maxima.

    A constant column (``hi == lo``) becomes all zeros.  Columns whose range
    overflows float64 (e.g. values near +-1e308) are normalised in halved
    units, ``(X/2 - lo/2) / (hi/2 - lo/2)``, which cannot overflow; elsewhere
    the plain formula is used so results are bit-for-bit unchanged.
    """
    lo = X.min(axis=0)
    hi = X.max(axis=0)
    Z = apply_range(X, lo, hi)
    with np.errstate(over="ignore"):
        wide = not np.all(np.isfinite(hi - lo))
    return (np.clip(Z, 0.0, 1.0) if wide else Z), lo, hi


def apply_range(X: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(X - lo) / span(lo, hi)`` for a given column range (a fitted model's normalisation).

    Points outside ``[lo, hi]`` map outside [0, 1]; a column constant in the
    range (``lo == hi``) maps to 0 on every row (DESIGN section 5: the range
    gives it no scale, so no unit of it is carried on).  Columns whose range
    overflows float64 use halved units, as in :func:`minmax_normalise`; an
    entry outside a finite range whose ``X - lo`` alone overflows (a new point
    beyond a range near +-1e308) is computed in quarter units,
    ``(X/4 - lo/4) / (hi/4 - lo/4)``, which no finite X, lo, hi overflow and
    which rounds as the plain formula would with an unbounded exponent.  A
    result beyond float64 itself stays infinite.
    """
    with np.errstate(over="ignore"):
        span = hi - lo
        if np.all(np.isfinite(span)):
            Z = (X - lo) / column_span(lo, hi)
        else:
            wide = ~np.isfinite(span)  # only these columns take the halved (overflow-free) route
            scale = np.where(wide, 0.5, 1.0)
            lo_s, hi_s = lo * scale, hi * scale
            Z = (X * scale - lo_s) / column_span(lo_s, hi_s)
        rows, cols = np.nonzero(~np.isfinite(Z))
        if len(rows):
            lo_q, hi_q = lo[cols] * 0.25, hi[cols] * 0.25
            Z[rows, cols] = (X[rows, cols] * 0.25 - lo_q) / column_span(lo_q, hi_q)
    Z[:, lo == hi] = 0.0
    return Z
