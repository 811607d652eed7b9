"""The baselines ported from their authors' code (Mdbscan.m, Extreme_Clustering.m, LGD.m) on
small cases worked out by hand (the working is in the comments)."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.metrics import adjusted_rand_score

from cdfts_dask.evaluation.dbscan import DBSCANSweep
from cdfts_dask.evaluation.dp import density_all, neighbour_order
from cdfts_dask.evaluation.ec import (
    ExtremeClustering,
    denser_parent,
    extreme_clustering,
    remove_small_clusters,
)
from cdfts_dask.evaluation.lgd import assign, cut_graph, knn_graph, lgd, local_gap_density
from cdfts_dask.evaluation.mdbscan import dbscan_matrix, dbscan_matrix_counts
from cdfts_dask.evaluation.representations import make_view
from cdfts_dask.oracle import pairwise_distances
from tests.conftest import DATA, load_csv
from tests.references import sklearn_dbscan

F = 0.9  # "far": beyond eps = 0.5 below

# Row i is i's view.  With eps = 0.5 and minpts = 2 (i itself counts):
#   N(0) = {0}      N(1) = {0, 1}   N(2) = {1, 2}
#   N(3) = {3}      N(4) = {4, 5}   N(5) = {3, 5}
QUIRK = np.array(
    [
        [0.0, F, F, F, F, F],
        [0.1, 0.0, F, F, F, F],
        [F, 0.2, 0.0, F, F, F],
        [F, F, F, 0.0, F, F],
        [F, F, F, F, 0.0, 0.3],
        [F, F, F, 0.4, F, 0.0],
    ]
)


def test_mdbscan_hand_worked_asymmetric_quirks():
    # i=0: |N(0)| = 1 -> noise, touched.
    # i=1: core -> cluster A labels N(1) = {0, 1} (0 taken back from noise: it is in the starting
    #      row); walking 0 (not core) and 1 (core, N(1) all touched) adds nothing.
    # i=2: untouched core -> cluster B labels N(2) = {1, 2}: core point 1 is taken over from A.
    # i=3: |N(3)| = 1 -> noise, touched.
    # i=4: core -> cluster C labels {4, 5}; walking core 5 finds 3 already touched: 3 stays noise.
    labels = dbscan_matrix(QUIRK, 0.5, 2)
    assert labels.tolist() == [0, 1, 1, -1, 2, 2]
    # scikit-learn keeps 1 in A and reaches 3 from core 5: A = {0, 1}, {2}, {3, 4, 5}
    assert adjusted_rand_score(sklearn_dbscan(QUIRK, 0.5, 2), [0, 0, 1, 2, 2, 2]) == 1.0
    # the sweep links cores 1 and 2 (2 sees 1): {0, 1, 2}, {3, 4, 5}
    assert adjusted_rand_score(DBSCANSweep(QUIRK, 2).labels(0.5), [0, 0, 0, 1, 1, 1]) == 1.0


def test_mdbscan_reads_rows_not_columns():
    # D.T: N(0) = {0, 1}, N(1) = {1, 2}, N(2) = {2}, N(3) = {3, 5}, N(4) = {4}, N(5) = {4, 5}.
    # i=0 core: A labels {0, 1}; walking 0 adds nothing new, walking core 1 adds 2 -> A = {0, 1, 2}.
    # i=3 core: B labels {3, 5}; walking core 5 adds 4 -> B = {3, 4, 5}.
    assert dbscan_matrix(QUIRK.T.copy(), 0.5, 2).tolist() == [0, 0, 0, 1, 1, 1]


def test_mdbscan_minpts_and_eps_edges():
    # minpts = 3: no row has 3 points within 0.5 -> everything is noise
    assert dbscan_matrix(QUIRK, 0.5, 3).tolist() == [-1] * 6
    # eps = 0.1 (D <= eps): only row 1 has two points -> one cluster {0, 1}; 0 was marked noise
    # at i=0 and is taken by 1's starting row
    assert dbscan_matrix(QUIRK, 0.1, 2).tolist() == [0, 0, -1, -1, -1, -1]
    # eps = 1: every row sees everything -> one cluster started, no noise, all core: final
    nbr = neighbour_order(QUIRK)
    labels, final = dbscan_matrix_counts(nbr, np.full(6, 6), 2)
    assert labels.tolist() == [0] * 6 and final
    labels, final = dbscan_matrix_counts(nbr, density_all(QUIRK, [0.5])[:, 0], 2)
    assert labels.tolist() == [0, 1, 1, -1, 2, 2] and not final
    with pytest.raises(ValueError, match="minpts"):
        dbscan_matrix(QUIRK, 0.5, 0)
    with pytest.raises(ValueError, match="square"):
        dbscan_matrix(QUIRK[:3], 0.5, 2)


def test_mdbscan_on_a_symmetric_matrix_is_textbook_dbscan_up_to_borders():
    X, _ = load_csv(DATA / "3L.csv")
    D = make_view(X[::4], "original").D
    for minpts in (3, 6):
        for eps in (0.03, 0.06, 0.12):
            ours, ref = dbscan_matrix(D, eps, minpts), sklearn_dbscan(D, eps, minpts)
            core = np.count_nonzero(D <= eps, axis=1) >= minpts
            assert np.array_equal(ours == -1, ref == -1)
            assert adjusted_rand_score(ours[core], ref[core]) == 1.0


def test_dscale_view_follows_dscale_m_by_hand():
    # DScale.m (zhuye88/Distance-Scaling): s = dis / max(dis); c(z) = |{y : s(z, y) <= eta}| (z itself
    # included); rate r(z) = (c(z) / n) ** (1 / d) / eta with d = size(data, 2); inside s * r(z), outside
    # (s - eta) * (1 - eta r(z)) / (1 - eta) + eta r(z); no diagonal or max step afterwards.
    # 2-D, columns already span [0, 1]: A = (0, 0), B = (0.3, 0.4), C = (1, 1), D = (0, 1).
    # |AB| = 0.5, |AC| = sqrt 2 = m, |AD| = |CD| = 1, |BC| = sqrt .85, |BD| = sqrt .45; in units of m
    # s(A, B) = .3536, s(B, D) = .4743, s(B, C) = .6519, s(A, D) = s(C, D) = 1 / sqrt 2 = .7071.
    # eta = 0.5: c = A 2 (A, B), B 3 (B, A, D), C 1, D 2 (D, B); q = sqrt(c / 4) = .7071, .8660, .5, .7071.
    # Row A: B inside .3536 * 2q = .5; C (s = 1) outside = 1; D outside (.7071 - .5)(1 - .7071) / .5
    #        + .7071 = 2 sqrt 2 - 2 = .8284.
    # Row B: A inside .3536 * 1.7321 = .6124; D inside .4743 * 1.7321 = .8216; C outside
    #        (.6519 - .5)(1 - .8660) / .5 + .8660 = .9067.
    # Row C: q = eta, so r = 1 and the outside map is the identity: the row is s itself.
    # Row D: B inside .4743 * 1.4142 = .6708; A and C outside as A -> D: .8284.
    X = np.array([[0.0, 0.0], [0.3, 0.4], [1.0, 1.0], [0.0, 1.0]])
    expected = [
        [0.0, 0.5, 1.0, 2 * np.sqrt(2) - 2],
        [0.6124, 0.0, 0.9067, 0.8216],
        [1.0, 0.6519, 0.0, 0.7071],
        [2 * np.sqrt(2) - 2, 0.6708, 2 * np.sqrt(2) - 2, 0.0],
    ]
    np.testing.assert_allclose(make_view(X, "dscale", lam=0.5).D, expected, atol=5e-5)
    # The neighbourhood test is <=: 1-D points 0, 0.25, 1 (m = 1), eta = 0.25 -> s(0, 1) = 0.25 counts.
    # c = 2, 2, 1 and q = c / 3 (d = 1): row 0: .25 * (2/3) / .25 = 2/3, and 1 (s = 1);
    # row 1: 2/3, and (.75 - .25)(1/3) / .75 + 2/3 = 8/9; row 2: 1, and (.5)(2/3) / .75 + 1/3 = 7/9.
    expected = [[0, 2 / 3, 1], [2 / 3, 0, 8 / 9], [1, 7 / 9, 0]]
    np.testing.assert_allclose(make_view(np.array([[0.0], [0.25], [1.0]]), "dscale", lam=0.25).D, expected)


# ------------------------------------------------------------------------------------------ EC

# 1-D points 0, 1, 2, 3, 10, 11, 12, 30 (indices 0..7); density radius r = 1.5:
# density = 1 + |{j : |x_i - x_j| < 1.5}| = [3, 4, 4, 3, 3, 4, 3, 2]
LINE = np.array([0.0, 1, 2, 3, 10, 11, 12, 30])[:, None]


def test_ec_hand_worked_line():
    D = pairwise_distances(LINE)
    ec = ExtremeClustering(D, radius=1.5)
    assert ec.density.tolist() == [3, 4, 4, 3, 3, 4, 3, 2]
    # nearest strictly denser point: 0->1, 3->2 (distance 1 ties with none denser), 4->5, 6->5, 7->6
    assert ec.parent.tolist() == [1, -1, -1, 2, 5, -1, 5, 6]
    # delta = 5: point 1 scans 0 (3), 2 (4, equal: marked), 3 (3), then 10 at 9 >= 5 -> extreme;
    # 2 is skipped; 0, 3, 4, 6 meet a denser point within 5; 5 is extreme; 7 (30) meets 12 (denser)
    # only at 18 >= 5 -> extreme.  Clusters {0,1,2,3}, {4,5,6}, {7}: sizes 4, 3, 1, mean 8/3, and
    # 1 > 0.05 * 8/3, so no noise.
    assert ec.labels(5.0).tolist() == [0, 0, 0, 0, 1, 1, 1, 2]
    # delta = 20: 0 meets 1 (denser) first; 1 scans 0, 2 (equal: marked), 3, 10, 11 (equal:
    # marked), 12 and stops at 30 (29 >= 20) -> extreme; 3, 4, 6 meet a denser point first; 7 meets
    # 12 (denser) at 18 < 20.  One extreme point: one cluster.
    assert extreme_clustering(D, 20.0, radius=1.5).tolist() == [0] * 8


def test_ec_noise_step_follows_the_matlab_rule():
    # sizes 30, 29, 1: mean 20 and 1 <= 0.05 * 20 -> noise (the Python version's "<" would keep it)
    label = np.r_[np.ones(30), np.full(29, 2), [3]].astype(np.int64)
    out = remove_small_clusters(label, 3)
    assert out.tolist() == [0] * 30 + [1] * 29 + [-1]
    # sizes 4, 1, 4: 1 > 0.05 * 3 -> kept; clusters renumbered in order of their labels
    label = np.r_[np.ones(4), np.full(4, 3), [2]].astype(np.int64)
    assert remove_small_clusters(label, 3).tolist() == [0] * 4 + [2] * 4 + [1]
    # an empty cluster (its extreme point relabelled by a later one) counts in MATLAB's mean: sizes
    # 100, 0 (nine times), 2 have mean 102 / 11 and 2 > 0.05 * 102 / 11 -> kept (over the non-empty
    # clusters alone, 2 <= 0.05 * 51 would be noise)
    label = np.r_[np.ones(100), np.full(2, 11)].astype(np.int64)
    assert remove_small_clusters(label, 11).tolist() == [0] * 100 + [1] * 2


def test_ec_scan_stops_at_delta_and_a_scan_off_the_row_is_an_extreme_point():
    """Found by the evaluation's second mutation audit (2026-12-07)."""
    D = pairwise_distances(np.array([[0.0], [1.0]]))  # radius 0.5: both densities 2
    # delta = 1 = D[0, 1]: the scan goes on only while b < delta, so 0 stops at 1 and is extreme, and
    # so is 1 (not marked by 0's scan): two clusters
    assert extreme_clustering(D, 1.0, radius=0.5).tolist() == [0, 1]
    # delta above every distance: 0's scan runs off the end of its row -> extreme; 1, of equal
    # density within delta, is marked and labelled with it
    assert extreme_clustering(D, 5.0, radius=0.5).tolist() == [0, 0]


