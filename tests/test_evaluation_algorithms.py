"""Clustering and anomaly-detection algorithms on toy data with known answers."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from cdfts_dask.evaluation.dbscan import DBSCANSweep, prim_mst
from cdfts_dask.evaluation.dp import density, density_peaks, peaks
from cdfts_dask.evaluation.ec import extreme_clustering
from cdfts_dask.evaluation.inne import inne_scores
from cdfts_dask.evaluation.knn import knn_scores
from cdfts_dask.evaluation.lgd import lgd
from cdfts_dask.evaluation.metrics import auc, f_measure
from cdfts_dask.evaluation.representations import make_view, relative
from cdfts_dask.oracle import pairwise_distances
from tests.conftest import DATA, load_csv
from tests.references import sklearn_dbscan


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (60, 2)), rng.normal(5, 0.3, (40, 2))])
    y = np.repeat([0, 1], [60, 40])
    return X, y, relative(pairwise_distances(X))


def test_dp_hand_computed_line():
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]])
    D = pairwise_distances(X)
    rho = density(D, 1.0)
    assert rho.tolist() == [2, 3, 2, 2, 2]
    pk = peaks(D, rho)
    assert pk.order[0] == 1 and pk.parent[1] == -1 and pk.delta[1] == 10.0
    assert pk.parent.tolist()[0] == 1 and pk.parent[2] == 1
    assert pk.parent[3] == 2 and pk.delta[3] == 8.0  # nearest denser-ranked point of 10 is 2
    labels = density_peaks(D, 1.0, 2)
    assert labels[0] == labels[1] == labels[2] != labels[3] == labels[4]


def test_dp_ec_lgd_recover_two_blobs(blobs):
    X, y, D = blobs
    assert f_measure(y, density_peaks(D, 0.1, 2)) == 1.0
    assert f_measure(y, extreme_clustering(D, 0.3)) == 1.0
    assert f_measure(y, lgd(D, 6, 0.5, 2)) == 1.0


def test_dbscan_sweep_matches_scikit_learn():
    X, y = load_csv(DATA / "4C.csv")
    D = make_view(X[::3], "original").D
    for minpts in (2, 5, 10):
        sweep = DBSCANSweep(D, minpts)
        for eps in (0.01, 0.03, 0.06, 0.2):
            ref, ours = sklearn_dbscan(D, eps, minpts), sweep.labels(eps)
            core = np.count_nonzero(D <= eps, axis=1) >= minpts
            assert adjusted_rand_score(ref[core], ours[core]) == 1.0  # core points: identical partition
            assert np.array_equal(ref == -1, ours == -1)  # same noise
            for j in np.flatnonzero(~core & (ours >= 0)):  # a border point joins a core neighbour's cluster
                assert (core & (D[:, j] <= eps) & (ours == ours[j])).any()


def test_dbscan_noise_and_rows_as_neighbourhoods():
    # asymmetric: row 0 sees 1 and 2 close; rows 1, 2 see nothing but themselves
    D = np.array([[0.0, 0.1, 0.1, 0.9], [0.5, 0.0, 0.5, 0.9], [0.5, 0.5, 0.0, 0.9], [0.9, 0.9, 0.9, 0.0]])
    labels = DBSCANSweep(D, 3).labels(0.2)
    assert labels[0] == labels[1] == labels[2] == 0 and labels[3] == -1
    assert np.array_equal(sklearn_dbscan(D, 0.2, 3), labels)


def test_dbscan_with_more_minpts_than_points_is_all_noise():
    """Regression: ``sweeps`` clamped the neighbour rank to n - 1, so minpts > n made every point core
    (one cluster, [0 0 0] at n = 3, minpts 4); ``DBSCANSweep(D, 4)`` raised.  No point has minpts
    neighbours there: all noise, as scikit-learn's DBSCAN says."""
    from cdfts_dask.evaluation.dbscan import sweeps

    D = pairwise_distances(np.array([[0.0], [0.1], [0.2]]))
    for minpts, sweep in [*sweeps(D, [3, 4, 5]), (4, DBSCANSweep(D, 4))]:
        for eps in (0.05, 1.0, 10.0):
            assert np.array_equal(sweep.labels(eps), sklearn_dbscan(D, eps, minpts))
    assert np.array_equal(DBSCANSweep(D, 4).labels(10.0), [-1, -1, -1])


