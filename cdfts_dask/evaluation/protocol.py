"""Best-over-grid and train/test evaluation of one (dataset, view) pair.

*Best over grid* (the paper's tables): every parameter combination of the
algorithm (and of the view: lambda, or k for CDF-TS-kNN) is run on the whole
dataset and the best F-measure / AUC is reported.

*Train/test* (the paper's Discussion): the dataset is split into two
stratified halves; parameters (including the view's) are chosen by the best
score on the first half; the view is rebuilt on the second half and the
algorithm run there once with those parameters; that score is reported.

One call of :func:`run_task` covers one dataset, one view and one view
parameter, and returns one record per algorithm; :mod:`.report` picks the
best view parameter afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..sampling import sampled_k
from .baselines import iforest_scores, lof_scores
from .datasets import DatasetSpec, halves, load_labelled, subsample
from .dbscan import DBSCANSweep, sweeps
from .dp import choose_centres, density_all, density_peaks, link, neighbour_order, peaks_sorted
from .ec import ExtremeClustering, extreme_clustering
from .grids import AnomalyGrid, ClusteringGrid, Grids
from .inne import inne_scores
from .knn import knn_scores, knn_sorted
from .lgd import lgd
from .mdbscan import dbscan_matrix, dbscan_matrix_counts
from .metrics import FMeasure, ami, auc, f_measure
from .representations import View, make_view

CLUSTERING_ALGORITHMS = ("DBSCAN", "DP", "EC", "LGD")
ANOMALY_ALGORITHMS = ("kNN", "LOF", "iForest", "iNNE")
#: algorithms run on the original data only (as in the paper's AUC table)
ORIGINAL_ONLY = ("LOF", "iForest", "iNNE")

Best = tuple[float, dict]


def _better(best: Best | None, score: float, params: dict) -> Best:
    return (score, params) if best is None or score > best[0] else best


# ---------------------------------------------------------------- clustering


#: views whose DBSCAN is the DScale authors' ``Mdbscan.m`` (:mod:`.mdbscan`) instead of the sweep
AUTHORS_DBSCAN_VIEWS = ("dscale",)


def run_clustering(
    algorithm: str, D: np.ndarray, params: dict, n_classes: int, authors_dbscan: bool = False
) -> np.ndarray:
    """Labels of one clustering algorithm with the given parameters on the view's distances D.

    ``authors_dbscan``: DBSCAN is :func:`.mdbscan.dbscan_matrix` (the DScale view), otherwise
    :class:`.dbscan.DBSCANSweep`.
    """
    if algorithm == "DBSCAN":
        if authors_dbscan:
            return dbscan_matrix(D, params["eps"], params["minpts"])
        return DBSCANSweep(D, params["minpts"]).labels(params["eps"])
    if algorithm == "DP":
        return density_peaks(D, params["eps"], params["c"])
    if algorithm == "EC":
        return extreme_clustering(D, params["eps"])
    if algorithm == "LGD":
        return lgd(D, params["k"], params["tau"], n_classes)
    raise ValueError(f"unknown clustering algorithm {algorithm!r}")


def search_clustering(
    D: np.ndarray,
    y: np.ndarray,
    grid: ClusteringGrid,
    algorithms: Iterable[str] = CLUSTERING_ALGORITHMS,
    authors_dbscan: bool = False,
) -> dict[str, Best]:
    """Best F-measure and its parameters for each algorithm over the grid.

    Shared work (the results are exactly those of running each algorithm on each grid point):
    one stable row-wise ``argsort`` of D serves DP, EC, LGD and the authors' DBSCAN (nearest
    higher-ranked point, :func:`.dp.peaks_sorted`; neighbour lists), the densities / neighbour
    counts for all eps come from one pass (:func:`.dp.density_all`), DBSCAN evaluates the whole
    eps grid from one minimum spanning tree per minpts (:class:`.dbscan.DBSCANSweep`), EC's
    densities and chains are computed once (:class:`.ec.ExtremeClustering`), and an eps whose
    densities equal the previous eps's is skipped for DP (same labels, and ties keep the first)
    and for the authors' DBSCAN (same neighbourhoods), as is a sweep-DBSCAN eps with no critical
    value (:meth:`.dbscan.DBSCANSweep.critical_values`) since the previous one.

    ``authors_dbscan``: DBSCAN is :mod:`.mdbscan` (``Mdbscan.m``), used for the DScale view.
    """
    algorithms = set(algorithms)
    n = len(y)
    n_classes = len(np.unique(y))
    score = FMeasure(y)
    best: dict[str, Best | None] = dict.fromkeys(algorithms)
    nbr = neighbour_order(D) if algorithms & {"DP", "EC", "LGD"} or authors_dbscan else None
    if "DBSCAN" in algorithms and authors_dbscan:
        counts = density_all(D, grid.dbscan_eps)
        for minpts in grid.dbscan_minpts:
            previous = None
            for e, eps in enumerate(grid.dbscan_eps):
                if previous is not None and np.array_equal(counts[:, e], previous):
                    continue  # the same neighbourhoods: the same labels
                previous = counts[:, e]
                labels, final = dbscan_matrix_counts(nbr, previous, minpts)
                best["DBSCAN"] = _better(best["DBSCAN"], score(labels), {"eps": eps, "minpts": minpts})
                if final:
                    break
        del counts
    elif "DBSCAN" in algorithms:
        for minpts, sweep in sweeps(D, grid.dbscan_minpts):
            events = sweep.critical_values()
            seen = -1
            for eps in grid.dbscan_eps:
                below = int(np.searchsorted(events, eps, side="right"))
                if below == seen:  # no critical value in (previous eps, eps]: the same labels again
                    continue
                seen = below
                labels = sweep.labels(eps)
                best["DBSCAN"] = _better(best["DBSCAN"], score(labels), {"eps": eps, "minpts": minpts})
                if labels.min() == 0 and labels.max() == 0:  # one cluster, no noise: so for every larger eps
                    break
    if "DP" in algorithms:
        rhos = density_all(D, grid.eps)
        previous = None
        for e, eps in enumerate(grid.eps):
            rho = rhos[:, e]
            if previous is not None and np.array_equal(rho, previous):
                continue  # same densities => same peaks and DP labels
            previous = rho
            pk = peaks_sorted(D, rho, nbr)
            for c in grid.dp_centres:
                if c > n:
                    break
                labels = link(pk, choose_centres(pk, c))
                best["DP"] = _better(best["DP"], score(labels), {"eps": eps, "c": c})
            if rho.min() == n:  # every point sees every point: larger eps changes nothing
                break
    if "EC" in algorithms:
        ec = ExtremeClustering(D, nbr=nbr)
        for eps in grid.eps:
            best["EC"] = _better(best["EC"], score(ec.labels(eps)), {"eps": eps})
    if "LGD" in algorithms:
        for k in grid.lgd_k:
            for tau in grid.lgd_tau:
                labels = lgd(D, min(k, n - 1), tau, n_classes, nbr)
                best["LGD"] = _better(best["LGD"], score(labels), {"k": k, "tau": tau, "c": n_classes})
    return best  # type: ignore[return-value]


# ----------------------------------------------------------------- anomalies


def search_anomaly(
    view: View, y: np.ndarray, grid: AnomalyGrid, algorithms: Iterable[str]
) -> dict[str, Best]:
    """Best AUC and its parameters for each anomaly detector over the grid."""
    n = len(y)
    ks = grid.ks(n)
    best: dict[str, Best | None] = {}
    for alg in algorithms:
        best[alg] = None
        if alg == "kNN":
            if len(ks) == 1:
                best[alg] = _better(best[alg], auc(y, knn_scores(view.D, ks[0])), {"k": ks[0]})
            else:
                sorted_rows = knn_sorted(view.D)  # one sort serves every k (same values as knn_scores)
                for k in ks:
                    best[alg] = _better(best[alg], auc(y, sorted_rows[:, k]), {"k": k})
        elif alg == "LOF":
            for k in ks:
                best[alg] = _better(best[alg], auc(y, lof_scores(view.D, k)), {"k": k})
        elif alg in ("iForest", "iNNE"):
            for psi in grid.psi:
                if psi > n and psi // 2 >= n:
                    break
                scores = (
                    iforest_scores(view.points, psi, grid.trees)
                    if alg == "iForest"
                    else inne_scores(view.points, psi, grid.trees, D=view.D)
                )
                best[alg] = _better(best[alg], auc(y, scores), {"psi": psi})
        else:
            raise ValueError(f"unknown anomaly detector {alg!r}")
    return best  # type: ignore[return-value]


def run_anomaly(algorithm: str, view: View, params: dict, trees: int = 100) -> np.ndarray:
    if algorithm == "kNN":
        return knn_scores(view.D, min(params["k"], view.D.shape[0] - 1))
    if algorithm == "LOF":
        return lof_scores(view.D, params["k"])
    if algorithm == "iForest":
        return iforest_scores(view.points, params["psi"], trees)
    if algorithm == "iNNE":
        return inne_scores(view.points, params["psi"], trees, D=view.D)
    raise ValueError(f"unknown anomaly detector {algorithm!r}")


# ---------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """One unit of parallel work: a dataset, a view and the view's parameter."""

    spec: DatasetSpec
    transform: str
    tparam: float | int | None  # lambda (or k for CDF-TS-kNN); None for the original view
    max_n: int | None = None
    train_test: bool = False
    grids: Grids = field(default_factory=Grids)
    n_points: int = 0  # rows of the dataset (before subsampling); only used to order tasks

    @property
    def label(self) -> str:
        p = "" if self.tparam is None else f" {self.tparam}"
        return f"{self.spec.key} {self.transform}{p}"


