"""Shared test data: point sets and one iteration run through a device's task bodies in this process."""

from __future__ import annotations

import numpy as np

from cdfts_dask.engine import plan
from cdfts_dask.normalise import minmax_normalise


def blobs(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Three Gaussian blobs of spreads 0.2, 1 and 3 (raw, not normalised)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(3, d)) * 10
    which = rng.integers(0, 3, size=n)
    return centres[which] + rng.normal(size=(n, d)) * np.array([0.2, 1.0, 3.0])[which, None]


def awkward(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Blobs with lattice coordinates (many pairs at equal distances), duplicated points and a
    constant last column.  No pair lies exactly on the lambda boundary after the normalisation (counted
    at the sizes the tests use): the tests of exact boundary ties build their own points."""
    rng = np.random.default_rng(seed)
    X = blobs(n, d, seed)
    X[: n // 3] = np.round(rng.uniform(size=(n // 3, d)) * 10) / 10
    if n >= 4:
        X[n // 2 :: 3] = X[: len(X[n // 2 :: 3])]
    if d >= 2:
        X[:, -1] = 3.0
    return X


def normalised(X: np.ndarray) -> np.ndarray:
    return minmax_normalise(X)[0]


def rounded32(X: np.ndarray) -> np.ndarray:
    """X rounded to float32 and back (the points a float32 run works on)."""
    return X.astype(np.float32).astype(np.float64)


def bodies_step(dev, X, lam, estimator="epsilon", k=None, dtype="float64", parts=3, rows=None):
    """One iteration through a device module's task bodies, chained as the graph chains them, no Dask.

    Returns ``(m, counts or radius, X_new, Delta)`` as host values.
    """
    n, d = X.shape
    rows = rows or max(1, n // parts)
    Xd = dev.prepare(X, dtype)
    m = plan.diameter(*[dev.diameter_part(Xd, i, parts) for i in range(parts)])
    mean = dev.column_mean(Xd)
    if estimator == "epsilon":
        T = plan.count_threshold(m, lam)
        stats = sum(dev.to_host(dev.counts_part(Xd, i, parts, T)) for i in range(parts))
        shift_plan = plan.epsilon_plan(m, lam, stats, mean, dtype)
    else:
        kth = sum(dev.kth_part(Xd, i, parts, k) for i in range(parts))
        stats = plan.knn_radius(dev.to_host(kth), m)
        shift_plan = plan.knn_plan(m, k, stats, mean, dtype)
    shifted = [dev.shift_part(Xd, a, b, shift_plan) for a, b in plan.chunks(0, n, rows)]
    Z, total, _, _ = dev.finish(Xd, *shifted)
    return m, stats, dev.to_host(Z), total / (n * d)


def assert_bodies_step_is_the_oracles(dev, X, lam, estimator, k, dtype, parts=2):
    """One iteration of X as given through ``dev``'s bodies equals the oracle's on the same points (in
    float32: X rounded to float32): the diameter and the counts or radii bit for bit, positions within
    1e-6 (float32) or 1e-9 (float64).  Returns the oracle's step."""
    from cdfts_dask import oracle

    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, lam, estimator, k)
    m, stats, Xn, _ = bodies_step(dev, X, lam, estimator, k, dtype=dtype, parts=parts)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= (1e-6 if dtype == "float32" else 1e-9)
    return ref


def assert_step_is_the_oracles(dev, X, estimator, k, dtype, lam=0.1) -> None:
    """:func:`assert_bodies_step_is_the_oracles` on X normalised."""
    assert_bodies_step_is_the_oracles(dev, normalised(X), lam, estimator, k, dtype)


def float32_underflow_cases() -> list[tuple[str, np.ndarray, float, str, int | None]]:
    """``(name, X, lam, estimator, k)``: float32 runs where two distinct points are so close to 0 and to
    each other that their float32 ``sq`` underflows to 0 (found by the GPU code review of 2026-11-24).

    * an epsilon neighbourhood of lam = 1e-30: its threshold T is below ``FLOAT32_SQ_FLOOR``, where the
      guard band ``T (1 -+ g)`` rounded to float32 proved a pair 2e-30 apart inside (counts 2 for 1);
    * k-NN (k = 1) with points 1e-24 apart: their float32 ``sq`` is 0, so rho was 1 (the rule for a
      point and itself) where the oracle's s > 0 gives r(z) = q / lam_k(z) ~ 1e24 inside.
    """
    return [
        ("epsilon-lam-1e-30", np.array([[0, 0], [2e-30, 0], [1, 1], [0.5, 0.25]]), 1e-30, "epsilon", None),
        ("knn-pair-1e-24-apart", np.array([[0.0], [1e-24], [1.0], [0.5], [0.25], [0.75]]), 0.1, "knn", 1),
    ]


