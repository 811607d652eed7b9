"""The dense oracle against the paper's reference figures, hand computations and properties."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from conftest import DATA, load_csv

from cdfts_dask import cdf_ts, dscale, rescale
from cdfts_dask.oracle import cdf_ts_dense, cdf_ts_step, neighbourhood, pairwise_distances

SYN_DELTAS = [0.16476, 0.03125, 0.01524, 0.01092, 0.00864]  # ../shared/DESIGN.md section 1, authors' code


def test_syn_delta_sequence_matches_reference_code(syn):
    X, _ = syn
    result = cdf_ts_dense(X, lam=0.1, delta=1e-12, max_iter=5)
    assert np.allclose(result.deltas, SYN_DELTAS, atol=1e-5)


@pytest.mark.parametrize(("delta", "iterations"), [(0.2, 1), (0.01, 5)])
def test_syn_iteration_counts(syn, delta, iterations):
    X, _ = syn
    assert len(cdf_ts_dense(X, lam=0.1, delta=delta).deltas) == iterations


def _step_by_hand(x: list[F], lam: F) -> tuple[list[int], np.ndarray]:
    """One CDF-TS step of 1-D points spanning [0, 1] (m = 1) with exact fractions: the counts and the
    normalised positions, every rho and shift written out."""
    n = len(x)
    counts = [sum(abs(z - y) <= lam for y in x) for z in x]  # inside iff S / m <= lambda (inclusive)
    q = [F(c, n) for c in counts]  # d = 1

    def rho(i, j):
        s = abs(x[i] - x[j])
        if s == 0:
            return F(1)
        if s <= lam:
            return q[i] / lam
        return ((s - lam) * (1 - q[i]) / (1 - lam) + q[i]) / s

    shifted = [sum(x[i] + rho(i, j) * (x[j] - x[i]) for i in range(n)) / n for j in range(n)]
    lo, hi = min(shifted), max(shifted)
    return counts, np.array([float((y - lo) / (hi - lo)) for y in shifted])


@pytest.mark.parametrize(
    "x, lam, counts",
    [
        ([F(0), F(1, 5), F(1)], F(1, 4), [2, 2, 1]),
        # every distance exact in binary: two pairs lie exactly lam apart and count for both points
        ([F(0), F(1, 4), F(1, 2), F(1)], F(1, 4), [2, 3, 2, 1]),
    ],
    ids=["three-points", "pairs-exactly-lambda-apart"],
)
def test_one_step_by_hand(x, lam, counts):
    """The step against :func:`_step_by_hand`'s exact fractions (DESIGN section 1; the second case: a
    pair exactly lambda apart is inside)."""
    expected_counts, expected = _step_by_hand(x, lam)
    assert expected_counts == counts
    step = cdf_ts_step(np.array([[float(v)] for v in x]), lam=float(lam))
    assert step.counts.tolist() == counts
    assert np.abs(step.X[:, 0] - expected).max() <= 1e-12
    assert step.delta == pytest.approx(float(np.abs(expected - np.array(x, dtype=float)).mean()), abs=1e-12)


def test_knn_radius_is_kth_other_point():
    X = np.array([[0.0], [0.1], [0.3], [1.0]])
    step = cdf_ts_step(X, lam=0.1, estimator="knn", k=2)
    # sorted distances to the others: 0 -> (0.1, 0.3, 1); 0.1 -> (0.1, 0.2, 0.9);
    # 0.3 -> (0.2, 0.3, 0.7); 1 -> (0.7, 0.9, 1)
    assert np.allclose(step.radius, [0.3, 0.2, 0.3, 0.9]) and step.counts is None
    _, nb = neighbourhood(X, lam=0.1, estimator="knn", k=2)
    assert np.allclose(nb.q, 0.5)  # (k / n)^(1/d)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 7)])
def test_output_in_unit_cube_and_no_nan(estimator, k):
    X = np.random.default_rng(0).normal(size=(120, 3)) * [1, 10, 100]
    Y = cdf_ts(X, lam=0.2, estimator=estimator, k=k, max_iter=4, method="dense")
    assert np.isfinite(Y).all()
    assert Y.min() >= 0 and Y.max() <= 1
    assert np.allclose(Y.min(axis=0), 0) and np.allclose(Y.max(axis=0), 1)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 5)])
def test_permutation_equivariance(estimator, k):
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 2))
    perm = rng.permutation(80)
    Y = cdf_ts(X, lam=0.15, estimator=estimator, k=k, max_iter=3, method="dense")
    Yp = cdf_ts(X[perm], lam=0.15, estimator=estimator, k=k, max_iter=3, method="dense")
    assert np.allclose(Yp, Y[perm], atol=1e-12)


def test_invariant_to_per_column_affine_rescaling():
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(90, 3))
    Y = cdf_ts(X, lam=0.2, max_iter=3, method="dense")
    Z = cdf_ts(X * [3.0, 0.01, 250.0] + [-7.0, 4.0, 1e3], lam=0.2, max_iter=3, method="dense")
    assert np.allclose(Y, Z, atol=1e-9)


def density_std(X: np.ndarray, eps: float = 0.1) -> float:
    """Std of the epsilon-neighbourhood counts (the paper's Std(x) for its 2-D figure)."""
    return float((pairwise_distances(X) <= eps).sum(axis=1).std())


@pytest.mark.parametrize("name", ["syn.csv", "3L.csv", "4C.csv"])
def test_density_variance_shrinks_on_synthetic_sets(name):
    X, _ = load_csv(DATA / name)
    Xn = (X - X.min(0)) / (X.max(0) - X.min(0))
    Y = cdf_ts(X, lam=0.1, delta=0.01, method="dense")
    assert density_std(Y) < density_std(Xn)


def test_constant_column_stays_zero_and_duplicates_are_legal():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(size=50), np.full(50, 7.0)])
    X = np.vstack([X, X[:10]])  # ten exact duplicates
    for est, k in [("epsilon", None), ("knn", 1), ("knn", 59)]:
        Y = cdf_ts(X, lam=0.1, estimator=est, k=k, max_iter=3, method="dense")
        assert np.isfinite(Y).all()
        assert np.all(Y[:, 1] == 0.0)
        assert np.allclose(Y[50:], Y[:10])  # duplicates move together


