"""The ``distributed.Client`` a run uses: the one given, one for a scheduler address, the
session's default client, or an embedded cluster started for the run."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
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
    """The default client of this session (``distributed.default_client()`` semantics), or None (none
    open, or one not running: closing, or not started).  One that lost its scheduler and is reconnecting
    is refused in one line, before any work: the run would otherwise start an embedded cluster on this
    machine, unasked, for work its user sent to a cluster (until Dask's reconnect attempts end, after
    its connect timeout, and close the client)."""
    from distributed import default_client

    try:
        client = default_client()
    except ValueError:  # no client open
        return None
    if client.status == "connecting":
        raise ValueError(
            f"client: the session's default Dask client lost its scheduler at {_address_of(client)} and is "
            "trying to reconnect; run again once it has, pass client= (another cluster), or close that "
            "client (client.close()) to run on an embedded cluster"
        )
    return client if client.status == "running" else None


#: how long a run waits for the first worker of a cluster it did not start (a scheduler just started, a job
#: whose workers are still queued); the Dask configuration value ``cdfts.worker-wait`` (e.g. ``"5 minutes"``;
#: a positive finite duration, or None (YAML ``null``) to wait without a limit), see :func:`worker_wait`
WORKER_WAIT = "60s"


def worker_wait() -> float | None:
    """Seconds to wait for a first worker: the Dask configuration value ``cdfts.worker-wait`` (default
    :data:`WORKER_WAIT`), None when it is None (no limit).  Anything but a positive finite duration is a
    ``ValueError`` naming ``cdfts.worker-wait`` and the value: ``0`` would wait forever (distributed's
    ``wait_for_workers`` reads a zero timeout as none), ``"nan"`` or ``"10 parsecs"`` made
    ``parse_timedelta`` raise ``KeyError``, ``"1e400"`` ``OverflowError``."""
    import dask

    from ._validation import check_duration

    value = dask.config.get("cdfts.worker-wait", WORKER_WAIT)
    if value is None:
        return None
    return check_duration(value, "the Dask configuration value cdfts.worker-wait", "5 minutes")


#: what a worker process of a run holds before any of its data: Python, NumPy, Dask, cdfts-dask and the
#: loaded numba kernels (measured 2026-12-06 on Linux: 203 MiB with cached kernels, 290 MiB while
#: compiling them and in a sampled fit's transform)
WORKER_FOOTPRINT = 300 * 2**20


def _memory_pause(dask_worker=None) -> tuple[int, float]:
    """``(memory limit in bytes, fraction of it at which Dask pauses the worker)`` of the worker this
    runs on (``client.run``), as its own memory manager has them; 0 for no limit, no pausing."""
    manager = dask_worker.memory_manager
    return int(manager.memory_limit or 0), float(manager.memory_pause_fraction or 0.0)


def warn_if_workers_would_pause(client) -> None:
    """Warn, naming the workers, when a worker's Dask memory limit is so low that the memory it holds
    before any data (:data:`WORKER_FOOTPRINT`) reaches the fraction at which Dask pauses it (the
    worker's own limit and fraction): a paused worker runs no task, and a run waits on it without an
    end.  A worker without a limit or with pausing off never warns (at its limit the nanny restarts it:
    a run then ends with :class:`WorkersLost`, whose message names memory)."""
    thresholds = client.run(_memory_pause)
    low = {addr: (limit, pause) for addr, (limit, pause) in thresholds.items()
           if 0 < limit * pause < WORKER_FOOTPRINT}  # fmt: skip
    if not low:
        return
    mib = "/".join(sorted({str(round(limit / 2**20)) for limit, _ in low.values()}))
    fractions = "/".join(sorted({f"{pause:.0%}" for _, pause in low.values()}))
    enough = math.ceil(WORKER_FOOTPRINT / min(pause for _, pause in low.values()) / 2**26) * 64  # MiB
    warnings.warn(
        f"the Dask workers {', '.join(sorted(low))} have a memory limit of {mib} MiB, and Dask pauses a "
        f"worker at {fractions} of it: a cdfts-dask worker holds about {WORKER_FOOTPRINT // 2**20} MiB "
        "before any data (Python, Dask, the numba kernels), so this run may wait on paused workers "
        f"without an end; give each worker at least {enough} MiB plus its share of the data "
        "(LocalCluster(memory_limit=...), dask worker --memory-limit)",
        UserWarning,
        stacklevel=2,
    )


#: how often (seconds) a run on a Dask cluster asks the scheduler whether it has workers that run tasks
STALL_POLL = 10.0


def _worker_statuses(client) -> dict[str, str]:
    """Each worker's status as the scheduler has it now (``"running"``, ``"paused"``, ...): asked of the
    scheduler itself (``Client.scheduler_info`` returns a copy that the client's own periodic refresh
    may have replaced meanwhile with one listing no worker)."""
    identity = client.sync(client.scheduler.identity)
    return {addr: info.get("status") for addr, info in identity.get("workers", {}).items()}


def _stall_warning(statuses: dict[str, str], address: str) -> str | None:
    """What keeps a run from going on, from the workers' ``statuses`` (:func:`_worker_statuses`): no
    worker at all, or every worker paused; None while some worker runs tasks."""
    if not statuses:
        return (
            f"the Dask cluster (scheduler {address}) has had no worker for at least {STALL_POLL:g} s (its "
            "workers left or were killed, or an adaptive cluster retired them while the client worked "
            "alone): the run waits until one joins; an adaptive cluster starts them for the next task, "
            f"otherwise start workers (dask worker {address}) or stop the run (with a checkpoint it resumes)"
        )
    if all(status == "paused" for status in statuses.values()):
        return (
            f"the Dask workers {', '.join(sorted(statuses))} have all been paused for at least "
            f"{STALL_POLL:g} s (Dask pauses a worker whose memory reached its pause fraction of its "
            "limit; a paused worker runs no task): the run waits until they free memory; give each "
            f"worker more memory (about {WORKER_FOOTPRINT // 2**20} MiB plus its share of the data), "
            "or stop the run (with a checkpoint it resumes)"
        )
    return None


@contextlib.contextmanager
def warn_while_the_run_stalls(client):
    """While the block runs, ask the scheduler every :data:`STALL_POLL` seconds whether the run can go
    on: when two asks in a row find no worker at all (an adaptive cluster may also have retired them
    while the client worked alone: the warning says so), or every worker paused (Dask pauses a worker
    whose memory reached its pause fraction: it runs no task), warn, once for each, saying which (a
    warning that cannot be shown, under ``-W error``, goes to the log).  The run goes on waiting
    (a worker may join; a paused one resumes once its memory is freed, e.g. by spilling to disk)."""
    stop = threading.Event()

    def watch() -> None:
        said: set[str] = set()
        last, found = None, 0
        while not stop.wait(STALL_POLL):
            try:
                stall = _stall_warning(_worker_statuses(client), client.scheduler.address)
            except BaseException:  # the client closing, the scheduler gone: the run itself will say so
                return
            found = found + 1 if stall is not None and stall == last else int(stall is not None)
            last = stall
            if found == 2 and stall not in said:
                said.add(stall)
                try:
                    warnings.warn(stall, UserWarning, stacklevel=1)
                except BaseException:  # warnings are errors here: raised in this thread, they reach no one
                    logger.warning(stall)

    thread = threading.Thread(target=watch, name="cdfts-stall-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1.0)  # a scheduler that does not answer must not hold the run's end


class WorkersLost(ConnectionError):
    """The cluster lost the run's data: the Dask workers holding it (killed, out of memory, network cut)
    or the connection to the Dask scheduler (killed, restarted, network cut), with which every worker's
    share of the run is gone too."""


#: seconds a run's connection error waits for the client to see that its scheduler is gone
SCHEDULER_LOSS_GRACE = 2.0


def lost_its_scheduler(client, exc: BaseException) -> bool:
    """Whether the run's error ``exc`` came from ``client`` losing its scheduler (killed, restarted,
    network cut): the client is reconnecting, or closed after failing to.  A connection error
    (``CommClosedError`` of a call to the scheduler, an ``OSError``) can reach the run before the
    client's own link notices the same reset; it waits up to :data:`SCHEDULER_LOSS_GRACE` for that."""
    if not isinstance(exc, Exception):  # Ctrl-C, SystemExit: the caller's, whatever the client
        return False
    deadline = time.monotonic() + SCHEDULER_LOSS_GRACE
    while isinstance(exc, OSError) and client.status == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    return client.status != "running"


