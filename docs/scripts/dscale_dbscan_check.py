"""DScale-DBSCAN: which DBSCAN and which DScale normalisation reproduce the paper?

Best F-measure over the paper's grid (minpts 2..10, eps step 0.001) and lambda in {0.1, ..., 0.5},
for every clustering dataset, with

* ``sweep``: the textbook DBSCAN of :mod:`cdfts_dask.evaluation.dbscan` (cores linked when either
  sees the other) on our DScale view (min-max normalised data; the first version);
* ``Mdbscan``: the DScale authors' ``Mdbscan.m`` (:mod:`cdfts_dask.evaluation.mdbscan`) on the same
  view (what ``cdfts evaluate`` now uses);
* ``Mdbscan, raw``: ``Mdbscan.m`` on the authors' DScale normalisation, ``DScale.m``: distances of
  the data *as given* (no min-max normalisation) divided by their maximum.  DScale's own formula
  is the same (``cdfts_dask.oracle.dscale_dense`` on the raw points, divided by its maximum).

    python docs/scripts/dscale_dbscan_check.py ../shared/datasets > docs/results/dscale_dbscan_check.md
    python docs/scripts/dscale_dbscan_check.py ../shared/datasets wine ilpd   # only these datasets
"""

from __future__ import annotations

import sys
import time

from cdfts_dask.evaluation.datasets import load_labelled, shared_specs, subsample
from cdfts_dask.evaluation.grids import LAMBDAS, ClusteringGrid
from cdfts_dask.evaluation.paper import paper_value
from cdfts_dask.evaluation.protocol import search_clustering
from cdfts_dask.evaluation.representations import View, make_view, relative
from cdfts_dask.oracle import dscale_dense

ROOT = sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets"
ONLY = set(sys.argv[2:])
grid = ClusteringGrid()
VARIANTS = ("sweep", "Mdbscan", "Mdbscan, raw")


def view(X, variant: str, lam: float) -> View:
    if variant == "Mdbscan, raw":
        return View(relative(dscale_dense(X, lam)), None)
    return make_view(X, "dscale", lam=lam)


print("| data | paper | " + " | ".join(VARIANTS) + " | best lambda (Mdbscan) |")
print("|---|---|" + "---|" * (len(VARIANTS) + 1))
tic = time.perf_counter()
for spec in shared_specs(ROOT):
    if spec.task != "clustering" or (ONLY and spec.name not in ONLY):
        continue
    X, y = load_labelled(spec.path, spec.label)
    X, y = subsample(X, y, 2500)
    best = {}
    for variant in VARIANTS:
        runs = []
        for lam in LAMBDAS:
            D = view(X, variant, lam).D
            s, p = search_clustering(D, y, grid, ["DBSCAN"], authors_dbscan=variant != "sweep")["DBSCAN"]
            runs.append((s, lam, p))
        best[variant] = max(runs, key=lambda r: r[0])
    paper = paper_value("clustering", spec.name, "DBSCAN", "dscale")
    s, lam, p = best["Mdbscan"]
    print(
        f"| {spec.name} | {paper if paper is not None else '-'} | "
        + " | ".join(f"{best[v][0]:.3f}" for v in VARIANTS)
        + f" | {lam} (minpts {p['minpts']}, eps {p['eps']:.3f}) |",
        flush=True,
    )
print(f"\n{time.perf_counter() - tic:.0f} s")