def test_all_points_identical_is_a_fixed_point():
    X = np.ones((5, 2)) * 3.0
    Y, info = cdf_ts(X, method="dense", return_info=True)
    assert np.all(Y == 0.0)
    assert info.deltas == [0.0] and info.converged


def test_dscale_matrix():
    X = np.array([[0.0], [0.2], [1.0]])
    S2 = dscale(X, lam=0.25)
    assert S2.shape == (3, 3)
    assert np.allclose(np.diag(S2), 0.0)
    assert S2[0, 1] == pytest.approx(0.2 * (2 / 3) / 0.25)  # inside: s * r(z)
    assert S2[2, 1] == pytest.approx((0.8 - 0.25) * (2 / 3) / 0.75 + 1 / 3)  # outside, row z = 1
    assert not np.allclose(S2, S2.T)  # asymmetric


def test_dscale_is_in_the_units_of_the_normalised_data():
    """S' = m s': in 2-D the largest distance m is sqrt(2), not 1 (found by a mutation audit: S' in units
    of m, as the oracle computes it, passed the 1-D test above, whose m is 1)."""
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.2, 0.0]])
    S2 = dscale(X, lam=0.25)
    q = np.sqrt(2 / 3)  # row 0 counts itself and (0.2, 0), at s = 0.2 / sqrt(2) <= 0.25; d = 2
    assert S2[0, 2] == pytest.approx(0.2 * q / 0.25)  # inside: m s r(z) = S r(z)
    assert S2[0, 1] == pytest.approx(np.sqrt(2))  # farthest, outside: m ((1 - lam) (1 - q) / (1 - lam) + q)


