"""Evaluation measures: the paper's F-measure, AMI and ROC AUC."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

NOISE = -1


def f_measure(labels_true, labels_pred, noise: int = NOISE) -> float:
    """Macro F-measure of a clustering against classes, as defined in the paper.

    Points whose predicted label is ``noise`` belong to no cluster.  With
    ``n_ij`` the points of class i in cluster j, ``P = n_ij / |C_j|``,
    ``R = n_ij / |K_i|`` (``|K_i|`` counts the class's noise points too, so
    noise lowers recall) and ``F_ij = 2PR / (P + R) = 2 n_ij / (|K_i| + |C_j|)``.
    The Hungarian algorithm (``scipy.optimize.linear_sum_assignment``) finds
    the one-to-one matching of classes to clusters maximising ``sum F_ij``;
    unmatched classes score 0 and unmatched clusters are ignored (their
    points count as noise).  The result is the unweighted mean over classes:
    ``F = (1 / #classes) * sum_i F_i``.
    """
    y = np.asarray(labels_true)
    p = np.asarray(labels_pred)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(
            f"labels_true and labels_pred must be 1-D of equal length, got {y.shape} and {p.shape}"
        )
    classes, y_idx = np.unique(y, return_inverse=True)
    in_cluster = p != noise
    clusters, p_idx = np.unique(p[in_cluster], return_inverse=True)
    if len(clusters) == 0:
        return 0.0
    counts = np.zeros((len(classes), len(clusters)))
    np.add.at(counts, (y_idx[in_cluster], p_idx), 1)
    class_size = np.bincount(y_idx, minlength=len(classes)).astype(float)
    cluster_size = counts.sum(axis=0)
    F = 2.0 * counts / (class_size[:, None] + cluster_size[None, :])
    rows, cols = linear_sum_assignment(F, maximize=True)
    return float(F[rows, cols].sum() / len(classes))


class FMeasure:
    """:func:`f_measure` against fixed classes, for scoring many clusterings of one dataset.

    Same value as ``f_measure(labels_true, labels_pred)``; the classes are indexed once and the
    contingency table is one ``bincount`` (non-negative integer cluster ids need no ``unique``).
    """

    def __init__(self, labels_true, noise: int = NOISE):
        y = np.asarray(labels_true)
        if y.ndim != 1:
            raise ValueError(f"labels_true must be 1-D, got shape {y.shape}")
        self.classes, self.y_idx = np.unique(y, return_inverse=True)
        self.K = len(self.classes)
        self.class_size = np.bincount(self.y_idx, minlength=self.K).astype(float)
        self.noise = noise

    def __call__(self, labels_pred) -> float:
        p = np.asarray(labels_pred)
        if p.shape != self.y_idx.shape:
            raise ValueError(f"labels_pred must have shape {self.y_idx.shape}, got {p.shape}")
        in_cluster = p != self.noise
        pc = p[in_cluster]
        if pc.size == 0:
            return 0.0
        if np.issubdtype(pc.dtype, np.integer) and pc.min() >= 0:
            m = int(pc.max()) + 1
            counts = np.bincount(self.y_idx[in_cluster] * m + pc, minlength=self.K * m).reshape(self.K, m)
            counts = counts[:, counts.sum(axis=0) > 0].astype(float)
        else:
            _, p_idx = np.unique(pc, return_inverse=True)
            counts = np.zeros((self.K, int(p_idx.max()) + 1))
            np.add.at(counts, (self.y_idx[in_cluster], p_idx), 1)
        cluster_size = counts.sum(axis=0)
        F = 2.0 * counts / (self.class_size[:, None] + cluster_size[None, :])
        rows, cols = linear_sum_assignment(F, maximize=True)
        return float(F[rows, cols].sum() / self.K)


def ami(labels_true, labels_pred) -> float:
    """Adjusted mutual information (scikit-learn); noise (-1) counts as one more cluster."""
    from sklearn.metrics import adjusted_mutual_info_score

    return float(adjusted_mutual_info_score(labels_true, labels_pred))


def auc(is_anomaly, scores) -> float:
    """Area under the ROC curve of anomaly ``scores`` (higher = more anomalous) against 0/1 labels."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.asarray(is_anomaly).astype(int), scores))
