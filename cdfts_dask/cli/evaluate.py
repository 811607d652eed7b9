"""``cdfts evaluate``: the paper's clustering / anomaly-detection comparison, run on a Dask cluster.

One Dask task per (dataset, view, view parameter): it builds the view
(original, ReScale, DScale or CDF-TS), searches every algorithm's grid and
the train/test protocol, and returns one record per algorithm.  Writes
``OUT/clustering.md``, ``OUT/anomaly.md`` (best over grid, ``ours (paper)``),
``OUT/*_traintest.md`` (with ``--train-test``), ``OUT/results.csv``,
``OUT/parameters.json``, ``OUT/targets.md`` (CDF-TS vs the paper, every
difference > 0.03), ``OUT/records.json`` / ``records.jsonl`` and
``OUT/runtime.txt``, and ``OUT/settings.json`` (the options every record depends on, and per
dataset its --label and its file's SHA-256).
The tables and other files derived from the records are removed once the run's cluster is up and
written when it ends (an interrupted run leaves ``records.jsonl`` and ``settings.json`` only), each
under a temporary name first.  ``--resume`` keeps the records already in ``OUT/records.jsonl``
(checked line by line, and against ``settings.json``: a resume with another eps step or
--train-test, a kept record made on another n, or of a dataset with another --label or file, is
refused; a last line cut short by a killed run is dropped and its task run again) and runs only
the tasks without them; the records of datasets outside this run (``--only``) stay in
``records.jsonl`` as they were, out of this run's tables.  Datasets are named by file name (two of
one name are refused), read by absolute path (the workers open them again), and never among the
files written to ``OUT``; anomaly labels must be 0 and 1, with both in the points each task uses.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..paths import refuse_url, replaced_atomically
from .options import HelpFormatter, add_cluster_arguments, check_cluster_arguments, dask_quiet


def register(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="reproduce the paper's best F-measure / best AUC tables",
        description="Run DBSCAN, DP, EC, LGD (F-measure) and kNN, LOF, iForest, iNNE (ROC AUC) "
        "on the original, ReScale, DScale and CDF-TS views of every dataset, with the paper's "
        "parameter grids, in parallel on Dask.",
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--datasets",
        default=None,
        help="directory laid out like ../shared/datasets (clustering/, anomaly/, synthetic/)",
    )
    p.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="FILE",
        help="a labelled CSV/.npy/.zarr file to evaluate (repeatable); see --task and --label",
    )
    p.add_argument(
        "--task",
        choices=["clustering", "anomaly"],
        default="clustering",
        help="task for --data files (anomaly labels: 0 = normal, 1 = anomaly)",
    )
    p.add_argument("--label", default="label", help="label column of --data files (name or index, -1 = last)")
    p.add_argument("--only", default=None, help="comma-separated dataset names to keep")
    p.add_argument("--out", default="evaluation-results", help="output directory")
    p.add_argument(
        "--eps-step", type=float, default=0.001, help="step of the eps grid over (0, 1], in [1e-5, 0.5]"
    )
    p.add_argument(
        "--dbscan-eps-step", type=float, default=None, help="DBSCAN's eps grid step (default: --eps-step)"
    )
    p.add_argument(
        "--max-n",
        type=int,
        default=2500,
        help="clustering datasets larger than this are stratified-subsampled (dense O(n^2) views)",
    )
    p.add_argument("--max-n-anomaly", type=int, default=2500, help="the same for anomaly datasets")
    p.add_argument(
        "--train-test",
        action="store_true",
        help="also run the train/test protocol (choose parameters on one stratified half, report the "
        "other half; about 1.4x the run time); the paper's tables need only the best over the grid",
    )
    p.add_argument("--no-train-test", action="store_true", help=argparse.SUPPRESS)  # the default
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the records in OUT/records.jsonl and run only the tasks that have none "
        "(an interrupted run continues; the tables cover old and new records)",
    )
    add_cluster_arguments(p)
    p.add_argument("--quiet", action="store_true", help="no per-task progress")
    p.set_defaults(func=run)


def build_tasks(args) -> list:
    from ..evaluation.datasets import DatasetSpec, load_labelled, shared_specs
    from ..evaluation.grids import make_grids
    from ..evaluation.protocol import Task

    check_cluster_arguments(args)
    _check_eps_step("--eps-step", args.eps_step)
    if args.dbscan_eps_step is not None:
        _check_eps_step("--dbscan-eps-step", args.dbscan_eps_step)
    for option in ("max_n", "max_n_anomaly"):
        if getattr(args, option) < 2:
            raise ValueError(f"--{option.replace('_', '-')} must be at least 2, got {getattr(args, option)}")
    named_paths = [("--datasets", args.datasets), ("--out", args.out)] + [("--data", f) for f in args.data]
    for option, path in named_paths:
        refuse_url(path, option)
    # absolute paths: the workers open them again, maybe in another working directory
    specs = shared_specs(Path(args.datasets).resolve()) if args.datasets else []
    specs += [DatasetSpec(Path(f).stem, args.task, str(Path(f).resolve()), args.label) for f in args.data]
    specs = _distinct_datasets(specs)
    if args.only is not None:
        keep = {s.strip() for s in args.only.split(",")} - {""}
        if not keep:  # "" selected every dataset
            raise ValueError(f"--only: give one or more dataset names (comma-separated), got {args.only!r}")
        unknown = sorted(keep - {s.name for s in specs})
        if unknown:
            raise ValueError(f"--only: no dataset named {', '.join(map(repr, unknown))} among those given")
        specs = [s for s in specs if s.name in keep]
    if not specs:
        raise ValueError("no datasets: give --datasets DIR and/or --data FILE")
    _check_inputs_are_not_outputs(specs, Path(args.out), args.datasets)
    grids = make_grids(args.eps_step, args.dbscan_eps_step)
    tt = _train_test(args)
    tasks = []
    for spec in specs:
        max_n = args.max_n if spec.task == "clustering" else args.max_n_anomaly
        # validate now: fail before starting the cluster
        X, y = load_labelled(spec.path, spec.label, anomaly=spec.task == "anomaly")
        n = min(len(y), max_n)
        _check_enough_points_for_ec(spec, len(y), max_n, tt)
        if spec.task == "clustering":
            _check_two_classes(spec, y)
        if spec.task == "anomaly":
            _check_both_classes(spec, X, y, max_n, tt)
        tasks.append(Task(spec, "original", None, max_n, tt, grids, len(y)))
        for lam in grids.clustering.lambdas:
            tasks.append(Task(spec, "rescale", lam, max_n, tt, grids, len(y)))
            tasks.append(Task(spec, "dscale", lam, max_n, tt, grids, len(y)))
            if spec.task == "clustering":
                tasks.append(Task(spec, "cdfts", lam, max_n, tt, grids, len(y)))
        if spec.task == "anomaly":
            for k in grids.anomaly.ks(n):
                tasks.append(Task(spec, "cdfts", k, max_n, tt, grids, len(y)))
        del X, y
    return tasks


def _train_test(args) -> bool:
    """Whether the train/test protocol runs (``--no-train-test``, the default, wins)."""
    return bool(args.train_test and not args.no_train_test)


#: the smallest eps grid step: a grid of at most 10^5 values (the default 0.001 gives 1000)
MIN_EPS_STEP = 1e-5


def _check_eps_step(option: str, step: float) -> None:
    """An eps grid step in [MIN_EPS_STEP, 0.5]: a smaller one would build a grid of 1/step values
    (1e-9: 10^9 values, every one searched by DBSCAN / DP / EC)."""
    if not (MIN_EPS_STEP <= step <= 0.5):
        raise ValueError(
            f"{option} must be in [{MIN_EPS_STEP:g}, 0.5] (a grid of at most {round(1 / MIN_EPS_STEP)} "
            f"values), got {step}"
        )


#: what ``run`` derives from the records (removed when a run starts, written when it ends)
DERIVED = (
    "records.json", "results.csv", "parameters.json", "clustering.md", "anomaly.md",
    "clustering_traintest.md", "anomaly_traintest.md", "targets.md", "runtime.txt",
)  # fmt: skip
#: every file ``run`` writes into ``--out``
WRITTEN = ("records.jsonl", "settings.json", *DERIVED)


def _distinct_datasets(specs: list) -> list:
    """The specs, each once.  Within a task, datasets are told apart by name in the records and tables:
    two different ones of one name would be merged (each cell the better of the two), so they are
    refused.  One name in both tasks (the shared collection's dermatology) is two datasets."""
    seen: dict[str, object] = {}
    for spec in specs:
        if spec.key in seen and spec != seen[spec.key]:
            raise ValueError(
                f"two {spec.task} datasets are named {spec.name!r} ({seen[spec.key].path!r} and "
                f"{spec.path!r}): the records and tables name datasets by file name; rename one file"
            )
        seen[spec.key] = spec
    return list(seen.values())


def _check_inputs_are_not_outputs(specs, out: Path, datasets: str | None = None) -> None:
    """Refuse an ``--out`` that is a file, that is one of the folders ``--datasets`` reads its datasets
    from (its ``results.csv`` would be a dataset of the next run there), or that would overwrite a
    dataset given as ``--data``."""
    from ..evaluation.datasets import DATASET_FOLDERS

    if out.exists() and not out.is_dir():  # was a bare "[Errno 17] File exists" once the cluster was up
        raise ValueError(f"--out: {str(out)!r} is a file; give a folder (it is made if it does not exist)")
    if datasets is not None and out.resolve() in {Path(datasets, sub).resolve() for sub in DATASET_FOLDERS}:
        raise ValueError(
            f"--out: {str(out)!r} is a folder --datasets {datasets!r} reads its datasets from: the results "
            "written there (results.csv) would be read as a dataset by the next run; choose another --out"
        )
    written = {(out / name).resolve() for name in WRITTEN}
    for spec in specs:
        if Path(spec.path).resolve() in written:
            raise ValueError(
                f"--data: {spec.path!r} would be overwritten by the results written to --out {str(out)!r}; "
                "choose another --out"
            )


def _check_enough_points_for_ec(spec, rows: int, max_n: int, train_test: bool) -> None:
    """EC (clustering datasets) needs :data:`ec.MIN_POINTS` points, on each half under --train-test."""
    from ..evaluation.ec import MIN_POINTS

    n = min(rows, max_n)
    smallest = n // 2 if train_test else n
    if spec.task == "clustering" and smallest < MIN_POINTS:
        part = " on each train/test half" if train_test else ""
        raise ValueError(
            f"dataset {spec.name!r}: EC needs at least {MIN_POINTS} points{part}, got {smallest} "
            f"({rows} rows, --max-n {max_n})"
        )


def _check_two_classes(spec, y) -> None:
    """A clustering dataset's best F-measure tells clusterings apart only with two or more classes: one
    cluster of every point scores 1 against one class (every cell 1.00, exit 0): refused, one line."""
    if len(set(y.tolist())) < 2:
        raise ValueError(
            f"clustering dataset {spec.name!r}: its labels (--label {spec.label!r}) are all one class; "
            "the best F-measure needs two or more (one cluster of every point scores 1 against one class)"
        )


def _check_both_classes(spec, X, y, max_n: int, train_test: bool) -> None:
    """An anomaly dataset's AUC needs normal points and anomalies: in its labels, in the stratified
    subsample of ``max_n`` points its tasks draw (:func:`~cdfts_dask.evaluation.datasets.subsample`, as
    :func:`~cdfts_dask.evaluation.protocol.run_task` draws it) and, under --train-test, in each half
    (:func:`~cdfts_dask.evaluation.datasets.halves`, as the protocol splits it).  A sample of one class
    scored nan in every cell, exit 0: refused, one line naming the dataset, the counts and the option."""
    import numpy as np

    from ..evaluation.datasets import halves, subsample

    def counts(labels) -> str:
        anomalies = int(np.count_nonzero(labels))
        return f"{len(labels) - anomalies} normal and {anomalies} anomalous"

    where = f"anomaly dataset {spec.name!r}: AUC needs normal points and anomalies"
    if len(np.unique(y)) < 2:
        raise ValueError(f"{where}, and its labels (--label {spec.label!r}) mark {counts(y)} points")
    kept = f"the {max_n} points --max-n-anomaly {max_n} keeps of its {len(y)}" if len(y) > max_n else None
    try:
        _, ys = subsample(X, y, max_n)
    except ValueError:  # scikit-learn's stratified split: a class of one point
        raise ValueError(
            f"{where}: a stratified sample of {kept} ({counts(y)}) needs 2 points of each; "
            f"raise --max-n-anomaly to {len(y)}"
        ) from None
    if len(np.unique(ys)) < 2:
        raise ValueError(
            f"{where}, and {kept} ({counts(y)}) are {counts(ys)}: raise --max-n-anomaly"
        )
    if train_test:
        for half, idx in zip(("train", "test"), halves(ys), strict=True):
            if len(np.unique(ys[idx])) < 2:
                more = " or raise --max-n-anomaly" if len(y) > max_n else ""
                raise ValueError(
                    f"{where}, and under --train-test the {half} half of {kept or f'its {len(y)} points'} "
                    f"holds {counts(ys[idx])} points: run without --train-test{more}"
                )


def _cost(task) -> float:
    """Rough relative run time of a task, for ordering: O(n^2) views, CDF-TS iterating ~10 times."""
    n = min(task.n_points, task.max_n or task.n_points)
    per_view = 10.0 if task.transform == "cdfts" else (3.0 if task.transform == "original" else 1.0)
    return n * n * per_view


def _expected_algorithms(task) -> set[str]:
    from ..evaluation.protocol import _algorithms

    return set(_algorithms(task))


def _record_label(rec: dict) -> str:
    p = "" if rec["tparam"] is None else f" {rec['tparam']}"
    return f"{rec['task']}/{rec['dataset']} {rec['transform']}{p}"


def load_done(path: Path, tasks: list) -> tuple[list[dict], set[str], list[tuple[str, dict]]]:
    """Records of ``path`` (records.jsonl): those of this run's ``tasks`` that are complete, the labels
    of those tasks, and every record of a task outside ``tasks`` as ``(line, record)``.

    Every line must be a JSON record with the fields a task writes, and no two the record of one task's
    one algorithm (a repeated one would silently replace the other); a task counts as done only
    when it has a record for each of its algorithms (the records of an incomplete one are dropped: it
    runs again).  The records of other tasks (datasets left out by ``--only`` or not given) are not
    used by this run; :func:`_start_output` keeps their lines verbatim."""
    if not path.exists():
        return [], set(), []
    need = ("task", "dataset", "transform", "tparam", "algorithm", "score", "params", "n")
    labels = {t.label for t in tasks}
    by_label: dict[str, dict[str, dict]] = {}
    others: list[tuple[str, dict]] = []
    first_line: dict[tuple[str, str], int] = {}
    text = path.read_text()
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines) and not text.endswith("\n"):
                # the run was killed while appending: the cut line's task is simply run again
                print(f"{path}: line {i} was cut short (a killed run); its task runs again", file=sys.stderr)
                break
            raise ValueError(f"{path}: line {i} is not JSON ({exc.msg}); cannot resume") from None
        if not isinstance(rec, dict) or any(k not in rec for k in need):
            raise ValueError(
                f"{path}: line {i} is not a task record (needs {', '.join(need)}); cannot resume"
            )
        wrong = _wrong_record_value(rec)
        if wrong is not None:
            raise ValueError(f"{path}: line {i} is not a task record ({wrong}); cannot resume")
        key = (_record_label(rec), rec["algorithm"])
        if key in first_line:
            raise ValueError(
                f"{path}: line {i} repeats the record of task {key[0]!r}, algorithm {key[1]!r} (first at "
                f"line {first_line[key]}): a task writes one record per algorithm; remove the wrong one to "
                "resume"
            )
        first_line[key] = i
        if _record_label(rec) in labels:
            by_label.setdefault(_record_label(rec), {})[rec["algorithm"]] = rec
        else:
            others.append((line, rec))
    records, done = [], set()
    for t in tasks:
        have = by_label.get(t.label, {})
        for rec in have.values():
            _check_same_run(path, t, rec)
        if set(have) >= _expected_algorithms(t):
            done.add(t.label)
            records.extend(have[a] for a in sorted(_expected_algorithms(t)))
    return records, done, others