def workers_lost_errors() -> tuple[type[BaseException], ...]:
    """What Dask raises when work lost data with its workers that it cannot recompute: a future
    cancelled (its input was scattered to, or computed on, workers that died), a task that killed its
    workers again and again."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    return (FutureCancelledError, KilledWorker)


def what_was_lost(client, exc: BaseException) -> str | None:
    """What the error ``exc`` of work on ``client`` says the cluster lost: ``"scheduler"`` (the client's
    link to it, :func:`lost_its_scheduler`), ``"workers"`` (:func:`workers_lost_errors`), or None
    (another error)."""
    if lost_its_scheduler(client, exc):
        return "scheduler"
    if isinstance(exc, workers_lost_errors()):
        return "workers"
    return None


#: what an error saying that workers were lost advises where they ran out of memory
MORE_MEMORY = "where the workers' logs say they exceeded their memory budget, give each more memory first"


def scheduler_lost(client, exc: BaseException) -> str:
    """The start of a message saying that ``client`` lost its scheduler, with Dask's error ``exc``."""
    return f"lost the connection to the Dask scheduler at {_address_of(client)} ({first_line(exc)})"


def _address_of(client) -> str:
    """The address of ``client``'s scheduler for a message, ``"?"`` where the client no longer has one."""
    return getattr(client.scheduler, "address", None) or "?"