def test_prim_mst_total_weight():
    from scipy.sparse.csgraph import minimum_spanning_tree

    W = pairwise_distances(np.random.default_rng(1).random((30, 3)))
    _, _, w = prim_mst(W)
    assert w.sum() == pytest.approx(minimum_spanning_tree(W).sum())


def test_knn_scores_hand_computed():
    D = pairwise_distances(np.array([[0.0], [1.0], [2.0], [10.0]]))
    assert knn_scores(D, 1).tolist() == [1.0, 1.0, 1.0, 8.0]
    assert knn_scores(D, 2).tolist() == [2.0, 1.0, 2.0, 9.0]
    with pytest.raises(ValueError, match=r"k must be in \[1, n - 1\] = \[1, 3\], got 4"):
        knn_scores(D, 4)  # numpy's partition would refuse k = n too, without naming k


def test_inne_scores_anomalies_higher():
    rng = np.random.default_rng(0)
    normal = rng.normal(0, 1, (200, 2))
    anomalies = np.array([[6.0, 6.0], [-6.0, 5.0], [7.0, -6.0]])
    X = np.vstack([normal, anomalies])
    y = np.r_[np.zeros(200), np.ones(3)]
    s = inne_scores(X, psi=16, t=50)
    assert s[200:].min() > np.quantile(s[:200], 0.95)
    assert auc(y, s) > 0.97


@pytest.mark.parametrize("given_distances", [False, True], ids=["points", "view-distances"])
def test_inne_keeps_one_sphere_per_distinct_point_as_the_authors_code(given_distances):
    """Regression: a subsample holding a point twice gave it a sphere of radius 0, and a point whose
    smallest covering sphere had that duplicate as nearest neighbour scored 1 (the authors' ``Cigrid.m``
    keeps one of equal rows).  With psi = n every member holds every point, so the scores are fixed:
    C = {0, 1, 3}, tau = (1, 1, 2); 0 and 1 lie in their own sphere with a neighbour of the same
    radius (I = 0), 3 in its own with a neighbour half as wide (I = 1 - 1/2)."""
    X = np.array([[0.0], [0.0], [1.0], [3.0]])
    D = np.abs(X - X.T) / 3.0 if given_distances else None  # a view's distances, relative
    scores = inne_scores(X, psi=4, t=5, D=D)
    assert np.array_equal(scores, [0.0, 0.0, 0.0, 0.5])


def test_inne_covers_strictly_inside_a_sphere_as_the_authors_code():
    """Regression: a point on a sphere's surface counted as covered (``<=``); the authors' ``iNNE.m``
    covers with ``D < radius``.  Points 0, 1, 2 on a line, psi = 2: the draw {0, 1} has spheres of
    radius 1, on whose surface 2 lies, so 2 is uncovered and scores 1 there (as 0 in the draw {1, 2});
    with ``<=`` they were covered by a sphere with a neighbour as wide and scored 0 in every draw."""
    X = np.array([[0.0], [1.0], [2.0]])
    t = 300
    scores = inne_scores(X, psi=2, t=t, seed=3)
    draws = np.random.default_rng(3)
    pairs = [frozenset(draws.choice(3, size=2, replace=False)) for _ in range(t)]
    assert scores[1] == 0.0
    assert scores[2] == pytest.approx(pairs.count(frozenset({0, 1})) / t)
    assert scores[0] == pytest.approx(pairs.count(frozenset({1, 2})) / t)
    assert 0.2 < scores[0] < 0.5 and 0.2 < scores[2] < 0.5


def test_inne_refuses_data_without_two_distinct_points():
    with pytest.raises(ValueError, match="at least 2 distinct points"):
        inne_scores(np.ones((5, 2)), psi=2, t=3)


