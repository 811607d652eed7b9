"""Grid search and protocol: the small CI subset of the paper's claims, report tables, datasets."""

import json

import numpy as np
import pytest

from cdfts_dask.evaluation.datasets import DatasetSpec, halves, load_labelled, shared_specs, subsample
from cdfts_dask.evaluation.grids import AnomalyGrid, ClusteringGrid, eps_grid
from cdfts_dask.evaluation.protocol import Task, run_task, search_clustering
from cdfts_dask.evaluation.report import markdown_table, summarise
from cdfts_dask.evaluation.representations import make_view
from tests.conftest import DATA, load_csv

DBSCAN_GRID = ClusteringGrid(eps=tuple(eps_grid(0.01)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["3L", "4C"])
def test_cdfts_raises_dbscan_best_f_measure(name):
    X, y = load_csv(DATA / f"{name}.csv")
    orig = search_clustering(make_view(X, "original").D, y, DBSCAN_GRID, ["DBSCAN"])["DBSCAN"][0]
    best = max(
        search_clustering(make_view(X, "cdfts", lam=lam).D, y, DBSCAN_GRID, ["DBSCAN"])["DBSCAN"][0]
        for lam in (0.2, 0.3)
    )
    assert best > orig + 0.05, (orig, best)


def test_grids_follow_the_paper():
    g = AnomalyGrid()
    assert g.ks(100) == [5, 10, 15, 20, 25, 30, 35, 40, 45, 50]
    assert g.psi[0] == 2 and g.psi[-1] == 1024
    c = ClusteringGrid()
    assert c.dbscan_minpts == tuple(range(2, 11)) and c.dp_centres == tuple(range(2, 21))
    assert eps_grid(0.25).tolist() == [0.25, 0.5, 0.75, 1.0]


def test_run_task_train_test_records():
    spec = DatasetSpec("3L", "clustering", str(DATA / "3L.csv"))
    recs = run_task(Task(spec, "original", None, max_n=200, train_test=True, grids=_coarse()))
    assert {r["algorithm"] for r in recs} == {"DBSCAN", "DP", "EC", "LGD"}
    for r in recs:
        assert 0 < r["score"] <= 1 and 0 <= r["test_score"] <= 1 and r["train_score"] <= 1
        assert r["n"] == 200  # a stratified subsample of 3L's 560 rows, halved into train and test


def test_run_task_anomaly_cdfts_searches_detector_k(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (80, 2)), [[6, 6], [-6, 6], [6, -6], [-6, -6]]])
    y = np.r_[np.zeros(80), np.ones(4)].astype(int)
    path = tmp_path / "toy.csv"
    np.savetxt(path, np.c_[X, y], delimiter=",", header="a,b,label", comments="")
    spec = DatasetSpec("toy", "anomaly", str(path))
    recs = run_task(Task(spec, "cdfts", 8, train_test=True))
    assert [r["algorithm"] for r in recs] == ["kNN"] and recs[0]["tparam"] == 8
    assert recs[0]["params"]["k"] in AnomalyGrid().ks(84)  # detector k searched on its own grid
    assert recs[0]["score"] >= recs[0]["score_tied_k"] > 0.95  # tied k = transform k is one grid point
    assert 0 <= recs[0]["test_score"] <= 1
    recs = run_task(Task(spec, "original", None, train_test=False))
    assert {r["algorithm"] for r in recs} == {"kNN", "LOF", "iForest", "iNNE"}


def test_report_table_average_and_wins():
    recs = []
    for ds, scores in {"3L": (0.5, 0.6, 0.7, 0.9), "4C": (0.7, 0.9, 0.9, 0.8)}.items():
        for tr, s in zip(("original", "rescale", "dscale", "cdfts"), scores, strict=False):
            recs.append(
                {
                    "task": "clustering",
                    "dataset": ds,
                    "algorithm": "DBSCAN",
                    "transform": tr,
                    "tparam": 0.1,
                    "n": 10,
                    "score": s,
                    "params": {},
                }
            )
    rows = summarise(recs)
    md = markdown_table(rows, "clustering")
    assert "| 3L | 0.50 (0.59) | 0.60 (0.63) | 0.70 (0.90) | 0.90 (0.88)" in md
    avg = [line for line in md.splitlines() if line.startswith("| Average (datasets")][0]
    assert "0.600 (0.650)" in avg and "0.850 (0.915)" in avg
    wins = [line for line in md.splitlines() if line.startswith("| #Top 1")][0].split("|")[2:6]
    assert [w.strip() for w in wins] == ["0", "1", "1", "1"]
    assert "Values in parentheses are the paper's; the others are this run's best F-measure." in md
    assert "parentheses" not in markdown_table(rows, "clustering", with_paper=False)  # no paper values shown


