"""Accuracy of the sampled fit (``n_references = s``) against exact CDF-TS, downstream (docs/SCALING.md).

For every shared dataset with n >= 2000 (full data, no subsampling), every view
parameter of the paper's grid (clustering: lambda in {0.1, ..., 0.5}, epsilon
estimator; anomaly detection: the k-NN estimator's k in {5%n, ..., 50%n}), the
exact CDF-TS and the sampled fit for every s and seed (above FULL_GRID_MAX_N
points, the sampled fits at the one view parameter where the exact fit scores
best: there each downstream search costs minutes):

* the downstream score with the evaluation protocol's own search and grids
  (:func:`cdfts_dask.evaluation.protocol.search_clustering` with DBSCAN, best
  F-measure; :func:`~cdfts_dask.evaluation.protocol.search_anomaly` with kNN,
  best AUC), on the view's relative distances (:mod:`.representations`; the
  distances by ``scipy.spatial.distance.cdist``, bit-identical to
  :func:`cdfts_dask.oracle.pairwise_distances` and 36x faster);
* ``mean |Y_s - Y_exact|`` over all n d entries.

The best over the view parameter is reported per (dataset, s, seed), as the
paper's tables do.  One JSON record per run is appended to RECORDS (so a long
study can be stopped and resumed: runs already recorded are skipped); the
report and the figure are written from the records.

    python docs/scripts/sampled_fit_study.py ../shared/datasets docs/results/sampled_fit.jsonl [CACHE] \\
        > docs/results/sampled_fit.md      # figure: docs/figures/sampled_fit.png

(CACHE, default /tmp/cdfts-sampled-fit-cache, keeps the exact outputs between runs.)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.spatial.distance import cdist

from cdfts_dask import cdf_ts
from cdfts_dask.evaluation.datasets import load_labelled, shared_specs
from cdfts_dask.evaluation.grids import Grids
from cdfts_dask.evaluation.protocol import search_anomaly, search_clustering
from cdfts_dask.evaluation.representations import View, relative

SIZES = (250, 500, 1000, 2000)
SEEDS = (0, 1, 2)
MIN_N = 2000
#: above this n the sampled fits run at one view parameter only, the one where the exact fit scores best
#: (each downstream search on an n x n matrix takes minutes there); every exact fit still runs
FULL_GRID_MAX_N = 6000
GRIDS = Grids()


def view_params(task: str, n: int) -> list[dict]:
    """The protocol's CDF-TS parameter grid for the dataset's task."""
    if task == "clustering":
        return [{"lam": lam, "estimator": "epsilon"} for lam in GRIDS.clustering.lambdas]
    return [{"estimator": "knn", "k": k} for k in GRIDS.anomaly.ks(n)]


def score(task: str, P: np.ndarray, y: np.ndarray) -> float:
    """Best DBSCAN F-measure (clustering) or best kNN AUC (anomaly) over the protocol's grid."""
    D = relative(cdist(P, P))  # bit-identical to oracle.pairwise_distances (checked), 36x faster
    if task == "clustering":
        return float(search_clustering(D, y, GRIDS.clustering, ("DBSCAN",))["DBSCAN"][0])
    return float(search_anomaly(View(D, P), y, GRIDS.anomaly, ("kNN",))["kNN"][0])