def _view(task: Task, X: np.ndarray) -> View:
    if task.transform == "original":
        return make_view(X, "original")
    if task.spec.task == "anomaly" and task.transform == "cdfts":
        return make_view(X, "cdfts", estimator="knn", k=int(task.tparam))
    return make_view(X, task.transform, lam=float(task.tparam))


def _algorithms(task: Task) -> tuple[str, ...]:
    if task.spec.task == "clustering":
        return CLUSTERING_ALGORITHMS
    return ANOMALY_ALGORITHMS if task.transform == "original" else ("kNN",)


def _search(task: Task, view: View, y: np.ndarray) -> dict[str, Best]:
    if task.spec.task == "clustering":
        return search_clustering(
            view.D, y, task.grids.clustering, _algorithms(task), task.transform in AUTHORS_DBSCAN_VIEWS
        )
    # CDF-TS-kNN: the transform's k-NN estimator k (the task's view parameter) and the detector's k
    # are searched independently over the same grid {5%n, ..., 50%n}; the paper ties neither to
    # the other (its table lists kNN's k and CDF-TS's own parameter separately).  The best with
    # the two tied (detector k = transform k) is kept in the record as ``score_tied_k``.
    return search_anomaly(view, y, task.grids.anomaly, _algorithms(task))


def run_task(task: Task, progress: Callable[[str], None] | None = None) -> list[dict]:
    """Run one task; one record per algorithm (see :mod:`.report` for the fields)."""
    tic = time.perf_counter()
    X, y = load_labelled(task.spec.path, task.spec.label)
    X, y = subsample(X, y, task.max_n)
    view = _view(task, X)
    best = _search(task, view, y)
    records = {
        alg: {
            "dataset": task.spec.name,
            "task": task.spec.task,
            "transform": task.transform,
            "tparam": task.tparam,
            "algorithm": alg,
            "n": int(len(y)),
            "score": float(s),
            "params": p,
            "n_iter": view.n_iter,
        }
        for alg, (s, p) in best.items()
    }
    if task.spec.task == "anomaly" and task.transform == "cdfts":
        k = min(int(task.tparam), len(y) - 1)
        records["kNN"]["score_tied_k"] = auc(y, knn_scores(view.D, k))
    if task.spec.task == "clustering":
        for alg in ("DP", "LGD"):
            rec = records[alg]
            rec["ami"] = ami(y, run_clustering(alg, view.D, rec["params"], len(np.unique(y))))
    if task.train_test:
        _train_test(task, X, y, records)
    for rec in records.values():
        rec["seconds"] = time.perf_counter() - tic
    return list(records.values())