def test_shared_work_gives_identical_results():
    """The fast paths of the grid search are the plain algorithms, exactly (symmetric and DScale views)."""
    from cdfts_dask.evaluation.dp import density_all, neighbour_order, peaks_sorted
    from cdfts_dask.evaluation.grids import ClusteringGrid, eps_grid
    from cdfts_dask.evaluation.knn import knn_sorted
    from cdfts_dask.evaluation.metrics import FMeasure
    from cdfts_dask.evaluation.protocol import search_clustering

    X, y = load_csv(DATA / "3L.csv")
    X, y = X[::4], y[::4]
    grid = ClusteringGrid(eps=tuple(eps_grid(0.05)), dbscan_eps=tuple(eps_grid(0.005)))
    score = FMeasure(y)
    for view in (make_view(X, "original"), make_view(X, "dscale", lam=0.2)):
        D = view.D
        nbr = neighbour_order(D)
        rhos = density_all(D, grid.eps)
        for e, eps in enumerate(grid.eps[:8]):
            rho = density(D, eps)
            assert np.array_equal(rhos[:, e], rho)
            a, b = peaks(D, rho), peaks_sorted(D, rho, nbr)
            assert np.array_equal(a.parent, b.parent) and np.array_equal(a.delta, b.delta)
            labels = density_peaks(D, eps, 3)
            assert score(labels) == f_measure(y, labels)
        srt = knn_sorted(D)
        assert all(np.array_equal(srt[:, k], knn_scores(D, k)) for k in (1, 5, 30))
        # DBSCAN: skipping eps without a critical value gives the brute-force best over the grid
        brute = max(
            (f_measure(y, DBSCANSweep(D, m).labels(eps)), -i)
            for m in (2, 5)
            for i, eps in enumerate(grid.dbscan_eps)
        )[0]
        fast = search_clustering(
            D, y, ClusteringGrid(dbscan_eps=grid.dbscan_eps, dbscan_minpts=(2, 5)), ["DBSCAN"]
        )
        assert fast["DBSCAN"][0] == brute


def test_lof_is_scikit_learns_lof_on_the_views_distances():
    """LOF scores come from the view's distance matrix (column-by-column sums: the same bits on any
    machine), not from distances scikit-learn recomputes in a BLAS- and tree-dependent order (which
    broke the ties of dermatology's equidistant neighbours differently from one machine to another)."""
    from sklearn.neighbors import LocalOutlierFactor

    from cdfts_dask.evaluation.baselines import lof_scores
    from cdfts_dask.oracle import pairwise_distances

    X = np.random.default_rng(6).random((150, 3))  # no ties: the neighbours are unambiguous
    expected = -LocalOutlierFactor(n_neighbors=12).fit(X).negative_outlier_factor_
    D = pairwise_distances(X)
    np.testing.assert_allclose(lof_scores(D, 12), expected, rtol=1e-9)
    np.testing.assert_allclose(lof_scores(D / D.max(), 12), expected, rtol=1e-9)  # a view's relative D
    grid = np.random.default_rng(7).integers(0, 4, (120, 5)).astype(float)  # tie-heavy, as dermatology
    Dg = pairwise_distances(grid)
    np.testing.assert_array_equal(lof_scores(Dg, 30), lof_scores(pairwise_distances(grid + 2.0**20), 30))
    with pytest.raises(ValueError, match="square distance matrix"):
        lof_scores(X, 5)
    # k at most n - 1: k = n - 1 is every other point, and a larger k is that too
    every = -LocalOutlierFactor(n_neighbors=149).fit(X).negative_outlier_factor_
    np.testing.assert_allclose(lof_scores(D, 149), every, rtol=1e-9)
    np.testing.assert_allclose(lof_scores(D, 500), every, rtol=1e-9)


