"""Run ``cdfts transform`` on an HPC batch system through dask-jobqueue (SLURM or PBS).

Every batch job is one Dask worker process with one thread. Input, checkpoint
store and output must live on a file system that all nodes share (e.g.
``$SCRATCH``); the workers run ``--python`` (default: this interpreter), so
cdfts-dask must be installed there (see deploy/README.md)::

    python deploy/hpc.py slurm in.zarr out.zarr --jobs 8 --queue compute --account proj42 \\
        --interface ib0 --checkpoint run.zarr
    python deploy/hpc.py slurm in.npy out.npy --jobs 2 --checkpoint run.zarr   # one node: loopback
    python deploy/hpc.py pbs --print-job-script --queue compute   # only show the batch script

Every option other than the batch-system ones below is ``cdfts transform``'s
(INPUT, OUTPUT, --lam, --label, --checkpoint, --resume, ...), handled by the
same code: .csv/.npy/.zarr by extension, labels passed through, atomic
writes, one-line errors with exit status 2. The run starts once every job's
worker has connected. If this client is killed, run the same command again
with ``--resume``; a worker job that dies (preempted, cancelled) has its
tasks recomputed on the others.

Networking: the scheduler runs here and the workers in the jobs. The default
``--interface lo`` keeps everything on 127.0.0.1, which works when the jobs
run on this machine (a single-node SLURM); when they run on other nodes, give
the cluster network's interface (``ib0``, ``eth0``) or ``--scheduler-host``.
A scheduler on any other address than loopback speaks TLS (``--tls auto``,
the default): Dask's plain TCP is unauthenticated, and anyone who could reach
it could run code as you.  dask-jobqueue makes a temporary self-signed
certificate for the run and writes the workers' copy to ``--tls-dir`` (default:
the current directory), which the jobs must see; it is removed at the end.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import ipaddress
import socket
import sys
from pathlib import Path

from cdfts_dask._validation import check_duration
from cdfts_dask.cli import build_parser, run_command
from cdfts_dask.cli.options import HelpFormatter, OneLineErrorParser
from cdfts_dask.inputs import check_input_file
from cdfts_dask.log import logger, verbosity
from cdfts_dask.outputs import check_writable, output_format

#: keyword arguments shared by both batch systems: one single-threaded worker per job
COMMON = dict(cores=1, processes=1, memory="4GiB", walltime="02:00:00", local_directory="${TMPDIR:-/tmp}")
#: the scheduler's dashboard port (on the scheduler's address only)
DASHBOARD_PORT = 8787


def listen_host(interface: str | None, scheduler_host: str | None) -> str | None:
    """The address the scheduler listens on: ``scheduler_host``, else ``interface``'s IPv4 address."""
    if scheduler_host:
        return scheduler_host
    if interface:
        from distributed.utils import get_ip_interface

        return get_ip_interface(interface)
    return None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def make_cluster(
    system: str,
    queue: str | None = None,
    account: str | None = None,
    interface: str | None = None,
    scheduler_host: str | None = None,
    tls: str = "auto",
    tls_dir: str | None = None,
    **overrides,
):
    """A ``SLURMCluster`` or ``PBSCluster`` whose jobs each run one single-threaded Dask worker.

    The scheduler and its dashboard listen on ``scheduler_host`` (default: the
    address of ``interface``), the workers on ``interface`` (default ``lo``
    when no ``scheduler_host`` is given; ``""``: Dask's choice) (and, when the
    scheduler is on loopback, their dashboards on 127.0.0.1); ``overrides`` go
    to dask-jobqueue as they are (``scheduler_options`` and
    ``worker_extra_args`` entries are merged).  ``tls``: ``"on"`` (a temporary self-signed certificate,
    its workers' copy written to ``tls_dir``, a folder the jobs share), ``"off"`` (plain TCP), or
    ``"auto"``: on unless the scheduler listens on loopback.
    """
    if system not in ("slurm", "pbs"):
        raise ValueError(f"system must be 'slurm' or 'pbs', got {system!r}")
    if tls not in ("auto", "on", "off"):
        raise ValueError(f"--tls must be auto, on or off, got {tls!r}")
    import dask
    import dask_jobqueue

    if interface is None and not scheduler_host:
        interface = "lo"  # single node: everything on 127.0.0.1
    host = listen_host(interface, scheduler_host)
    options = {} if host is None else {"host": host, "dashboard_address": f"{host}:{DASHBOARD_PORT}"}
    options.update(overrides.pop("scheduler_options", {}))
    worker_args = list(overrides.pop("worker_extra_args", []))
    on_loopback = host is not None and _is_loopback(host)
    if on_loopback:  # the workers' dashboards too (dask's default: all)
        worker_args += ["--dashboard-address", "127.0.0.1:0"]
    kwargs = {
        **COMMON,
        "queue": queue,
        "account": account,
        "interface": interface,
        "scheduler_options": options,
        "worker_extra_args": worker_args,
        **overrides,
    }
    if tls == "on" or (tls == "auto" and not on_loopback):
        kwargs |= {"security": True, "shared_temp_directory": str(Path(tls_dir or ".").resolve())}
    cluster_class = dask_jobqueue.SLURMCluster if system == "slurm" else dask_jobqueue.PBSCluster
    # The scheduler runs in this process. Its active memory manager would drop the input's replicas that
    # the client broadcast to every worker (ReduceReplicas), leaving one copy, so a lost job would more
    # often take the only copy with it; the run then goes back to its checkpoint (runner._recover), which
    # costs the iterations since. Keeping the replicas makes that rarer.
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        return cluster_class(**kwargs)