def first_line(exc: BaseException) -> str:
    """``exc`` in one line for a message of ours: its type and the first line of its text (200 characters)."""
    reason = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {reason}"


def check_workers(client, gpu: bool = False) -> None:
    """Refuse, before any work, a cluster this run did not start that cannot run it (one-line errors
    naming the scheduler and the workers):

    * a closed client;
    * no worker within ``cdfts.worker-wait`` (default :data:`WORKER_WAIT`, checked by :func:`worker_wait`
      before any waiting; None waits without a limit): the graph would wait for one forever;
    * a worker without cdfts-dask (it would die reading the first task that names the package, and the
      run wait for it) or with another version (it would run its own copy of the kernels), asked with
      :func:`_cannot_import` and each worker's ``cdfts_dask.__version__``;
    * for ``gpu``, a worker without CuPy (a cluster mixing CPU and GPU workers would send CUDA tasks to
      the CPU ones).
    """
    from . import __version__

    wait = worker_wait()
    if client.status != "running":
        raise ValueError(f"client: the given Dask client is {client.status} ({client!r}); pass an open one")
    where = f"the Dask scheduler at {client.scheduler.address}"
    if not client.nthreads():
        limit = "without a limit" if wait is None else f"up to {wait:g} s"
        logger.info("waiting %s for a worker of %s", limit, where)
        try:
            client.wait_for_workers(1, timeout=wait)
        except TimeoutError:
            raise ValueError(
                f"client: {where} has no workers (waited {wait:g} s, Dask configuration cdfts.worker-wait): "
                f"start some, e.g. dask worker {client.scheduler.address}"
            ) from None
    missing = _cannot_import(client, "cdfts_dask")
    if missing:
        raise ValueError(
            f"client: the workers {', '.join(missing)} of {where} cannot import cdfts_dask (a worker dies "
            f"reading a task that names it): install cdfts-dask {__version__} there"
        )
    # the version of the module each worker imports (a source checkout on PYTHONPATH has no installed
    # distribution, and may shadow one of another version), read by the builtin eval: nothing of ours
    answers = client.run(eval, "__import__('cdfts_dask').__version__", on_error="return")
    versions = dict(sorted(answers.items()))
    other = {a: v for a, v in versions.items() if v != __version__}
    if other:
        listed = ", ".join(f"{a} ({v})" for a, v in other.items())
        raise ValueError(
            f"client: the workers {listed} of {where} have another cdfts-dask than this client "
            f"({__version__}); install one version everywhere (each worker runs its own copy of the kernels)"
        )
    no_gpu = _cannot_import(client, _gpu_array_module()) if gpu else []
    if no_gpu:
        raise ValueError(
            f"client: backend='cuda' needs CuPy on every worker, and the workers {', '.join(no_gpu)} of "
            f"{where} have none (CPU workers beside the GPU ones would be sent CUDA tasks): use a "
            "scheduler whose workers are all dask-cuda workers"
        )


