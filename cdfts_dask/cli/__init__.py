"""The ``cdfts`` console script.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a handler ``func(args) -> int``.
User errors (``ValueError``, ``TypeError``, ``OSError``) print one line on
stderr and exit with status 2; there is never a traceback for bad input.
Warnings (a resume that fell back to an earlier iteration) print one line
``cdfts: warning: ...``.  What the sub-commands share (the help formatter, the
cluster options) is in :mod:`cdfts_dask.cli.options`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from .options import OneLineErrorParser

#: modules under cdfts_dask.cli providing sub-commands, in --help order
SUBCOMMANDS = ["transform", "apply", "evaluate", "plot", "bench"]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="cdfts",
        description="CDF Transform-and-Shift (CDF-TS) on Dask: homogenise cluster densities before "
        "density-based clustering or distance-based anomaly detection.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"cdfts-dask {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"cdfts: warning: {message}", file=sys.stderr if file is None else file, flush=True)


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


def run_command(args, prog: str | None = None) -> int:
    """Run a parsed sub-command (``args.func``); user errors are one line on stderr, exit status 2.

    ``prog`` names the command in messages (default ``cdfts COMMAND``).
    """
    prog = prog or f"cdfts {args.command}"
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning  # restored on exit
            return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:  # an optional dependency of this sub-command
        root = (exc.name or "").split(".")[0]
        gpu = root in ("cupy", "dask_cuda", "numba_cuda") or (exc.name or "").startswith("numba.cuda")
        if not gpu and root not in ("scipy", "matplotlib"):  # a dependency of every command: broken
            print(f"{prog}: error: the package {exc.name!r} is missing: install cdfts-dask again "
                  "(pip install . in the checkout)", file=sys.stderr)  # fmt: skip
            return 2
        extra = "gpu" if gpu else "eval"
        print(
            f"{prog}: error: needs the optional package {exc.name!r}; "
            f"install the {extra!r} extra: pip install '.[{extra}]' in the cdfts-dask checkout"
            + (" ('.[gpu-cu13]' for CUDA 13)" if gpu else ""),
            file=sys.stderr,
        )
        return 2
    except ImportError as exc:  # an installed package that cannot work here (its message says what to do)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
