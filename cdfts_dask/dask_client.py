"""The ``distributed.Client`` a run uses: the one given, one for a scheduler address, the
session's default client, or an embedded cluster started for the run."""

from __future__ import annotations

import contextlib
import os
import warnings
import weakref

from .log import logger
from .scheduler_check import check_scheduler, connect_timeout

#: clients :func:`dask_client` opened itself (closed when its block ends)
_TEMPORARY: weakref.WeakSet = weakref.WeakSet()


def outlives_the_run(client) -> bool:
    """Whether ``client`` is the caller's (given, or the session's default) and stays open after the
    run, so that results may stay on its workers."""
    return client not in _TEMPORARY


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


def session_client():
    """The default client of this session (``distributed.default_client()`` semantics), or None."""
    from distributed import default_client

    try:
        client = default_client()
    except ValueError:  # no client open
        return None
    return client if client.status == "running" else None


@contextlib.contextmanager
def dask_client(client=None, n_workers: int | None = None, gpu: bool = False, security=None):
    """Yield a client, closing whatever this function started.

    * a ``distributed.Client``: used as is (``n_workers`` is then ignored, with a warning; so for an
      address);
    * a string: the address of a running scheduler (``tcp://host:8786``, ``tls://...``), checked first
      by :func:`~cdfts_dask.scheduler_check.check_scheduler` (bounded handshake, one-line errors);
    * ``None``: the session's default client when one is open (a Dask user's
      ``Client(...)``, as every Dask collection would use it; ``n_workers`` is
      then ignored, with a warning), otherwise an embedded cluster started for
      this run: ``LocalCluster`` with ``n_workers`` single-threaded worker
      processes, or ``dask_cuda.LocalCUDACluster`` (one worker per GPU) when ``gpu``; its scheduler,
      workers and dashboard listen on 127.0.0.1 only, its worker processes ignore SIGINT (a Ctrl-C
      reaches this process, which closes them: no traceback per worker), and it drops log records
      below the Dask configuration value ``cdfts.embedded-cluster.silence-logs`` (default 40, ERROR;
      the command line sets 50: its errors are one line of its own).

    ``security`` (a ``distributed.security.Security``, e.g. TLS certificates) is passed to the client
    for a scheduler address and to the embedded cluster.
    """
    from distributed import Client

    if n_workers is not None and isinstance(client, (Client, str)):
        warnings.warn(
            f"n_workers={n_workers} is ignored: the workers of the given client's cluster ({client!r}) "
            "are used",
            UserWarning,
            stacklevel=5,  # the caller of cdf_ts
        )
    if isinstance(client, Client):
        yield client
        return
    if isinstance(client, str):
        check_scheduler(client, security)
        try:
            c = Client(client, timeout=connect_timeout(), security=security)
        except OSError as exc:
            raise ValueError(f"client: cannot reach the Dask scheduler at {client!r}: {exc}") from None
        with c:
            _TEMPORARY.add(c)
            logger.info("connected to the Dask scheduler at %s", client)
            yield c
        return
    if client is not None:
        raise TypeError(f"client must be a distributed.Client, a scheduler address or None, got {client!r}")
    ambient = session_client()
    if ambient is not None:
        if n_workers is not None:
            warnings.warn(
                f"n_workers={n_workers} is ignored: the session's default Dask client is used "
                f"({ambient.scheduler.address}); pass client= to choose another cluster",
                UserWarning,
                stacklevel=5,  # the caller of cdf_ts
            )
        logger.info("using the session's default Dask client (scheduler %s)", ambient.scheduler.address)
        yield ambient
        return
    import dask

    local = dict(
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        security=security,
        silence_logs=dask.config.get("cdfts.embedded-cluster.silence-logs", 40),
    )
    with _sigint_ignored_by_children():  # Ctrl-C reaches this process, which closes the cluster
        if gpu:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(n_workers=n_workers, **local)  # None: one worker per visible GPU
        else:
            from distributed import LocalCluster

            cluster = LocalCluster(
                n_workers=n_workers or default_workers(), threads_per_worker=1, processes=True, **local
            )
    with cluster, Client(cluster, security=security) as c:
        _TEMPORARY.add(c)
        logger.info("started an embedded Dask cluster (%s)", type(cluster).__name__)
        yield c


@contextlib.contextmanager
def _sigint_ignored_by_children():
    """Ignore SIGINT while child processes are started (they inherit it, and Python keeps an ignored
    SIGINT ignored); this process's own handler is restored afterwards.  Main thread only."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
