"""DScale-DBSCAN: ``Mdbscan.m`` on other readings of the asymmetric DScale matrix.

``cdfts evaluate`` gives ``Mdbscan.m`` (:mod:`cdfts_dask.evaluation.mdbscan`) the DScale matrix with
row i as i's view, as the DScale authors' ``main.m`` does.  This reports the best F-measure over the
paper's grid (minpts 2..10, eps step 0.001, lambda 0.1..0.5) with

* ``row``: row i = i's view (what ``cdfts evaluate`` reports);
* ``column``: the transpose (column i = i's view);
* ``min`` / ``max``: the symmetric ``min(D, D^T)`` / ``max(D, D^T)``;

and counts the datasets within 0.03 of the paper for each.

    python docs/scripts/dscale_dbscan_reading_check.py ../shared/datasets \\
        > docs/results/dscale_dbscan_reading_check.md
"""

from __future__ import annotations

import sys
import time

import numpy as np

from cdfts_dask.evaluation.datasets import load_labelled, shared_specs, subsample
from cdfts_dask.evaluation.grids import LAMBDAS, ClusteringGrid
from cdfts_dask.evaluation.paper import paper_value
from cdfts_dask.evaluation.protocol import search_clustering
from cdfts_dask.evaluation.representations import make_view

ROOT = sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets"
GOOD = ("3L", "4C", "biodeg", "dermatology", "ilpd", "libras", "musk", "seeds", "segment", "wilt", "wine")
ONLY = set(sys.argv[2:]) or set(GOOD)
grid = ClusteringGrid()
READINGS = {
    "row": lambda D: D,
    "column": lambda D: np.ascontiguousarray(D.T),
    "min": lambda D: np.minimum(D, D.T),
    "max": lambda D: np.maximum(D, D.T),
}
COLUMNS = tuple(READINGS)


def best(X: np.ndarray, y: np.ndarray, reading) -> float:
    runs = []
    for lam in LAMBDAS:
        D = reading(make_view(X, "dscale", lam=lam).D)
        runs.append(search_clustering(D, y, grid, ["DBSCAN"], authors_dbscan=True)["DBSCAN"][0])
    return max(runs)


tic = time.perf_counter()
met = dict.fromkeys(COLUMNS, 0)
cells_of = dict.fromkeys(COLUMNS, 0)
print("# DScale-DBSCAN (`Mdbscan.m`): readings of the asymmetric matrix\n")
print("`python docs/scripts/dscale_dbscan_reading_check.py ../shared/datasets` "
      "(best over minpts 2..10, eps step 0.001, lambda 0.1..0.5)\n")
print("| data | n | paper | " + " | ".join(COLUMNS) + " |")
print("|---|---|---|" + "---|" * len(COLUMNS))
for spec in shared_specs(ROOT):
    if spec.task != "clustering" or spec.name not in ONLY:
        continue
    X, y = subsample(*load_labelled(spec.path, spec.label), 2500)
    got = {name: best(X, y, reading) for name, reading in READINGS.items()}
    paper = paper_value("clustering", spec.name, "DBSCAN", "dscale")
    for name, s in got.items():
        cells_of[name] += 1
        met[name] += abs(s - paper) <= 0.03 + 1e-9
    cells = " | ".join(f"{got[c]:.3f}" for c in COLUMNS)
    print(f"| {spec.name} | {len(y)} | {paper} | {cells} |", flush=True)
print("\nWithin 0.03 of the paper: " + ", ".join(f"{k} {met[k]}/{cells_of[k]}" for k in COLUMNS))
print(f"\n{time.perf_counter() - tic:.0f} s")
