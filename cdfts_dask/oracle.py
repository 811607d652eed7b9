"""Dense NumPy reference implementation of DScale, ReScale and CDF-TS.

This module is the *oracle*: a literal, readable transcription of the
algorithm as the paper's authors' reference code runs it, with O(n^2)
memory.  Every other engine is tested against it; it is also the fast path
for small n.

Notation (one iteration, points ``X`` already min-max normalised):

* ``S[z, y] = ||z - y||`` and ``m = max S``; distances in units of m are
  ``s = S / m``.
* Neighbourhood radius ``lam(z)``: the constant ``lam`` for the epsilon
  estimator, ``lam_k(z)`` (the distance from z to its k-th nearest *other*
  point, in units of m) for the k-NN estimator.
* Neighbour count ``c(z)``: ``|{y : s(z, y) <= lam}|`` (z itself included)
  for epsilon, ``k`` for k-NN; ``q(z) = (c(z) / n) ** (1 / d)`` and
  ``r(z) = q(z) / lam(z)``.
* DScale: ``s'(z, y) = s * r(z)`` when ``s <= lam(z)``, otherwise
  ``(s - lam(z)) * (1 - q(z)) / (1 - lam(z)) + q(z)``.
* Shift: ``rho = s' / s`` (1 where s = 0; the term is then y itself) and
  ``y_new = mean(X) + y * A(y) - B(y)`` with ``A(y) = mean_z rho(z, y)`` and
  ``B(y) = mean_z rho(z, y) * z``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .engine.step import Step
from .normalise import minmax_normalise


def pairwise_distances(X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
    """Euclidean distances ``||x_i - y_j||``, summing squared differences column by column.

    The column-by-column order is the one every tile kernel uses, so that the
    oracle and the engines see bit-identical distances (and therefore the same
    neighbourhood membership at the lambda boundary).
    """
    Y = X if Y is None else Y
    sq = np.zeros((X.shape[0], Y.shape[0]))
    for j in range(X.shape[1]):
        diff = X[:, j, None] - Y[None, :, j]
        sq += diff * diff
    return np.sqrt(sq)


@dataclass
class Neighbourhood:
    """Per-reference-point statistics of one iteration (radii in units of m)."""

    m: float  # largest pairwise distance
    radius: np.ndarray  # lam(z)
    q: np.ndarray  # (c(z) / n) ** (1 / d) = lam(z) * r(z)
    counts: np.ndarray | None = None  # c(z), epsilon estimator only

    @property
    def r(self) -> np.ndarray:
        """The DScale rate ``r(z) = q(z) / lam(z)`` (inf where lam(z) = 0, or where a subnormal lam(z)
        makes it overflow: the engine's shift plan takes such a reference's pairs in float64, ``q / lam``
        inside, the same inf)."""
        with np.errstate(divide="ignore", over="ignore"):
            return self.q / self.radius


def kth_neighbour_radius(s: np.ndarray, k: int) -> np.ndarray:
    """Distance from each row's point to its k-th nearest *other* point.

    Row z of ``s`` holds z's own zero distance, so the k-th nearest other
    point is the (k+1)-th smallest entry of the row (index k once sorted).
    """
    return np.partition(s, k, axis=1)[:, k]


def neighbourhood(X: np.ndarray, lam: float, estimator: str = "epsilon", k: int | None = None):
    """Return ``(s, Neighbourhood)`` for normalised points X.

    ``s = S / m`` (S itself when all points coincide, m = 0).
    """
    n, d = X.shape
    S = pairwise_distances(X)
    m = float(S.max())
    s = S / m if m > 0 else S
    if estimator == "epsilon":
        counts = np.count_nonzero(s <= lam, axis=1)
        return s, Neighbourhood(m, np.full(n, lam), (counts / n) ** (1.0 / d), counts)
    return s, Neighbourhood(m, kth_neighbour_radius(s, k), np.full(n, (k / n) ** (1.0 / d)))


def scaled_distances(s: np.ndarray, nb: Neighbourhood) -> np.ndarray:
    """DScale (Algorithm 1): the asymmetric scaled matrix ``s'`` in units of m; row z uses r(z)."""
    radius, q = nb.radius[:, None], nb.q[:, None]
    inside = s <= radius
    with np.errstate(divide="ignore", invalid="ignore"):
        s_in = np.where(s > 0, s * nb.r[:, None], 0.0)
        s_out = (s - radius) * (1.0 - q) / (1.0 - radius) + q
    return np.where(inside, s_in, s_out)