def build_hpc_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="hpc.py",
        description="Run cdfts transform on batch-system jobs (dask-jobqueue). Every option not listed "
        "here is cdfts transform's: INPUT OUTPUT [--lam ...] [--checkpoint STORE] [--resume] "
        "(see cdfts transform --help).",
        allow_abbrev=False,
        formatter_class=HelpFormatter,
    )
    p.add_argument("system", choices=["slurm", "pbs"])
    p.add_argument("--jobs", type=int, default=4, help="batch jobs = Dask workers (one core each)")
    p.add_argument("--queue", help="partition (SLURM) or queue (PBS)")
    p.add_argument("--account", help="account / project to charge")
    p.add_argument("--memory", default=COMMON["memory"], help="memory per job")
    p.add_argument("--walltime", default=COMMON["walltime"], help="time limit per job")
    p.add_argument(
        "--interface",
        default=None,
        help="network interface of the workers and the scheduler: lo (the default without "
        "--scheduler-host) when the jobs run on this machine, the cluster network (ib0, eth0) when "
        "they run on other nodes",
    )
    p.add_argument(
        "--scheduler-host", default=None, help="address the scheduler listens on (default: --interface's)"
    )
    p.add_argument(
        "--tls",
        choices=["auto", "on", "off"],
        default="auto",
        help="TLS between the scheduler, the workers and this client, with a temporary self-signed "
        "certificate: auto is on unless the scheduler listens on loopback (plain TCP lets anyone who "
        "reaches the scheduler run code as you)",
    )
    p.add_argument(
        "--tls-dir",
        default=None,
        metavar="DIR",
        help="folder the jobs share, where the workers' temporary certificate is written (default: the "
        "current directory)",
    )
    p.add_argument(
        "--python", default=sys.executable, help="Python interpreter with cdfts-dask installed, on the nodes"
    )
    p.add_argument(
        "--prologue",
        action="append",
        default=[],
        metavar="COMMAND",
        help="shell command run in each job before the worker starts, e.g. 'module load python' "
        "(repeatable)",
    )
    p.add_argument(
        "--wait",
        default=None,
        metavar="DURATION",
        help="stop when the jobs' workers have not all connected within this long, e.g. '30 minutes' "
        "(default: wait as long as the queue holds the jobs)",
    )
    p.add_argument("--print-job-script", action="store_true", help="print the batch script and exit")
    return p


def _cluster(options):
    return make_cluster(
        options.system,
        options.queue,
        options.account,
        interface=options.interface,
        scheduler_host=options.scheduler_host,
        tls=options.tls,
        tls_dir=options.tls_dir,
        memory=options.memory,
        walltime=options.walltime,
        python=options.python,
        job_script_prologue=options.prologue,
    )


def run(options, transform, args) -> int:
    """Start the scheduler and ``options.jobs`` worker jobs, then run ``cdfts transform`` on them."""
    # the CLI's own checks, before any job is queued (the input's contents are checked when it is read)
    check_input_file(args.input, "input")
    output_format(args.output)
    check_writable(args.output)
    from distributed import Client

    with _cluster(options) as cluster, Client(cluster.scheduler_address, security=cluster.security) as client:
        cluster.scale(jobs=options.jobs)
        args.scheduler = client
        with verbosity(not args.quiet):
            logger.info(
                "hpc.py: scheduler %s; %d %s job(s) submitted, waiting for their workers",
                cluster.scheduler_address, options.jobs, options.system,
            )  # fmt: skip
        # All of them before the run starts: the input array is replicated to every worker present when
        # it starts, so that losing one job later leaves a copy to recompute the lost tasks from.
        try:
            cluster.wait_for_workers(options.jobs, timeout=options.wait_seconds)
        except TimeoutError:
            arrived = len(cluster.scheduler_info.get("workers", {}))
            raise ValueError(
                f"--wait: {arrived} of the {options.jobs} jobs' workers connected within {options.wait}; "
                "see the batch system's queue and the jobs' output (a worker that cannot import cdfts_dask "
                "or reach the scheduler exits at start)"
            ) from None
        return transform(args)


def _seconds(duration: str | None) -> float | None:
    """``--wait`` in seconds (None: no limit); a ValueError naming it unless a positive finite duration."""
    return None if duration is None else check_duration(duration, "--wait", "30 minutes")


def _print_job_script(options) -> int:
    with _cluster(options) as cluster:
        print(cluster.job_script())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_hpc_parser()
    options, rest = parser.parse_known_args(argv)
    if importlib.util.find_spec("dask_jobqueue") is None:
        parser.error("needs the package dask-jobqueue; install it with: pip install dask-jobqueue")
    prog = f"hpc.py {options.system}"
    if options.print_job_script:  # its errors (a bad --interface) one line, as a run's
        return run_command(argparse.Namespace(func=lambda _: _print_job_script(options)), prog=prog)
    if options.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {options.jobs}")
    try:
        options.wait_seconds = _seconds(options.wait)
    except ValueError as exc:  # "soon", "0", "1e400" (parse_timedelta's OverflowError), "nan"
        parser.error(str(exc))
    args, unknown = build_parser().parse_known_args(["transform", *rest])
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    for name in ("scheduler", "workers", "gpu"):
        if getattr(args, name):
            parser.error(f"--{name} is not for hpc.py: the batch jobs are the cluster")
    args.func = functools.partial(run, options, args.func)
    return run_command(args, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
