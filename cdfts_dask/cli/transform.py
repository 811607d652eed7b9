"""``cdfts transform INPUT OUTPUT``: run CDF-TS on a CSV, .npy or Zarr file."""

from __future__ import annotations

import contextlib
import re
import sys
import time
import warnings

from ..api import cdf_ts, checked_run_paths
from ..csv_blocks import csv_blocks, csv_labels, is_large_csv
from ..csv_input import LABEL_LIKE_NAMES, csv_layout, label_like_columns
from ..inputs import read_table
from ..log import logger, verbosity
from ..outputs import label_name, output_format, write_table
from ..params import DENSE_MAX_N, RunParams
from ..sampling import check_n_references, check_random_state
from .options import HelpFormatter, add_cluster_arguments, check_cluster_arguments, dask_quiet


def register(sub) -> None:
    p = sub.add_parser(
        "transform",
        help="transform a dataset with CDF-TS",
        description="Transform the points in INPUT with CDF-TS and write them to OUTPUT. "
        "INPUT/OUTPUT: .csv (header row optional), .npy, or .zarr. A label column named by --label "
        "is passed through untouched (written as the last column of a CSV output).",
        epilog="example: cdfts transform examples/data/4C.csv 4C-cdfts.csv --label label --workers 2",
        formatter_class=HelpFormatter,
    )
    p.add_argument("input", help="input file: .csv (or .txt; comma-separated), .npy or .zarr (n rows x d "
                   "numeric columns)")
    p.add_argument("output", help="output file: .csv, .npy or .zarr (an existing one is replaced once the "
                   "new one is complete)")
    p.add_argument(
        "--lam",
        "--lambda",
        dest="lam",
        type=float,
        default=0.1,
        help="neighbourhood size relative to the largest pairwise distance, in (0, 1)",
    )
    p.add_argument("--delta", type=float, default=0.015, help="stop when the mean absolute movement <= delta")
    p.add_argument("--max-iter", type=int, default=100, help="most iterations to run (at least one runs)")
    p.add_argument("--estimator", choices=["epsilon", "knn"], default="epsilon", help="density estimator")
    p.add_argument("-k", "--k", type=int, default=None, help="neighbours for --estimator knn (1 <= k <= n-1)")
    add_label_arguments(p)
    p.add_argument(
        "--method",
        choices=["auto", "dense", "tiled"],
        default="auto",
        help=f"dense NumPy oracle, tiled Dask engine, or auto (dense for n <= {DENSE_MAX_N} "
        "unless a scheduler, worker count or tile size is given, or --dtype float32 or --gpu)",
    )
    p.add_argument(
        "--tile-size",
        type=int,
        default=None,
        help="rows per panel task of the Dask engine (default: from n and the workers, 256 to 4096 on the "
        "CPU; with --gpu one panel per GPU)",
    )
    add_cluster_arguments(p)
    p.add_argument("--checkpoint", default=None, help="Zarr store that receives every complete iteration")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run stored in --checkpoint (a new run starts if the store does not exist yet)",
    )
    p.add_argument(
        "--references",
        type=int,
        default=None,
        help="sampled fit: fit on S points drawn uniformly without replacement, then transform all n "
        "(O(n S) per iteration; S >= n is the exact algorithm)",
    )
    p.add_argument(
        "--random-state",
        type=int,
        default=None,
        help="seed of the --references draw (unused without it, with a warning); needed to --resume a "
        "--checkpoint of a sampled fit (without it the store is a model for `cdfts apply` but cannot be "
        "resumed: no later run draws the same rows)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress or status messages on stderr (else: a start line, a progress bar on a terminal, "
        "one line per iteration); warnings and errors are still printed",
    )
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="working precision of the tiled engine (float32: exact neighbourhoods, "
                   "positions to ~1e-5)")
    p.add_argument("--gpu", action="store_true",
                   help="run on the GPUs (CuPy + dask-cuda LocalCUDACluster, one worker per GPU)")
    p.set_defaults(func=run)


def add_label_arguments(p) -> None:
    """``--label COLUMN`` or ``--no-label`` (not both), shared by ``transform`` and ``apply``."""
    labels = p.add_mutually_exclusive_group()
    labels.add_argument(
        "--label",
        default=None,
        help="label column to pass through untouched: a CSV header name or a column index (-1 = last)",
    )
    labels.add_argument(
        "--no-label",
        action="store_true",
        help="transform every column, even one whose header is named like a label "
        f"({', '.join(LABEL_LIKE_NAMES)}; refused without --label or --no-label)",
    )


def check_no_label_column(header: list[str] | None) -> None:
    """Refuse to transform a column named like a label unless the user said what it is."""
    columns = label_like_columns(header)
    if columns:
        raise ValueError(
            f"input column {columns[0]!r} looks like a label, not a feature: pass --label {columns[0]} to "
            "pass it through untouched, or --no-label to transform it as a feature"
        )


def large_csv_input(args):
    """``(features, labels or None, feature header)`` of a CSV INPUT of
    :data:`~cdfts_dask.csv_blocks.CSV_ON_WORKERS_BYTES` or more: the features a dask array the workers
    parse block by block, the ``--label`` column read here alone (it goes to the output)."""
    layout = csv_layout(args.input, args.label, "input")  # the first row only: the label rule comes first
    header = layout.feature_header()
    if args.label is None and not args.no_label:
        check_no_label_column(header)
    features = csv_blocks(args.input, layout, "input")
    labels = None if layout.label is None else csv_labels(args.input, layout, features.shape[0])
    return features, labels, header


