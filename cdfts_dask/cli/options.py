"""What the ``cdfts`` sub-commands share: the help formatter, the one-line usage errors, the cluster
options (``--scheduler`` / ``--workers``) and the silencing of Dask's own log records."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import sys


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

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown option is named by the sub-command's parser (``cdfts transform:
        error: ...``, its own ``--help``), with what it most likely meant (:func:`likely_meant`); a word
        before the sub-command's name that is no option of this parser is refused so, before parsing
        (argparse would take the value of ``cdfts --lam 0.2 transform`` for the sub-command)."""
        argv = sys.argv[1:] if args is None else [str(a) for a in args]
        dest, commands = _sub_commands(self)
        at = next((i for i, word in enumerate(argv) if word in commands), None)
        if at:
            own = _options(self)
            stray = [w for w in argv[:at] if w.split("=")[0] not in own and w != "--"]
            if stray:
                parser = commands[argv[at]]
                remark = likely_meant(stray, [], parser, self, where=f"after {argv[at]!r}")
                if not remark and any(not w.startswith("-") for w in stray):
                    remark = f" (the sub-command's name comes first: {parser.prog} {' '.join(stray)} ...)"
                parser.error(f"unrecognized arguments: {' '.join(stray)}{remark}")
        parsed, unknown = self.parse_known_args(argv, namespace)
        if unknown:
            parser = commands.get(getattr(parsed, dest, None), self) if dest else self
            dashes = argv.index("--") if "--" in argv else len(argv)
            remark = likely_meant(unknown, argv[dashes + 1 :], parser, self)
            parser.error(f"unrecognized arguments: {' '.join(unknown)}{remark}")
        return parsed


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings]


def _sub_commands(parser: argparse.ArgumentParser) -> tuple[str | None, dict]:
    """The ``dest`` of the parser's sub-commands and their parsers by name (None and none without)."""
    action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    return (None, {}) if action is None else (action.dest, dict(action.choices))


def likely_meant(unknown: list[str], after_dashes: list[str], parser, top, where: str = "") -> str:
    """What an unrecognised option in ``unknown`` most likely meant (the first that says something),
    as a parenthesised remark (or ""): an option of ``parser`` (the sub-command) given where it is not
    read (``where``: before the sub-command's name, or among ``after_dashes``, the words after ``--``),
    an option of the ``top`` parser itself, or the long option of ``parser`` closest to it (difflib,
    compared without the dashes they all share).  ``-k5`` is read as ``-k``."""
    own = _options(parser)
    long_names = {o.lstrip("-"): o for o in own if o.startswith("--")}
    for word in unknown:
        if not word.startswith("-") or len(word) < 2:
            continue
        flag = word.split("=")[0]
        if not flag.startswith("--") and flag[:2] in own:  # a short option with its value attached
            flag = flag[:2]
        if flag in own:
            if word in after_dashes:
                return f" ({flag} came after '--', where every word is an argument: give it before '--')"
            return f" ({flag} is an option of {parser.prog}: give it {where or 'there'})"
        if parser is not top and flag in _options(top):
            return f" ({flag} is an option of {top.prog} itself: {top.prog} {flag})"
        close = difflib.get_close_matches(flag.lstrip("-"), list(long_names), n=1)
        if close:
            return f" (did you mean {long_names[close[0]]}{', ' + where if where else ''}?)"
    return ""


@contextlib.contextmanager
def dask_quiet():
    """Dask's own log records (``distributed.scheduler - ERROR ...``, ``Compute Failed``) dropped for
    the duration, in this process and in an embedded cluster: they would come before the CLI's
    one-line error."""
    import dask
    import distributed  # noqa: F401  Dask's logging set up now: imported inside, it would reset the levels

    # asyncio: "Task exception was never retrieved ... AllExit" when Ctrl-C cuts a gather; the loggers
    # under distributed to which Dask's logging configuration gives a level and handler of their own
    # (distributed.client: "Failed to reconnect to scheduler after 30.00 seconds") do not follow it
    names = ["distributed", "asyncio"] + [
        name
        for name, lg in logging.root.manager.loggerDict.items()
        if name.startswith("distributed.") and isinstance(lg, logging.Logger) and lg.level != logging.NOTSET
    ]
    loggers = [logging.getLogger(name) for name in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        with dask.config.set({"cdfts.embedded-cluster.silence-logs": logging.CRITICAL}):
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


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
