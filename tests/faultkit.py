"""Helpers for the fault tests: CLI subprocesses, process-group kills, a local Dask scheduler."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

from conftest import DATA, cli_env

from cdfts_dask import runner

SYN = DATA / "syn.csv"


def cdfts_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "cdfts_dask", *map(str, args)]


def run_cli(*args, timeout: float = 300, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        cdfts_cmd(*args), env=cli_env(), capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def spawn_cli(*args) -> subprocess.Popen:
    """Start ``cdfts ...`` in its own session, so that it and its worker processes can be killed together."""
    return subprocess.Popen(
        cdfts_cmd(*args),
        env=cli_env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Kill the process group of ``proc`` (started with ``start_new_session``) and reap it."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def wait_for_line(proc: subprocess.Popen, prefix: str, timeout: float = 120) -> str:
    """Read ``proc``'s stderr until a line starting with ``prefix``; fail if it ends first."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"process ended before {prefix!r}; stderr: {''.join(seen)[-2000:]}")
        seen.append(line)
        if line.strip().startswith(prefix):
            return line
    raise AssertionError(f"no {prefix!r} within {timeout} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dask_processes(n_workers: int = 2, cwd=None, worker_args: tuple[str, ...] = ()):
    """A real ``dask scheduler`` and ``n_workers`` ``dask worker`` processes on 127.0.0.1 (cleaned up),
    started in the working directory ``cwd`` (default: this process's), the workers with the further
    command-line arguments ``worker_args``."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    common = dict(
        env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=cwd
    )
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-dashboard",
            ],
            **common,
        )
    ]
    try:
        for _ in range(n_workers):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "dask",
                        "worker",
                        address,
                        "--host",
                        "127.0.0.1",
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--nworkers",
                        "1",
                        *worker_args,
                    ],
                    **common,
                )
            )
        yield address, procs
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=20)


def rewrite_attributes(node, drop: tuple[str, ...] = (), **changes) -> None:
    """Change a store node's attributes (a Zarr group of a checkpoint store or one of its iterations) the
    way cdfts-dask writes them, with a fresh ``attributes_digest``: the states a run itself can leave
    (status "running" after a kill, a store of an older version), or a damage that the checksum would not
    see.  ``node.attrs[...] = ...`` alone is an edit that fails the checksum."""
    from cdfts_dask.store import with_attributes_digest

    attrs = {key: value for key, value in {**dict(node.attrs), **changes}.items() if key not in drop}
    node.attrs.put(with_attributes_digest(attrs))


class LostWorkers(Exception):
    """Stands in for what Dask raises when a run's data went with its workers."""


class DenseLosingWorkers(runner.DenseMethod):
    """The oracle, whose step calls ``fail_calls`` (1 = the first) lose their workers' data: fault
    injection for the runner's recovery loop (:func:`cdfts_dask.runner.run`, ``_recover``), without a
    cluster.  Counts the recoveries' waits for workers; ``scheduler_gone``: the lost data went with the
    client's link to its scheduler."""

    lost_errors = (LostWorkers,)

    def __init__(self, fail_calls=(), scheduler_gone: bool = False):
        self.fail_calls, self.scheduler_gone = set(fail_calls), scheduler_gone
        self.calls = self.waits = 0

    def lost_its_scheduler(self, exc) -> bool:
        return self.scheduler_gone

    def await_workers(self, timeout) -> None:
        self.waits += 1

    def step(self, *args, **kwargs):
        self.calls += 1
        if self.calls in self.fail_calls:
            raise LostWorkers(f"step call {self.calls}")
        return super().step(*args, **kwargs)

    def run_on(self, X, delta: float = 1e-12, max_iter: int = 4, **kwargs) -> runner.RunResult:
        """:func:`cdfts_dask.runner.run` of X through this method: lambda 0.2, the epsilon estimator."""
        return runner.run(self, X, X.shape, 0.2, delta, max_iter, "epsilon", None, **kwargs)