def run(root: Path, records_path: Path, cache: Path, client) -> list[dict]:
    """Run what RECORDS does not hold yet; the exact outputs are kept in ``cache`` (.npy per parameter)."""
    cache.mkdir(parents=True, exist_ok=True)
    done = {}
    if records_path.exists():
        for line in records_path.read_text().splitlines():
            r = json.loads(line)
            done[(r["dataset"], json.dumps(r["params"]), r["s"], r["seed"])] = r
    data = {spec.name: (spec, *load_labelled(spec.path, spec.label)) for spec in shared_specs(root)}
    for spec, X, y in sorted(data.values(), key=lambda item: len(item[2])):  # smallest n first
        if len(y) < MIN_N:
            continue
        grid = view_params(spec.task, len(y))

        for params in grid:  # every exact fit first
            if (spec.name, json.dumps(params), None, None) not in done:
                _exact_fit(spec, X, y, params, cache, records_path, done, client)
        if len(y) > FULL_GRID_MAX_N:
            grid = [max(grid, key=lambda p: done[(spec.name, json.dumps(p), None, None)]["score"])]
        for params in grid:
            missing = _sampled_missing(done, spec.name, params)
            if not missing:
                continue
            if not _exact_path(cache, spec, params).exists():
                _exact_fit(spec, X, y, params, cache, records_path, done, client)  # for mean |dY|
            exact = np.load(_exact_path(cache, spec, params))
            for s, seed in missing:
                tic = time.perf_counter()
                Y, info = cdf_ts(X, delta=0.015, n_references=s, random_state=seed, return_info=True,
                                 **params)  # fmt: skip
                rec = {"dataset": spec.name, "task": spec.task, "n": len(y), "params": params, "s": s,
                       "seed": seed, "score": score(spec.task, Y, y),
                       "mean_abs_diff": float(np.abs(Y - exact).mean()), "n_iter": info.n_iter,
                       "seconds": time.perf_counter() - tic}  # fmt: skip
                _append(records_path, rec, done)
    return list(done.values())


def _exact_fit(spec, X, y, params: dict, cache: Path, records_path: Path, done: dict, client) -> None:
    """Exact CDF-TS of the dataset at one view parameter: its output cached, its score recorded.

    Where RECORDS holds the fit already (only its cached output is missing, e.g. a new CACHE folder),
    the output is cached and its score checked against the recorded one, not recorded a second time."""
    tic = time.perf_counter()
    Y, info = cdf_ts(X, delta=0.015, client=client, return_info=True, **params)
    np.save(_exact_path(cache, spec, params), Y)
    rec = {"dataset": spec.name, "task": spec.task, "n": len(y), "params": params, "s": None, "seed": None,
           "score": score(spec.task, Y, y), "mean_abs_diff": 0.0, "n_iter": info.n_iter,
           "seconds": time.perf_counter() - tic}  # fmt: skip
    recorded = done.get((spec.name, json.dumps(params), None, None))
    if recorded is None:
        _append(records_path, rec, done)
    elif recorded["n_iter"] != rec["n_iter"] or abs(recorded["score"] - rec["score"]) > 1e-9:
        raise SystemExit(f"{spec.name} {params}: the exact fit now scores {rec['score']} after "
                         f"{rec['n_iter']} iterations, RECORDS says {recorded['score']} after "
                         f"{recorded['n_iter']}")  # fmt: skip


def _sampled_missing(done: dict, name: str, params: dict) -> list[tuple[int, int]]:
    return [(s, seed) for s in SIZES for seed in SEEDS if (name, json.dumps(params), s, seed) not in done]


def _exact_path(cache: Path, spec, params: dict) -> Path:
    return cache / f"{spec.name}.{'-'.join(map(str, params.values()))}.npy"


