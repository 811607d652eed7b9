"""Turn task records into the paper-style tables (Markdown, CSV) and the chosen-parameter JSON.

For each (dataset, algorithm, view):

* ``best``: the largest score over the algorithm's grid *and* the view's
  parameter (lambda, or k for CDF-TS-kNN) -- the paper's protocol;
* ``test``: the test-half score of the view parameter whose best train-half
  score is largest (train/test protocol).

The Markdown table shows ``ours (paper)`` per cell, an average row (over the
datasets that have a paper value, and over all datasets) and the count of
wins (#top 1, ties counted for every tied view) per algorithm.
"""

from __future__ import annotations

import csv
import io
import json

from .paper import EXACT, TRANSFORM_ORDER, paper_value
from .protocol import ANOMALY_ALGORITHMS, CLUSTERING_ALGORITHMS, ORIGINAL_ONLY

SHORT = {"original": "Orig", "rescale": "ReS", "dscale": "DS", "cdfts": "CDF-TS"}


def _canonical(record: dict) -> tuple:
    """The order in which tied records are considered: the view parameter (None first), then the
    downstream parameters.  It makes the chosen record independent of the order the tasks finished in."""
    tparam = record.get("tparam")
    return (tparam is not None, tparam or 0, json.dumps(record.get("params"), sort_keys=True, default=float))