def shift_ratios(s: np.ndarray, s_scaled: np.ndarray) -> np.ndarray:
    """``rho = s' / s``, with 1 where s = 0 (there the shifted term is y itself)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, s_scaled / s, 1.0)


def cdf_ts_step(X: np.ndarray, lam: float, estimator: str = "epsilon", k: int | None = None) -> Step:
    """Transform-and-shift normalised points X once (Algorithm 2, steps 5-11).

    Equal points are shifted once and the result copied, so duplicates stay
    bit-identical duplicates (the engine's targets all sum their references in
    one order and get the same guarantee).  ``rho^T X`` through BLAS would sum
    a target in an order that depends on its column, and split duplicates by
    an ulp: under the k-NN estimator their radius would then turn from 0 into
    ~1e-17, and rho into ~1e16 (a discontinuity of the algorithm itself).
    """
    s, nb = neighbourhood(X, lam, estimator, k)
    if nb.m == 0:  # all points coincide: nothing to rescale
        shifted = X.copy()
    else:
        n = X.shape[0]
        _, first, copies = np.unique(X, axis=0, return_index=True, return_inverse=True)
        distinct = len(first) == n
        rho = shift_ratios(s, scaled_distances(s, nb))
        targets = X if distinct else X[first]
        if not distinct:  # shift each distinct point once (a copy of rho's columns)
            rho = rho[:, first]
        A = rho.sum(axis=0) / n
        B = rho.T @ X / n
        shifted = X.mean(axis=0) + targets * A[:, None] - B
        if not distinct:
            shifted = shifted[copies.reshape(-1)]
    X_new, lo, hi = minmax_normalise(shifted)
    delta = float(np.abs(X_new - X).mean())
    if estimator == "epsilon":
        return Step(X_new, delta, nb.m, lo, hi, counts=nb.counts)
    return Step(X_new, delta, nb.m, lo, hi, radius=nb.radius)


@dataclass
class DenseResult:
    X: np.ndarray
    deltas: list[float] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def cdf_ts_dense(
    X: np.ndarray,
    lam: float = 0.1,
    delta: float = 0.015,
    max_iter: int = 100,
    estimator: str = "epsilon",
    k: int | None = None,
    keep_steps: bool = False,
) -> DenseResult:
    """CDF-TS (Algorithm 2) on validated float64 points, O(n^2) memory.

    Normalise, then iterate :func:`cdf_ts_step` until ``Delta <= delta`` or
    ``max_iter`` iterations have run (at least one always runs).
    """
    X, _, _ = minmax_normalise(X)
    result = DenseResult(X)
    for _ in range(max_iter):
        step = cdf_ts_step(result.X, lam, estimator, k)
        result.X = step.X
        result.deltas.append(step.delta)
        if keep_steps:
            result.steps.append(step)
        if step.delta <= delta:
            break
    return result


def dscale_dense(
    X: np.ndarray, lam: float = 0.1, estimator: str = "epsilon", k: int | None = None
) -> np.ndarray:
    """DScale of normalised points: the scaled, asymmetric distance matrix in input distance units."""
    s, nb = neighbourhood(X, lam, estimator, k)
    return scaled_distances(s, nb) * nb.m if nb.m > 0 else s


#: ReScale's ties: a value within this of a grid point, or of lam from one (in units of the column's
#: range), counts as on it / within lam, as in exact arithmetic for values on a lattice (integer attributes)
RESCALE_TIE = 1e-9


def rescale_dense(X: np.ndarray, lam: float = 0.1, psi: int = 100) -> np.ndarray:
    """ReScale: a one-dimensional CDF transform of every attribute of normalised X.

    On the grid ``g_k = k / psi`` (k = 0..psi) over [0, 1], ``count(g) =
    |{i : |x_i - g| <= lam}|``; a value x maps to ``sum_{g <= x} count(g)``,
    then each column is min-max normalised again.  Both tests allow
    :data:`RESCALE_TIE`: on data whose values lie on the grid (integer
    attributes), rounding would otherwise decide them (``np.linspace(0, 1, 11)[3]``
    is 0.30000000000000004, above the normalised value 3/10; ``0.5 - 0.4`` is
    below 0.1 and ``0.4 - 0.3`` above), so that equally spaced values could map
    to one value.
    """
    grid = np.arange(psi + 1) / psi  # k / psi, correctly rounded
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        col = X[:, j]
        counts = np.count_nonzero(np.abs(col[None, :] - grid[:, None]) <= lam + RESCALE_TIE, axis=1)
        cdf = np.cumsum(counts)
        idx = np.searchsorted(grid, col + RESCALE_TIE, side="right") - 1  # last grid point <= x
        out[:, j] = cdf[idx]
    return minmax_normalise(out)[0]