def test_dp_replaces_the_smallest_chosen_centre_by_the_top_ranked_point():
    """On an asymmetric matrix (the DScale view) the top-ranked point need not be among the c largest
    gamma = rho * delta; it then takes the place of the *smallest* of them.  By hand, eps = 0.15:
    rho = (3, 2, 2, 1, 1), rank 0, 1, 2, 3, 4; delta = (max of row 0 = 0.2, 0.1, 0.1, 0.9, 0.8);
    gamma = (0.6, 0.2, 0.2, 0.9, 0.8).  c = 2: the two largest are 3 and 4, 0 replaces 4.  Point 4's
    nearest higher-ranked point is 0 (0.8 to 0, 1, 2, 3: lowest index), so the clusters are {3} and
    {0, 1, 2, 4}."""
    from cdfts_dask.evaluation.dp import choose_centres

    D = np.array(
        [
            [0.0, 0.1, 0.1, 0.2, 0.2],
            [0.1, 0.0, 0.5, 0.9, 0.9],
            [0.1, 0.5, 0.0, 0.9, 0.9],
            [0.9, 0.9, 0.9, 0.0, 0.9],
            [0.8, 0.8, 0.8, 0.8, 0.0],
        ]
    )
    pk = peaks(D, density(D, 0.15))
    assert sorted(choose_centres(pk, 2).tolist()) == [0, 3]
    labels = density_peaks(D, 0.15, 2)
    assert labels[3] != labels[0] and labels[0] == labels[1] == labels[2] == labels[4]


@pytest.mark.parametrize("given_distances", [False, True], ids=["points", "view-distances"])
def test_inne_scores_by_the_smallest_covering_sphere_not_the_nearest_centre(given_distances):
    """X = -1, 0, 1.8, 0.95 and psi = 3.  In the draw {-1, 0, 1.8} (tau = 1, 1, 1.8) the point 0.95 is
    covered by 0's sphere (0.95 < 1) and by 1.8's (0.85 < 1.8), nearer to 1.8: the smallest covering
    sphere is 0's, whose neighbour -1 is as wide, so I = 1 - 1/1 = 0 (the nearest centre would give
    1 - 1/1.8).  In every other draw 0.95 is a centre, only its own sphere covers it (no other sphere
    reaches a centre) and its nearest neighbour is as far from it as it is from its own nearest, so
    I = 0 again: 0.95 scores 0 whatever the draws."""
    X = np.array([[-1.0], [0.0], [1.8], [0.95]])
    D = np.abs(X - X.T) / 2.8 if given_distances else None
    for seed in range(3):
        scores = inne_scores(X, psi=3, t=40, seed=seed, D=D)
        assert scores[3] == pytest.approx(0.0, abs=1e-12)


def test_iforest_scores_anomalies_higher():
    from cdfts_dask.evaluation.baselines import iforest_scores

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (200, 2)), [[6.0, 6.0], [-6.0, 5.0], [7.0, -6.0]]])
    y = np.r_[np.zeros(200), np.ones(3)]
    s = iforest_scores(X, psi=64, t=50)
    assert s[200:].min() > np.quantile(s[:200], 0.95)
    assert auc(y, s) > 0.97
    # scikit-learn's forest of the given seed (0 by default): the reported AUCs can be reproduced
    from sklearn.ensemble import IsolationForest

    for seed in (0, 3):
        forest = IsolationForest(n_estimators=50, max_samples=64, random_state=seed).fit(X)
        np.testing.assert_array_equal(iforest_scores(X, psi=64, t=50, seed=seed), -forest.score_samples(X))


def _brute_force_best(alg, D, y, grid):
    """Best F-measure of ``alg`` by running it on every point of ``grid``."""
    if alg == "DBSCAN":
        runs = (DBSCANSweep(D, m).labels(e) for m in grid.dbscan_minpts for e in grid.dbscan_eps)
    elif alg == "DP":
        runs = (density_peaks(D, e, c) for e in grid.eps for c in grid.dp_centres)
    elif alg == "LGD":  # k as given: lgd caps it at n - 1 itself
        runs = (lgd(D, k, tau, len(np.unique(y))) for k in grid.lgd_k for tau in grid.lgd_tau)
    else:
        runs = (extreme_clustering(D, e) for e in grid.eps)
    return max(f_measure(y, labels) for labels in runs)