def test_ec_labels_only_equal_density_points_around_an_extreme_point():
    # 0 at 0 and 2 at 1.8 are extreme at delta = 1.5 (densities 3; each stops at the other, 1.8 away);
    # 1 at 0.8 (density 2) is within delta of both but follows its nearest denser point, 0: the later
    # extreme point 2 labels only points of its own density
    D = pairwise_distances(np.array([[0.0], [0.8], [1.8]]))
    ec = ExtremeClustering(D, radius=0.1)
    ec.density = np.array([3, 2, 3])
    ec.parent = denser_parent(ec.density, ec.nbr)
    assert ec.parent.tolist() == [-1, 0, -1]
    assert ec.labels(1.5).tolist() == [0, 0, 1]


def test_ec_default_density_radius_and_noise_on_blobs():
    # two runs of 30 points (step 0.1) and one point far away: with radius 0.15 the interior
    # points have density 4, run ends 3, the far point 2; the far point is an extreme point
    # alone (size 1 <= 0.05 * mean(30, 30, 1)) -> noise
    X = np.r_[np.arange(30) * 0.1, 10 + np.arange(30) * 0.1, [50.0]][:, None]
    D = pairwise_distances(X)
    labels = extreme_clustering(D, 5.0, radius=0.15)
    assert labels.tolist() == [0] * 30 + [1] * 30 + [-1]
    # default radius: mean over points of the floor(0.02 * 61) = 1st sorted distance (0, the point
    # itself) -> every density is 1
    assert ExtremeClustering(D).radius == 0.0 and set(ExtremeClustering(D).density) == {1}
    with pytest.raises(ValueError, match="n >= 50"):
        ExtremeClustering(D[:40, :40])