def ill_conditioned_rho_cases() -> list[tuple[str, np.ndarray, str, int, str]]:
    """``(name, X, estimator, k, dtype)``: runs where a reference's outside rho ``a + b / s`` cancels or
    its constants overflow the working dtype (found by a review of the newest code, 2026-11-24).

    * 19 points spread over [0, w]^2 and one at (1, 1), k-NN with k = 5: the outlier's k-th neighbour
      is at 1 - O(w) of the diameter, so ``a = (1 - q) / (1 - lam)`` is about 1 / w and rounding in
      ``a``, ``b`` and ``sq`` is amplified by it (float32 w = 1e-6: 2.7e-3 off the oracle; float64
      w = 1e-13: 5e-5, the contracts being 1e-6 and 1e-9);
    * two float32 points 1e-40 apart, k = 1: ``r = q / lam`` is about 1e40, above float32's 3.4e38
      (inf, then NaN positions).
    """
    rng = np.random.default_rng(0)

    def outlier(width: float) -> np.ndarray:
        return np.vstack([rng.random((19, 2)) * width, [[1.0, 1.0]]])

    return [
        ("float32-knn-outlier-1e-6", outlier(1e-6), "knn", 5, "float32"),
        ("float32-knn-outlier-1e-4", outlier(1e-4), "knn", 5, "float32"),
        ("float64-knn-outlier-1e-13", outlier(1e-13), "knn", 5, "float64"),
        ("float32-knn-pair-1e-40-apart", np.array([[0.0], [1e-40], [1.0], [0.5], [0.25], [0.75]]), "knn", 1,
         "float32"),
    ]  # fmt: skip


def float32_misordered() -> tuple[np.ndarray, np.ndarray]:
    """``(far, near)``: float32 points where float32 ``sq`` (summed column by column) orders two pairs the
    other way round from float64 ``sq`` (found by a search over points on a sphere of radius 0.5).

    ``far`` = centre (0.5, 0.5, 0.5), then two points at float64 ``sq`` 0.2499999559... and ...560...
    from it, whose float32 ``sq`` come out the other way, the second below the float32 rounding of the
    first's float64 ``sq`` (the two are 0.2 apart, so the diameter is the centre and the second point).
    ``near`` = centre, then the farther and the nearer of two points whose nearer one's float32 ``sq``
    lies above the float32 rounding of the farther one's float64 ``sq``.
    """
    centre = [0.5, 0.5, 0.5]
    far = [[0.8182883858680725, 0.828989565372467, 0.7011425495147705],
           [0.7204927802085876, 0.7717694640159607, 0.8571053743362427]]  # fmt: skip
    near = [[0.7359548807144165, 0.7739490270614624, 0.8453652858734131],
            [0.7845550179481506, 0.7629048228263855, 0.8160845637321472]]  # fmt: skip
    return np.array([centre, *far], dtype=np.float32), np.array([centre, *near], dtype=np.float32)


def float32_sq(a: np.ndarray, b: np.ndarray) -> np.float32:
    """The float32 ``sq`` of two float32 points as the kernels sum it: column by column, each difference,
    square and partial sum rounded to float32 (no FMA)."""
    v = np.float32(0)
    for x, y in zip(a, b, strict=True):
        diff = np.float32(x - y)
        v = np.float32(v + np.float32(diff * diff))
    return v