@contextlib.contextmanager
def dask_client(client=None, n_workers: int | None = None, gpu: bool = False, security=None):
    """Yield a client, closing whatever this function started.

    * a ``distributed.Client``: used as is (``n_workers`` is then ignored, with a warning; so for an
      address);
    * a string: the address of a running scheduler (``tcp://host:8786``, ``tls://...``; ``host:8786`` is
      tcp, as ``Client`` reads it), checked first
      by :func:`~cdfts_dask.scheduler_check.check_scheduler` (bounded handshake, one-line errors);
    * ``None``: the session's default client when one is open (a Dask user's
      ``Client(...)``, as every Dask collection would use it; ``n_workers`` is
      then ignored, with a warning), otherwise an embedded cluster started for
      this run: ``LocalCluster`` with ``n_workers`` single-threaded worker
      processes, or ``dask_cuda.LocalCUDACluster`` (one worker per GPU) when ``gpu``; its scheduler,
      workers and dashboard listen on 127.0.0.1 only, its worker processes block SIGINT (a Ctrl-C
      reaches this process, which closes them: no traceback per worker), and it drops log records
      below the Dask configuration value ``cdfts.embedded-cluster.silence-logs`` (default 40, ERROR;
      the command line sets 50: its errors are one line of its own).  Refused, before any work, inside
      a task on a Dask worker (:func:`refuse_no_client_in_a_task`), and where the embedded cluster
      cannot start its processes (:func:`local_cluster`: a daemonic process, a joblib / loky worker).

    ``security`` (a ``distributed.security.Security``, e.g. TLS certificates) is passed to the client
    for a scheduler address and to the embedded cluster (a given or default client keeps its own
    connection: ``security`` is then ignored, with a warning).  A cluster this function did not start
    is checked first by :func:`check_workers`.  Any cluster's workers are then checked for a memory
    limit that would pause them before any data (:func:`warn_if_workers_would_pause`), and watched while
    the block runs for no worker or every worker paused (:func:`warn_while_the_run_stalls`).
    """
    from distributed import Client

    from ._validation import check_positive_int

    n_workers = check_positive_int(n_workers, "n_workers")  # 0 or fewer: waiting for workers that never come
    if n_workers is not None and isinstance(client, (Client, str)):
        warnings.warn(
            f"n_workers={n_workers} is ignored: the workers of the given client's cluster ({client!r}) "
            "are used",
            UserWarning,
            stacklevel=5,  # the caller of cdf_ts
        )
    if isinstance(client, Client):
        _warn_security_ignored(security, "the given client's")
        check_workers(client, gpu)
        yield from _watched(client)
        return
    if isinstance(client, str):
        check_scheduler(client, security)
        try:
            c = Client(client, timeout=connect_timeout(), security=security)
        except OSError as exc:
            raise ValueError(f"client: cannot reach the Dask scheduler at {client!r}: {exc}") from None
        with _closing(c):
            _TEMPORARY.add(c)
            logger.info("connected to the Dask scheduler at %s", client)
            check_workers(c, gpu)
            yield from _watched(c)
        return
    if client is not None:
        raise TypeError(f"client must be a distributed.Client, a scheduler address or None, got {client!r}")
    refuse_no_cluster_here(client)
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
        _warn_security_ignored(security, "the session's default client's")
        check_workers(ambient, gpu)
        yield from _watched(ambient)
        return
    cluster = local_cluster(n_workers, gpu, security)
    with cluster, Client(cluster, security=security) as c:
        _TEMPORARY.add(c)
        logger.info("started an embedded Dask cluster (%s)", type(cluster).__name__)
        yield from _watched(c)