# ----------------------------------------------------------------------------------------- LGD

# 1-D points 0, 1, 2, 10, 12, 14 with k = 2 on squared distances (LGD.m on these points).  k-NN:
# 0: 1, 2   1: 0, 2   2: 1, 0   3: 4, 5   4: 3, 5   5: 4, 3
# edges 0-1: 1, 0-2: 4, 1-2: 1, 3-4: 4, 3-5: 16, 4-5: 4; every degree 2
# LD = 4 / sum = [0.8, 2, 0.8, 0.2, 0.5, 0.2];  LGD = LD / max neighbour LD = [.4, 2.5, .4, .4, 2.5, .4]
SIX = np.array([0.0, 1, 2, 10, 12, 14])[:, None]


def test_lgd_hand_worked_gap_density_and_labels():
    D = pairwise_distances(SIX)
    W = knn_graph(D * D, 2, neighbour_order(D))
    assert sorted(zip(*sparse.triu(W).nonzero(), sparse.triu(W).data, strict=True)) == [
        (0, 1, 1.0),
        (0, 2, 4.0),
        (1, 2, 1.0),
        (3, 4, 4.0),
        (3, 5, 16.0),
        (4, 5, 4.0),
    ]
    assert np.allclose(local_gap_density(W), [0.4, 2.5, 0.4, 0.4, 2.5, 0.4])
    # tau = 0.5: cores 1 and 4, no core-core edge -> components {1}, {4}; every border point's
    # nearest denser neighbour is 1 (for 0, 2) or 4 (for 3, 5)
    assert lgd(D * D, 2, 0.5, 2).tolist() == [0, 0, 0, 1, 1, 1]
    # c = 3 > 2 components: LGD.m stops with an error -> every point unclustered
    assert lgd(D * D, 2, 0.5, 3).tolist() == [-1] * 6
    # tau = 0.4: every point is core, components {0, 1, 2}, {3, 4, 5}
    assert lgd(D * D, 2, 0.4, 2).tolist() == [0, 0, 0, 1, 1, 1]