def test_clustering_search_is_the_brute_force_best_and_its_params_reproduce_it():
    """``search_clustering`` (shared work, early stops, skipped eps) against running every algorithm
    at every grid point, and the reported parameters re-run give the reported score (they feed the
    AMI and the train/test protocol)."""
    from cdfts_dask.evaluation.grids import ClusteringGrid, eps_grid
    from cdfts_dask.evaluation.protocol import run_clustering, search_clustering

    X, y = load_csv(DATA / "3L.csv")
    X, y = X[::4], y[::4]
    grid = ClusteringGrid(
        eps=tuple(eps_grid(0.05)), dbscan_eps=tuple(eps_grid(0.02)), dbscan_minpts=(2, 5), dp_centres=(2, 3)
    )
    # two overlapping blobs whose densest point sees every point (eps 0.6) before DP's best (eps > 0.6)
    rng = np.random.default_rng(22)
    X2 = np.vstack([rng.normal(0, 1, (12, 2)), rng.normal((2.5, 0), 0.4, (12, 2))])
    y2 = np.repeat([0, 1], 12)
    cases = [(make_view(X, "original").D, y), (make_view(X, "cdfts", lam=0.3).D, y)]
    cases.append((make_view(X2, "original").D, y2))
    for i, (D, y) in enumerate(cases):
        algorithms = ["DBSCAN", "DP", "EC"] if i < 2 else ["DBSCAN", "DP"]  # EC needs n >= 50
        best = search_clustering(D, y, grid, algorithms)
        for alg, (score, params) in best.items():
            assert score == pytest.approx(_brute_force_best(alg, D, y, grid), abs=1e-12), (i, alg)
            labels = run_clustering(alg, D, params, len(np.unique(y)))
            assert f_measure(y, labels) == pytest.approx(score, abs=1e-12), (i, alg)


def test_dbscan_border_point_exactly_at_eps_joins_as_in_scikit_learn():
    """A border point at distance exactly eps from a core point is in its neighbourhood (``<=``).
    Points 0, 0.25, 0.5, 1 (exact binary fractions), eps = 0.5, minpts = 3: 0, 0.25 and 0.5 are core
    (3, 3 and 4 points within 0.5), 1 sees only {0.5, 1}: a border point of 0.5's cluster."""
    from sklearn.cluster import DBSCAN

    X = np.array([[0.0], [0.25], [0.5], [1.0]])
    D = np.abs(X - X.T)
    ref = DBSCAN(eps=0.5, min_samples=3, metric="precomputed").fit(D).labels_
    assert ref.tolist() == [0, 0, 0, 0]
    assert DBSCANSweep(D, 3).labels(0.5).tolist() == [0, 0, 0, 0]


# --- found by the evaluation's second mutation audit (2026-12-07) ---------------------------------


def test_density_for_a_grid_counts_a_distance_equal_to_eps():
    """``density_all`` is ``density`` at every eps of the grid, also where a distance equals an eps
    (a view's largest distance is exactly 1.0, the grid's last eps)."""
    from cdfts_dask.evaluation.dp import density_all

    D = relative(pairwise_distances(np.array([[0.0], [0.25], [0.5], [1.0]])))
    grid = [0.25, 0.5, 0.75, 1.0]
    assert density_all(D, grid).T.tolist() == [density(D, eps).tolist() for eps in grid]
    assert density_all(D, grid)[:, -1].tolist() == [4, 4, 4, 4]


def test_dp_centres_of_equal_gamma_are_the_lowest_indices():
    """Ties of ``rho * delta`` go to the lower index (a stable sort; numpy's default sort reorders
    ties)."""
    from cdfts_dask.evaluation.dp import Peaks, choose_centres

    n = 40
    rho = np.random.default_rng(0).integers(1, 3, n)  # gamma 1 or 2, each many times
    order = np.lexsort((np.arange(n), -rho))
    pk = Peaks(rho, order, np.ones(n), np.full(n, -1))
    assert choose_centres(pk, 7).tolist() == np.flatnonzero(rho == 2)[:7].tolist()


def test_dp_link_follows_a_parent_chain_as_long_as_the_data():
    """Every point of one chain of n - 1 parent links takes its one centre's label."""
    from cdfts_dask.evaluation.dp import Peaks, link

    n = 100
    pk = Peaks(np.arange(n, 0, -1), np.arange(n), np.ones(n), np.arange(-1, n - 1))
    assert link(pk, np.array([0])).tolist() == [0] * n


