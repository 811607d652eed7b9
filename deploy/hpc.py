"""Run cdfts-dask on an HPC batch system through dask-jobqueue (SLURM or PBS).

Every batch job is one Dask worker process with one thread; the checkpoint
store must live on a file system that all nodes share (e.g. ``$SCRATCH``)::

    python deploy/hpc.py slurm /scratch/me/in.zarr /scratch/me/out.zarr --jobs 8 \\
        --queue compute --account proj42 --checkpoint /scratch/me/run.zarr
    python deploy/hpc.py pbs ... --print-job-script     # only show the generated batch script

If the client (this script) is killed, run it again with ``--resume``: it
continues from the last complete iteration in the checkpoint store.
"""

from __future__ import annotations

import argparse
import sys

#: keyword arguments shared by both batch systems
COMMON = dict(cores=1, processes=1, memory="4GiB", walltime="02:00:00", local_directory="$TMPDIR")


def make_cluster(system: str, queue: str | None = None, account: str | None = None, **overrides):
    """A ``SLURMCluster`` or ``PBSCluster`` whose jobs each run one single-threaded Dask worker."""
    import dask_jobqueue

    kwargs = {**COMMON, "queue": queue, "account": account, **overrides}
    if system == "slurm":
        return dask_jobqueue.SLURMCluster(**kwargs)
    if system == "pbs":
        return dask_jobqueue.PBSCluster(**kwargs)
    raise ValueError(f"system must be 'slurm' or 'pbs', got {system!r}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("system", choices=["slurm", "pbs"])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--jobs", type=int, default=4, help="batch jobs = Dask workers")
    p.add_argument("--queue")
    p.add_argument("--account")
    p.add_argument("--checkpoint")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--delta", type=float, default=0.015)
    p.add_argument("--print-job-script", action="store_true", help="print the batch script and exit")
    args = p.parse_args(argv)
    cluster = make_cluster(args.system, args.queue, args.account)
    if args.print_job_script:
        print(cluster.job_script())
        cluster.close()
        return 0
    from distributed import Client

    import cdfts_dask

    with cluster, Client(cluster) as client:
        cluster.scale(jobs=args.jobs)
        client.wait_for_workers(1)
        cdfts_dask.cdf_ts(
            args.input,
            lam=args.lam,
            delta=args.delta,
            method="tiled",
            client=client,
            checkpoint=args.checkpoint,
            resume=args.resume,
            output=args.output,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
