"""The ``cdfts`` console script.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a handler ``func(args) -> int``.
User errors (``ValueError``, ``TypeError``, ``OSError``) print one line on
stderr and exit with status 2; there is never a traceback for bad input.
Warnings (a resume that fell back to an earlier iteration) print one line
``cdfts: warning: ...``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
import warnings

#: modules under cdfts_dask.cli providing sub-commands, in --help order
SUBCOMMANDS = ["transform", "apply", "evaluate", "plot", "bench"]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" to an option's help once: not for None / False / [] defaults (an unset
    option, a flag, a repeatable option) and not where the help text already states its default."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if action.default is None or action.default is False or action.default == [] or "default" in text:
            return text
        return super()._get_help_string(action)


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit status 2), no usage dump."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


@contextlib.contextmanager
def dask_quiet():
    """Dask's own log records (``distributed.scheduler - ERROR ...``, ``Compute Failed``) dropped for
    the duration, in this process and in an embedded cluster: they would come before the CLI's
    one-line error."""
    import dask

    loggers = [logging.getLogger(name) for name in ("distributed", "asyncio")]  # asyncio: "Task exception
    levels = [lg.level for lg in loggers]  # was never retrieved ... AllExit" when Ctrl-C cuts a gather
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with dask.config.set({"cdfts.embedded-cluster.silence-logs": logging.CRITICAL}):
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


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
        gpu = exc.name in ("cupy", "dask_cuda")
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


def check_cluster_arguments(args) -> None:
    """Refuse ``--workers`` below 1 by its option name, before any input is read (the API's message
    names ``n_workers``)."""
    from .._validation import check_positive_int

    check_positive_int(args.workers, "--workers")


def add_cluster_arguments(p) -> None:
    """``--scheduler ADDRESS`` or ``--workers N`` (not both: the workers of a running scheduler are its
    own), shared by ``transform``, ``apply`` and ``evaluate``."""
    cluster = p.add_mutually_exclusive_group()
    cluster.add_argument(
        "--scheduler",
        default=None,
        help="address of an existing Dask scheduler, e.g. tcp://host:8786 (host:8786 is tcp, as for Dask)",
    )
    cluster.add_argument(
        "--workers",
        type=int,
        default=None,
        help="number of local worker processes of the embedded cluster (default: the cores, at most 4)",
    )
