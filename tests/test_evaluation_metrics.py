"""F-measure (hand-computed cases), AMI and AUC."""

import numpy as np
import pytest

from cdfts_dask.evaluation.metrics import FMeasure, ami, auc, f_measure


def test_f_measure_perfect_and_permuted():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert f_measure(y, y) == 1.0
    assert f_measure(y, np.array([5, 5, 3, 3, 9, 9])) == 1.0


def test_f_measure_hand_computed_with_noise():
    # class sizes 3, 3; cluster 0 = {0, 1} (2 of class 0); cluster 1 = {2, 3, 4} (1 of class 0, 2 of class 1)
    # point 5 is noise: it lowers class 1's recall.  F(0, c0) = 2*2/(3+2) = 0.8, F(1, c1) = 2*2/(3+3) = 2/3
    y = np.array([0, 0, 0, 1, 1, 1])
    pred = np.array([0, 0, 1, 1, 1, -1])
    assert f_measure(y, pred) == pytest.approx((0.8 + 2 / 3) / 2)


def test_f_measure_unmatched_classes_score_zero():
    y = np.array([0, 0, 1, 1, 2, 2])
    one_cluster = np.zeros(6, dtype=int)  # F of any class with it: 2*2/(2+6) = 0.5; only one class matched
    assert f_measure(y, one_cluster) == pytest.approx(0.5 / 3)


def test_f_measure_extra_clusters_are_ignored_noise():
    y = np.array([0, 0, 0, 0, 1, 1])
    pred = np.array([0, 0, 0, 7, 1, 1])  # cluster 7 unmatched: class 0 recall 3/4, precision 1
    assert f_measure(y, pred) == pytest.approx((2 * 3 / (4 + 3) + 1.0) / 2)


def test_f_measure_all_noise_is_zero_and_shape_checked():
    assert f_measure(np.array([0, 1]), np.array([-1, -1])) == 0.0
    with pytest.raises(ValueError, match="equal length"):
        f_measure(np.array([0, 1]), np.array([0]))


def test_ami_and_auc():
    y = np.array([0, 0, 1, 1])
    assert ami(y, y) == pytest.approx(1.0)
    assert auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9])) == 1.0
    assert auc(np.array([0, 1, 0, 1]), np.array([0.1, 0.2, 0.8, 0.9])) == 0.75


@pytest.mark.parametrize(
    "pred",
    [
        [-1, -1, -1, -1, -1, -1],  # every point noise: 0, as f_measure
        [-3, -3, 4, 4, -1, -2],  # cluster ids below -1 are clusters (only -1 is noise)
        [0, 0, 9, 9, 9, -1],  # ids with gaps
        [0.5, 0.5, 2.0, 2.0, -1.0, 2.0],  # float ids
    ],
)
def test_fmeasure_of_fixed_classes_is_f_measure(pred):
    """The grid search's scorer (found by the evaluation's second mutation audit, 2026-12-07)."""
    y = np.array([0, 0, 1, 1, 2, 2])
    assert FMeasure(y)(np.array(pred)) == f_measure(y, np.array(pred))
