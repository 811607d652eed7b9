"""``cdfts plot INPUT``: figures of what CDF-TS does to a labelled dataset."""

from __future__ import annotations

import sys
from pathlib import Path

from .options import HelpFormatter


def register(sub) -> None:
    p = sub.add_parser(
        "plot",
        help="plot CDF-TS iterations (2-D), convergence, and MDS views (high-dimensional)",
        description="For 2-D data: scatter plots before and after 1, 3 and 5 iterations with the std of the "
        "epsilon-neighbourhood density in each title. Always: Delta and density std per iteration. "
        "For d > 2: "
        "MDS of the original and CDF-TS distances coloured by label. PNGs go to --out.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("input", help="labelled .csv/.npy/.zarr file")
    p.add_argument("--label", default="label", help="label column (name or index; -1 = last)")
    p.add_argument("--out", default="figures", help="output directory")
    p.add_argument("--name", default=None, help="file name prefix (default: the input's stem)")
    p.add_argument("--lam", "--lambda", dest="lam", type=float, default=0.1, help="CDF-TS lambda")
    p.add_argument("--eps", type=float, default=0.1, help="radius of the density whose std is shown")
    p.add_argument("--iterations", type=int, default=10, help="iterations in the convergence plot")
    p.add_argument(
        "--max-n", type=int, default=1500, help="random subsample above this many points (MDS: 500)"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    import numpy as np

    from ..evaluation import plots
    from ..evaluation.datasets import load_labelled
    from ..paths import refuse_url

    refuse_url(args.input, "input")
    refuse_url(args.out, "--out")
    if not 0 < args.lam < 1:
        raise ValueError(f"--lam must be in (0, 1), got {args.lam}")
    if not 0 < args.eps < float("inf"):  # a radius on the normalised points (0, nan: every std nan, exit 0)
        raise ValueError(f"--eps must be a positive radius, got {args.eps}")
    if args.iterations < 1:
        raise ValueError(f"--iterations must be >= 1, got {args.iterations}")
    if args.max_n < 2:
        raise ValueError(f"--max-n must be at least 2, got {args.max_n}")
    X, y = load_labelled(args.input, args.label)
    if len(y) > args.max_n:
        idx = np.sort(np.random.default_rng(0).choice(len(y), size=args.max_n, replace=False))
        X, y = X[idx], y[idx]
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file: it names the folder the figures go to")
    out.mkdir(parents=True, exist_ok=True)
    name = args.name or Path(args.input).stem
    written = []
    if X.shape[1] == 2:
        path = out / f"{name}_iterations.png"
        stds = plots.scatter_iterations(X, y, path, lam=args.lam, eps=args.eps, title=name)
        print(
            f"{path}: density std before / after 1, 3, 5 iterations: " + ", ".join(f"{s:.2f}" for s in stds),
            file=sys.stderr,
        )
        written.append(path)
    path = out / f"{name}_convergence.png"
    deltas, stds = plots.convergence(
        X, path, lam=args.lam, iterations=args.iterations, eps=args.eps, title=name
    )
    print(f"{path}: Delta " + " ".join(f"{d:.5f}" for d in deltas), file=sys.stderr)
    print(f"{path}: density std " + " ".join(f"{s:.2f}" for s in stds), file=sys.stderr)
    written.append(path)
    if X.shape[1] > 2:
        path = out / f"{name}_mds.png"
        plots.mds_views(X, y, path, lam=args.lam, title=name)
        written.append(path)
    for p in written:
        print(p)
    return 0