#: a record's scores (F-measure or AUC) and their ranges; ``ami`` (adjusted mutual information) may dip
#: below 0 by chance
_SCORE_RANGES = {
    "score": (0.0, 1.0), "test_score": (0.0, 1.0), "score_tied_k": (0.0, 1.0), "ami": (-1.0, 1.0)
}


def _wrong_record_value(rec: dict) -> str | None:
    """What is wrong with a record's values, or None: every score a finite number in its range
    (:data:`_SCORE_RANGES`; those a task writes), ``n`` a positive integer, ``params`` a mapping,
    ``tparam`` null or a number, ``task``, ``dataset``, ``transform`` and ``algorithm`` texts.  A kept
    record goes into the tables as it is: an edited or damaged one must not."""
    for key, (lo, hi) in _SCORE_RANGES.items():
        if key not in rec:
            continue
        value = rec[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            return f"{key} {value!r} is not a number in [{lo:g}, {hi:g}]"
    if isinstance(rec["n"], bool) or not isinstance(rec["n"], int) or rec["n"] < 1:
        return f"n {rec['n']!r} is not a positive integer"
    if not isinstance(rec["params"], dict):
        return f"params {rec['params']!r} is not a mapping"
    tparam = rec["tparam"]
    if tparam is not None and (isinstance(tparam, bool) or not isinstance(tparam, (int, float))):
        return f"tparam {tparam!r} is neither null nor a number"
    texts = [k for k in ("task", "dataset", "transform", "algorithm") if not isinstance(rec[k], str)]
    return None if not texts else f"{texts[0]} {rec[texts[0]]!r} is not a text"


def _check_same_run(path: Path, task, rec: dict) -> None:
    """A kept record must be what this run would compute: on as many points, with or without the
    train/test protocol (records before ``settings.json`` existed are checked this way only)."""
    n = min(task.n_points, task.max_n) if task.max_n else task.n_points
    kept = (rec["n"], "test_score" in rec)
    if kept != (n, task.train_test):
        def how(points, tt):
            return f"n = {points}{' with' if tt else ' without'} --train-test"

        raise ValueError(
            f"--resume: {path} holds {task.label} {rec['algorithm']} made on {how(*kept)}, this run asks "
            f"for {how(n, task.train_test)} (--max-n / --max-n-anomaly / --train-test differ): run without "
            "--resume, or with the first run's options"
        )


def _settings(args, specs) -> dict:
    """The options that decide the records (``OUT/settings.json``; a resume must repeat them): the eps
    steps and --train-test, checked by :func:`_check_resumed_settings`; --max-n and --max-n-anomaly
    (for the reader: a resume checks each kept record's n instead, :func:`_check_same_run`); and per
    dataset (``task/name``) its --label and the SHA-256 of its file (:func:`file_sha256`), checked by
    :func:`_check_resumed_datasets`."""
    return {
        "eps_step": args.eps_step,
        "dbscan_eps_step": args.dbscan_eps_step,
        "max_n": args.max_n,
        "max_n_anomaly": args.max_n_anomaly,
        "train_test": _train_test(args),
        "datasets": {s.key: {"label": s.label, "sha256": file_sha256(s.path)} for s in specs},
    }


def file_sha256(path) -> str:
    """SHA-256 of a file's bytes; of a directory (a ``.zarr`` store), of each file's path relative to it
    and its bytes, the files in sorted order."""
    import hashlib

    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            digest.update(f.relative_to(path).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _read_settings(out: Path) -> dict | None:
    """``OUT/settings.json``, None when there is none (an output written before it existed)."""
    path = out / "settings.json"
    if not path.exists():
        return None
    try:
        kept = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"--resume: {path} is not JSON ({exc.msg}); cannot resume") from None
    if not isinstance(kept, dict):
        raise ValueError(f"--resume: {path} is not a settings object; cannot resume")
    return kept


def _compared(settings: dict) -> dict:
    """The run-wide options a kept record depends on: the eps grid step, DBSCAN's (its own, else the eps
    step: the grid it searched) and --train-test."""
    return {
        "eps_step": settings.get("eps_step"),
        "DBSCAN eps step": settings.get("dbscan_eps_step") or settings.get("eps_step"),
        "train_test": settings.get("train_test"),
    }


def _check_resumed_settings(out: Path, kept: dict | None, settings: dict) -> None:
    """A resume with other run-wide options (:func:`_compared`) than ``kept`` (the first run's
    ``settings.json``; None for an older output, whose records are checked one by one) is refused."""
    if kept is None:
        return
    was, now = _compared(kept), _compared(settings)
    differ = [f"{k} {was[k]!r} there, {v!r} now" for k, v in now.items() if was[k] != v]
    if differ:
        raise ValueError(
            f"--resume: the records in {out} were made with other options ({'; '.join(differ)}): run "
            "without --resume, or with the first run's options"
        )


def _check_resumed_datasets(out: Path, kept: dict | None, settings: dict, records: list[dict]) -> None:
    """A kept record (of this run's tasks, or kept verbatim) of a dataset of this run whose --label or
    file SHA-256 differs from ``kept``'s entry is refused, naming the dataset and what differs.  Datasets
    without an entry (new ones, or a ``settings.json`` written before the entries existed) pass."""
    entries = (kept or {}).get("datasets")
    if not isinstance(entries, dict):
        return
    now = settings["datasets"]
    for key in sorted({f"{r['task']}/{r['dataset']}" for r in records} & now.keys() & entries.keys()):
        was = entries[key] if isinstance(entries[key], dict) else {}
        differ = []
        if was.get("label") != now[key]["label"]:
            differ.append(f"--label {was.get('label')!r} there, {now[key]['label']!r} now")
        if was.get("sha256") != now[key]["sha256"]:
            there, here = str(was.get("sha256"))[:12], now[key]["sha256"][:12]
            differ.append(f"file SHA-256 {there}... there, {here}... now")
        if differ:
            raise ValueError(
                f"--resume: the records of dataset {key!r} in {out} were made from other data "
                f"({'; '.join(differ)}): run without --resume, or with that dataset as it was"
            )


def _start_output(out: Path, kept: list[dict], settings: dict, others: list[str] = ()) -> None:
    """Once the cluster is up: ``records.jsonl`` holds the ``others`` lines verbatim (records of tasks
    outside this run, kept by a resume) and the ``kept`` records (none without ``--resume``), the
    files derived from earlier records are removed (tables that do not describe these records must not
    stand beside them; they are written again at the end) and ``settings.json`` is written."""
    lines = [line + "\n" for line in others] + [json.dumps(r, default=float) + "\n" for r in kept]
    _write(out / "records.jsonl", "".join(lines))
    for name in DERIVED:
        (out / name).unlink(missing_ok=True)
    _write(out / "settings.json", json.dumps(settings, indent=1) + "\n")


def run(args) -> int:
    from ..dask_client import dask_client
    from ..evaluation import report
    from ..evaluation.protocol import run_task

    tasks = build_tasks(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks.sort(key=lambda t: -_cost(t))  # longest first: the 2 workers finish together
    tic = time.perf_counter()
    records: list[dict] = []
    resumed: set[str] = set()
    others: list[tuple[str, dict]] = []
    settings = _settings(args, dict.fromkeys(t.spec for t in tasks))
    if args.resume:
        kept = _read_settings(out)
        _check_resumed_settings(out, kept, settings)
        records, resumed, others = load_done(out / "records.jsonl", tasks)
        _check_resumed_datasets(out, kept, settings, records + [rec for _, rec in others])
        if kept is not None and isinstance(kept.get("datasets"), dict):  # the entries of the others' datasets
            settings["datasets"] = {**kept["datasets"], **settings["datasets"]}
    tasks = [t for t in tasks if t.label not in resumed]
    from distributed import as_completed

    with dask_quiet(), dask_client(args.scheduler, args.workers) as client:
        _start_output(out, records, settings, [line for line, _ in others])
        if not args.quiet:
            print(
                f"{len(tasks)} tasks ({len(resumed)} resumed) on "
                f"{len(client.nthreads())} workers",
                file=sys.stderr,
            )
        futures = {client.submit(run_task, t, pure=False): t for t in tasks}
        for done, fut in enumerate(as_completed(futures), 1):
            recs = fut.result()
            records.extend(recs)
            with open(out / "records.jsonl", "a") as fh:  # partial results survive an interrupted run
                fh.write("".join(json.dumps(rec, default=float) + "\n" for rec in recs))
            if not args.quiet:
                t = futures[fut]
                scores = " ".join(f"{r['algorithm']}={r['score']:.3f}" for r in recs)
                print(
                    f"[{done:4d}/{len(tasks)}] {time.perf_counter() - tic:7.1f} s  {t.label}: {scores}",
                    file=sys.stderr,
                    flush=True,
                )
    elapsed = time.perf_counter() - tic
    rows = report.summarise(records)
    _write(out / "records.json", json.dumps(records, default=float, indent=1))
    _write(out / "results.csv", report.csv_text(rows))
    _write(out / "parameters.json", json.dumps(report.chosen_parameters(rows), default=float, indent=1))
    for task in ("clustering", "anomaly"):
        if any(r["task"] == task for r in rows):
            _write(out / f"{task}.md", report.markdown_table(rows, task, "score"))
            if any("test_score" in r for r in rows if r["task"] == task):
                _write(out / f"{task}_traintest.md", report.markdown_table(rows, task, "test_score", False))
    _write(out / "targets.md", report.targets_markdown(rows))
    resumed_note = f" ({len(resumed)} more resumed from records.jsonl)" if resumed else ""
    _write(out / "runtime.txt", f"{elapsed:.1f} s for {len(tasks)} tasks{resumed_note}\n")
    if not args.quiet:
        print(f"done in {elapsed:.1f} s; wrote {out}/", file=sys.stderr)
        for task in ("clustering", "anomaly"):
            if (out / f"{task}.md").exists():
                print((out / f"{task}.md").read_text())
    return 0


def _write(path: Path, text: str) -> None:
    with replaced_atomically(path, file=True) as tmp:
        tmp.write_text(text)
