"""The sampled fit's references: s of the n input points drawn uniformly without replacement.

CDF-TS fitted on s references costs O(s^2 T) and transforms all n points in
O(n s T).  ``s >= n`` is the exact algorithm (no
sampling).  The k-NN estimator on the sample uses ``k_s = max(1, round(k s / n))``
(at most s - 1) so that the neighbourhood covers the same share of the data.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._validation import check_points, is_integer


def check_n_references(n_references) -> int | None:
    """None (exact) or an integer >= 2 (a fit needs two points)."""
    if n_references is None:
        return None
    expected = "an integer >= 2 (or None for the exact fit)"
    if not is_integer(n_references):
        raise TypeError(f"n_references must be {expected}, got {n_references!r}")
    if n_references < 2:
        raise ValueError(f"n_references must be {expected}, got {n_references!r}")
    return int(n_references)


def check_random_state(random_state):
    """The seeds scikit-learn's ``check_random_state`` takes: None, an integer in [0, 2**32 - 1] or a
    ``numpy.random.RandomState`` (checked before any work, whether or not rows are drawn)."""
    expected = "None, an integer in [0, 2**32 - 1] or a numpy.random.RandomState"
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return random_state
    if not is_integer(random_state):
        raise TypeError(f"random_state must be {expected}, got {random_state!r}")
    if not 0 <= random_state <= 2**32 - 1:
        raise ValueError(f"random_state must be {expected}, got {random_state!r}")
    return random_state


def sampled_k(k: int | None, s: int, n: int) -> int | None:
    """The k-NN estimator's k on s of n points: ``max(1, round(k s / n))`` (Python's ``round``: halves
    to even), at most ``s - 1``."""
    if k is None:
        return None
    return int(min(s - 1, max(1, round(k * s / n))))


def draw_indices(n: int, s: int, random_state) -> np.ndarray:
    """s distinct row indices of n, uniformly at random (seeded like scikit-learn), in increasing order."""
    from sklearn.utils import check_random_state

    rng = check_random_state(random_state)
    return np.sort(rng.choice(n, size=s, replace=False))


def draw_references(X, n: int, s: int, random_state, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
    """``(indices, X[indices])``: the sample as validated float64 NumPy.

    ``X`` is a NumPy array or a dask array (a Zarr store opened as one); the
    rows of a dask array are gathered chunk by chunk (only chunks holding a
    drawn row are read).
    """
    idx = draw_indices(n, s, random_state)
    rows = X[idx]
    if hasattr(rows, "compute"):
        rows = rows.compute()
    return idx, check_points(rows, f"{name} (sampled references)")


def warn_constant_columns(F: np.ndarray, X=None) -> None:
    """Warn about the columns that are constant in the drawn rows F but may vary in the input X (X in
    memory: those that do vary; X None, out of core: every column constant in F).

    The fit normalises with F's range, in which such a column has no scale: it
    maps to 0 on every row (:func:`cdfts_dask.normalise.apply_range`, DESIGN
    section 5), so a row of X with another value there loses that difference,
    in that column and in its distances.  A rare value (a flag in 1 % of the
    rows) is missed by a small sample more often than not."""
    columns = np.flatnonzero(F.min(axis=0) == F.max(axis=0))
    if X is not None and columns.size:
        columns = columns[np.ptp(X[:, columns], axis=0) > 0]
    if columns.size:
        shown = ", ".join(map(str, columns[:10])) + (", ..." if columns.size > 10 else "")
        warnings.warn(
            f"n_references: column(s) {shown} of X are constant in the {len(F)} drawn references but "
            f"{'vary' if X is not None else 'may vary'} in X; the fit's range gives such a column no scale, "
            "so it is 0 on every row and rows with another value there lose that difference: draw more "
            "references or drop the column",
            UserWarning,
            stacklevel=4,
        )
