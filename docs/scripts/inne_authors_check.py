"""iNNE against the authors' code (``zhuye88/iNNE``): what each of its choices does to the best AUC.

``cdfts evaluate`` scores iNNE with :func:`cdfts_dask.evaluation.inne.inne_scores`, which follows the
authors' ``function/Cigrid.m`` (a subsample keeps one of equal rows, drawn again below 2 distinct)
and ``function/iNNE.m`` (x is covered by a sphere when strictly inside it, ``D < radius``).  This
study takes those choices one at a time, over the paper's grid (t = 100, psi in {2, ..., 1024},
seed 0, the first ``psi`` of each member's draw as in ``inne_scores``), on the 10 anomaly datasets
(min-max normalised, stratified-subsampled to 2500 rows as ``cdfts evaluate``):

* ``ours``: ``inne_scores`` itself (the table's cell);
* ``as before 2026-11-24``: every drawn row kept (a duplicate is a sphere of radius 0) and ``<=``;
* ``repeats kept``: ``ours`` with every drawn row kept (spheres of radius 0 cover nothing);
* ``<= cover``: ``ours`` with a point on a sphere's surface covered;
* ``radius-1 sentinel``: the newer ``iNNE.m`` to the letter: the spheres that do not cover x get
  radius 1 (in the units of the normalised data) before the smallest is taken, so where every
  covering sphere is wider than 1 a sphere that does not cover x is chosen;
* ``nearest centre``: the older ``iNNE.m`` (commit fafd4c3): x is scored by its nearest centre's
  sphere, covered when strictly inside it.

The first column is checked equal to the rule-by-rule port with both authors' choices, so the
other columns differ from it by their one rule only.  A second table repeats ``ours`` and ``nearest
centre`` over seeds 0-4 where the two differ most (ant, tomcat) and on dermatology, to tell their
gap from one seed's luck.

    python docs/scripts/inne_authors_check.py ../shared/datasets > docs/results/inne_authors_check.md
"""

from __future__ import annotations

import sys
import time

import numpy as np

from cdfts_dask.evaluation.datasets import load_labelled, shared_specs, subsample
from cdfts_dask.evaluation.grids import AnomalyGrid
from cdfts_dask.evaluation.inne import inne_scores
from cdfts_dask.evaluation.metrics import auc
from cdfts_dask.evaluation.paper import paper_value
from cdfts_dask.evaluation.representations import make_view
from cdfts_dask.oracle import pairwise_distances

ROOT = sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets"
GRID = AnomalyGrid()


