"""Device-neutral maths of one iteration, in plain NumPy (imported by every device's task bodies).

Exactness.  The oracle decides membership with ``s = fl(fl(sqrt(sq)) / m) <= lam``
where ``sq`` is the squared distance summed column by column.  IEEE ``sqrt``
and division are correctly rounded, so ``f(sq) = fl(fl(sqrt(sq)) / m)`` is
monotone non-decreasing in ``sq`` and ``{sq : f(sq) <= lam}`` is an interval
``[0, T]``.  :func:`sq_thresholds` finds ``T`` (the largest double with
``f(T) <= lam``) by bisection on the bit pattern; the kernels then test
``sq <= T`` with ``sq`` summed in exactly the oracle's order (no FMA
contraction, no reassociation): the same membership, bit for bit, without a
square root or a division per pair.

float32.  A float32 ``sq`` has relative error at most ``(d + 3) 2^-24``;
pairs whose float32 ``sq`` falls in the guard band ``[T_lo, T_hi]`` of
:func:`guard_band` are re-evaluated in float64 from the (exactly upcast)
float32 coordinates, so the membership is exactly the float64 oracle's on
the float32 points.

Everything here is O(n) or O(n d) work on the host; nothing touches pairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

#: the k-NN pass keeps each row's k + 1 smallest ``sq`` in a sorted buffer when k + 1 <= this (one sweep,
#: O(rows k) memory); above it, sub-panels of full rows of ``sq`` reduced by a partition
KTH_BUFFER_MAX = 64


def kth_buffered(k: int) -> bool:
    """Whether the k-NN pass keeps each row's k + 1 smallest ``sq`` in a buffer (one kernel sweep, on
    every device) rather than partitioning sub-panels of full rows."""
    return k + 1 <= KTH_BUFFER_MAX


def sq_thresholds(m: float, radius) -> np.ndarray:
    """Largest ``T`` with ``fl(fl(sqrt(T)) / m) <= radius`` (elementwise), m > 0.

    Bisection over the ordered bit patterns of non-negative doubles; ``f(0) = 0
    <= radius`` and ``f(inf) = inf > radius`` bracket the answer.  Each
    distinct radius is bisected once (the epsilon estimator's n radii are all
    lam: one bisection instead of n) and the answers are spread back.
    """
    r, spread = np.unique(np.atleast_1d(np.asarray(radius, dtype=np.float64)), return_inverse=True)
    lo = np.zeros(r.shape, dtype=np.int64)
    hi = np.full(r.shape, np.float64(np.inf).view(np.int64))
    with np.errstate(over="ignore"):
        while True:
            open_ = hi - lo > 1
            if not open_.any():
                break
            mid = lo + (hi - lo) // 2
            ok = np.sqrt(mid.view(np.float64)) / m <= r
            lo = np.where(open_ & ok, mid, lo)
            hi = np.where(open_ & ~ok, mid, hi)
    return lo.view(np.float64)[spread.reshape(-1)]


#: below this float64 ``sq`` the float32 error bound of :func:`float32_sq_tolerance` is not used: there a
#: float32 ``sq`` may have lost terms to underflow (an absolute error up to d 2^-126), and a float32 bound
#: derived from it may itself be subnormal
FLOAT32_SQ_FLOOR = 2.0**-80


def float32_sq_tolerance(d: int) -> float:
    """``g = 2 (d + 4) 2^-24``: a float32 ``sq`` v of d float32 coordinates (FMA or not) is within
    ``(d + 3) 2^-24`` of the float64 ``sq`` e of the same coordinates, relatively, so

    * ``v <= e (1 - g)`` and ``v > e (1 + g)`` are impossible, with room left for one more float32
      rounding of the bound itself (2^-24) and for the float64 ``sq``'s own d 2^-53;
    * hence ``v < fl32(b (1 - g))`` proves ``e < b`` and ``v > fl32(b (1 + g))`` proves ``e > b``,
      for any float64 b >= :data:`FLOAT32_SQ_FLOOR` (above it underflow cannot matter).

    The guard band of the membership tests, and the float32 pre-filters of the CUDA diameter and k-th
    radius kernels, are this one bound.
    """
    return 2.0 * (d + 4) * 2.0**-24


def sq_bound_factors(d: int, dtype) -> tuple[float, float, float]:
    """``(shrink, grow, floor)`` for sweeps that compute ``sq`` in ``dtype`` but keep float64 results: a
    working-dtype ``sq`` below ``b * shrink`` proves the float64 ``sq`` below b, one above ``b * grow``
    proves it above b, for b >= floor (float64: ``(1, 1, 0)``, the values themselves; float32: by
    :func:`float32_sq_tolerance`, from :data:`FLOAT32_SQ_FLOOR` up)."""
    if np.dtype(dtype) == np.float64:
        return 1.0, 1.0, 0.0
    g = float32_sq_tolerance(d)
    return 1.0 - g, 1.0 + g, FLOAT32_SQ_FLOOR


def exact_below(d: int, dtype) -> float:
    """The working-dtype ``sq`` at or below which a pair is decided on its float64 ``sq`` alone.

    float32: ``fl32(FLOAT32_SQ_FLOOR (1 + g))`` rounded up (:func:`float32_sq_tolerance`).  A float32
    ``sq`` above it proves the float64 one above the floor (where the float32 value is accurate); at or
    below it the float32 value may have lost terms to underflow (0 for two distinct points less than
    about 1e-23 apart), so it can neither place the pair in or out of a neighbourhood nor stand for
    ``s`` in rho.  float64: -1 (every ``sq`` is the oracle's own).
    """
    if np.dtype(dtype) == np.float64:
        return -1.0
    g = float32_sq_tolerance(d)
    return float(np.nextafter(np.float32(FLOAT32_SQ_FLOOR * (1 + g)), np.float32(np.inf)))


def guard_band(T: np.ndarray, d: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """``(T_lo, T_hi)`` in ``dtype``: a float32 ``sq`` <= T_lo is surely inside, > T_hi surely outside;
    one in between is decided on its float64 ``sq``.

    For float64 the band is empty (``T_lo = T_hi = T``): every test is exact.  In float32 the band is
    ``T (1 -+ g)`` (:func:`float32_sq_tolerance`), valid for T >= :data:`FLOAT32_SQ_FLOOR`; a smaller
    T (an epsilon neighbourhood of lam below about 1e-12 of the diameter, a k-NN radius of near
    duplicates) gets the band ``(-1, exact_below(d)]``: no float32 ``sq`` is surely inside, and
    every one that may be below the floor is decided in float64.
    """
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return T, T
    g = float32_sq_tolerance(d)
    lo = np.nextafter((T * (1 - g)).astype(np.float32), np.float32(0))
    hi = np.nextafter((T * (1 + g)).astype(np.float32), np.float32(np.inf))
    below_floor = np.asarray(T) < FLOAT32_SQ_FLOOR
    lo = np.where(below_floor, np.float32(-1), lo)
    hi = np.where(below_floor, np.maximum(hi, np.float32(exact_below(d, dtype))), hi)
    return lo.astype(dtype), hi.astype(dtype)


def diameter(*max_sq: float) -> float:
    """``m = sqrt(max sq)`` over partial maxima: sqrt is monotone and correctly rounded,
    so this is the oracle's ``max S`` when the partial ``sq`` are the oracle's."""
    return float(np.sqrt(max(max_sq)))


def neighbourhood_from_counts(counts, n: int, d: int, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon estimator: ``(radius, q)`` per reference, ``radius = lam``, ``q = (c / n)^(1/d)``."""
    counts = np.asarray(counts)
    return np.full(n, lam), (counts / n) ** (1.0 / d)


#: the largest amplification ``a = (1 - q) / (1 - lam)`` of rounding in the outside rho ``a + b / s``
#: (whose two terms nearly cancel when lam(z) is near 1: a k-NN radius reaching almost the diameter, an
#: outlier's) that the working dtype's fast formula is trusted with: about ``4 a`` ulps of rho.  Beyond
#: it every pair of that reference is decided in float64, in the oracle's order of operations
#: (:func:`shift_plan`).  float64: 2^16 (rho within about 4 a units of 2^-53, ~3e-11); float32: 4 (a
#: few times the error of an ordinary reference, whose a is about 1).
FAST_RHO_GAIN = {"float64": 2.0**16, "float32": 4.0}


def rho_float64(e: float, T: float, lam: float, q: float, m: float) -> float:
    """rho of a pair from its float64 ``sq`` e, as the oracle computes it: 1 at e = 0, ``q / lam``
    inside (e <= T), else ``s' / s`` with ``s = fl(sqrt(e)) / m`` and
    ``s' = (s - lam) (1 - q) / (1 - lam) + q`` evaluated left to right (the kernels' float64 path,
    one formula on every device: numba compiles it into the CPU and CUDA kernels)."""
    if e == 0:
        return 1.0
    if e <= T:
        return q / lam
    s = math.sqrt(e) / m
    return ((s - lam) * (1.0 - q) / (1.0 - lam) + q) / s


@dataclass
class ShiftPlan:
    """Per-reference constants of the shift pass, and the references' mean.

    For reference z: ``T[z]`` its exact membership threshold on ``sq``
    (float64), ``Tlo[z]``/``Thi[z]`` the guard band in the working dtype,
    rho inside ``= rin[z] = r(z)``, rho outside ``= a[z] + bm[z] / sqrt(sq)``
    (rin, a, bm in the working dtype); rho = 1 where sq = 0.  A pair whose
    working ``sq`` falls in the band is decided on its float64 ``sq`` by
    :func:`rho_float64`, from the float64 ``lam[z]``, ``q[z]`` and the diameter ``m[0]``.
    ``mean`` is the float64 mean of the references.  ``None`` plans (all
    points coincide, m = 0) leave every target where it is.
    """

    T: np.ndarray
    Tlo: np.ndarray
    Thi: np.ndarray
    rin: np.ndarray
    a: np.ndarray
    bm: np.ndarray
    lam: np.ndarray
    q: np.ndarray
    m: np.ndarray
    mean: np.ndarray

    def map(self, func) -> ShiftPlan:
        """This plan with every array passed through ``func`` (e.g. copied to a device once)."""
        return ShiftPlan(*(func(getattr(self, f.name)) for f in fields(self)))


def shift_plan(m: float, radius, q, mean, dtype: str) -> ShiftPlan:
    """Thresholds on sq and the rho coefficients per reference point z (m > 0).

    The oracle's rho outside is ``((s - lam) (1 - q) / (1 - lam) + q) / s``
    with ``s = sqrt(sq) / m``: ``= a + b / s`` with ``a = (1 - q) / (1 - lam)``
    and ``b = q - lam a``, and ``b / s = (b m) / sqrt(sq)``.  Inside it is
    ``r = q / lam``.

    ``lam(z) >= 1`` (a k-NN radius reaching m: z's k-th neighbour is at the
    largest distance) makes the neighbourhood the whole space: ``T = inf``, rho
    = r(z) for every point.  No fit point lies beyond m, so the fit is the
    same either way; a new point beyond m from z (a model's transform) gets
    the inside branch extended, where the outside formula would divide by
    ``1 - lam = 0``.

    A reference whose ``a`` exceeds :data:`FAST_RHO_GAIN` (``a + b / s`` then
    cancels: 0.5 of rho lost in float32 for a k-NN outlier 1e5 times farther
    than its cluster's spread), or whose constants overflow the working dtype
    (``r = q / lam`` above 3.4e38 in float32 for two points 1e-40 apart), gets
    the band ``(-1, inf]``: every pair of it is decided on its float64 ``sq``
    by :func:`rho_float64` (its working-dtype constants are then unused, 0).
    """
    radius = np.asarray(radius, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    T = np.where(radius >= 1, np.inf, sq_thresholds(m, radius))
    Tlo, Thi = guard_band(T, mean.shape[0], dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rin = np.where(radius > 0, q / radius, 1.0)
        a = np.where(radius < 1, (1.0 - q) / (1.0 - radius), 0.0)
        bm = np.where(radius < 1, (q - radius * a) * m, 0.0)
        c = np.dtype(dtype).type
        constants = [v.astype(c) for v in (rin, a, bm)]
    finite = np.logical_and.reduce([np.isfinite(v) for v in constants])
    exact = (radius < 1) & ((a > FAST_RHO_GAIN[np.dtype(dtype).name]) | ~finite)
    Tlo = np.where(exact, -1, Tlo).astype(Tlo.dtype)
    Thi = np.where(exact, np.inf, Thi).astype(Thi.dtype)
    rin_w, a_w, bm_w = (np.where(exact, 0, v).astype(c) for v in constants)
    return ShiftPlan(T, Tlo, Thi, rin_w, a_w, bm_w, radius, q, np.array([float(m)]), mean)


def chunks(start: int, stop: int, size: int) -> list[tuple[int, int]]:
    """Consecutive ``(lo, hi)`` ranges of at most ``size`` covering ``[start, stop)``."""
    return [(lo, min(lo + size, stop)) for lo in range(start, stop, max(1, size))]


def share(total: int, part: int, parts: int) -> tuple[int, int] | None:
    """The part-th of ``parts`` consecutive equal ranges ``[a, b)`` covering ``[0, total)`` (the last one
    shorter), or None where there are fewer ranges than ``part + 1``."""
    spans = chunks(0, total, math.ceil(total / max(1, parts)))
    return spans[part] if part < len(spans) else None


def triangle_panels(n: int, parts: int) -> list[tuple[int, int]]:
    """Row ranges ``[a, b)`` splitting the upper triangle of an n x n pair space into ~equal areas.

    Rows [0, x) own ``x n - x^2 / 2`` pairs above the diagonal, so the i-th
    boundary is ``x_i = n - sqrt(n^2 - i n^2 / parts)``.
    """
    parts = max(1, min(parts, n))
    cuts = {int(round(n - math.sqrt(max(0.0, n * n * (1 - i / parts))))) for i in range(parts + 1)}
    bounds = sorted(min(n, c) for c in cuts)
    bounds[0], bounds[-1] = 0, n
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=False) if b > a]



def count_threshold(m: float, lam: float) -> float:
    """The epsilon pass's threshold on ``sq``; with m = 0 (all points coincide) every ``sq`` is 0,
    inside every neighbourhood, and 0 is a threshold that says so."""
    return float(sq_thresholds(m, lam)[0]) if m > 0 else 0.0


def epsilon_plan(m: float, lam: float, counts, mean, dtype: str) -> ShiftPlan | None:
    """The shift plan of the epsilon estimator from the counts c(z) (None when m = 0: nothing moves)."""
    n, d = len(counts), len(mean)
    radius, q = neighbourhood_from_counts(counts, n, d, lam)
    return shift_plan(m, radius, q, mean, dtype) if m > 0 else None


def knn_radius(kth, m: float) -> np.ndarray:
    """``lam_k(z) = kth(z) / m`` (kth itself when m = 0)."""
    kth = np.asarray(kth, dtype=np.float64)
    return kth / m if m > 0 else kth


def knn_plan(m: float, k: int, radius, mean, dtype: str) -> ShiftPlan | None:
    """The shift plan of the k-NN estimator from the radii lam_k(z) (None when m = 0: nothing moves)."""
    n, d = len(radius), len(mean)
    return shift_plan(m, radius, np.full(n, (k / n) ** (1.0 / d)), mean, dtype) if m > 0 else None