def float32_worst_rounded_pair(d: int, direction: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    """``(a, b, err)``: two float32 points whose float32 ``sq`` (:func:`float32_sq`) is far below
    (``direction="down"``) or above (``"up"``) their float64 ``sq`` e: ``err = |v - e| / e`` in units of
    2^-24, close to the bound ``(d + 3)`` of ``plan.float32_sq_tolerance`` (about d + 1.6 at d = 8).

    Built column by column, greedily: of 20,000 random columns (a coordinate in [1/8, 4) against one a
    little below 0, so that the difference rounds, or against one in [0, that scale)), keep the one
    whose float32 partial sum is farthest off the float64 one in the wanted direction.
    """
    rng = np.random.default_rng(seed)
    sign = 1.0 if direction == "down" else -1.0
    candidates = 20_000
    xs, ys = [], []
    v, e = np.float32(0), 0.0
    for _ in range(d):
        scale = 2.0 ** rng.integers(-3, 2, candidates)
        x = (rng.uniform(1, 2, candidates) * scale).astype(np.float32)
        small = -rng.uniform(1, 2, candidates) * scale * 2.0 ** -rng.integers(20, 27, candidates)
        y = np.where(rng.random(candidates) < 0.3, rng.uniform(0, 1, candidates) * scale, small)
        y = y.astype(np.float32)
        diff = (x - y).astype(np.float32)
        v_new = (v + (diff * diff).astype(np.float32)).astype(np.float32)
        e_new = e + (x.astype(np.float64) - y.astype(np.float64)) ** 2
        best = int(np.argmax(sign * (e_new - v_new) / e_new))
        xs.append(x[best])
        ys.append(y[best])
        v, e = v_new[best], float(e_new[best])
    a, b = np.array(xs, dtype=np.float32), np.array(ys, dtype=np.float32)
    e = float(((a.astype(np.float64) - b.astype(np.float64)) ** 2).sum())
    return a, b, sign * (e - float(float32_sq(a, b))) / e / 2.0**-24


def float32_subnormal_rounding_cases() -> list[tuple[str, np.ndarray, float, str, int | None]]:
    """``(name, X, lam, estimator, k)``: float32 points whose float32 ``sq`` is subnormal and rounded *up*,
    to up to twice the float64 ``sq``: it says "farther" where the float64 ``sq`` says "nearer" by far
    more than the float32 tolerance.

    * epsilon, d = 4, lam at the pair's s (the pair just inside): 0 and (a, a, a, a) with
      ``a^2 = 0.52 * 2^-149``: each square rounds up to 2^-149, so the float32 ``sq`` is 4 * 2^-149
      where the float64 one is 2.08 * 2^-149, above the band
      ``T (1 + g)`` rounded to float32; the pair is inside only if the below-floor band reaches up to
      ``plan.exact_below``;
    * k-NN, k = 1, d = 2: 0 and two points (b, b) (listed first) and (a, a) with ``b^2 = 0.7 * 2^-149``:
      their float32 ``sq`` from 0 are both 2 * 2^-149, their float64 ones 1.4 and 1.04 * 2^-149; a
      pre-filter trusted below ``plan.FLOAT32_SQ_FLOOR`` takes the first's float64 ``sq`` times
      ``1 + g`` (rounded to float32 on CUDA: 2^-149) as proof that the second is farther, and skips
      the nearer point.
    """
    from cdfts_dask import oracle

    a = np.float32(np.sqrt(0.52) * 2.0**-74.5)
    squares = np.array([[0] * 4, [a] * 4, [1] * 4], dtype=np.float32)
    lam = float(oracle.neighbourhood(squares.astype(np.float64), 0.5)[0][0, 1])
    b = np.float32(np.sqrt(0.7) * 2.0**-74.5)
    return [
        ("epsilon-d4-subnormal-squares", squares, lam, "epsilon", None),
        ("knn-subnormal-nearest-second",
         np.array([[b, b], [0, 0], [a, a], [1, 1], [0.5, 0.5]], dtype=np.float32), 0.1, "knn", 1),
    ]  # fmt: skip


def float32_worst_rounded_case(d: int, side: str) -> tuple[np.ndarray, float, float]:
    """``(X, lam, err)``: the pair of :func:`float32_worst_rounded_pair` (seeded by d) and a third point
    far from both (the diameter), as float32 points, with lam just below the pair's s (``side="outside"``:
    its float32 ``sq`` rounded down, below the threshold) or at it (``"inside"``: rounded up, above it).
    ``err`` is the pair's float32 error in units of 2^-24."""
    from cdfts_dask import oracle

    a, b, err = float32_worst_rounded_pair(d, "down" if side == "outside" else "up", seed=d)
    X = np.stack([a, b, a + np.float32(64)])
    s, _ = oracle.neighbourhood(X.astype(np.float64), 0.5)
    lam = float(np.nextafter(s[0, 1], 0)) if side == "outside" else float(s[0, 1])
    return X, lam, err
