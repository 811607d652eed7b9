"""DScale-DBSCAN: how much does the order of the rows change ``Mdbscan.m``'s best F-measure?

``Mdbscan.m`` (:mod:`cdfts_dask.evaluation.mdbscan`) visits the points in index order, and on the
asymmetric DScale matrix a later core point takes over the points of its own row that an earlier
cluster had reached, so its clusters depend on the row order of the file.  The paper does not give
its files' row order.  This reruns the best over the paper's grid (minpts 2..10, eps step 0.001,
lambda 0.1..0.5) on the shared file's order and on random permutations of its rows (seeds 1..3);
the textbook DBSCAN sweep does not depend on the order (up to which cluster a border point joins).

    python docs/scripts/dscale_dbscan_order_check.py ../shared/datasets \\
        > docs/results/dscale_dbscan_order_check.md
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
ONLY = set(sys.argv[2:]) or {"musk", "wilt", "dermatology", "ilpd"}
SEEDS = (1, 2, 3)
grid = ClusteringGrid()


def best(X: np.ndarray, y: np.ndarray) -> float:
    return max(
        search_clustering(make_view(X, "dscale", lam=lam).D, y, grid, ["DBSCAN"], authors_dbscan=True)[
            "DBSCAN"
        ][0]
        for lam in LAMBDAS
    )


tic = time.perf_counter()
print("# DScale-DBSCAN (`Mdbscan.m`): the file's row order against random row orders\n")
print("`python docs/scripts/dscale_dbscan_order_check.py ../shared/datasets`\n")
print("| data | paper | file order | " + " | ".join(f"permutation {s}" for s in SEEDS) + " | range |")
print("|---|---|---|" + "---|" * (len(SEEDS) + 1))
for spec in shared_specs(ROOT):
    if spec.task != "clustering" or spec.name not in ONLY:
        continue
    X, y = load_labelled(spec.path, spec.label)
    X, y = subsample(X, y, 2500)
    scores = [best(X, y)]
    for seed in SEEDS:
        p = np.random.default_rng(seed).permutation(len(y))
        scores.append(best(X[p], y[p]))
    paper = paper_value("clustering", spec.name, "DBSCAN", "dscale")
    print(
        f"| {spec.name} | {paper} | " + " | ".join(f"{s:.3f}" for s in scores)
        + f" | {min(scores):.3f}-{max(scores):.3f} |",
        flush=True,
    )
print(f"\n{time.perf_counter() - tic:.0f} s")