#: the command line's name of each ``cdf_ts`` argument that its checks name: an option, or ``input`` for X
#: (a Zarr INPUT is read by ``cdf_ts`` itself, which names the data ``X``)
OPTION_OF = {"lam": "--lam", "delta": "--delta", "max_iter": "--max-iter", "k": "-k",
             "tile_size": "--tile-size", "n_references": "--references", "random_state": "--random-state",
             "checkpoint": "--checkpoint", "X": "input"}


def _as_the_command_lines(message: str) -> str:
    """``message`` with a leading argument of :data:`OPTION_OF` replaced by the command line's name."""
    return re.sub(r"^\w+", lambda name: OPTION_OF.get(name[0], name[0]), message)


@contextlib.contextmanager
def options_named():
    """Errors and warnings of ``cdf_ts`` as the command line's: a message that starts with an argument
    of :data:`OPTION_OF` starts with its name there instead (``--lam must lie in ...``, ``input: 1 of 4
    chunks ...``)."""
    shown = warnings.showwarning

    def renamed(message, category, *where, **kwargs):
        said = _as_the_command_lines(str(message))
        return shown(said if said != str(message) else message, category, *where, **kwargs)

    warnings.showwarning = renamed
    try:
        yield
    except (ValueError, TypeError) as exc:
        said = _as_the_command_lines(str(exc))
        if said == str(exc):
            raise
        raise type(exc)(said) from None
    finally:
        warnings.showwarning = shown


def check_run_options(args) -> None:
    """Refuse a bad run option before the input is read (a 240 MB CSV was read for 2 s before ``--lam 5``
    was refused; ``--tile-size -3`` beside ``--method dense`` was not checked at all): the checks of
    :class:`~cdfts_dask.params.RunParams` and of the sampled fit, naming the option.  k against n waits
    for n (``cdf_ts``)."""
    with options_named():
        RunParams(args.lam, args.delta, args.max_iter, args.estimator, args.k, args.method, args.tile_size,
                  args.workers, args.dtype, "cuda" if args.gpu else "cpu")  # fmt: skip
        check_n_references(args.references)
        check_random_state(args.random_state)


def run(args) -> int:
    with verbosity(not args.quiet):
        return _run(args)


def _run(args) -> int:
    check_cluster_arguments(args)
    check_run_options(args)
    unused = [flag for flag, value in (("--scheduler", args.scheduler), ("--workers", args.workers),
                                       ("--tile-size", args.tile_size)) if value is not None]  # fmt: skip
    if args.method == "dense" and unused:
        warnings.warn(
            f"{'/'.join(unused)} not used: --method dense runs the NumPy oracle in this process", stacklevel=2
        )
        args.scheduler = args.workers = args.tile_size = None
    if args.random_state is not None and args.references is None:
        warnings.warn(
            "--random-state not used: it seeds the draw of a sampled fit, and no --references is given "
            "(all points are fitted, nothing is drawn)",
            stacklevel=2,
        )
    with options_named():  # as cdf_ts checks them: the checkpoint made absolute ('' is no path)
        args.checkpoint, _ = checked_run_paths(args.input, args.checkpoint, args.output, resume=args.resume)
    if _workers_read(args):  # out-of-core: a Zarr input is read chunk-wise by the workers
        X, labels, header = args.input, None, None
    elif is_large_csv(args.input):
        X, labels, header = large_csv_input(args)
    else:
        X, labels, header = read_table(args.input, label_column=args.label, name="input")
        if args.label is None and not args.no_label:
            check_no_label_column(header)
    tic = time.perf_counter()
    with dask_quiet(), options_named():
        Y, info = cdf_ts(
            X,
            lam=args.lam,
            delta=args.delta,
            max_iter=args.max_iter,
            estimator=args.estimator,
            k=args.k,
            method=args.method,  # "auto" with --scheduler or --workers is the engine (RunParams.for_points)
            client=args.scheduler,
            tile_size=args.tile_size,
            checkpoint=args.checkpoint,
            resume=args.resume,
            n_workers=args.workers,
            # a bar of the engine's tasks (none with the oracle), where it can redraw itself
            progress=not args.quiet and sys.stderr.isatty() and args.method != "dense",
            return_info=True,
            output=_worker_output(args, labels),
            dtype=args.dtype,
            backend="cuda" if args.gpu else "cpu",
            n_references=args.references,
            random_state=args.random_state,
            feature_names=header,
        )
    if _worker_output(args, labels) is None:
        Y = Y.compute() if hasattr(Y, "compute") else Y  # a dask array in (large CSV) gives one back
        write_table(args.output, Y, labels, header, label_name(args.input, args.label))
    seconds = time.perf_counter() - tic
    logger.info("wrote %d x %d to %s in %.2f s", Y.shape[0], Y.shape[1], args.output, seconds)
    return 0


# -- reliability: keep large Zarr data off the client -------------------------------------------------


def _workers_read(args) -> bool:
    """A Zarr input without a label column goes to the tiled engine unread (workers load it)."""
    from ..lazy import is_zarr_path

    return args.label is None and args.method != "dense" and is_zarr_path(args.input)


def _worker_output(args, labels):
    """A Zarr output without labels is written by a worker (atomically) rather than via the client."""
    return args.output if labels is None and output_format(args.output) == ".zarr" else None