def test_lgd_runs_on_the_matrix_as_given():
    """The evaluation feeds the view's distances unsquared (the paper's numbers; lgd.py docstring).

    On SIX's unsquared distances the edges weigh 1, 2, 1 | 2, 4, 2, so LD = 4 / sum =
    [4/3, 2, 4/3, 2/3, 1, 2/3] and LGD = [2/3, 3/2, 2/3, 2/3, 3/2, 2/3] (squared: 0.4 / 2.5)."""
    D = pairwise_distances(SIX)
    W = knn_graph(D, 2, neighbour_order(D))
    assert np.allclose(local_gap_density(W), [2 / 3, 1.5, 2 / 3, 2 / 3, 1.5, 2 / 3])
    # at tau = 0.5 every point of D is core (D * D: only 1 and 4); at 0.7 only 1 and 4 are
    assert (local_gap_density(W) >= 0.5).all()
    assert lgd(D, 2, 0.5, 2).tolist() == [0, 0, 0, 1, 1, 1]  # components {0, 1, 2}, {3, 4, 5}
    assert lgd(D, 2, 0.7, 2).tolist() == [0, 0, 0, 1, 1, 1]  # {1}, {4}; the others follow them
    assert lgd(D, 2, 0.5, 3).tolist() == [-1] * 6  # 2 components < c: LGD.m's error


def test_lgd_knn_graph_keeps_the_last_writer():
    # asymmetric, k = 1: 0's nearest is 1 (writes 1), 1's is 0 (writes 3, the later write),
    # 2's is 0 (writes 5)
    D = np.array([[0.0, 1, 2], [3, 0, 4], [5, 6, 0]])
    W = knn_graph(D, 1, neighbour_order(D)).toarray()
    assert W.tolist() == [[0, 3, 5], [3, 0, 0], [5, 0, 0]]