def _no_record(record: logging.LogRecord) -> bool:
    """A logging filter that drops every record."""
    return False


@contextlib.contextmanager
def _closing(client):
    """Close ``client`` (one :func:`dask_client` connected to an address) as the block ends.  A client that
    lost its scheduler is closed without Dask's records of its reconnect attempts ending ("Failed to
    reconnect to scheduler after 30.00 seconds", or an ``asyncio.CancelledError`` traceback, though the
    close ends them at once): the run has already said that its scheduler is lost
    (:class:`WorkersLost`)."""
    try:
        yield client
    finally:
        dask_log = logging.getLogger("distributed.client")
        lost = client.status != "running"
        if lost:
            dask_log.addFilter(_no_record)
        try:
            client.close()
        finally:
            if lost:
                dask_log.removeFilter(_no_record)


def _watched(client):
    """Yield ``client`` (within :func:`dask_client`) after warning of workers whose memory limit would
    pause them, watching for a cluster without a running worker until the block ends."""
    warn_if_workers_would_pause(client)
    with warn_while_the_run_stalls(client):
        yield client


def refuse_no_cluster_here(client) -> None:
    """The refusals of :func:`dask_client` that need no cluster, for a run that reads data before it
    enters that block (the sampled fit draws its rows first): ``client=None`` inside a task on a Dask
    worker (:func:`refuse_no_client_in_a_task`), and, with no session client to use, in a process that
    cannot start the embedded cluster (:func:`refuse_an_embedded_cluster_here`).  Nothing for a given
    client or address."""
    if client is not None:
        return
    refuse_no_client_in_a_task()
    if session_client() is None:
        refuse_an_embedded_cluster_here()


def refuse_no_client_in_a_task() -> None:
    """Refuse ``client=None`` inside a task on a Dask worker, before any work: the run would start an
    embedded cluster inside the worker (a worker process is daemonic: it may not start the cluster's
    processes), or wait on the worker's own client (the default there once a task asked for it) from a
    task that holds one of the worker's threads, which deadlocks once every thread waits so."""
    from distributed import get_worker

    try:
        address = get_worker().address
    except ValueError:  # not in a task
        return
    raise ValueError(
        f"client=None inside a task on the Dask worker {address}: a run there may neither start an embedded "
        "cluster nor wait on the worker's client from a task that holds one of its threads; inside the "
        "task, pass client=c from 'with distributed.worker_client() as c:' (e.g. cdf_ts(X, client=c); the "
        "task leaves the worker's thread pool while the run waits), or use method='dense'"
    )


def refuse_an_embedded_cluster_here() -> None:
    """Refuse, before any work, to start the embedded cluster in a process that cannot start its worker
    processes: a daemonic one (a ``multiprocessing.Pool`` worker) may start none, and in a joblib / loky
    worker (start method ``"loky"``) each spawned process fails to take up its parent's start method
    (``cannot find context for 'loky'``, then ``Nanny failed to start``)."""
    import multiprocessing

    process = multiprocessing.current_process()
    method = multiprocessing.get_start_method(allow_none=True)
    if process.daemon:
        why = f"this process ({process.name}) is daemonic, and a daemonic process may not start processes"
    elif method is not None and method not in multiprocessing.get_all_start_methods():
        why = (
            f"this process ({process.name}, a joblib / loky worker) runs under the {method!r} start "
            "method, which the cluster's worker processes cannot take up"
        )
    else:
        return
    raise ValueError(
        f"client=None: the embedded Dask cluster cannot start here: {why}; pass client= the address of a "
        "running scheduler or a distributed.Client (a CDFTS given a Client of a cluster outside this process "
        "keeps its address when copied to a joblib worker), or use method='dense'"
    )


