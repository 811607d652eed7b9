"""Effect of the eps grid step on the best F-measures of 3L and 4C (all views and lambdas).

``cdfts evaluate`` searches eps on a grid of step 0.001 for DBSCAN, DP and EC; this reports the
best F-measure of each algorithm and view with steps 0.01 and 0.001 (DScale-DBSCAN is the
authors' ``Mdbscan.m``, as in ``cdfts evaluate``).

    python docs/scripts/eps_step_check.py ../shared/datasets > docs/results/eps_step_check.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from cdfts_dask.evaluation.datasets import load_labelled
from cdfts_dask.evaluation.grids import ClusteringGrid, eps_grid
from cdfts_dask.evaluation.protocol import AUTHORS_DBSCAN_VIEWS, search_clustering
from cdfts_dask.evaluation.representations import make_view

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets")
COARSE = ClusteringGrid(eps=tuple(eps_grid(0.01)), dbscan_eps=tuple(eps_grid(0.01)))
FINE = ClusteringGrid(eps=tuple(eps_grid(0.001)), dbscan_eps=tuple(eps_grid(0.001)))
ALGS = ("DBSCAN", "DP", "EC")

print("| data | view | " + " | ".join(f"{a} step 0.01 | {a} step 0.001" for a in ALGS) + " |")
print("|---|---|" + "---|" * (2 * len(ALGS)))
worst = dict.fromkeys(ALGS, 0.0)
for name in ("3L", "4C"):
    X, y = load_labelled(ROOT / "synthetic" / f"{name}.csv")
    for tr in ("original", "rescale", "dscale", "cdfts"):
        lams = (None,) if tr == "original" else (0.1, 0.2, 0.3, 0.4, 0.5)
        best_c = dict.fromkeys(ALGS, 0.0)
        best_f = dict.fromkeys(ALGS, 0.0)
        for lam in lams:
            D = make_view(X, tr, lam=lam or 0.1).D
            authors = tr in AUTHORS_DBSCAN_VIEWS
            c = search_clustering(D, y, COARSE, ALGS, authors)
            f = search_clustering(D, y, FINE, ALGS, authors)
            for a in ALGS:
                best_c[a] = max(best_c[a], c[a][0])
                best_f[a] = max(best_f[a], f[a][0])
        for a in ALGS:
            worst[a] = max(worst[a], best_f[a] - best_c[a])
        cells = " | ".join(f"{best_c[a]:.3f} | {best_f[a]:.3f}" for a in ALGS)
        print(f"| {name} | {tr} | {cells} |", flush=True)
print()
print("Largest gain of the fine grid: " + ", ".join(f"{a} {worst[a]:+.3f}" for a in ALGS))
