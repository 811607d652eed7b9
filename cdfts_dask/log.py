"""Messages through :mod:`logging`: the ``cdfts_dask`` logger, silent unless asked.

The library logs at INFO (the start line, "compiling kernels", one line per
iteration, the end) and WARNING (something the caller should know, such as
an ignored argument).  Like every library it attaches only a
``NullHandler``: an application routes or silences the messages with the
usual ``logging.getLogger("cdfts_dask")`` configuration.  ``verbose=True``
(API) or the command line, unless ``--quiet``, attach a stderr handler for
the duration of one call through :func:`verbosity`; meanwhile the messages are
printed there only, not passed on to the application's handlers too (with
``logging.basicConfig(level=logging.INFO)`` each was printed twice).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading

logger = logging.getLogger("cdfts_dask")
logger.addHandler(logging.NullHandler())


#: the verbose calls running now (threads may overlap them), and what the first one changed
_verbose = {"calls": 0, "handler": None, "level": logging.NOTSET, "propagate": True}
_verbose_lock = threading.Lock()


@contextlib.contextmanager
def verbosity(verbose: bool):
    """While the block runs, INFO messages of the ``cdfts_dask`` logger go to stderr when ``verbose``, and
    there only: the logger stops propagating them to the application's handlers (a root handler would
    print each a second time) until the block ends.  Blocks that overlap (verbose calls in two threads)
    share one handler, and the last to end restores the logger (each restoring what it found left the
    logger silent for the application's handlers after two overlapping calls)."""
    if not verbose:
        yield
        return
    with _verbose_lock:
        if _verbose["calls"] == 0:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("cdfts: %(message)s"))
            _verbose.update(handler=handler, level=logger.level, propagate=logger.propagate)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False
        _verbose["calls"] += 1
    try:
        yield
    finally:
        with _verbose_lock:
            _verbose["calls"] -= 1
            if _verbose["calls"] == 0:
                logger.removeHandler(_verbose["handler"])
                logger.setLevel(_verbose["level"])
                logger.propagate = _verbose["propagate"]
                _verbose["handler"] = None


def say_started(what: str, client) -> None:
    """The start line of work on ``client``: ``"<what>, 2 workers, dashboard http://..."`` at INFO (asked of
    the scheduler only when the line is shown)."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("%s, %s", what, _describe_client(client))


def _describe_client(client) -> str:
    """``"2 workers, dashboard http://..."`` (the dashboard only when there is one)."""
    workers = len(client.nthreads())  # every worker (scheduler_info() may list only some)
    text = f"{workers} worker{'s' if workers != 1 else ''}"
    try:
        link = client.dashboard_link
    except Exception:  # no dashboard (distributed without bokeh, or disabled)
        link = None
    return f"{text}, dashboard {link}" if link else text