def test_inne_takes_psi_below_2_as_2():
    """A sphere needs a second point: psi < 2 is psi = 2 (one point would be drawn again forever)."""
    X = np.random.default_rng(3).random((20, 2))
    assert np.array_equal(inne_scores(X, psi=1, t=5), inne_scores(X, psi=2, t=5))


def test_dbscan_search_evaluates_an_eps_where_only_a_border_point_joins():
    """A border point's reach is a critical value of the sweep.  minpts = 3 on points 0, 0.1, 0.2, 0.5:
    the first three are core from eps 0.2; 0.5 (core only from 0.4) joins as a border point of 0.2 at
    eps 0.3, with no MST edge or core distance in (0.25, 0.35]."""
    from cdfts_dask.evaluation.grids import ClusteringGrid
    from cdfts_dask.evaluation.protocol import search_clustering

    D = pairwise_distances(np.array([[0.0], [0.1], [0.2], [0.5]]))
    assert DBSCANSweep(D, 3).labels(0.35).tolist() == [0, 0, 0, 0]
    grid = ClusteringGrid(dbscan_eps=(0.25, 0.35), dbscan_minpts=(3,))
    assert search_clustering(D, np.zeros(4, dtype=int), grid, ["DBSCAN"])["DBSCAN"] == (
        1.0,
        {"eps": 0.35, "minpts": 3},
    )


def test_clustering_search_keeps_the_first_parameters_in_grid_order_on_ties(blobs):
    """Of parameters with equal best scores, the first in grid order is reported (parameters.json, the
    AMI and the train/test protocol use it; the search's skipped eps rely on it).  On two separated
    blobs many parameters give F = 1."""
    from cdfts_dask.evaluation.grids import ClusteringGrid, eps_grid
    from cdfts_dask.evaluation.protocol import run_clustering, search_clustering

    _, y, D = blobs
    grid = ClusteringGrid(
        eps=tuple(eps_grid(0.05)), dbscan_eps=tuple(eps_grid(0.05)), dbscan_minpts=(2, 5), dp_centres=(2, 3)
    )
    in_order = {
        "DBSCAN": [{"eps": e, "minpts": m} for m in grid.dbscan_minpts for e in grid.dbscan_eps],
        "DP": [{"eps": e, "c": c} for e in grid.eps for c in grid.dp_centres],
        "EC": [{"eps": e} for e in grid.eps],
    }
    best = search_clustering(D, y, grid, list(in_order))
    for alg, params in in_order.items():
        scores = [f_measure(y, run_clustering(alg, D, p, 2)) for p in params]
        assert scores.count(max(scores)) > 1, alg  # a tie to break
        assert best[alg] == (max(scores), params[scores.index(max(scores))]), alg


def test_clustering_search_tries_as_many_centres_and_lgd_neighbours_as_the_data_allow():
    """DP's c runs up to n (every point a centre) and LGD's k is capped at n - 1, as the algorithms
    run alone (found by the evaluation's second mutation audit, 2026-12-07)."""
    from cdfts_dask.evaluation.grids import ClusteringGrid
    from cdfts_dask.evaluation.protocol import run_clustering, search_clustering

    D = pairwise_distances(np.array([[0.0], [1.0], [3.0]]))
    y = np.array([0, 1, 2])
    best = search_clustering(D, y, ClusteringGrid(eps=(0.5,), dp_centres=(2, 3)), ["DP"])["DP"]
    assert best == (1.0, {"eps": 0.5, "c": 3})
    X = np.random.default_rng(67).random((12, 2))  # a case where k = 11 and k = 10 differ
    y = np.repeat([0, 1], 6)
    D = relative(pairwise_distances(X))
    grid = ClusteringGrid(lgd_k=(11, 20), lgd_tau=(0.5, 0.52, 0.56, 0.62))
    score, params = search_clustering(D, y, grid, ["LGD"])["LGD"]
    assert score == _brute_force_best("LGD", D, y, grid)
    assert f_measure(y, run_clustering("LGD", D, params, 2)) == score
