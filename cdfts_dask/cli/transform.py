"""``cdfts transform INPUT OUTPUT``: run CDF-TS on a CSV, .npy or Zarr file."""

from __future__ import annotations

import argparse
import sys
import time

from ..api import DENSE_MAX_N, cdf_ts
from ..inputs import read_table
from ..outputs import check_writable, output_format, write_table


def register(sub) -> None:
    p = sub.add_parser(
        "transform",
        help="transform a dataset with CDF-TS",
        description="Transform the points in INPUT with CDF-TS and write them to OUTPUT. "
        "INPUT/OUTPUT: .csv (header row optional), .npy, or .zarr. A label column named by --label "
        "is passed through untouched (written as the last column of a CSV output).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("input", help="input file: .csv, .npy or .zarr (n rows x d numeric columns)")
    p.add_argument("output", help="output file: .csv, .npy or .zarr")
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
    p.add_argument(
        "--label",
        default=None,
        help="label column to pass through untouched: a CSV header name or a column index (-1 = last)",
    )
    p.add_argument(
        "--method",
        choices=["auto", "dense", "tiled"],
        default="auto",
        help=f"dense NumPy oracle, tiled Dask engine, or auto (dense for n <= {DENSE_MAX_N} "
        "unless a scheduler, worker count or tile size is given)",
    )
    p.add_argument(
        "--tile-size", type=int, default=None, help="points per tile side (memory per task ~ tile^2)"
    )
    p.add_argument(
        "--scheduler", default=None, help="address of an existing Dask scheduler, e.g. tcp://host:8786"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="number of local worker processes of the embedded cluster"
    )
    p.add_argument("--checkpoint", default=None, help="Zarr store that receives every complete iteration")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run stored in --checkpoint (a new run starts if the store does not exist yet)",
    )
    p.add_argument("--quiet", action="store_true", help="no per-iteration progress")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="working precision of the tiled engine (float32: exact neighbourhoods, "
                   "positions to ~1e-5)")
    p.add_argument("--gpu", action="store_true",
                   help="run on the GPUs (CuPy + dask-cuda LocalCUDACluster, one worker per GPU)")
    p.set_defaults(func=run)


def _progress(report) -> None:
    print(
        f"iteration {report.iteration:3d}  Delta {report.delta:.6f}  {report.seconds:8.2f} s  "
        f"{report.pairs_per_second:.3g} pairs/s",
        file=sys.stderr,
        flush=True,
    )


def run(args) -> int:
    output_format(args.output)
    check_writable(args.output)
    if _workers_read(args):  # out-of-core: a Zarr input is read chunk-wise by the workers
        X, labels, header = args.input, None, None
    else:
        X, labels, header = read_table(args.input, label_column=args.label, name="input")
    method = args.method
    if method == "auto" and (args.scheduler or args.workers):
        method = "tiled"
    tic = time.perf_counter()
    Y, info = cdf_ts(
        X,
        lam=args.lam,
        delta=args.delta,
        max_iter=args.max_iter,
        estimator=args.estimator,
        k=args.k,
        method=method,
        client=args.scheduler,
        tile_size=args.tile_size,
        checkpoint=args.checkpoint,
        resume=args.resume,
        n_workers=args.workers,
        progress=None if args.quiet else _progress,
        return_info=True,
        output=_worker_output(args, labels),
        dtype=args.dtype,
        backend="cuda" if args.gpu else "cpu",
    )
    label_name = "label"
    if (
        labels is not None
        and header is not None
        and isinstance(args.label, str)
        and not args.label.lstrip("-").isdigit()
    ):
        label_name = args.label
    if _worker_output(args, labels) is None:
        write_table(args.output, Y, labels, header, label_name)
    if not args.quiet:
        state = "converged" if info.converged else "stopped at --max-iter"
        print(
            f"{state} after {info.n_iter} iteration(s) in {time.perf_counter() - tic:.2f} s; "
            f"wrote {Y.shape[0]} x {Y.shape[1]} to {args.output}",
            file=sys.stderr,
        )
    return 0


# -- reliability: keep large Zarr data off the client -------------------------------------------------


def _workers_read(args) -> bool:
    """A Zarr input without a label column goes to the tiled engine unread (workers load it)."""
    from ..lazy import is_zarr_path

    return args.label is None and args.method != "dense" and is_zarr_path(args.input)


def _worker_output(args, labels):
    """A Zarr output without labels is written by a worker (atomically) rather than via the client."""
    return args.output if labels is None and output_format(args.output) == ".zarr" else None
