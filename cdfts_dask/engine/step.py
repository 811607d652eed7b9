"""What one CDF-TS iteration leaves behind, whichever method (dense or tiled) ran it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Step:
    """One iteration's result.

    ``X`` (n x d, normalised), ``counts`` and ``radius`` are NumPy arrays for
    the dense oracle and futures on the workers for the tiled engine; the
    rest are plain numbers.  ``counts`` is ``c(z)`` (epsilon estimator, else
    None); ``radius`` is ``lam_k(z)`` in units of m (k-NN estimator, else
    None).  ``lo``/``hi`` are the column minima/maxima of the shifted points
    before the end-of-iteration normalisation.
    """

    X: object
    delta: float
    m: float
    lo: np.ndarray
    hi: np.ndarray
    counts: object = None
    radius: object = None

    @property
    def statistics(self) -> dict:
        """The per-point statistics that exist, by name (``counts`` or ``radius``)."""
        return {k: v for k, v in (("counts", self.counts), ("radius", self.radius)) if v is not None}