def summarise(records: list[dict]) -> list[dict]:
    """One row per (task, dataset, algorithm, transform) with best / train-test scores and paper value.

    Ties (equal scores) go to the smallest view parameter, then the first downstream parameters in
    sorted JSON order (:func:`_canonical`), so the same records give the same rows in any order.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["task"], r["dataset"], r["algorithm"], r["transform"]), []).append(r)
    rows = []
    for (task, ds, alg, tr), recs in sorted(groups.items()):
        recs = sorted(recs, key=_canonical)
        best = max(recs, key=lambda r: r["score"])
        row = {
            "task": task,
            "dataset": ds,
            "algorithm": alg,
            "transform": tr,
            "n": best["n"],
            "score": best["score"],
            "tparam": best["tparam"],
            "params": best["params"],
            "n_iter": best.get("n_iter", 0),
            "ami": best.get("ami"),
        }
        tied = [r["score_tied_k"] for r in recs if "score_tied_k" in r]
        if tied:  # CDF-TS-kNN with the detector's k equal to the transform's k
            row["score_tied_k"] = max(tied)
        with_tt = [r for r in recs if "train_score" in r]
        if with_tt:
            chosen = max(with_tt, key=lambda r: r["train_score"])
            row.update(
                test_score=chosen["test_score"],
                train_tparam=chosen["tparam"],
                train_params=chosen["train_params"],
            )
        p = paper_value(task, ds, alg, tr)
        row["paper"] = p
        row["diff"] = None if p is None else row["score"] - p
        row["exact_version"] = ds in EXACT.get(task, set())
        rows.append(row)
    return rows


def _columns(task: str) -> list[tuple[str, str]]:
    if task == "clustering":
        return [(a, t) for a in CLUSTERING_ALGORITHMS for t in TRANSFORM_ORDER]
    return [(a, "original") for a in ORIGINAL_ONLY] + [("kNN", t) for t in TRANSFORM_ORDER]


def _mean(vals: list[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def markdown_table(rows: list[dict], task: str, key: str = "score", with_paper: bool = True) -> str:
    """Paper-style table for one task; ``key`` is ``score`` (best over grid) or ``test_score``."""
    cols = _columns(task)
    table = {(r["dataset"], r["algorithm"], r["transform"]): r for r in rows if r["task"] == task}
    datasets = sorted({d for d, _, _ in table}, key=lambda d: (d in ("3L", "4C", "syn1", "syn2"), d))
    head = (
        "| Data | " + " | ".join(f"{a} {SHORT[t]}" if a not in ORIGINAL_ONLY else a for a, t in cols) + " |"
    )
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    wins = {c: 0 for c in cols}
    ours_all: dict[tuple, list[float]] = {c: [] for c in cols}
    ours_p: dict[tuple, list[float]] = {c: [] for c in cols}
    paper_p: dict[tuple, list[float]] = {c: [] for c in cols}
    for ds in datasets:
        cells = []
        vals = {c: table.get((ds, *c), {}).get(key) for c in cols}
        for alg in {a for a, _ in cols}:
            group = [c for c in cols if c[0] == alg]
            if len(group) > 1:
                top = max((vals[c] for c in group if vals[c] is not None), default=None)
                for c in group:
                    if top is not None and vals[c] is not None and vals[c] >= top - 1e-12:
                        wins[c] += 1
        for c in cols:
            r = table.get((ds, *c))
            v = vals[c]
            if v is None:
                cells.append("–")
                continue
            ours_all[c].append(v)
            p = r["paper"] if with_paper else None
            if p is not None:
                ours_p[c].append(v)
                paper_p[c].append(p)
            cells.append(f"{v:.2f}" + (f" ({p:.2f})" if p is not None else ""))
        exact = [r.get("exact_version", True) for (d, _, _), r in table.items() if d == ds]
        mark = "" if all(exact) else "†"  # from any of the dataset's rows, not only the first column's
        lines.append(f"| {ds}{mark} | " + " | ".join(cells) + " |")
    avg = []
    for c in cols:
        o, p = _mean(ours_p[c]), _mean(paper_p[c])
        avg.append("–" if o is None else f"{o:.3f}" + (f" ({p:.3f})" if with_paper and p is not None else ""))
    lines.append("| Average (datasets with a paper value) | " + " | ".join(avg) + " |")
    lines.append(
        "| Average (all datasets) | "
        + " | ".join("–" if _mean(ours_all[c]) is None else f"{_mean(ours_all[c]):.3f}" for c in cols)
        + " |"
    )
    lines.append(
        "| #Top 1 (best of the algorithm's views) | "
        + " | ".join(str(wins[c]) if len([x for x in cols if x[0] == c[0]]) > 1 else "" for c in cols)
        + " |"
    )
    if any(paper_p[c] for c in cols):
        metric = "best F-measure" if task == "clustering" else "best ROC AUC"
        if key != "score":
            metric = f"{key.replace('_', ' ')}"
        lines += ["", f"Values in parentheses are the paper's; the others are this run's {metric}."]
    if any(not r.get("exact_version", True) for r in table.values()):
        lines += ["", "† the exact version of the paper's dataset is unknown (see the datasets' SOURCES.md)."]
    return "\n".join(lines) + "\n"


def csv_text(rows: list[dict]) -> str:
    fields = [
        "task",
        "dataset",
        "algorithm",
        "transform",
        "n",
        "score",
        "paper",
        "diff",
        "exact_version",
        "tparam",
        "params",
        "n_iter",
        "ami",
        "score_tied_k",
        "test_score",
        "train_tparam",
        "train_params",
    ]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        out = dict(r)
        for f in ("params", "train_params"):
            if f in out:
                out[f] = json.dumps(out[f], default=float, sort_keys=True)
        for f in ("score", "paper", "diff", "ami", "score_tied_k", "test_score"):
            if isinstance(out.get(f), float):
                out[f] = f"{out[f]:.4f}"
        w.writerow(out)
    return buf.getvalue()


def chosen_parameters(rows: list[dict]) -> dict:
    """``{task: {dataset: {algorithm: {transform: {...}}}}}`` of the best-over-grid
    and train-chosen parameters."""
    out: dict = {}
    for r in rows:
        entry = {"score": r["score"], "view_param": r["tparam"], "params": r["params"]}
        if "test_score" in r:
            entry.update(
                test_score=r["test_score"], train_view_param=r["train_tparam"], train_params=r["train_params"]
            )
        out.setdefault(r["task"], {}).setdefault(r["dataset"], {}).setdefault(r["algorithm"], {})[
            r["transform"]
        ] = entry
    return out


def differences(rows: list[dict], threshold: float = 0.03) -> list[dict]:
    """Rows whose best score differs from the paper's by more than ``threshold``."""
    return [r for r in rows if r["diff"] is not None and abs(r["diff"]) > threshold]


#: the reproduction targets: (task, algorithm) whose CDF-TS version should be within 0.03 of the paper
TARGETS = (("clustering", "DBSCAN"), ("clustering", "DP"), ("anomaly", "kNN"))


#: the baselines ported from their authors' code: (algorithm, views) that should match the paper
BASELINE_TARGETS = (("DBSCAN", ("dscale",)), ("EC", TRANSFORM_ORDER), ("LGD", TRANSFORM_ORDER))
#: the reference cells that tell whether a dataset is the paper's version (textbook algorithms)
DATA_CHECK = (("DBSCAN", "original"), ("DP", "original"))


def data_known_good(rows: list[dict], tol: float = 0.03) -> set[str]:
    """Clustering datasets whose original-data DBSCAN and DP cells are within ``tol`` of the paper."""
    ok: dict[str, bool] = {}
    for r in rows:
        if r["task"] == "clustering" and (r["algorithm"], r["transform"]) in DATA_CHECK:
            good = r["diff"] is not None and abs(r["diff"]) <= tol
            ok[r["dataset"]] = ok.get(r["dataset"], True) and good
    return {d for d, good in ok.items() if good}