def _append(path: Path, rec: dict, done: dict) -> None:
    with open(path, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    done[(rec["dataset"], json.dumps(rec["params"]), rec["s"], rec["seed"])] = rec
    line = f"{rec['dataset']} {rec['params']} s={rec['s']} seed={rec['seed']}: score {rec['score']:.4f} "
    print(line + f"mean|dY| {rec['mean_abs_diff']:.4f} ({rec['seconds']:.0f} s)", file=sys.stderr, flush=True)


def summarise(records: list[dict]) -> dict:
    """Per dataset, over the view parameters whose runs are all done (exact, every s and seed): the
    exact best score, and per s the per-seed best scores and mean |dY| (at the parameter that is best
    for the exact fit).  ``params_done`` / ``params_grid`` say how much of the grid that covers."""
    out = {}
    for name in sorted({r["dataset"] for r in records}):
        rs = [r for r in records if r["dataset"] == name]
        by_params: dict[str, list[dict]] = {}
        for r in rs:
            by_params.setdefault(json.dumps(r["params"]), []).append(r)
        complete = [runs for runs in by_params.values() if len(runs) == 1 + len(SIZES) * len(SEEDS)]
        if not complete:
            continue
        exact = [r for runs in complete for r in runs if r["s"] is None]
        best_exact = max(exact, key=lambda r: r["score"])
        grid = len(view_params(rs[0]["task"], rs[0]["n"]))
        row = {"task": rs[0]["task"], "n": rs[0]["n"], "exact": best_exact["score"],
               "exact_params": best_exact["params"], "params_done": len(complete), "params_grid": grid,
               "sizes": {}}  # fmt: skip
        for s in SIZES:
            per_seed = [
                max(r["score"] for runs in complete for r in runs if r["s"] == s and r["seed"] == seed)
                for seed in SEEDS
            ]
            diffs = [r["mean_abs_diff"] for runs in complete for r in runs
                     if r["s"] == s and r["params"] == best_exact["params"]]  # fmt: skip
            row["sizes"][s] = {"scores": per_seed, "mean_abs_diff": float(np.mean(diffs))}
        out[name] = row
    return out


def report(summary: dict) -> str:
    measure = {"clustering": "best DBSCAN F-measure", "anomaly": "best kNN AUC"}
    lines = [
        "| dataset (n) | downstream | view parameters | exact | "
        + " | ".join(f"s = {s}" for s in SIZES)
        + " |",
        "|---|---|---|---|" + "---|" * len(SIZES),
    ]
    gaps = {s: [] for s in SIZES}
    for name, row in summary.items():
        cells = []
        for s in SIZES:
            cell = row["sizes"].get(s)
            if cell is None:
                cells.append("not run")
                continue
            sc = np.array(cell["scores"])
            gaps[s].append(row["exact"] - sc.min())
            cells.append(f"{sc.mean():.3f} (min {sc.min():.3f}; mean abs dY {cell['mean_abs_diff']:.3f})")
        grid = f"{row['params_done']} of {row['params_grid']}"
        if row["n"] > FULL_GRID_MAX_N:
            grid += " (the exact fit's best; every exact fit ran)"
        lines.append(f"| {name} ({row['n']}) | {measure[row['task']]} | {grid} | {row['exact']:.3f} | "
                     + " | ".join(cells) + " |")  # fmt: skip
    lines.append("")
    for s in SIZES:
        if gaps[s]:
            lines.append(f"* s = {s}: worst drop below exact over datasets and seeds: {max(gaps[s]):.3f} "
                         f"({len(gaps[s])} dataset(s))")  # fmt: skip
    return "\n".join(lines)


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for i, (name, row) in enumerate(summary.items()):
        sizes = [s for s in SIZES if s in row["sizes"]]
        colour = f"C{i}"
        scores = [np.mean(row["sizes"][s]["scores"]) for s in sizes]
        lows = [np.min(row["sizes"][s]["scores"]) for s in sizes]
        axes[0].plot(sizes, scores, "o-", color=colour, label=f"{name} (sampled, mean of seeds)")
        axes[0].plot(sizes, lows, "v:", color=colour, alpha=0.6)
        axes[0].axhline(row["exact"], color=colour, ls="--", alpha=0.8, label=f"{name} exact")
        axes[1].plot(sizes, [row["sizes"][s]["mean_abs_diff"] for s in sizes], "o-", color=colour, label=name)
    axes[0].set(xscale="log", xlabel="references s", ylabel="downstream score (F or AUC)",
                title="downstream quality vs s (v: worst seed)")  # fmt: skip
    axes[1].set(xscale="log", yscale="log", xlabel="references s", ylabel="mean |Y_s - Y_exact|",
                title="distance to exact CDF-TS")  # fmt: skip
    for ax in axes:  # the four s values as plain numbers, no log-scale minor labels
        ax.set_xticks(SIZES, [str(s) for s in SIZES])
        ax.xaxis.set_minor_locator(NullLocator())
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    from distributed import Client, LocalCluster

    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets")
    records_path = Path(sys.argv[2] if len(sys.argv) > 2 else "docs/results/sampled_fit.jsonl")
    cache = Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/cdfts-sampled-fit-cache")
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        with Client(cluster) as c:
            records = run(root, records_path, cache, c)
    summary = summarise(records)
    print(report(summary))
    plot(summary, Path("docs/figures/sampled_fit.png"))


if __name__ == "__main__":
    main()