def test_dscale_of_duplicates_under_knn_is_zero_between_them():
    """A point whose k-th nearest other point is a copy has radius 0 and r = q / 0 = inf: its distance 0 to
    the copy scales to 0, not 0 * inf = NaN (found by a mutation audit; the shift never reads it, rho is 1
    at s = 0, but dscale returns the matrix)."""
    X = np.array([[0.0], [0.0], [0.4], [1.0]])
    S2 = dscale(X, lam=0.1, estimator="knn", k=1)
    assert np.all(np.isfinite(S2))
    assert S2[0, 1] == 0.0 and S2[1, 0] == 0.0 and np.all(np.diag(S2) == 0.0)
    assert S2[0, 2] == pytest.approx((0.4 - 0.0) * (1 - 0.25) / (1 - 0.0) + 0.25)  # outside, q = 1 / 4


def test_rescale_is_monotone_per_column_and_normalised():
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.exponential(size=200), rng.normal(size=200)])
    R = rescale(X, lam=0.1, psi=50)
    assert R.min() == 0 and R.max() == 1
    for j in range(2):
        order = np.argsort(X[:, j], kind="stable")
        assert np.all(np.diff(R[order, j]) >= 0)


def test_rescale_by_hand():
    # column (0, 0.5, 1), grid (0, 0.5, 1), lam 0.25: one point per grid node -> cumulative counts 1, 2, 3
    R = rescale(np.array([[0.0], [0.5], [1.0]]), lam=0.25, psi=2)
    assert np.allclose(R[:, 0], [0.0, 0.5, 1.0])
    R = rescale(np.array([[0.0], [0.1], [1.0]]), lam=0.25, psi=2)
    # counts: g=0 -> 2, g=0.5 -> 0, g=1 -> 1; cdf 2, 2, 3; values map to 2, 2, 3
    assert np.allclose(R[:, 0], [0.0, 0.0, 1.0])


def _rescale_exact(X: np.ndarray, lam: float, psi: int) -> np.ndarray:
    """ReScale of integer-valued X in rational arithmetic (lam the decimal typed): the definition."""
    from fractions import Fraction

    lam_q, out = Fraction(str(lam)), np.empty(X.shape)
    for j in range(X.shape[1]):
        lo, hi = int(X[:, j].min()), int(X[:, j].max())
        x = [Fraction(int(v) - lo, hi - lo) for v in X[:, j]]
        grid = [Fraction(k, psi) for k in range(psi + 1)]
        counts = [sum(abs(v - g) <= lam_q for v in x) for g in grid]
        new = [sum(c for g, c in zip(grid, counts, strict=True) if g <= v) for v in x]
        out[:, j] = [(v - min(new)) / (max(new) - min(new)) for v in new]
    return out


def test_rescale_of_values_on_the_grid_is_the_exact_definition():
    """Regression: the grid was ``np.linspace`` (k * (1 / psi): 0.30000000000000004 for 3/10), and ties
    at lam were decided by rounding: on 0, 1, ..., 10 (lam 0.1, psi 10) the values 2 and 3 both mapped
    to 0.25 and 5 and 6 to 0.5417 instead of equal steps; 143 of 200 random integer cases differed
    (by up to 0.36), changing the ReScale view of datasets with integer attributes (ilpd, ...)."""
    X = np.arange(11.0)[:, None]
    R = rescale(X, lam=0.1, psi=10)
    assert np.all(np.diff(R[:, 0]) > 0)  # distinct values stay distinct
    assert np.allclose(np.diff(R[:9, 0]), 3 / 29) and np.array_equal(R, _rescale_exact(X, 0.1, 10))
    rng = np.random.default_rng(0)
    for _ in range(60):
        n, d, top = int(rng.integers(5, 40)), int(rng.integers(1, 4)), int(rng.choice([3, 5, 10, 20, 100]))
        X = rng.integers(0, top + 1, size=(n, d)).astype(float)
        X[0], X[1] = 0, top
        psi, lam = int(rng.choice([5, 10, 20, 50, 100])), float(rng.choice([0.05, 0.1, 0.2, 0.3, 0.5]))
        assert np.abs(rescale(X, lam=lam, psi=psi) - _rescale_exact(X, lam, psi)).max() <= 1e-12


