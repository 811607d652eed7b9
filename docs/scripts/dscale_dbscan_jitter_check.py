"""DScale-DBSCAN: do the bests depend on the data's last digits (floating point, file precision)?

The authors' MATLAB (``pdist2``, ``DScale.m``, ``Mdbscan.m``) may differ from ours in the last bits
of a distance, and their data files in the printed precision.  If the overshooting bests (biodeg,
musk, wilt) hung on such detail, a tiny perturbation would move them.  For every exact-version
dataset this adds Gaussian noise of ``scale`` times each column's range (seed 1) to the raw points
and reruns ``cdfts evaluate``'s DScale-DBSCAN search (``Mdbscan.m``, minpts 2..10, eps step 0.001)
at the lambda of the unperturbed best.

    python docs/scripts/dscale_dbscan_jitter_check.py ../shared/datasets \\
        > docs/results/dscale_dbscan_jitter_check.md
"""

from __future__ import annotations

import time

import numpy as np
from good_sets import clustering_sets, table_header

from cdfts_dask.evaluation.grids import LAMBDAS, ClusteringGrid
from cdfts_dask.evaluation.paper import paper_value
from cdfts_dask.evaluation.protocol import search_clustering
from cdfts_dask.evaluation.representations import make_view

SCALES = (1e-9, 1e-6, 1e-4)
grid = ClusteringGrid()


def best(X: np.ndarray, y: np.ndarray, lam: float) -> tuple[float, dict]:
    D = make_view(X, "dscale", lam=lam).D
    return search_clustering(D, y, grid, ["DBSCAN"], authors_dbscan=True)["DBSCAN"]


tic = time.perf_counter()
print("# DScale-DBSCAN (`Mdbscan.m`) on slightly perturbed data\n")
print("`python docs/scripts/dscale_dbscan_jitter_check.py ../shared/datasets` (n <= 2500, seed-0 subsample;")
print("noise of scale x each column's range, seed 1; the search at the unperturbed best lambda)\n")
table_header("data", "paper", "lambda", "unperturbed (minpts, eps)", *(f"{s:g}" for s in SCALES))
for spec, X, y in clustering_sets():
    runs = {lam: best(X, y, lam) for lam in LAMBDAS}
    lam = max(LAMBDAS, key=lambda lam: runs[lam][0])
    s0, p0 = runs[lam]
    span = X.max(axis=0) - X.min(axis=0)
    cells = []
    for scale in SCALES:
        rng = np.random.default_rng(1)
        s, p = best(X + rng.normal(size=X.shape) * scale * span, y, lam)
        cells.append(f"{s:.3f} ({p['minpts']}, {p['eps']:.3f})")
    paper = paper_value("clustering", spec.name, "DBSCAN", "dscale")
    first = f"{s0:.3f} ({p0['minpts']}, {p0['eps']:.3f})"
    print(f"| {spec.name} | {paper} | {lam} | {first} | " + " | ".join(cells) + " |", flush=True)
print(f"\n{time.perf_counter() - tic:.0f} s")