def _graph(edges, n: int) -> sparse.csr_array:
    """The symmetric n x n graph of ``(i, j, weight)`` edges, as :func:`knn_graph` returns one."""
    a, b, w = map(np.array, zip(*edges, strict=True))
    W = sparse.csr_array((np.r_[w, w], (np.r_[a, b], np.r_[b, a])), shape=(n, n))
    W.sort_indices()
    return W


def test_lgd_cut_rule():
    # edges 0-1: 3, 0-2: 2, 1-3: 5, 3-4: 4; cores 0, 1, 3.  Row 0 cuts >= 2 (its border edge to 2):
    # 0-1 goes from row 0; row 3 cuts >= 4: 1-3 goes from row 3; row 1 has no border neighbour and
    # keeps both, so both edges survive.
    e = [(0, 1, 3.0), (0, 2, 2.0), (1, 3, 5.0), (3, 4, 4.0)]
    core = np.array([True, True, False, True, False, False])
    G = cut_graph(_graph(e, 6), core)
    assert sorted(zip(*sparse.triu(G).nonzero(), strict=True)) == [(0, 1), (1, 3)]
    # give 1 a border neighbour 5 at weight 1: row 1 now cuts both, so neither edge survives
    assert cut_graph(_graph([*e, (1, 5, 1.0)], 6), core).nnz == 0


# LGD cases found by the evaluation's second mutation audit (2026-12-07)


def test_lgd_drops_an_edge_as_long_as_the_shortest_border_edge():
    # cores 0 and 1, each with a border edge of weight 2: the core edge 0-1 of weight 2 is "at least
    # as long" for both rows, so neither keeps it
    W = _graph([(0, 1, 2.0), (0, 2, 2.0), (1, 3, 2.0)], 4)
    assert cut_graph(W, np.array([True, True, False, False])).nnz == 0


def test_lgd_gap_density_squares_the_degree():
    # a star: 0 linked to 1, 2, 3 at weight 1.  LD = deg^2 / sum = [9 / 3, 1, 1, 1];
    # LGD = [3 / 1, 1 / 3, 1 / 3, 1 / 3]
    W = _graph([(0, 1, 1.0), (0, 2, 1.0), (0, 3, 1.0)], 4)
    assert np.allclose(local_gap_density(W), [3, 1 / 3, 1 / 3, 1 / 3])


def test_lgd_knn_graph_has_no_zero_weight_edge():
    # points 0, 0, 1, k = 1: row 0 sorts to 0, 1, 2, so 0's neighbour is its duplicate 1, at distance 0:
    # no edge (a zero is no entry of LGD.m's sparse W); row 1 sorts to 0, 1, 2 too, so 1's
    # "neighbour" is itself: no edge; 2's is 0, at 1
    D = pairwise_distances(np.array([[0.0], [0.0], [1.0]]))
    W = knn_graph(D, 1, neighbour_order(D))
    assert W.nnz == 2 and np.diff(W.indptr).tolist() == [1, 0, 1]
    assert W.toarray().tolist() == [[0, 0, 1], [0, 0, 0], [1, 0, 0]]


def test_lgd_a_point_whose_gap_density_equals_tau_is_core():
    D = pairwise_distances(SIX)
    g = local_gap_density(knn_graph(D, 2, neighbour_order(D)))
    tau = min(g[1], g[4])  # the two densest points; every other one is below
    assert lgd(D, 2, tau, 2).tolist() == [0, 0, 0, 1, 1, 1]  # not "fewer than c components"


@pytest.mark.parametrize(
    "weights, g, want",
    [
        # 2's neighbours 0 and 1 are equally near and both denser: the lower index, 0
        ((1.0, 1.0), [1.0, 1.0, 0.0], 1),
        # 0 is nearer but only as dense as 2: the successor is the strictly denser 1
        ((1.0, 2.0), [0.5, 1.0, 0.5], 2),
    ],
)
def test_lgd_successor_is_the_nearest_strictly_denser_neighbour_ties_by_index(weights, g, want):
    labels = np.array([1, 2, 0])  # 0, 1 labelled; 2 not
    W = _graph([(2, 0, weights[0]), (2, 1, weights[1])], 3)
    assert assign(labels, W, np.array(g), np.zeros((3, 3))).tolist() == [1, 2, want]


