"""``cdfts apply MODEL INPUT OUTPUT``: transform new points with a completed run's checkpoint store."""

from __future__ import annotations

import time
import warnings

from .. import model
from ..csv_blocks import CSV_ON_WORKERS_BYTES, is_large_csv
from ..inputs import read_table
from ..log import logger, verbosity
from ..outputs import check_writable, label_name, output_format
from ..paths import check_run_paths, refuse_url
from .options import HelpFormatter, add_cluster_arguments, check_cluster_arguments, dask_quiet
from .transform import add_label_arguments, check_no_label_column, large_csv_input


def register(sub) -> None:
    p = sub.add_parser(
        "apply",
        help="transform new data with a fitted run (a completed --checkpoint store)",
        description="Replay the iterations of the completed CDF-TS run stored in MODEL (the --checkpoint "
        "store of an earlier `cdfts transform`) on the points in INPUT and write them to OUTPUT. Rows are "
        "transformed independently; points outside the fitted data's range may land outside [0, 1]. "
        "INPUT/OUTPUT: .csv (header row optional), .npy, or .zarr; a Zarr INPUT without --label and a CSV "
        f"INPUT of {CSV_ON_WORKERS_BYTES / 2**20:g} MiB or more are read, and for such an INPUT a Zarr "
        "OUTPUT without labels written, chunk by chunk by the Dask workers (any other INPUT is transformed "
        "in this process). A label column named by --label is passed through "
        "untouched (written as the last column of a CSV output).",
        formatter_class=HelpFormatter,
    )
    p.add_argument("model", help="checkpoint store (.zarr) of a completed `cdfts transform --checkpoint` run")
    p.add_argument("input", help="input file: .csv (or .txt; comma-separated), .npy or .zarr (n rows x d "
                   "numeric columns, d as fitted)")
    p.add_argument("output", help="output file: .csv, .npy or .zarr (an existing one is replaced once the "
                   "new one is complete)")
    add_label_arguments(p)
    add_cluster_arguments(p)
    p.add_argument("--gpu", action="store_true",
                   help="replay on the GPUs (CuPy + numba-cuda; the embedded cluster is a dask-cuda "
                   "LocalCUDACluster, one worker per GPU)")
    p.add_argument("--quiet", action="store_true",
                   help="no status messages on stderr (else: a summary line); warnings and errors are "
                   "still printed")
    p.set_defaults(func=run)


def run(args) -> int:
    with verbosity(not args.quiet), dask_quiet():
        return _run(args)


def _run(args) -> int:
    check_cluster_arguments(args)  # before the input decides whether workers are used
    for name in ("model", "input", "output"):
        refuse_url(getattr(args, name), name)
    output_format(args.output)
    check_writable(args.output)
    fitted = model.load(args.model)  # first: a MODEL that is no completed run store is named as such
    check_run_paths([args.input], output=args.output, model=args.model)  # never overwrite either
    backend = "cuda" if args.gpu else "cpu"
    tic = time.perf_counter()
    source, labels, header = _chunked_input(args)
    model.check_feature_names(fitted, header, "input")
    if source is None:
        if args.scheduler is not None or args.workers is not None:
            warnings.warn(
                "--scheduler/--workers are not used: this INPUT is read into memory and transformed in this "
                "process (the workers transform a Zarr INPUT without --label and a CSV of "
                f"{CSV_ON_WORKERS_BYTES / 2**20:g} MiB or more)",
                UserWarning,
                stacklevel=2,
            )
        source, labels, header = read_table(args.input, label_column=args.label, name="input")
        if args.label is None and not args.no_label:
            check_no_label_column(header)
        model.check_feature_names(fitted, header, "input")
    else:  # out-of-core: the workers read chunk-wise
        model.check_features(fitted, source.shape, "input")
    # an INPUT without column names takes the fit's (its columns are the fit's, in order)
    Y = model.apply(
        fitted, source, args.output, backend=backend, client=args.scheduler, n_workers=args.workers,
        name="input", header=header, labels=labels, label_name=label_name(args.input, args.label),
    )  # fmt: skip
    logger.info(
        "applied %d iteration(s) fitted on %d references in %.2f s; wrote %d x %d to %s", fitted.n_iter,
        fitted.n_references, time.perf_counter() - tic, Y.shape[0], Y.shape[1], args.output,
    )  # fmt: skip
    return 0


def _chunked_input(args):
    """``(dask array, labels, header)`` for input the workers read chunk-wise (a Zarr input without
    --label, a CSV of :data:`~cdfts_dask.csv_blocks.CSV_ON_WORKERS_BYTES` or more), else Nones."""
    from ..lazy import is_zarr_path

    if args.label is None and is_zarr_path(args.input):
        return model.as_dask(args.input, "input"), None, None
    if is_large_csv(args.input):
        return large_csv_input(args)
    return None, None, None
