"""``cdfts bench``: time the tiled engine against the dense oracle and this machine's GEMM rate."""

from __future__ import annotations

import argparse
import textwrap

from .. import bench
from .options import HelpFormatter


def _ints(text: str) -> list[int]:
    try:
        values = [int(float(v)) for v in text.split(",") if v]
    except (ValueError, OverflowError):  # "x", or "inf" / "1e400"
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 2:
        raise argparse.ArgumentTypeError(f"expected integers >= 2, got {text!r}")
    return values


class BenchHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's one-line-per-column layout."""


def register(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark one CDF-TS iteration (vs the NumPy oracle and GEMM)",
        description=textwrap.fill(  # the raw formatter (kept for the epilog's table) does not wrap it
            "Time one CDF-TS iteration of the tiled engine for each size, dtype and worker count, on "
            "synthetic blobs, and print seconds per iteration, pair evaluations per second per pass, peak "
            "worker memory, and ratios measured in this run against the dense NumPy oracle and this "
            "machine's float64 GEMM rate.", width=78,
        ),  # fmt: skip
        epilog="columns of the table:\n" + bench.legend().replace("# ", "  "),
        formatter_class=BenchHelpFormatter,
    )
    p.add_argument("--sizes", type=_ints, default="1000,7200", help="comma-separated n, e.g. 1e3,1e4,1e5")
    p.add_argument("-d", "--dims", type=int, default=6, help="dimensions d of the synthetic data")
    p.add_argument("--dtype", default="float64", help="float64, float32, or both: float64,float32")
    p.add_argument("--workers", type=_ints_or_one, default="2", help="worker counts, e.g. 1,2")
    p.add_argument("--lam", type=float, default=0.1, help="neighbourhood size lambda")
    p.add_argument("--estimator", choices=["epsilon", "knn"], default="epsilon", help="density estimator")
    p.add_argument("-k", "--k", type=int, default=10, help="neighbours for --estimator knn")
    p.add_argument("--repeat", type=int, default=3, help="timed iterations per configuration (best kept)")
    p.add_argument("--oracle-max", type=int, default=10000, help="skip the dense oracle above this n")
    p.add_argument("--tile-size", type=int, default=None, help="panel rows (default: from n and workers)")
    p.add_argument(
        "--gpu",
        action="store_true",
        help="run on the CUDA device: dask-cuda workers, one per GPU (--workers counts GPUs)",
    )
    p.add_argument(
        "--user-call",
        action="store_true",
        help="instead: time cdf_ts(X, method='tiled', client=client, max_iter=1) as a user calls it "
        "(validation, scatter, iteration, fetch) against one dense-oracle iteration, per size",
    )
    p.add_argument(
        "--kernels",
        action="store_true",
        help="instead: thread CPU time of each fused kernel on one core, no Dask (a profile)",
    )
    unused = {name for names in UNUSED.values() for name in names}
    parsed = vars(p.parse_args([]))  # the defaults as parsed (argparse converts a string default by type)
    p.set_defaults(func=run, defaults={name: parsed[name] for name in unused})


def _ints_or_one(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip().isdigit()]
    if not values or min(values) < 1 or len(values) != len(text.split(",")):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return values


#: options each alternative mode does not use: given with another value than their default, they are
#: refused (the mode would time something other than what was asked, and print it as if it were)
UNUSED = {
    "user_call": ("gpu", "dtype", "estimator", "k", "tile_size", "oracle_max"),
    "kernels": ("gpu", "workers", "repeat", "tile_size", "estimator", "oracle_max"),
}


def check_options(args) -> None:
    """One-line errors, before any timing, for values the benchmark cannot honour: bad values, both
    modes at once, and a mode's unused options (:data:`UNUSED`) given other values than their defaults."""
    for t in _dtypes(args):
        if t not in ("float64", "float32"):
            raise ValueError(f"--dtype must be float64 and/or float32, got {t!r}")
    if args.dims < 1:
        raise ValueError(f"--dims must be >= 1, got {args.dims}")
    if args.k < 1:
        raise ValueError(f"-k must be >= 1, got {args.k}")
    if not 0 < args.lam < 1:
        raise ValueError(f"--lam must be in (0, 1), got {args.lam}")
    if args.tile_size is not None and args.tile_size < 1:
        raise ValueError(f"--tile-size must be >= 1, got {args.tile_size}")
    if args.repeat < 1:
        raise ValueError(f"--repeat must be >= 1, got {args.repeat}")
    if args.user_call and args.kernels:  # each mode times one thing: the other was dropped without a word
        raise ValueError("--user-call and --kernels are two modes of the benchmark: give one")
    for mode, unused in UNUSED.items():
        if getattr(args, mode):
            given = [_flag(name) for name in unused if getattr(args, name) != args.defaults[name]]
            if given:
                raise ValueError(f"{_flag(mode)} does not use {', '.join(given)}: it times a fixed setup")


def _flag(name: str) -> str:
    return "-" + name if len(name) == 1 else "--" + name.replace("_", "-")


def _dtypes(args) -> tuple[str, ...]:
    return tuple(t.strip() for t in args.dtype.split(","))


def run(args) -> int:
    check_options(args)
    dtypes = _dtypes(args)
    if args.user_call:
        for n in args.sizes:
            for w in args.workers:
                r = bench.user_call(n, args.dims, w, args.lam, args.repeat)
                print(
                    f"n={n} d={args.dims} workers={w}: cdf_ts tiled call {r['call_s']:.3f} s "
                    f"(engine iteration {r['step_s']:.3f} s, per-call overhead {r['overhead_s']:.3f} s); "
                    f"dense oracle iteration {r['dense_s']:.3f} s; dense / tiled call = {r['x_dense']:.1f}x",
                    flush=True,
                )
        return 0
    if args.kernels:
        for n in args.sizes:
            for t in dtypes:
                r = bench.kernel_profile(n, args.dims, t, args.lam, args.k)
                print(
                    f"n={n} d={args.dims} {t}: diameter {r['diameter_s']:.3f} s; counts {r['count_s']:.3f} s "
                    f"({r['count_pairs_per_s']:.3g} pairs/s); k-NN radii, k = {min(args.k, n - 1)}, "
                    f"{r['kth_s']:.3f} s ({r['kth_pairs_per_s']:.3g} pairs/s); shift {r['shift_s']:.3f} s "
                    f"({r['shift_pairs_per_s']:.3g} pairs/s)",
                    flush=True,
                )
        return 0
    print(bench.legend(), flush=True)
    print(bench.header(), flush=True)
    _, gemm = bench.run(
        args.sizes, d=args.dims, dtypes=dtypes, workers=tuple(args.workers), lam=args.lam,
        estimator=args.estimator, k=args.k, repeat=args.repeat, oracle_max=args.oracle_max,
        tile_size=args.tile_size, report=lambda row: print(bench.format_row(row), flush=True),
        backend="cuda" if args.gpu else "cpu",
    )  # fmt: skip
    if gemm:
        print(
            f"gemm float64: {gemm / 1e9:.1f} GFLOP/s = {gemm / bench.flops_per_pair(args.dims):.3g} pairs/s "
            f"roof ({bench.flops_per_pair(args.dims)} flops per pair evaluation)",
            flush=True,
        )
    return 0