def test_report_ties_do_not_depend_on_the_order_tasks_finished_in():
    """Regression: ``cdfts evaluate --resume`` wrote another best lambda for tied scores (and could report
    another test score) because the best record was the first of the ties in completion order."""
    import random

    recs = [
        {"task": "clustering", "dataset": "3L", "algorithm": "DBSCAN", "transform": "cdfts", "tparam": lam,
         "n": 10, "score": score, "params": {"eps": eps, "minpts": 3}, "train_score": train,
         "test_score": test, "train_params": {"eps": eps}}
        for lam, score, eps, train, test in [(0.3, 0.9, 0.2, 0.8, 0.7), (0.1, 0.9, 0.4, 0.8, 0.6),
                                             (0.2, 0.9, 0.1, 0.8, 0.5), (0.4, 0.5, 0.3, 0.1, 0.9)]
    ]  # fmt: skip
    rows = summarise(recs)
    assert rows[0]["tparam"] == 0.1 and rows[0]["params"] == {"eps": 0.4, "minpts": 3}
    assert rows[0]["train_tparam"] == 0.1 and rows[0]["test_score"] == 0.6
    for seed in range(5):
        shuffled = recs[:]
        random.Random(seed).shuffle(shuffled)
        assert summarise(shuffled) == rows


def test_load_labelled_formats(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("x,y,label\n0,1,b\n1,2,a\n3,4,b\n")
    X, y = load_labelled(csv)
    assert X.shape == (3, 2) and y.tolist() == [1, 0, 1]
    npy = tmp_path / "t.npy"
    np.save(npy, np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0]]))
    X, y = load_labelled(npy, -1)
    assert X.shape == (2, 2) and y.tolist() == [1, 0]
    with pytest.raises(ValueError, match="label column"):
        load_labelled(csv, "nope")


def test_subsample_and_halves_are_stratified():
    y = np.repeat([0, 1], [90, 30])
    X = np.arange(120.0)[:, None]
    Xs, ys = subsample(X, y, 40)
    assert len(ys) == 40 and np.bincount(ys).tolist() == [30, 10]
    tr, te = halves(y)
    assert len(tr) == len(te) == 60 and not set(tr) & set(te)
    assert np.bincount(y[tr]).tolist() == [45, 15]


def test_shared_datasets_listed(shared_datasets):
    specs = {s.key: s for s in shared_specs(shared_datasets)}
    assert "clustering/3L" in specs and "anomaly/syn1" in specs and "clustering/wine" in specs
    X, y = load_labelled(specs["clustering/wine"].path)
    assert X.shape == (178, 13) and len(np.unique(y)) == 3


def _coarse():
    from cdfts_dask.evaluation.grids import Grids

    return Grids(ClusteringGrid(eps=tuple(eps_grid(0.05))), AnomalyGrid())


def test_json_safe_records():
    spec = DatasetSpec("4C", "clustering", str(DATA / "4C.csv"))
    recs = run_task(Task(spec, "rescale", 0.3, max_n=200, train_test=False, grids=_coarse()))
    back = json.loads(json.dumps(recs))  # no default=: every value must already be a JSON type
    assert back == recs and len(recs) > 0
    assert all({"dataset", "transform", "algorithm", "score", "params"} <= set(r) for r in back)


def test_anomaly_table_marks_inexact_datasets():
    # mfeat and balance are inexact versions; the marker must not depend on which columns exist
    recs = [
        {
            "task": "anomaly",
            "dataset": ds,
            "algorithm": "kNN",
            "transform": tr,
            "tparam": 5,
            "n": 10,
            "score": 0.9,
            "params": {},
        }
        for ds in ("mfeat", "balance", "vowel")
        for tr in ("rescale", "cdfts")
    ]
    recs.append(
        {
            "task": "anomaly",
            "dataset": "balance",
            "algorithm": "LOF",
            "transform": "original",
            "tparam": None,
            "n": 10,
            "score": 0.8,
            "params": {},
        }
    )
    md = markdown_table(summarise(recs), "anomaly")
    assert "| mfeat† |" in md and "| balance† |" in md and "| vowel |" in md
    assert "† the exact version" in md
