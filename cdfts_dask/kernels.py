"""Tile kernels: pure functions on one block of the pair space.

They are written once against the array API shared by NumPy and CuPy (the
``xp`` namespace of their inputs), so the CPU and GPU paths share the logic.
Every function reproduces the oracle's formulas (:mod:`cdfts_dask.oracle`)
in the same floating-point order where it matters: distances are summed
column by column, and ``s = S / m`` is compared with the radius, so that
neighbourhood membership at the boundary is identical to the oracle's.
"""

from __future__ import annotations

import numpy as np


def namespace(x):
    """The array module (numpy or cupy) that owns ``x``."""
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def to_host(X) -> np.ndarray:
    """A NumPy array of a NumPy or CuPy array (CuPy data is copied off the device)."""
    return X.get() if namespace(X) is not np else np.asarray(X)


def sq_distances(XI, XJ):
    """Squared Euclidean distances ``||x_i - y_j||^2`` of two blocks, summed column by column."""
    xp = namespace(XI)
    out = xp.zeros((XI.shape[0], XJ.shape[0]), dtype=XI.dtype)
    for j in range(XI.shape[1]):
        diff = XI[:, j, None] - XJ[None, :, j]
        out += diff * diff
    return out


def distances(XI, XJ):
    """Euclidean distances of two blocks of points."""
    return namespace(XI).sqrt(sq_distances(XI, XJ))


def count_within(S, m: float, lam: float):
    """Per-row count of ``S / m <= lam`` (the epsilon-neighbourhood test)."""
    xp = namespace(S)
    return xp.count_nonzero((S / m) <= lam, axis=1)


def shift_ratios(S, m: float, radius, q):
    """``rho(z, y) = s'(z, y) / s(z, y)`` for a tile with reference points z as rows.

    ``radius`` and ``q`` are the rows' lam(z) and q(z) = lam(z) * r(z).  Inside
    the neighbourhood (s <= lam(z)) rho is r(z); outside it is
    ``((s - lam) * (1 - q) / (1 - lam) + q) / s``; where s = 0 it is 1.
    """
    xp = namespace(S)
    s = S / m
    rad = radius[:, None]
    qq = q[:, None]
    safe_rad = xp.where(rad < 1, rad, 0.0)  # lam(z) = 1 leaves no point outside
    safe_s = xp.where(s > 0, s, 1.0)
    outside = ((s - rad) * (1.0 - qq) / (1.0 - safe_rad) + qq) / safe_s
    r = qq / xp.where(rad > 0, rad, 1.0)  # only used where 0 < s <= lam(z)
    rho = xp.where(s <= rad, r, outside)
    return xp.where(s > 0, rho, 1.0)


def accumulate_shift(rho, X_ref):
    """Column sums of rho and ``rho^T X_ref`` for one (reference, target) tile."""
    return rho.sum(axis=0), rho.T @ X_ref