@pytest.mark.parametrize("offset", [0.1, 0.2, 1.1])
@pytest.mark.parametrize(("psi", "lam"), [(10, 0.1), (20, 0.1), (5, 0.2)])
def test_rescale_of_decimals_a_rounding_below_the_grid_is_the_exact_definition(offset, psi, lam):
    """Decimals offset, offset + 0.1, ..., offset + 1 normalise to k / 10, some of them an ulp below it
    (0.2 + 0.1 - 0.2 is not 0.1): within :data:`~cdfts_dask.oracle.RESCALE_TIE` of a grid point a value
    counts as on it, as the exact values are (found by a mutation audit: the tie dropped from the lookup
    of a value's grid point passed the integer cases above, whose normalised values are correctly rounded)."""
    k = np.arange(11)
    x = np.round(offset + 0.1 * k, 10)
    assert np.any((x - x.min()) / (x.max() - x.min()) < k / 10)  # some fall below their grid point
    assert np.abs(rescale(x[:, None], lam=lam, psi=psi) - _rescale_exact(k[:, None], lam, psi)).max() <= 1e-12


def test_duplicates_stay_bit_identical():
    """Equal points are shifted once: the BLAS product alone splits the last duplicate by an ulp here."""
    X = np.array([3.0, 2, 2, 1, 1, 0, 0, 0, 0])[:, None]
    res = cdf_ts_dense(X, lam=0.05, delta=1e-12, max_iter=4, estimator="knn", k=1, keep_steps=True)
    for step in res.steps:
        assert np.all(step.X[5:] == step.X[5]) and np.all(step.radius[5:] == 0)


def test_a_subnormal_lambda_runs_without_a_numpy_warning_and_the_engine_agrees(client):
    """lam = 1e-310 makes r = q / lam overflow float64 (inf, as the engine's float64 path computes it):
    the oracle says nothing (it printed NumPy's ``overflow encountered in divide``), every pair lies
    outside the radius and the tiled engine gives the same points, two of them a subnormal step apart."""
    import warnings

    from conftest import assert_tiled_equals_oracle

    X = np.random.default_rng(5).random((60, 2))
    X[1] = X[0] + [1e-309, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Y = cdf_ts(X, lam=1e-310, max_iter=2, method="dense")
    assert np.isfinite(Y).all()
    assert_tiled_equals_oracle(X, client, tile_size=16, lam=1e-310, max_iter=2)


def test_a_delta_equal_to_the_threshold_stops_the_run():
    """Stop when ``Delta <= delta`` (DESIGN section 1, inclusive): a delta equal to the second
    iteration's Delta of the same run stops after two iterations, with the same points."""
    X = np.random.default_rng(11).random((40, 2))
    full = cdf_ts_dense(X, lam=0.2, delta=0.0, max_iter=4)
    assert full.deltas[1] < full.deltas[0]  # a run with delta = deltas[1] does not stop at the first
    stopped = cdf_ts_dense(X, lam=0.2, delta=full.deltas[1], max_iter=4)
    assert stopped.deltas == full.deltas[:2]
    assert np.array_equal(stopped.X, cdf_ts_dense(X, lam=0.2, delta=0.0, max_iter=2).X)


def test_rescale_ties_are_only_rounding_ties():
    """The tie tolerance (``RESCALE_TIE``, 1e-9) covers rounding only: values 5e-7 below a grid point, or
    5e-7 beyond lam from one, are neither on it nor within lam of it (the definition in rational
    arithmetic, each value the exact binary number it is)."""
    off = 5e-7
    col = np.array([0.0, 0.3 - off, 0.6 + off, 0.7 + off, 1.0])
    lam, psi = F("0.1"), 10
    x, grid = [F(v) for v in col], [F(k, psi) for k in range(psi + 1)]
    counts = [sum(abs(v - g) <= lam for v in x) for g in grid]
    new = [sum(c for g, c in zip(grid, counts, strict=True) if g <= v) for v in x]
    expected = np.array([float((v - min(new)) / (max(new) - min(new))) for v in new])
    assert np.abs(rescale(col[:, None], lam=0.1, psi=psi)[:, 0] - expected).max() <= 1e-12
