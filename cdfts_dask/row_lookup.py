"""Exact row lookup: which rows of Y equal a row of a fixed table P, and which row.

Rows are compared by value in their dtype (``-0.0`` equals ``0.0``; the points
are finite, so there is no NaN): each row's bytes, with negative zeros made
positive, form one ``numpy.void`` key.  The table's keys are sorted once,
O(n_P log n_P); a lookup is one binary search per row of Y, O(n_Y log n_P),
with the key found compared whole (two rows match only when every
coordinate is equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: what :meth:`RowIndex.find` returns for a row of Y that equals no row of P
NOT_FOUND = -1


def row_keys(A: np.ndarray) -> np.ndarray:
    """One ``void`` key per row of the 2-D array A: its bytes, ``-0.0`` written as ``0.0``."""
    positive_zeros = np.ascontiguousarray(A + A.dtype.type(0))  # -0.0 + 0.0 = +0.0; other values unchanged
    return positive_zeros.view(np.dtype((np.void, A.dtype.itemsize * A.shape[1]))).reshape(-1)


@dataclass(frozen=True)
class RowIndex:
    """The rows of a table P (n_P x d), sorted by key for lookups."""

    keys: np.ndarray  # the keys of P's rows, sorted
    rows: np.ndarray  # rows[i]: the row of P whose key is keys[i]
    dtype: np.dtype  # P's dtype: Y is compared in it

    @classmethod
    def of(cls, P: np.ndarray) -> RowIndex:
        keys = row_keys(P)
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], order, P.dtype)

    def find(self, Y: np.ndarray) -> np.ndarray:
        """For each row of Y (n_Y x d, P's dtype), a row of P equal to it, else :data:`NOT_FOUND`."""
        if Y.dtype != self.dtype:
            raise TypeError(f"Y must have the table's dtype {self.dtype}, got {Y.dtype}")
        if len(self.keys) == 0 or len(Y) == 0:
            return np.full(len(Y), NOT_FOUND, dtype=np.intp)
        wanted = row_keys(Y)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        return np.where(self.keys[at] == wanted, self.rows[at], NOT_FOUND)