def test_lgd_representative_takes_the_label_nearest_in_its_own_row():
    # no edges: 2 is its own representative and takes the label of its nearest labelled point in
    # row 2 (i's view): 0 at 1, not 1 at 2 (column 2 would say 1, at 1, against 0 at 5)
    D = np.array([[0.0, 5, 5], [5, 0, 1], [1, 2, 0]])
    W = sparse.csr_array((3, 3))
    assert assign(np.array([1, 2, 0]), W, np.zeros(3), D).tolist() == [1, 2, 1]


def test_ported_algorithms_recover_two_blobs():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (60, 2)), rng.normal(5, 0.3, (40, 2))])
    y = np.repeat([0, 1], [60, 40])
    D = make_view(X, "original").D
    assert adjusted_rand_score(y, lgd(D, 6, 0.5, 2)) == 1.0
    assert adjusted_rand_score(y, extreme_clustering(D, 0.3)) == 1.0
    assert adjusted_rand_score(y, dbscan_matrix(D, 0.1, 5)) == 1.0


def test_authors_dbscan_search_equals_brute_force():
    """Skipping eps with unchanged neighbourhoods and stopping at a final clustering loses nothing."""
    from cdfts_dask.evaluation.grids import ClusteringGrid, eps_grid
    from cdfts_dask.evaluation.metrics import f_measure
    from cdfts_dask.evaluation.protocol import search_clustering

    X, y = load_csv(DATA / "3L.csv")
    X, y = X[::4], y[::4]
    D = make_view(X, "dscale", lam=0.2).D
    grid = ClusteringGrid(dbscan_eps=tuple(eps_grid(0.01)), dbscan_minpts=(2, 5, 9))
    brute = max(f_measure(y, dbscan_matrix(D, eps, m)) for m in grid.dbscan_minpts for eps in grid.dbscan_eps)
    fast = search_clustering(D, y, grid, ["DBSCAN"], authors_dbscan=True)["DBSCAN"]
    assert fast[0] == brute
    assert f_measure(y, dbscan_matrix(D, fast[1]["eps"], fast[1]["minpts"])) == brute


def test_authors_dbscan_search_goes_on_past_one_cluster_with_points_not_core():
    """One cluster and no noise is final only when every point is core (found by the evaluation's
    second mutation audit, 2026-12-07).  minpts = 2.  At eps 0.3: N(0) = {0} and N(1) = {1} (noise,
    touched), N(2) = {0, 1, 2}: 2 starts a cluster whose row relabels 0 and 1 -> one cluster.  At 0.6:
    0 is still noise; N(1) = {1, 2} starts the cluster and reaches 2, whose expansion skips the
    touched 0 -> 0 stays noise, a better F-measure against classes {0}, {1, 2}."""
    from cdfts_dask.evaluation.grids import ClusteringGrid
    from cdfts_dask.evaluation.protocol import search_clustering

    D = np.array([[0.0, F, F], [F, 0, 0.5], [0.2, 0.2, 0]])
    y = np.array([0, 1, 1])
    assert dbscan_matrix(D, 0.3, 2).tolist() == [0, 0, 0] and dbscan_matrix(D, 0.6, 2).tolist() == [-1, 0, 0]
    grid = ClusteringGrid(dbscan_eps=(0.3, 0.6), dbscan_minpts=(2,))
    assert search_clustering(D, y, grid, ["DBSCAN"], authors_dbscan=True)["DBSCAN"] == (
        0.5,
        {"eps": 0.6, "minpts": 2},
    )


def test_baseline_targets_count_only_data_version_good_datasets():
    from cdfts_dask.evaluation.report import baseline_targets_lines, data_known_good

    def row(ds, alg, view, diff):
        return {"task": "clustering", "dataset": ds, "algorithm": alg, "transform": view, "diff": diff}

    rows = [
        row("good", "DBSCAN", "original", 0.01),
        row("good", "DP", "original", -0.02),
        row("good", "DBSCAN", "dscale", -0.05),  # a miss
        row("good", "EC", "cdfts", 0.03),  # met (|diff| <= 0.03)
        row("bad", "DBSCAN", "original", 0.01),
        row("bad", "DP", "original", -0.2),  # the data version differs: not a target
        row("bad", "EC", "cdfts", 0.5),
    ]
    assert data_known_good(rows) == {"good"}
    text = "\n".join(baseline_targets_lines(rows))
    assert "| DBSCAN | DS | 0 | 1 | good -0.050 |" in text
    assert "| EC | CDF-TS | 1 | 1 | - |" in text
    assert "Met: 1 of 2." in text