def _train_test(task: Task, X: np.ndarray, y: np.ndarray, records: dict[str, dict]) -> None:
    tr, te = halves(y)
    if task.spec.task == "anomaly" and task.transform == "cdfts":
        # the k-NN estimator's k scales with n: keep its fraction of the data (as a sampled fit does)
        k_half = sampled_k(int(task.tparam), len(tr), len(y))
        frac_task = Task(
            task.spec, task.transform, k_half, task.max_n, task.train_test, task.grids, task.n_points
        )
    else:
        frac_task = task
    view_tr = _view(frac_task, X[tr])
    best_tr = _search(frac_task, view_tr, y[tr])
    view_te = _view(frac_task, X[te])
    for alg, (s, p) in best_tr.items():
        rec = records[alg]
        rec["train_score"] = float(s)
        rec["train_params"] = p
        if task.spec.task == "clustering":
            labels = run_clustering(
                alg, view_te.D, p, len(np.unique(y[te])), task.transform in AUTHORS_DBSCAN_VIEWS
            )
            rec["test_score"] = f_measure(y[te], labels)
        else:
            p_te = dict(p)
            if "k" in p_te:  # k is a fraction of n in the paper's grid; the halves have equal size
                p_te["k"] = min(p_te["k"], len(te) - 1)
            rec["test_score"] = auc(y[te], run_anomaly(alg, view_te, p_te, task.grids.anomaly.trees))