def variant_scores(
    X: np.ndarray, D: np.ndarray, psi: int, t: int, *, dedupe: bool, strict: bool, choose: str, seed: int = 0
) -> np.ndarray:
    """iNNE with one rule set: ``dedupe`` (one of equal rows per subsample), ``strict`` (cover with
    ``<``), ``choose`` in {"smallest", "sentinel", "nearest"} (the sphere x is scored by).  D holds
    the distances in the units of X (the sentinel compares radii with 1)."""
    n = X.shape[0]
    psi = int(min(max(psi, 2), n))
    rng = np.random.default_rng(seed)
    total = np.zeros(n)
    for _ in range(t):
        while True:
            idx = rng.choice(n, size=psi, replace=False)
            if not dedupe:
                break
            _, first = np.unique(X[idx], axis=0, return_index=True)
            if len(first) >= 2:
                idx = idx[first]
                break
        dxc = D[:, idx]
        dcc = dxc[idx].copy()
        np.fill_diagonal(dcc, np.inf)
        eta = dcc.argmin(axis=1)
        tau = dcc[np.arange(len(idx)), eta]
        covered = dxc < tau if strict else dxc <= tau
        if choose == "nearest":
            best = dxc.argmin(axis=1)
            inside = covered[np.arange(n), best]
        else:
            fill = 1.0 if choose == "sentinel" else np.inf
            best = np.where(covered, tau, fill).argmin(axis=1)
            inside = covered.any(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(tau[best] > 0, tau[eta[best]] / tau[best], 1.0)
        total += np.where(inside, 1.0 - ratio, 1.0)
    return total / t


VARIANTS = {
    "as before 2026-11-24": dict(dedupe=False, strict=False, choose="smallest"),
    "repeats kept": dict(dedupe=False, strict=True, choose="smallest"),
    "<= cover": dict(dedupe=True, strict=False, choose="smallest"),
    "radius-1 sentinel": dict(dedupe=True, strict=True, choose="sentinel"),
    "nearest centre": dict(dedupe=True, strict=True, choose="nearest"),
}


def best_over_psi(y: np.ndarray, n: int, scores_of) -> tuple[float, int]:
    """The best AUC over the psi grid (``search_anomaly``'s stop rule) and its psi."""
    best = (-1.0, 0)
    for psi in GRID.psi:
        if psi > n and psi // 2 >= n:
            break
        best = max(best, (auc(y, scores_of(psi)), psi), key=lambda b: b[0])
    return best


def dataset_cells(X: np.ndarray, y: np.ndarray) -> tuple[list[tuple[float, int]], int]:
    """The row's cells (``ours`` first, then :data:`VARIANTS`) and the number of distinct rows."""
    view = make_view(X, "original")
    P, n = view.points, len(y)
    D = pairwise_distances(P)  # the normalised data's units (the sentinel's 1)

    def best(rules: dict | None) -> tuple[float, int]:
        if rules is None:
            return best_over_psi(y, n, lambda psi: inne_scores(P, psi, GRID.trees, D=view.D))
        return best_over_psi(y, n, lambda psi: variant_scores(P, D, psi, GRID.trees, **rules))

    ours = best(None)
    port = best(dict(dedupe=True, strict=True, choose="smallest"))
    assert abs(ours[0] - port[0]) < 1e-12 and ours[1] == port[1], (ours, port)
    return [ours] + [best(rules) for rules in VARIANTS.values()], len(np.unique(P, axis=0))


def seed_best(P: np.ndarray, D: np.ndarray, y: np.ndarray, rule: str, seed: int) -> float:
    """Best AUC over psi of the authors' rules with sphere choice ``rule``, for one seed."""
    rules = dict(dedupe=True, strict=True, choose=rule, seed=seed)
    return best_over_psi(y, len(y), lambda psi: variant_scores(P, D, psi, GRID.trees, **rules))[0]


def main() -> None:
    tic = time.perf_counter()
    columns = ["ours", *VARIANTS]
    print("| data | n | distinct rows | " + " | ".join(columns) + " | paper |")
    print("|" + "---|" * (len(columns) + 4))
    for spec in shared_specs(ROOT):
        if spec.task != "anomaly":
            continue
        X, y = load_labelled(spec.path, spec.label)
        X, y = subsample(X, y, 2500)
        cells, distinct = dataset_cells(X, y)
        paper = paper_value("anomaly", spec.name, "iNNE", "original")
        shown = " | ".join(f"{s:.4f} ({psi})" for s, psi in cells)
        paper_cell = "" if paper is None else f"{paper:.2f}"
        print(f"| {spec.name} | {len(y)} | {distinct} | {shown} | {paper_cell} |")
    print("\nBest ROC AUC over psi (the psi in parentheses).\n")
    print("| data | rule | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | mean |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in shared_specs(ROOT):
        if spec.task != "anomaly" or spec.name not in ("ant", "tomcat", "dermatology"):
            continue
        X, y = load_labelled(spec.path, spec.label)
        X, y = subsample(X, y, 2500)
        P = make_view(X, "original").points
        D = pairwise_distances(P)
        for rule in ("smallest", "nearest"):
            best = [seed_best(P, D, y, rule, seed) for seed in range(5)]
            shown = " | ".join(f"{b:.4f}" for b in best)
            name = "ours (smallest covering)" if rule == "smallest" else "nearest centre"
            print(f"| {spec.name} | {name} | {shown} | {np.mean(best):.4f} |")
    print(f"\n{time.perf_counter() - tic:.0f} s.")


if __name__ == "__main__":
    main()
