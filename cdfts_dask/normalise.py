"""Per-column min-max normalisation to [0, 1]."""

from __future__ import annotations

import numpy as np


def column_span(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``hi - lo`` with 1 in place of 0, so that constant columns map to 0 (never NaN)."""
    span = hi - lo
    return np.where(span > 0, span, 1.0)


def minmax_normalise(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``((X - lo) / (hi - lo), lo, hi)`` with ``lo``/``hi`` the column minima/maxima.

    A constant column (``hi == lo``) becomes all zeros.
    """
    lo = X.min(axis=0)
    hi = X.max(axis=0)
    return (X - lo) / column_span(lo, hi), lo, hi