def local_cluster(n_workers: int | None, gpu: bool = False, security=None):
    """A new local cluster (not yet entered) that listens on 127.0.0.1 only, scheduler, workers, nannies
    and dashboard (any free port), with ``n_workers`` single-threaded worker processes
    (:func:`default_workers` when None), or ``dask_cuda.LocalCUDACluster`` when ``gpu`` (None: one worker
    per visible GPU).  Its processes block SIGINT (a Ctrl-C while it starts is kept for this process:
    :func:`_sigint_held_from_children`) and it drops log records below the Dask configuration value
    ``cdfts.embedded-cluster.silence-logs`` (default 40, ERROR).  The embedded cluster of
    :func:`dask_client` and the benchmarks' clusters; refused, before any work, where it cannot start
    its processes (:func:`refuse_an_embedded_cluster_here`)."""
    import dask

    refuse_an_embedded_cluster_here()

    local = dict(
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        security=security,
        silence_logs=dask.config.get("cdfts.embedded-cluster.silence-logs", 40),
    )
    cluster = None
    try:
        with _sigint_held_from_children():  # Ctrl-C reaches this process, which closes the cluster
            if gpu:
                from dask_cuda import LocalCUDACluster

                cluster = LocalCUDACluster(n_workers=n_workers, **local)
            else:
                from distributed import LocalCluster

                cluster = LocalCluster(
                    n_workers=n_workers or default_workers(), threads_per_worker=1, processes=True, **local
                )
    except KeyboardInterrupt:  # a Ctrl-C held during the start, delivered as the hold ends
        if cluster is not None:
            cluster.close()
        raise
    return cluster


def _gpu_array_module() -> str:
    """The array module the CUDA task bodies hold points in: ``cupy`` (``numpy`` under numba's simulator)."""
    from .engine import cuda

    return cuda.xp.__name__


def _cannot_import(client, module: str) -> list[str]:
    """The workers (addresses, sorted) where ``import module`` fails.  The task is the builtin ``exec``
    and a string: it names nothing of ours, so a worker without the package runs it and reports the
    error, where a task naming one of our functions would kill it while being read."""
    answers = client.run(exec, f"import {module}", on_error="return")
    return sorted(address for address, error in answers.items() if isinstance(error, BaseException))


def _warn_security_ignored(security, whose: str) -> None:
    if security is not None:
        warnings.warn(
            f"security is ignored: {whose} connection to its scheduler is used as it is",
            UserWarning,
            stacklevel=6,  # the caller of cdf_ts
        )


@contextlib.contextmanager
def _sigint_held_from_children():
    """Start child processes (a cluster's) that never see SIGINT, and keep a Ctrl-C pressed meanwhile
    for this process: ``KeyboardInterrupt`` (or the handler this process had) once the block ends.

    SIGINT is blocked in this thread while the block runs: the threads started meanwhile (the cluster's
    event loop, which spawns the workers, now and on a restart) inherit the block, and so do the
    processes they spawn (a blocked signal stays blocked across ``exec``), so a Ctrl-C to the process
    group reaches none of them and prints no traceback per worker.  A Ctrl-C meanwhile is recorded by a
    handler of this process (run in this thread, whichever thread the kernel gave it to) and acted on
    afterwards.  Python's resource tracker is started first: starting it lifts the block on SIGINT in
    the thread that does (CPython's ``resource_tracker.ensure_running`` ends with ``SIG_UNBLOCK``, not
    the mask it found), which the event loop would then pass to the workers.  Main thread only; where
    signals cannot be blocked, SIGINT is ignored meanwhile instead (children keep an ignored SIGINT)."""
    import signal
    import threading
    from multiprocessing import resource_tracker

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if not hasattr(signal, "pthread_sigmask"):
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
        return
    resource_tracker.ensure_running()
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C still pending is recorded here
        signal.signal(signal.SIGINT, previous)
    if pressed and callable(previous):
        previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
    elif pressed and previous == signal.SIG_DFL:
        raise KeyboardInterrupt
