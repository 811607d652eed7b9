"""How much does the stratified subsample (n = 2500) of pendigits and pageblocks change the best scores?

Runs the *same* search as ``cdfts evaluate`` on the views that are affordable at full size
(pendigits: original; pageblocks: original with kNN/LOF/iForest/iNNE, ReScale and DScale kNN
at lambda = 0.1 and 0.3, CDF-TS-kNN with the estimator k = 10% n), at full size and on the
seed-0 subsample the full run uses, plus a seed-1 subsample (sampling variation).

    python docs/scripts/subsample_check.py ../shared/datasets > docs/results/subsample_check.md
    python docs/scripts/subsample_check.py ../shared/datasets pendigits   # only the pendigits table
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from cdfts_dask.evaluation.datasets import load_labelled, subsample
from cdfts_dask.evaluation.grids import Grids
from cdfts_dask.evaluation.protocol import search_anomaly, search_clustering
from cdfts_dask.evaluation.representations import make_view

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets")
PARTS = set(sys.argv[2:]) or {"pendigits", "pageblocks"}
G = Grids()


def pendigits() -> list[str]:
    X, y = load_labelled(ROOT / "clustering" / "pendigits.csv")
    out = []
    for label, (Xs, ys) in {
        "full (10992)": (X, y),
        "subsample seed 0 (2500)": subsample(X, y, 2500, seed=0),
        "subsample seed 1 (2500)": subsample(X, y, 2500, seed=1),
    }.items():
        tic = time.perf_counter()
        best = search_clustering(make_view(Xs, "original").D, ys, G.clustering)
        cells = " | ".join(f"{best[a][0]:.3f}" for a in ("DBSCAN", "DP", "EC", "LGD"))
        out.append(f"| pendigits original | {label} | {cells} | {time.perf_counter() - tic:.0f} s |")
        print(out[-1], file=sys.stderr, flush=True)
    return out


def pageblocks() -> list[str]:
    X, y = load_labelled(ROOT / "anomaly" / "pageblocks.csv")
    out = []
    for label, (Xs, ys) in {
        "full (5473)": (X, y),
        "subsample seed 0 (2500)": subsample(X, y, 2500, seed=0),
        "subsample seed 1 (2500)": subsample(X, y, 2500, seed=1),
    }.items():
        tic = time.perf_counter()
        cells = []
        orig = search_anomaly(make_view(Xs, "original"), ys, G.anomaly, ("kNN", "LOF", "iForest", "iNNE"))
        cells += [f"{orig[a][0]:.3f}" for a in ("kNN", "LOF", "iForest", "iNNE")]
        for tr in ("rescale", "dscale"):
            s = max(
                search_anomaly(make_view(Xs, tr, lam=lam), ys, G.anomaly, ("kNN",))["kNN"][0]
                for lam in (0.1, 0.3)
            )
            cells.append(f"{s:.3f}")
        k = G.anomaly.ks(len(ys))[1]  # 10% n
        v = make_view(Xs, "cdfts", estimator="knn", k=k)
        cells.append(f"{search_anomaly(v, ys, G.anomaly, ('kNN',))['kNN'][0]:.3f}")
        out.append(f"| pageblocks | {label} | {' | '.join(cells)} | {time.perf_counter() - tic:.0f} s |")
        print(out[-1], file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    if "pendigits" in PARTS:
        print("| data | sample | DBSCAN | DP | EC | LGD | time |\n|---|---|---|---|---|---|---|")
        print("\n".join(pendigits()))
        print()
    if "pageblocks" in PARTS:
        print(
            "| data | sample | kNN | LOF | iForest | iNNE | ReScale-kNN (lambda 0.1, 0.3) | "
            "DScale-kNN (lambda 0.1, 0.3) | CDF-TS-kNN (estimator k = 10% n) | time |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(pageblocks()))
