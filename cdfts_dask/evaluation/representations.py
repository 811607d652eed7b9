"""The four views of a dataset the paper compares: original, ReScale, DScale and CDF-TS.

Every view is returned as an n x n distance matrix ``D`` divided by its
largest entry, so all distance thresholds (DBSCAN's and DP's epsilon) live
in [0, 1] for every dataset and view:

* ``original``: Euclidean distances of the min-max normalised points;
* ``rescale``: Euclidean distances after :func:`cdfts_dask.rescale` (psi = 100);
* ``dscale``: the asymmetric matrix of :func:`cdfts_dask.dscale`, row i being
  i's view (its neighbourhood);
* ``cdfts``: Euclidean distances after :func:`cdfts_dask.cdf_ts` (delta = 0.015).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import cdf_ts, dscale, rescale
from ..normalise import minmax_normalise
from ..oracle import pairwise_distances

TRANSFORMS = ("original", "rescale", "dscale", "cdfts")


@dataclass
class View:
    """One representation: relative distances ``D`` and, where they exist, the points."""

    D: np.ndarray
    points: np.ndarray | None
    n_iter: int = 0


def relative(D: np.ndarray) -> np.ndarray:
    m = float(D.max())
    return D / m if m > 0 else D


def make_view(
    X: np.ndarray,
    transform: str,
    lam: float = 0.1,
    estimator: str = "epsilon",
    k: int | None = None,
) -> View:
    """Build the ``transform`` view of raw points X (see the module docstring)."""
    if transform == "original":
        P = minmax_normalise(X)[0]
        return View(relative(pairwise_distances(P)), P)
    if transform == "rescale":
        P = rescale(X, lam=lam, psi=100)
        return View(relative(pairwise_distances(P)), P)
    if transform == "dscale":
        return View(relative(dscale(X, lam=lam, estimator=estimator, k=k)), None)
    if transform == "cdfts":
        P, info = cdf_ts(
            X,
            lam=lam,
            delta=0.015,
            max_iter=100,
            estimator=estimator,
            k=k,
            method="dense",  # each view is one task on a worker: the oracle, in that worker
            return_info=True,
        )
        P = np.asarray(P)
        return View(relative(pairwise_distances(P)), P, info.n_iter)
    raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