def baseline_targets_lines(rows: list[dict], tol: float = 0.03) -> list[str]:
    """DScale-DBSCAN, EC and LGD (the ported baselines) within ``tol`` of the paper, both ways, on the
    datasets whose original-data DBSCAN and DP match the paper (:func:`data_known_good`)."""
    good = data_known_good(rows, tol)
    lines = [
        f"## Ported baselines within {tol:.2f} of the paper (either way), data-version-good datasets",
        "",
        f"Datasets whose original-data DBSCAN and DP are within {tol:.2f}: {', '.join(sorted(good))}.",
        "",
        "| Algorithm | View | met | of | misses (diff) |",
        "|---|---|---|---|---|",
    ]
    met_all = total_all = 0
    for alg, views in BASELINE_TARGETS:
        for view in views:
            cells = [
                r
                for r in sorted(rows, key=lambda r: r["dataset"])
                if (r["task"], r["algorithm"], r["transform"]) == ("clustering", alg, view)
                and r["dataset"] in good
                and r["diff"] is not None
            ]
            misses = [r for r in cells if abs(r["diff"]) > tol]
            met_all += len(cells) - len(misses)
            total_all += len(cells)
            miss = ", ".join(f"{r['dataset']} {r['diff']:+.3f}" for r in misses) or "-"
            lines.append(f"| {alg} | {SHORT[view]} | {len(cells) - len(misses)} | {len(cells)} | {miss} |")
    lines += ["", f"Met: {met_all} of {total_all}."]
    return lines


def targets_markdown(rows: list[dict], tol: float = 0.03) -> str:
    """Targets check: CDF-TS DBSCAN / DP (F-measure) and kNN (AUC) within ``tol`` of the paper or better
    on exact-version datasets; CDF-TS >= original on average for every algorithm; all |diff| > tol."""
    lines = [f"## CDF-TS within {tol:.2f} of the paper (or better), exact-version datasets", ""]
    lines += ["| Task | Algorithm | Dataset | ours | paper | diff | met |", "|---|---|---|---|---|---|---|"]
    met = total = 0
    for task, alg in TARGETS:
        for r in sorted(rows, key=lambda r: r["dataset"]):
            if (r["task"], r["algorithm"], r["transform"]) != (task, alg, "cdfts") or r["paper"] is None:
                continue
            if not r["exact_version"]:
                continue
            ok = r["diff"] >= -tol
            met += ok
            total += 1
            lines.append(
                f"| {task} | {alg} | {r['dataset']} | {r['score']:.3f} | {r['paper']:.3f} | "
                f"{r['diff']:+.3f} | {'yes' if ok else '**no**'} |"
            )
    lines += ["", f"Met: {met} of {total}.", "", "## CDF-TS vs original, average over all datasets", ""]
    lines += ["| Task | Algorithm | original | CDF-TS | CDF-TS >= original |", "|---|---|---|---|---|"]
    for task, algs in (("clustering", CLUSTERING_ALGORITHMS), ("anomaly", ("kNN",))):
        for alg in algs:
            by = {}
            for r in rows:
                if r["task"] == task and r["algorithm"] == alg:
                    by.setdefault(r["dataset"], {})[r["transform"]] = r["score"]
            both = [v for v in by.values() if "original" in v and "cdfts" in v]
            if not both:
                continue
            o = sum(v["original"] for v in both) / len(both)
            c = sum(v["cdfts"] for v in both) / len(both)
            lines.append(f"| {task} | {alg} | {o:.3f} | {c:.3f} | {'yes' if c >= o else '**no**'} |")
    lines += ["", *baseline_targets_lines(rows, tol)]
    lines += ["", f"## Every difference from the paper larger than {tol:.2f}", ""]
    lines += [
        "| Task | Dataset | Algorithm | View | ours | paper | diff | exact version |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(
        differences(rows, tol), key=lambda r: (r["task"], r["dataset"], r["algorithm"], r["transform"])
    ):
        lines.append(
            f"| {r['task']} | {r['dataset']} | {r['algorithm']} | {SHORT[r['transform']]} | "
            f"{r['score']:.3f} | {r['paper']:.3f} | {r['diff']:+.3f} | "
            f"{'yes' if r['exact_version'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "targets_markdown",
    "summarise",
    "markdown_table",
    "csv_text",
    "chosen_parameters",
    "differences",
    "CLUSTERING_ALGORITHMS",
    "ANOMALY_ALGORITHMS",
]
