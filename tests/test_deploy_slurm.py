"""deploy/hpc.py on a real SLURM: a single-node cluster on 127.0.0.1, started and stopped by this module.

Needs root and the Debian packages ``slurm-wlm`` and ``munge`` (``.ci/run``
installs them); skipped with the reason otherwise. Every daemon runs from a
temporary directory (configuration, state, spool, logs, munge key and socket)
on free loopback ports, and is stopped by pid afterwards.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, ROOT

pytestmark = pytest.mark.slow

HPC = ROOT / "deploy" / "hpc.py"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo")
#: options of every run here: a fixed number of iterations (delta too small to converge earlier)
RUN = ["--lam", "0.1", "--delta", "1e-12", "--max-iter", "12"]
#: a run's time limit in seconds (the runs take about 15 s on 2 cores)
RUN_LIMIT = 300


def _which(name: str) -> str | None:
    """``name`` on PATH, or in the sbin directories where Debian puts the daemons."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (munged runs as the munge user, slurmd as root)"
    absent = [name for name in DAEMONS + CLIENTS if _which(name) is None]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm munge)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no 'munge' user (apt-get install munge)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SingleNodeSlurm:
    """munged, slurmctld and slurmd for this host, reachable on 127.0.0.1 only."""

    def __init__(self, root: Path):
        self.root = root
        self.host = socket.gethostname()
        self.procs: list[subprocess.Popen] = []
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _munge(self) -> Path:
        munge = pwd.getpwnam("munge")
        private = self.root / "munge"  # key, seed, pid and log: the munge user's only
        sockets = self.root / "munge-socket"  # the socket directory must be traversable by all
        for path, mode in ((private, 0o700), (sockets, 0o755)):
            path.mkdir(mode=mode)
            os.chown(path, munge.pw_uid, munge.pw_gid)
        key = private / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        os.chown(key, munge.pw_uid, munge.pw_gid)
        socket_path = sockets / "munge.socket"
        self._start(
            [_which("munged"), "--foreground", f"--key-file={key}", f"--socket={socket_path}",
             f"--pid-file={private}/munged.pid", f"--log-file={private}/munged.log",
             f"--seed-file={private}/munged.seed"],
            user="munge", group="munge",
        )  # fmt: skip
        return socket_path

    def _write_conf(self, munge_socket: Path) -> None:
        r, h = self.root, self.host
        self.conf.write_text(
            f"ClusterName=cdfts-test\nSlurmctldHost={h}(127.0.0.1)\nSlurmUser=root\n"
            f"AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={munge_socket}\n"
            f"SlurmctldPort={_free_port()}\nSlurmdPort={_free_port()}\n"
            "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny\n"
            f"StateSaveLocation={r}/state\nSlurmdSpoolDir={r}/spool\n"
            f"SlurmctldPidFile={r}/slurmctld.pid\nSlurmdPidFile={r}/slurmd.pid\n"
            f"SlurmctldLogFile={r}/slurmctld.log\nSlurmdLogFile={r}/slurmd.log\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
            "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
            "MpiDefault=none\nReturnToService=2\n"
            f"NodeName={h} NodeAddr=127.0.0.1 CPUs=2 RealMemory=8000 State=UNKNOWN\n"
            f"PartitionName=debug Nodes={h} Default=YES MaxTime=INFINITE State=UP\n"
        )
        for name in ("state", "spool"):
            (self.root / name).mkdir()

    def _start(self, argv: list[str], **kwargs) -> None:
        log = open(self.root / f"{Path(argv[0]).name}.stderr", "w")  # noqa: SIM115 - closed with the process
        self.procs.append(
            subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, **kwargs)
        )
        log.close()

    def start(self, timeout: float = 60.0) -> None:
        self._write_conf(self._munge())
        self._start([_which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._start([_which("slurmd"), "-D", "-f", str(self.conf)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.run("sinfo", "-h", "-o", "%T", check=False).stdout.strip()
            if state == "idle":
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        raise RuntimeError(f"the single-node SLURM did not come up (node state {state!r})\n{self.logs()}")

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30, check=check)

    def jobs(self) -> dict[str, str]:
        """Job id -> state of every job in the queue."""
        out = self.run("squeue", "-h", "-o", "%i %T").stdout.split()
        return dict(zip(out[::2], out[1::2], strict=True))

    def logs(self) -> str:
        return "\n".join(
            f"== {p.name}\n{p.read_text()[-2000:]}" for p in sorted(self.root.glob("*.stderr"))
        )

    def stop(self) -> None:
        """Cancel what is left in the queue, then stop every daemon started here, by pid."""
        with contextlib.suppress(Exception):
            self.run("scancel", "--partition", "debug", check=False)
            deadline = time.monotonic() + 30
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.5)
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


@pytest.fixture(scope="module")
def slurm():
    reason = _missing()
    if reason:
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="cdfts-slurm-"))
    root.chmod(0o755)  # the munge user must reach its directories
    cluster = SingleNodeSlurm(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    """syn.csv (1500 x 2 plus labels) as .npy, and the embedded run of the same options as the reference."""
    from cdfts_dask.cli import main as cdfts

    folder = tmp_path_factory.mktemp("slurm-data")
    table = np.loadtxt(DATA / "syn.csv", delimiter=",", skiprows=1)
    np.save(folder / "in.npy", table[:, :2])
    assert cdfts(["transform", str(folder / "in.npy"), str(folder / "ref.npy"), "--method", "tiled",
                  "--workers", "2", "--quiet", *RUN]) == 0  # fmt: skip
    return folder, table, np.load(folder / "ref.npy")


def hpc(slurm, cwd: Path, *argv: str, **kwargs) -> subprocess.Popen:
    """``python deploy/hpc.py slurm ARGV`` with 2 jobs on the test cluster; its batch jobs log to ``cwd``."""
    command = [sys.executable, str(HPC), "slurm", *argv, "--jobs", "2", "--queue", "debug",
               "--memory", "1GiB", "--walltime", "00:10:00", *RUN]  # fmt: skip
    return subprocess.Popen(command, cwd=cwd, env=slurm.env, text=True, **kwargs)


def worker_logs(cwd: Path) -> list[str]:
    return [p.read_text() for p in sorted(cwd.glob("slurm-*.out"))]


def test_hpc_slurm_two_jobs_equals_embedded_run(slurm, points, tmp_path):
    folder, table, reference = points
    out = tmp_path / "out.csv"
    proc = hpc(slurm, tmp_path, str(DATA / "syn.csv"), str(out), "--label", "label",
               "--checkpoint", str(tmp_path / "run.zarr"), stderr=subprocess.PIPE)  # fmt: skip
    _, err = proc.communicate(timeout=RUN_LIMIT)
    assert proc.returncode == 0, f"{err}\n{slurm.logs()}"
    written = np.loadtxt(out, delimiter=",", skiprows=1)
    assert out.read_text().splitlines()[0] == "x0,x1,label"
    np.testing.assert_allclose(written[:, :2], reference, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(written[:, 2], table[:, 2])  # labels passed through untouched
    logs = worker_logs(tmp_path)  # one per batch job: both workers ran in SLURM jobs, on loopback
    assert len(logs) == 2, logs
    for log in logs:
        assert "Registered to:" in log and "tcp://127.0.0.1:" in log, log
    assert not any(p.suffix == ".tmp" or ".tmp" in p.name for p in tmp_path.iterdir())


def test_hpc_slurm_over_tls_equals_embedded_run(slurm, points, tmp_path):
    """Regression (found by a security review, 2026-11-25): off loopback the recipe's scheduler spoke
    plain TCP on the cluster network, where anyone who reaches it can run code as the user.  Off
    loopback TLS is now the default (``--tls auto``); here ``--tls on`` takes that path on loopback: a
    temporary certificate, its workers' copy in ``--tls-dir``, every comm ``tls://``."""
    folder, _, reference = points
    out = tmp_path / "out.npy"
    certificates = tmp_path / "certs"
    certificates.mkdir()
    tls = ["--tls", "on", "--tls-dir", str(certificates)]
    proc = hpc(slurm, tmp_path, str(folder / "in.npy"), str(out), *tls, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=RUN_LIMIT)
    assert proc.returncode == 0, f"{err}\n{slurm.logs()}"
    np.testing.assert_allclose(np.load(out), reference, rtol=0, atol=1e-9)
    logs = worker_logs(tmp_path)
    assert len(logs) == 2, logs
    for log in logs:
        assert "Registered to:" in log and "tls://127.0.0.1:" in log and "tcp://" not in log, log
    assert list(certificates.iterdir()) == []  # the workers' copy of the key is gone with the run


def _listening_not_loopback(pids: set[int]) -> list:
    import psutil

    return [
        c for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids and c.laddr.ip not in ("127.0.0.1", "::1")
    ]  # fmt: skip


def _process_tree(roots: list[int], marker: str) -> set[int]:
    """``roots`` and the processes whose command line holds ``marker``, with all their descendants."""
    import psutil

    found: set[int] = set()
    starts = [psutil.Process(pid) for pid in roots]
    for proc in psutil.process_iter(["cmdline"]):
        if marker in " ".join(proc.info["cmdline"] or []):
            starts.append(proc)
    for proc in starts:
        with contextlib.suppress(psutil.Error):
            found.add(proc.pid)
            found.update(child.pid for child in proc.children(recursive=True))
    return found


def test_hpc_slurm_survives_a_cancelled_worker_job(slurm, points, tmp_path):
    from distributed import Client

    folder, _, reference = points
    out = tmp_path / "out.npy"
    proc = hpc(slurm, tmp_path, str(folder / "in.npy"), str(out), "--checkpoint", str(tmp_path / "run.zarr"),
               stderr=subprocess.PIPE)  # fmt: skip
    watchdog = threading.Timer(RUN_LIMIT, proc.kill)
    watchdog.start()
    lines, cancelled_at, exposed = [], None, None
    try:
        for line in proc.stderr:
            lines.append(line)
            if cancelled_at is None and line.startswith("cdfts: iteration 1: "):
                scheduler = re.search(r"scheduler (tcp://[\d.]+:\d+)", "".join(lines))[1]
                with Client(scheduler, timeout=30) as client:  # both jobs' workers take part in the run
                    client.wait_for_workers(2, timeout=120)
                jobs = slurm.jobs()
                assert sorted(jobs.values()) == ["RUNNING", "RUNNING"], jobs
                exposed = _listening_not_loopback(
                    _process_tree([p.pid for p in slurm.procs] + [proc.pid], scheduler)
                )
                victim = min(jobs, key=int)
                slurm.run("scancel", victim)
                deadline = time.monotonic() + 60
                while victim in slurm.jobs() and time.monotonic() < deadline:  # the job is gone ...
                    time.sleep(0.2)
                cancelled_at = len(lines)  # ... before the iterations that follow
        proc.wait(timeout=30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    log = "".join(lines)
    assert proc.returncode == 0, f"{log}\n{slurm.logs()}"
    assert cancelled_at is not None, log
    assert any(ln.startswith("cdfts: iteration ") for ln in lines[cancelled_at:]), log  # the run went on
    assert exposed == [], exposed  # scheduler, workers, slurm: nothing listens beyond 127.0.0.1
    assert any("CANCELLED" in text for text in worker_logs(tmp_path))
    written = np.load(out)  # a real .npy file, not a Zarr directory
    np.testing.assert_allclose(written, reference, rtol=0, atol=1e-9)
