"""Fault injection: lost workers, a killed client, half-written stores, full disks, concurrent runs."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import pytest
import zarr
from conftest import cli_env
from faultkit import (
    SYN,
    DenseLosingWorkers,
    LostWorkers,
    dask_processes,
    kill_group,
    run_cli,
    spawn_cli,
    wait_for_line,
)

import cdfts_dask
from cdfts_dask import oracle, paths, runner, store
from cdfts_dask.cli import main as cli_main


@pytest.fixture(scope="module")
def syn_X() -> np.ndarray:
    return np.loadtxt(SYN, delimiter=",", skiprows=1)[:, :-1]


def leftovers(directory) -> list[str]:
    """Temporary or partial files that a failed write must not leave behind."""
    return sorted(p.name for p in directory.iterdir() if ".partial" in p.name or p.name.startswith("."))


# -- a worker process killed in the middle of a pass ------------------------------------------------------


def _kill_worker_mid_shift(client, started: threading.Event, done: threading.Event, killed: list) -> None:
    """Once iteration 1 is reported, SIGKILL the worker that is processing a shift-pass task."""
    started.wait(120)
    pids = client.run(os.getpid)
    while not done.is_set() and not killed:
        for addr, keys in client.processing().items():
            if any(("shift_part" in str(k) or "panel_shift" in str(k)) for k in keys) and addr in pids:
                os.kill(pids[addr], signal.SIGKILL)
                killed.append(pids[addr])
                return
        time.sleep(0.005)


@pytest.mark.slow
def test_worker_killed_mid_pass_gives_the_undisturbed_result(syn_X):
    from distributed import Client, LocalCluster

    expected, ref = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=4, method="dense", return_info=True)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        Client(cluster) as c,
    ):
        started, done, killed = threading.Event(), threading.Event(), []
        killer = threading.Thread(target=_kill_worker_mid_shift, args=(c, started, done, killed))
        killer.start()
        try:
            got, info = cdfts_dask.cdf_ts(
                syn_X,
                delta=1e-12,
                max_iter=4,
                method="tiled",
                client=c,
                tile_size=100,
                progress=lambda r: started.set(),
                return_info=True,
            )
        finally:
            done.set()
            killer.join()
        assert killed, "no worker was killed during the run"
        c.wait_for_workers(2, timeout=60)  # the nanny restarted it
        assert killed[0] not in c.run(os.getpid).values()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(info.deltas, ref.deltas, rtol=0, atol=1e-12)


# -- the data of a run lost with its workers between iterations ------------------------------------------


def _only_positions_left(dask_scheduler) -> bool:
    """Whether the scheduler has forgotten the tasks the positions were computed from (run on it)."""
    sources = ("shift_part", "concat", "summary")  # task prefixes: dask drops the leading underscore
    return not any(ts.prefix.name in sources for ts in dask_scheduler.tasks.values())


def _kill_workers_once(client, which: str, after: int = 1):
    """A progress callback that SIGKILLs every worker process (``which="all"``) or the one holding the
    new positions, once, right after iteration ``after``: those positions then exist nowhere else.

    It first waits (up to 10 s) until the scheduler has forgotten the tasks they were computed from: it
    releases them a few ms after the client hears of the iteration, and a worker killed before that
    loses nothing that Dask cannot compute again from the input on the other worker (a CI run)."""
    killed: list[int] = []

    def progress(report) -> None:
        if report.iteration == after and not killed:
            deadline = time.monotonic() + 10
            while not client.run_on_scheduler(_only_positions_left) and time.monotonic() < deadline:
                time.sleep(0.01)
            pids = client.run(os.getpid)
            holders = [a for a, keys in client.has_what().items() if any("positions" in str(k) for k in keys)]
            for pid in pids.values() if which == "all" else [pids[(holders or list(pids))[0]]]:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    return progress, killed


@pytest.mark.slow
@pytest.mark.parametrize(
    "which, checkpoint", [("all", True), ("one", False)], ids=["all-from-checkpoint", "one-from-input"]
)
def test_data_lost_with_workers_gives_the_undisturbed_result(tmp_path, syn_X, caplog, which, checkpoint):
    """Regression: with the worker(s) holding iteration 1's positions killed, iteration 2 raised
    ``FutureCancelledError ... already forgotten`` (the lineage ends in data scattered to dead workers:
    Dask cannot recompute it).  The run now goes back to the checkpoint's last iteration, or to the
    input, and finishes with the undisturbed result, saying so in one warning."""
    from distributed import Client, LocalCluster

    expected, ref = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=4, method="dense", return_info=True)
    ckpt = tmp_path / "run.zarr" if checkpoint else None
    options = dict(threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50)
    with (
        LocalCluster(n_workers=2, **options) as cluster,
        Client(cluster) as c,
        caplog.at_level("WARNING", logger="cdfts_dask"),
    ):
        c.wait_for_workers(2, timeout=60)
        progress, killed = _kill_workers_once(c, which)
        got, info = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=4, method="tiled", client=c, tile_size=400,
                                      checkpoint=ckpt, progress=progress, return_info=True)  # fmt: skip
    assert len(killed) == (2 if which == "all" else 1)
    lost = [r.getMessage() for r in caplog.records if "data lost during iteration 2" in r.getMessage()]
    assert len(lost) == 1, caplog.text
    goes_on = "going on from iteration 1 of the checkpoint" if checkpoint else "starting again from the input"
    assert goes_on in lost[0], lost[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(info.deltas, ref.deltas, rtol=0, atol=1e-12)  # no iteration counted twice
    if checkpoint:
        stored = store.Checkpoint(ckpt)
        assert stored.completed == 4
        np.testing.assert_allclose(stored.deltas, ref.deltas, rtol=0, atol=1e-12)


def _exit_after_saving(iteration: int) -> None:
    """Run on a worker: its process exits right after the save task has written ``iteration`` to the
    store (marked complete), before the client hears that the task finished (a worker killed then)."""
    from cdfts_dask import runner

    save = runner._save_on_worker

    def save_then_exit(to_host, path, t, *args):
        save(to_host, path, t, *args)
        if t == iteration:
            os._exit(1)

    runner._save_on_worker = save_then_exit


@pytest.mark.slow
@pytest.mark.parametrize("converges_there", [False, True], ids=["goes-on", "converged-there"])
def test_a_worker_lost_after_writing_an_iteration_keeps_its_delta(tmp_path, syn_X, caplog, converges_there):
    """Regression: the run went on after the store's last iteration, t, but kept only the Deltas it had
    heard of (1 .. t-1): every later Delta one place early, one iteration fewer returned than the store
    said, and a run that converged at t did one more iteration and returned it (0.03 off, exit 0)."""
    from distributed import Client, LocalCluster

    ref = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=5, method="dense", return_info=True)[1]
    delta, lost_at = (ref.deltas[2], 3) if converges_there else (1e-12, 2)
    expected, ref = cdfts_dask.cdf_ts(syn_X, delta=delta, max_iter=5, method="dense", return_info=True)
    ckpt = tmp_path / "run.zarr"
    options = dict(threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50)
    with (
        LocalCluster(n_workers=1, **options) as cluster,
        Client(cluster) as c,
        caplog.at_level("WARNING", logger="cdfts_dask"),
    ):
        c.run(_exit_after_saving, lost_at)
        got, info = cdfts_dask.cdf_ts(syn_X, delta=delta, max_iter=5, method="tiled", client=c,
                                      checkpoint=ckpt, return_info=True)  # fmt: skip
    lost = [r.getMessage() for r in caplog.records if "data lost" in r.getMessage()]
    assert len(lost) == 1 and f"during iteration {lost_at} " in lost[0], caplog.text
    assert f"going on from iteration {lost_at} of the checkpoint" in lost[0], lost[0]  # it was written
    stored = store.Checkpoint(ckpt)
    assert stored.completed == info.n_iter
    assert info.n_iter == len(ref.deltas) == (3 if converges_there else 5) and info.converged == ref.converged
    np.testing.assert_allclose(info.deltas, ref.deltas, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert stored.group.attrs["result_iteration"] == info.n_iter
    np.testing.assert_array_equal(stored.positions(info.n_iter), got)


@pytest.mark.slow
def test_workers_lost_again_and_again_gives_up_with_one_line(tmp_path, syn_X, monkeypatch):
    """After ``runner.MAX_RECOVERIES`` recoveries a run stops with WorkersLost, saying how to resume."""
    from distributed import Client, LocalCluster

    from cdfts_dask import runner

    monkeypatch.setattr(runner, "MAX_RECOVERIES", 0)
    ckpt = tmp_path / "run.zarr"
    options = dict(threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50)
    with LocalCluster(n_workers=1, **options) as cluster, Client(cluster) as c:
        progress, _ = _kill_workers_once(c, "all")
        with pytest.raises(cdfts_dask.WorkersLost) as err:
            cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=4, method="tiled", client=c, checkpoint=ckpt,
                              progress=progress)  # fmt: skip
    message = str(err.value)
    assert "\n" not in message and "resume=True" in message and str(ckpt) in message, message
    assert "exceeded their memory budget, give each more memory" in message, message
    assert store.Checkpoint(ckpt).completed == 1  # what was saved is there to resume from


@pytest.mark.parametrize(
    "losses", [runner.MAX_RECOVERIES, runner.MAX_RECOVERIES + 1], ids=["recovers", "gives-up"]
)
def test_a_run_recovers_from_lost_workers_max_recoveries_times_then_gives_up(syn_X, losses):
    """Found by a mutation audit (2026-12-07): the runner's limit made one recovery fewer
    (``recoveries >= MAX_RECOVERIES``) passed every test; the only one of the limit set it to 0.  A run
    whose workers' data is lost ``MAX_RECOVERIES`` times (iteration 2, then iteration 1 of each restart
    from the input) recovers every time and ends with the oracle's result and Deltas, no iteration
    counted twice; one loss more and it gives up, after ``MAX_RECOVERIES`` recoveries."""
    X = syn_X[:90]
    method = DenseLosingWorkers(fail_calls=range(2, 2 + losses))
    if losses > runner.MAX_RECOVERIES:
        with pytest.raises(LostWorkers, match=f"step call {1 + losses}"):
            method.run_on(X)
        assert method.waits == runner.MAX_RECOVERIES
        return
    result = method.run_on(X, keep_model=True)
    expected = oracle.cdf_ts_dense(X, lam=0.2, delta=1e-12, max_iter=4)
    assert method.waits == losses and method.calls == 1 + losses + 4
    np.testing.assert_array_equal(result.X, expected.X)
    assert result.deltas == list(expected.deltas) and len(result.deltas) == 4
    # the model kept without a checkpoint holds each iteration once: the undisturbed run's
    undisturbed = DenseLosingWorkers().run_on(X, keep_model=True).model
    assert len(result.model.iterations) == len(undisturbed.iterations) == 4
    for got, want in zip(result.model.iterations, undisturbed.iterations, strict=True):
        np.testing.assert_array_equal(got.references, want.references)
    new_points = syn_X[90:120]
    np.testing.assert_array_equal(result.model.replay(new_points), undisturbed.replay(new_points))


class _DenseLostAfterSaving(DenseLosingWorkers):
    """The oracle, whose workers are lost right after the save of iteration ``lost_at`` wrote it to the
    checkpoint, before the client heard (as ``_exit_after_saving`` on a cluster)."""

    def __init__(self, lost_at: int):
        super().__init__()
        self.lost_at = lost_at

    def save(self, path, t, info, seconds) -> None:
        super().save(path, t, info, seconds)
        if t == self.lost_at:
            self.lost_at = None
            raise LostWorkers(f"after saving iteration {t}")


@pytest.mark.parametrize("converges_there", [False, True], ids=["goes-on", "converged-there"])
def test_a_recovery_to_the_iteration_that_met_delta_exactly_stops_there(tmp_path, syn_X, converges_there):
    """Found by a mutation audit (2026-12-07): after workers were lost once the save of iteration t had
    written it, the run stops if t's stored Delta meets ``delta``, and ``Delta <= delta`` made ``<`` there
    passed every test (the cluster test's delta is the oracle's, a few ulps from the engine's).  Here
    Delta of iteration 3 equals ``delta`` exactly: the run returns iteration 3, converged, as the
    undisturbed run does; else it goes on from the stored iteration to the oracle's result."""
    X = syn_X[:90]
    reference = oracle.cdf_ts_dense(X, lam=0.2, delta=1e-12, max_iter=5)
    delta = reference.deltas[2] if converges_there else 1e-12
    expected = oracle.cdf_ts_dense(X, lam=0.2, delta=delta, max_iter=5)
    method, ckpt = _DenseLostAfterSaving(lost_at=3), tmp_path / "run.zarr"
    result = method.run_on(X, delta, 5, checkpoint=ckpt)
    assert method.waits == 1 and method.lost_at is None
    assert result.converged == converges_there and result.n_iter == len(expected.deltas)
    assert result.n_iter == (3 if converges_there else 5)
    assert result.deltas == list(expected.deltas)
    np.testing.assert_array_equal(result.X, expected.X)
    stored = store.Checkpoint(ckpt)
    assert stored.completed == stored.group.attrs["result_iteration"] == result.n_iter


def test_a_run_whose_client_lost_its_scheduler_gives_up_at_once(syn_X):
    """Data lost with the client's link to its scheduler: nothing on that client can be recovered, so the
    run raises the loss at once, without waiting for workers (not ``MAX_RECOVERIES`` waits in vain)."""
    X = syn_X[:90]
    method = DenseLosingWorkers(fail_calls=[2], scheduler_gone=True)
    with pytest.raises(LostWorkers, match="step call 2"):
        method.run_on(X)
    assert method.waits == 0


def test_a_transform_whose_workers_die_says_so_and_writes_no_output(tmp_path, syn_X):
    """A model's transform on a cluster whose task kills its worker (out of memory, a crash) as often as
    Dask allows ended with Dask's bare ``KilledWorker``.  Now ``WorkersLost`` says that the workers
    running the transform were lost, that no output was written, and what to give them."""
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    est = cdfts_dask.CDFTS(max_iter=1, method="dense").fit(syn_X[:60])
    dying = da.from_array(syn_X[:60], chunks=30).map_blocks(lambda b: os._exit(1), meta=syn_X[:0])
    out = tmp_path / "out.zarr"
    options = dict(threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50)
    once = {"distributed.scheduler.allowed-failures": 0}  # a task that killed its worker once: KilledWorker
    with dask.config.set(once), LocalCluster(n_workers=1, **options) as cluster, Client(cluster) as c:
        message = (
            r"^the Dask workers running the model's transform of 60 points were lost \(KilledWorker: .*\); "
            r"no output was written and the model is unchanged: run it again \(where the workers' logs say "
            r"they exceeded their memory budget, give each more memory first\)$"
        )
        with pytest.raises(cdfts_dask.WorkersLost, match=message):
            est.set_params(client=c).transform(dying, output=out)
    assert not out.exists()


def test_a_broadcast_whose_worker_connection_closes_is_made_again(syn_X, client, monkeypatch):
    """Found by a memory audit (2026-12-06): a worker restarted for memory while the points were broadcast
    to it ended the run with Dask's bare ``CommClosedError: in <TCP (closed) Scheduler Broadcast ...>``,
    though the points were still on the client.  The broadcast is made again (as after a worker that
    left), and the run gives the oracle's result."""
    from distributed.comm import CommClosedError

    scatter, calls = client.scatter, []

    def closed_once(*args, **kwargs):
        calls.append(kwargs.get("broadcast"))
        if len(calls) == 1:
            raise CommClosedError("in <TCP (closed) Scheduler Broadcast local=tcp://a>: Stream is closed")
        return scatter(*args, **kwargs)

    monkeypatch.setattr(client, "scatter", closed_once)
    Y = cdfts_dask.cdf_ts(syn_X, max_iter=2, delta=1e-12, method="tiled", client=client)
    assert calls[:2] == [True, True]
    np.testing.assert_allclose(Y, oracle.cdf_ts_dense(syn_X, delta=1e-12, max_iter=2).X, rtol=0, atol=1e-9)


# -- the client killed: --resume continues from the last complete iteration -------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "engine", [["--method", "dense"], ["--workers", "1", "--tile-size", "750"]], ids=["dense", "tiled"]
)
def test_sigkilled_client_resumes_to_the_uninterrupted_result(tmp_path, syn_X, engine):
    ckpt, out = tmp_path / "run.zarr", tmp_path / "out.npy"
    args = [
        "transform",
        SYN,
        out,
        "--label",
        "label",
        "--delta",
        "1e-12",
        "--max-iter",
        "6",
        "--checkpoint",
        ckpt,
        *engine,
    ]
    proc = spawn_cli(*args)
    try:
        wait_for_line(proc, "cdfts: iteration 2: ")
    finally:
        kill_group(proc)  # SIGKILL the client and its local workers
    assert proc.returncode == -signal.SIGKILL
    done = zarr.open_group(str(ckpt), mode="r").attrs["completed"]
    assert 2 <= done < 6, done
    assert store.lock_path(ckpt).exists()  # left behind by the dead run; the kernel released the lock
    assert not out.exists()
    res = run_cli(*args, "--resume")
    assert res.returncode == 0, res.stderr
    assert f"iteration {done + 1}: " in res.stderr and f"iteration {done}: " not in res.stderr
    expected = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=6, method="dense")
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-9)
    with store.StoreLock(ckpt):  # released by the resumed run
        pass


# -- a store whose last iteration is half-written -----------------------------------------------------------


@pytest.mark.slow
def test_half_written_iteration_is_discarded_and_redone(tmp_path, syn_X):
    ckpt = tmp_path / "run.zarr"
    cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=3, method="dense", checkpoint=ckpt)
    group = zarr.open_group(str(ckpt), mode="a")
    assert group.attrs["completed"] == 3
    half = group.require_group(store.iteration_key(4))  # a crash while writing iteration 4
    half.create_array("X", shape=syn_X.shape, dtype="f8", chunks=(100, 2))[:100] = 7.0
    group.require_group(store.iteration_key(5))
    got, info = cdfts_dask.cdf_ts(
        syn_X, delta=1e-12, max_iter=5, method="dense", checkpoint=ckpt, resume=True, return_info=True
    )
    expected, ref = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=5, method="dense", return_info=True)
    assert info.resumed_from == 3
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(info.deltas, ref.deltas, rtol=0, atol=1e-12)
    redone = store.Checkpoint(ckpt)
    assert redone.completed == 5
    assert np.all(redone.positions(4) <= 1.0)  # the garbage 7.0 is gone


# -- output not writable, disk full -------------------------------------------------------------------------


def test_cli_output_directory_missing_fails_before_work(tmp_path, capsys):
    out = tmp_path / "no" / "such" / "dir" / "out.csv"
    assert cli_main(["transform", str(SYN), str(out), "--label", "label", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "directory does not exist" in err[0]
    assert not out.parent.exists()


def test_api_output_under_a_regular_file_is_refused_before_work(tmp_path, syn_X):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=r"output: '.*file' is a file, not a directory"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", output=blocker / "out.zarr")
    assert leftovers(tmp_path) == [] and blocker.read_text() == "x"


def _enospc_on_chunks(monkeypatch):
    """Make every Zarr chunk write fail as on a full disk (metadata writes still succeed)."""
    from zarr.storage import LocalStore

    real_set = LocalStore.set

    async def full_disk(self, key, value, *args, **kwargs):
        if "/c/" in f"/{key}" or key.startswith("c/"):
            raise OSError(errno.ENOSPC, "No space left on device", key)
        return await real_set(self, key, value, *args, **kwargs)

    monkeypatch.setattr(LocalStore, "set", full_disk)


def test_disk_full_during_zarr_output_leaves_nothing(tmp_path, syn_X, monkeypatch):
    _enospc_on_chunks(monkeypatch)
    out = tmp_path / "out.zarr"
    with pytest.raises(OSError) as exc:
        cdfts_dask.cdf_ts(syn_X[:60], max_iter=1, method="dense", output=out)
    assert "No space left" in str(exc.value) or exc.value.errno == errno.ENOSPC
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".zarr"])
def test_cli_disk_full_one_line_no_output(tmp_path, monkeypatch, capsys, suffix):
    import cdfts_dask.outputs as outputs

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    _enospc_on_chunks(monkeypatch)
    monkeypatch.setattr(outputs.np, "save", full)
    monkeypatch.setattr(outputs.csv, "writer", full)
    out = tmp_path / f"out{suffix}"
    # --no-label: a .npy / .zarr output holds no labels, and --label would add a warning line saying so
    code = cli_main(["transform", str(SYN), str(out), "--no-label", "--max-iter", "1", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "No space left on device" in err[0], err
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A real 16 KiB tmpfs (needs root and mount rights; skipped otherwise)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".csv", ".npy"])
def test_real_full_disk_cli(tiny_tmpfs, suffix):
    out = tiny_tmpfs / f"out{suffix}"  # 1500 x 2 doubles (24 KB as .npy, ~60 KB as CSV) > 16 KiB
    res = run_cli("transform", SYN, out, "--no-label", "--max-iter", "1", "--quiet")  # (as above)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].lower().count("no space left on device") == 1 and str(out) in lines[0]  # said once
    assert list(tiny_tmpfs.iterdir()) == []


# -- two runs on the same store at once ----------------------------------------------------------


def test_a_checkpoint_whose_lock_cannot_be_written_is_named(tmp_path, syn_X, monkeypatch, capsys):
    """Regression (found by a review of resume, 2026-11-25): a checkpoint in a read-only folder was refused
    (before any work) with only `[Errno 13] Permission denied: '.../k.zarr.lock'`.  The OS refusal is
    simulated here: the tests run as root, whom permissions do not stop."""
    import filelock

    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", self.lock_file)

    monkeypatch.setattr(filelock.FileLock, "acquire", refused)
    ckpt = tmp_path / "run.zarr"
    message = r"checkpoint '.*run\.zarr': cannot write its lock file '.*\.lock' \(Permission denied\);"
    with pytest.raises(PermissionError, match=message + " a run writes its checkpoint store and the lock"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    np.save(tmp_path / "in.npy", syn_X[:50])
    args = ["transform", str(tmp_path / "in.npy"), str(tmp_path / "o.npy"), "--checkpoint", str(ckpt)]
    code = cli_main([*args, "--quiet"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), lines
    assert not ckpt.exists() and not (tmp_path / "o.npy").exists()


@pytest.mark.slow
def test_second_run_on_a_locked_store_is_refused(tmp_path, syn_X):
    ckpt = tmp_path / "run.zarr"
    with store.StoreLock(ckpt):
        with pytest.raises(store.StoreLocked, match=r"run\.zarr.*in use by another run"):
            cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
        res = run_cli("transform", SYN, tmp_path / "o.npy", "--label", "label", "--checkpoint", ckpt)
        lines = [line for line in res.stderr.strip().splitlines() if not line.startswith("cdfts: ")]  # errors
        assert res.returncode == 2 and len(lines) == 1 and str(ckpt) in lines[0] and "in use" in lines[0]
        assert not (tmp_path / "o.npy").exists()
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)  # free again


@pytest.mark.slow
def test_two_concurrent_cli_runs_on_one_store(tmp_path):
    ckpt = tmp_path / "run.zarr"
    first = spawn_cli(
        "transform",
        SYN,
        tmp_path / "a.npy",
        "--label",
        "label",
        "--delta",
        "1e-12",
        "--max-iter",
        "100",
        "--method",
        "dense",
        "--checkpoint",
        ckpt,
    )
    try:
        wait_for_line(first, "cdfts: iteration 1: ")
        second = run_cli(
            "transform", SYN, tmp_path / "b.npy", "--label", "label", "--checkpoint", ckpt, "--resume"
        )
        assert first.poll() is None
    finally:
        kill_group(first)
    lines = [line for line in second.stderr.strip().splitlines() if not line.startswith("cdfts: ")]  # errors
    assert second.returncode == 2 and len(lines) == 1 and "in use by another run" in lines[0], second.stderr
    assert f"pid {first.pid}" in lines[0]
    assert not (tmp_path / "b.npy").exists()


@pytest.mark.slow  # a process of its own; the next test's lock is also free once its holder is killed
def test_lock_of_a_dead_process_is_free_again(tmp_path, syn_X):
    """A run killed with SIGKILL leaves its lock file; the kernel dropped the lock itself with the process."""
    ckpt = tmp_path / "run.zarr"
    code = (
        f"from cdfts_dask import store; l = store.StoreLock({str(ckpt)!r}).acquire(); import os; os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=cli_env())
    assert store.lock_path(ckpt).exists() and '"pid"' in store.lock_path(ckpt).read_text()
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    with store.StoreLock(ckpt):  # released at the end of the run
        pass


@pytest.mark.parametrize("content", ["", "garbage{", '{"pid": 1, "host": "some-other-node"}'])
def test_lock_file_content_never_blocks_a_run(tmp_path, syn_X, content):
    """Regression: an empty or garbage lock file (a full disk) blocked every later run forever."""
    ckpt = tmp_path / "run.zarr"
    store.lock_path(ckpt).write_text(content)
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    assert store.Checkpoint(ckpt).completed == 1


def test_live_holder_is_refused_whatever_its_lock_file_says(tmp_path):
    ckpt = tmp_path / "run.zarr"
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from cdfts_dask import store; h = store.StoreLock({str(ckpt)!r}).acquire(); "
         "print('held', flush=True); import time; time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(store.StoreLocked, match=f"in use by another run \\(pid {holder.pid} on host"):
            store.StoreLock(ckpt).acquire()
        store.lock_path(ckpt).write_text("garbage{")  # the file's content does not decide anything
        with pytest.raises(store.StoreLocked, match="owner unknown"):
            store.StoreLock(ckpt).acquire()
    finally:
        holder.kill()
        holder.wait()
    with store.StoreLock(ckpt):  # free once the holder is dead
        pass


def test_symlinked_store_path_finds_the_same_lock(tmp_path, syn_X):
    """Regression: a store reached through a symlink (of the store or of its folder) bypassed the lock."""
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (tmp_path / "alias").symlink_to(real_dir, target_is_directory=True)
    ckpt = real_dir / "run.zarr"
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    (tmp_path / "link.zarr").symlink_to(ckpt, target_is_directory=True)
    with store.StoreLock(ckpt):
        for other in (
            tmp_path / "alias" / "run.zarr",
            tmp_path / "link.zarr",
            real_dir / ".." / "real" / "run.zarr",
        ):
            with pytest.raises(store.StoreLocked, match="in use by another run"):
                cdfts_dask.cdf_ts(syn_X[:50], max_iter=2, method="dense", checkpoint=other, resume=True)


_RACER = """
import os, sys, time
from pathlib import Path
from cdfts_dask import oracle, paths, store
base, rounds = Path(sys.argv[1]), int(sys.argv[2])
(base / f"ready-{os.getpid()}").touch()
for r in range(rounds):
    while not (base / f"go-{r}").exists():
        time.sleep(0.001)
    lock = store.StoreLock(base / f"run{r}.zarr")
    try:
        lock.acquire()
    except store.StoreLocked:
        pass
    else:
        start = time.monotonic()
        time.sleep(0.2)
        (base / f"held-{r}-{os.getpid()}").write_text(f"{start} {time.monotonic()}")
        lock.release()
    (base / f"done-{r}-{os.getpid()}").touch()
"""


def _wait_for_files(directory, pattern: str, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(list(directory.glob(pattern))) < count:
        assert time.monotonic() < deadline, f"timed out waiting for {count} x {pattern}"
        time.sleep(0.01)


@pytest.mark.slow
def test_racing_processes_never_both_hold_a_stale_lock(tmp_path):
    """Regression: 8 processes taking over a stale lock (dead pid): two holders in 6 of 30 trials."""
    racers, rounds = 8, 10
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = f'{{"pid": {dead.pid}, "host": "{socket.gethostname()}", "token": "x"}}'
    procs = [
        subprocess.Popen([sys.executable, "-c", _RACER, str(tmp_path), str(rounds)], env=cli_env())
        for _ in range(racers)
    ]
    try:
        _wait_for_files(tmp_path, "ready-*", racers)  # all imported: they contend at the same moment
        overlaps = []
        for r in range(rounds):
            store.lock_path(tmp_path / f"run{r}.zarr").write_text(stale)
            (tmp_path / f"go-{r}").touch()
            _wait_for_files(tmp_path, f"done-{r}-*", racers)
            spans = sorted(tuple(map(float, f.read_text().split())) for f in tmp_path.glob(f"held-{r}-*"))
            assert spans, f"round {r}: nobody got the free lock"
            overlaps.append(sum(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False)))
    finally:
        for p in procs:
            p.wait(timeout=60)
    assert overlaps == [0] * rounds, f"rounds with two holders at once: {overlaps}"


# -- the same run repeated on one client ------------------------------------------------------------------


def test_back_to_back_runs_on_equal_data_do_not_share_keys(client):
    """Regression: equal input gave equal task keys, and a run could pick up keys the previous run was
    still releasing ("FutureCancelledError ... lost dependencies", 4 failures in 6 before the fix)."""
    X = np.full((6, 3), 42.0)
    for estimator, k in [("epsilon", None), ("knn", 2)] * 4:
        Y = cdfts_dask.cdf_ts(X, estimator=estimator, k=k, method="tiled", client=client)
        np.testing.assert_array_equal(Y, np.zeros((6, 3)))


# -- never overwrite the input or the checkpoint store (issue 10, items 1 and 6) -----------------------------


def _make_input(directory, suffix: str):
    X = np.loadtxt(SYN, delimiter=",", skiprows=1)[:60, :-1]
    path = directory / f"in{suffix}"
    if suffix == ".csv":
        np.savetxt(path, X, delimiter=",", fmt="%.17g")
    elif suffix == ".npy":
        np.save(path, X)
    else:
        zarr.create_array(str(path), shape=X.shape, dtype="f8", chunks=(20, 2))[...] = X
    return path


def _snapshot(path) -> dict:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p): p.read_bytes() for p in files}


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".zarr"])
@pytest.mark.parametrize("spelling", ["same", "symlink", "dotdot"])
def test_output_that_is_the_input_is_refused(tmp_path, capsys, suffix, spelling):
    """Regression: `cdfts transform in.csv in.csv` exited 0 and replaced the input (a .zarr one: removed)."""
    src = _make_input(tmp_path, suffix)
    before = _snapshot(src)
    if spelling == "symlink":
        out = tmp_path / f"alias{suffix}"
        out.symlink_to(src, target_is_directory=src.is_dir())
    else:
        out = src if spelling == "same" else tmp_path / "sub" / ".." / src.name
        (tmp_path / "sub").mkdir()
    code = cli_main(["transform", str(src), str(out), "--quiet", "--max-iter", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is the input" in err[0] and "refusing to overwrite" in err[0], err
    assert _snapshot(src) == before


@pytest.mark.parametrize("which", ["output-is-checkpoint", "checkpoint-is-input", "output-inside-checkpoint"])
def test_checkpoint_clashing_with_input_or_output_is_refused(tmp_path, capsys, which):
    """Regression: `cdfts transform in.csv run.zarr --checkpoint run.zarr` replaced the checkpoint with the
    output."""
    src = _make_input(tmp_path, ".zarr")
    ckpt = tmp_path / "run.zarr"
    cdfts_dask.cdf_ts(src, max_iter=1, method="dense", checkpoint=ckpt)
    out, checkpoint = {
        "output-is-checkpoint": (ckpt, ckpt),
        "checkpoint-is-input": (tmp_path / "o.npy", src),
        "output-inside-checkpoint": (ckpt / "o.zarr", ckpt),
    }[which]
    before = {**_snapshot(src), **_snapshot(ckpt)}
    code = cli_main(["transform", str(src), str(out), "--quiet", "--checkpoint", str(checkpoint), "--resume"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "refusing to overwrite" in err[0], err
    assert {**_snapshot(src), **_snapshot(ckpt)} == before


@pytest.mark.parametrize("api", [False, True], ids=["cli", "api"])
def test_an_input_that_is_the_checkpoints_lock_file_is_refused(tmp_path, capsys, syn_X, api):
    """Regression (data loss, exit 0): `cdfts transform pts.lock out.csv --checkpoint pts` read the input,
    then the run's lock (`<store>.lock`) emptied it: 802 bytes became 0.  Refused before any work."""
    src = tmp_path / "pts.lock"
    np.savetxt(src, syn_X[:20], delimiter=",", fmt="%.17g")
    before = src.read_bytes()
    message = "its lock file .* would be the input .*; refusing to overwrite it: choose another checkpoint"
    if api:
        with pytest.raises(ValueError, match=message):
            cdfts_dask.cdf_ts(str(src), max_iter=1, method="dense", checkpoint=tmp_path / "pts")
    else:
        out, ckpt = tmp_path / "o.csv", tmp_path / "pts"
        code = cli_main(["transform", str(src), str(out), "--checkpoint", str(ckpt)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and re.search(message, err[0]), err
        assert not (tmp_path / "o.csv").exists()
    assert src.read_bytes() == before and not (tmp_path / "pts").exists()


def test_checkpoint_in_a_folder_of_user_files_is_refused(tmp_path, syn_X):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    for resume in (False, True):
        with pytest.raises(ValueError, match="existing folder that is not a cdfts-dask run store"):
            cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=folder, resume=resume)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_checkpoint_that_is_a_regular_file_is_a_clear_error(tmp_path, capsys):
    """Regression: `--checkpoint FILE` failed with a bare `[Errno 17] File exists`."""
    blocker = tmp_path / "ckpt"
    blocker.write_text("x")
    code = cli_main(["transform", str(SYN), str(tmp_path / "o.npy"), "--label", "label", "--checkpoint",
                     str(blocker), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is an existing file, not a checkpoint store" in err[0], err
    assert blocker.read_text() == "x"


def test_a_checkpoint_in_a_folder_that_does_not_exist_is_refused_before_work(tmp_path, capsys, monkeypatch,
                                                                            syn_X):
    """Regression (found by a storage audit, 2026-11-29): the run made the missing folders of a checkpoint
    (outputs refuse them), so ``--checkpoint=~/runs/ck.zarr``, where the shell leaves ``~`` as it is
    after ``=``, made ``./~/runs/ck.zarr``, exit 0 (a later ``rm -rf ~`` would hit the home folder), and a
    typo held the run; ``--checkpoint ''`` was checked as the working directory.  A folder that is a file
    is named so (a review of the fix: it said "directory does not exist")."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("cdfts_dask.runner.run", lambda *a, **k: pytest.fail("computed before refusing"))
    args = ["transform", str(SYN), "o.npy", "--label", "label", "--quiet", "--checkpoint"]
    (tmp_path / "afile").write_text("x")
    for given, said in (("~/runs/ck.zarr", f"checkpoint: directory does not exist: '{tmp_path}/~/runs' "
                         "('~' is not expanded here"), ("typo/ck.zarr", "directory does not exist"),
                        ("afile/ck.zarr", f"checkpoint: '{tmp_path}/afile' is a file, not a directory"),
                        ("", "--checkpoint must be a path, got the empty string")):  # fmt: skip
        for resume in ([], ["--resume"]):
            assert cli_main([*args, given, *resume]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and said in err[0], err
    with pytest.raises(ValueError, match=r"checkpoint: directory does not exist: .*'~' is not expanded"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint="~/ck.zarr")
    with pytest.raises(ValueError, match=r"output: directory does not exist: .*'~' is not expanded"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", output="~/o.npy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_store_holding_a_run_without_resume_is_refused_before_work(tmp_path, capsys, monkeypatch, syn_X):
    """Regression (same audit): a run on a store that holds a run, without ``--resume``, was refused only
    after the embedded cluster had started and the input had been read."""
    ckpt = tmp_path / "ck.zarr"
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    monkeypatch.setattr("cdfts_dask.runner.run", lambda *a, **k: pytest.fail("computed before refusing"))
    monkeypatch.setattr("cdfts_dask.dask_client.dask_client",
                        lambda *a, **k: pytest.fail("a cluster started before refusing"))  # fmt: skip
    args = ["transform", str(SYN), str(tmp_path / "o.npy"), "--label", "label", "--workers", "1", "--quiet",
            "--checkpoint", str(ckpt)]  # fmt: skip
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"checkpoint '{ckpt}' already exists; pass resume=True (--resume)" in err[0], err
    with pytest.raises(FileExistsError, match="already exists; pass resume=True"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, checkpoint=ckpt, n_workers=1)
    with pytest.raises(FileExistsError, match="already exists; pass resume=True"):
        cdfts_dask.CDFTS(max_iter=1, checkpoint=ckpt, n_workers=1).fit(syn_X[:50])
    assert store.Checkpoint(ckpt).completed == 1


# -- relative paths with a remote scheduler (issue 10, item 5) --------------------------------------------


@pytest.mark.slow
def test_relative_paths_are_made_absolute_on_the_client(tmp_path):
    """Regression: with --scheduler, relative checkpoint / output paths were written relative to each worker's
    working directory; the output then "did not exist" after the whole computation."""
    client_dir, worker_dir = tmp_path / "client", tmp_path / "workers"
    client_dir.mkdir()
    worker_dir.mkdir()
    X = np.loadtxt(SYN, delimiter=",", skiprows=1)[:300, :-1]
    zarr.create_array(str(client_dir / "in.zarr"), shape=X.shape, dtype="f8", chunks=(100, 2))[...] = X
    args = ["transform", "in.zarr", "rel_o.zarr", "--max-iter", "2", "--delta", "1e-12", "--checkpoint",
            "rel.zarr", "--tile-size", "100", "--quiet"]  # fmt: skip
    with dask_processes(1, cwd=worker_dir) as (address, _):
        res = run_cli(*args, "--scheduler", address, cwd=client_dir)
        assert res.returncode == 0, res.stderr
        again = run_cli(*args, "--scheduler", address, "--resume", cwd=client_dir)
        assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in worker_dir.iterdir()) == []
    assert store.Checkpoint(client_dir / "rel.zarr").completed == 2
    expected = cdfts_dask.cdf_ts(X, max_iter=2, delta=1e-12, method="dense")
    np.testing.assert_allclose(zarr.open_array(str(client_dir / "rel_o.zarr"))[...], expected, atol=1e-9)


def test_a_path_through_a_linked_folder_and_dotdot_names_what_the_os_opens(tmp_path, client, monkeypatch):
    """Regression (found by a storage audit, 2026-11-29): paths were made absolute by ``os.path.abspath``,
    which drops ``lnk/..`` as text, where the OS follows the link first.  ``lnk/../data.zarr`` (``lnk`` ->
    ``deep/inner``) is ``deep/data.zarr`` to the OS and to the dense run, but the tiled run read
    ``./data.zarr`` (another array: 0.97 off, exit 0), and ``cdfts transform data.zarr lnk/../data.zarr``
    wrote its output over the input ``./data.zarr`` (the clash check saw ``deep/data.zarr``).  Now a
    path is only made absolute (no ``..`` dropped, no link resolved: a worker on another node resolves
    it as its own file system says)."""
    (tmp_path / "deep" / "inner").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to(tmp_path / "deep" / "inner", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(7)
    A, B = rng.random((200, 2)), rng.random((200, 2))
    for path, values in (("deep/data.zarr", A), ("data.zarr", B)):
        zarr.create_array(path, shape=values.shape, chunks=(50, 2), dtype="f8")[...] = values
    assert paths.absolute("lnk/../data.zarr") == f"{tmp_path}/lnk/../data.zarr"  # the OS resolves it
    assert paths.real(paths.absolute("lnk/../data.zarr")) == tmp_path / "deep" / "data.zarr"
    expected = cdfts_dask.cdf_ts(A, max_iter=2, delta=1e-12, method="dense")
    tiled = {"method": "tiled", "client": client, "tile_size": 64}
    for how in ({"method": "dense"}, tiled):
        Y = cdfts_dask.cdf_ts("lnk/../data.zarr", max_iter=2, delta=1e-12, **how)
        np.testing.assert_allclose(np.asarray(Y), expected, rtol=0, atol=1e-9)
    assert cli_main(["transform", "data.zarr", "lnk/../data.zarr", "--method", "dense", "--quiet"]) == 0
    assert np.array_equal(zarr.open_array("data.zarr")[...], B)  # the input is untouched
    np.testing.assert_allclose(zarr.open_array("deep/data.zarr")[...],
                               cdfts_dask.cdf_ts(B, method="dense"), rtol=0, atol=1e-12)  # fmt: skip


# -- outputs: leftovers, symlinks, the .npy writer (issue 10, item 12) -----------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".zarr"])
def test_partial_leftovers_of_a_killed_writer_are_removed_by_the_next_success(tmp_path, suffix):
    """Regression: `.partial` files left by a killed client stayed forever."""
    out = tmp_path / f"out{suffix}"
    stale_file = tmp_path / f".out{suffix}.{'a' * 32}.partial"
    stale_dir = tmp_path / f".out{suffix}.{'b' * 32}.partial"
    stale_file.write_text("half")
    stale_dir.mkdir()
    (stale_dir / "zarr.json").write_text("{}")
    foreign = tmp_path / f".out{suffix}.mine.partial"  # not our pattern: left alone
    foreign.write_text("user")
    assert cli_main(["transform", str(SYN), str(out), "--label", "label", "--max-iter", "1", "--quiet"]) == 0
    assert out.exists() and not stale_file.exists() and not stale_dir.exists() and foreign.exists()


@pytest.mark.parametrize("suffix", [".csv", ".zarr"])
def test_a_concurrent_writers_temporary_is_left_alone(tmp_path, suffix):
    """Regression: a run that finished removed every `.partial` of its output, the temporary of
    another run still writing the same output included (a Zarr folder losing its files mid-write)."""
    out = tmp_path / f"out{suffix}"
    writer = subprocess.Popen(
        [sys.executable, "-c", _LIVE_WRITER, str(out)],
        stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True, env=cli_env(),
    )
    try:
        live = Path(writer.stdout.readline().strip())
        assert live.exists(), live
        gone = subprocess.run([sys.executable, "-c", _LIVE_WRITER.replace("sys.stdin.read()", ""), str(out)],
                              capture_output=True, text=True, check=True, env=cli_env())
        dead = Path(gone.stdout.strip())  # its writer has exited: a killed writer's leftover
        other_host = tmp_path / f".out{suffix}.elsewhere-node.{writer.pid}.{'c' * 32}.partial"
        other_host.write_text("another machine's run")
        args = ["transform", str(SYN), str(out), "--label", "label", "--max-iter", "1", "--quiet"]
        assert cli_main(args) == 0
        assert live.exists(), "a live writer's temporary was removed"
        assert (live / "chunk").read_text() == "half written"
        assert other_host.exists() and not dead.exists()
    finally:
        writer.communicate("")


#: a writer that names a temporary of argv[1] as the package does, fills it, prints it, and waits on stdin
_LIVE_WRITER = """
import sys
from cdfts_dask.paths import temporary_sibling
tmp = temporary_sibling(sys.argv[1])
tmp.mkdir()
(tmp / "chunk").write_text("half written")
print(tmp, flush=True)
sys.stdin.read()
"""


def _deny_writing(monkeypatch, path: Path) -> None:
    """``os.access`` answers that ``path`` may not be written, as it would to a user without the right (root,
    who runs these tests in containers, may write anything); every other answer is the real one."""
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **kw: (m & os.W_OK == 0 or Path(p) != path)
                        and access(p, m, **kw))  # fmt: skip


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".zarr"])
def test_a_write_protected_output_is_refused_and_a_replaced_one_keeps_its_mode(tmp_path, capsys, monkeypatch,
                                                                              suffix):
    """Regression (found by a storage audit, 2026-11-29): an existing output of mode 0444 was replaced,
    exit 0, where the shell's ``>`` and ``np.savetxt`` refuse it; and a replaced output took the new
    file's mode: a private 0600 output became 0644.  Now a file the user may not write is refused before
    work, naming it and its mode, and a replaced file keeps its permission bits, from its first byte
    on (a review of the fix: the temporary was 0644 while written, then made 0600).  A read-only Zarr
    output folder is refused too (replacing it failed half-way and left its files as a ``.partial``)."""
    import cdfts_dask.outputs as outputs

    out = tmp_path / f"out{suffix}"
    label = ["--no-label"] if suffix == ".zarr" else ["--label", "label"]  # a points-only output: no warning
    args = ["transform", str(SYN), str(out), *label, "--max-iter", "1", "--quiet"]
    if suffix == ".zarr":
        zarr.create_array(str(out), shape=(3, 2), dtype="f8")[...] = 1.0
    else:
        out.write_text("keep")
    before = sorted(p.name for p in tmp_path.iterdir())
    mode = 0o555 if suffix == ".zarr" else 0o444
    out.chmod(mode)
    if os.geteuid() == 0:  # root may write anything: stand in for a user's os.access on this one
        _deny_writing(monkeypatch, out)
    monkeypatch.setattr("cdfts_dask.runner.run", lambda *a, **k: pytest.fail("computed before refusing"))
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"output: '{out}' exists and is write-protected (mode {mode:04o})" in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    monkeypatch.undo()
    if suffix == ".zarr":
        return
    modes = []

    def recording(write):
        def wrapper(fh, *a, **k):
            modes.append(stat.S_IMODE(os.fstat(fh.fileno()).st_mode))
            return write(fh, *a, **k)

        return wrapper

    monkeypatch.setattr(outputs.np, "save", recording(np.save))
    monkeypatch.setattr(outputs.csv, "writer", recording(outputs.csv.writer))
    # 0600 private; 0640 other than the temporary's creation mode (a mutation audit: without setting the
    # bits of the file replaced, 0600 still passed, and a group-readable output became private)
    for kept in (0o600, 0o640):
        out.write_text("keep")
        out.chmod(kept)
        modes.clear()
        assert cli_main(args) == 0
        assert modes == [kept]  # the temporary, as it is written
        assert out.read_bytes() != b"keep" and stat.S_IMODE(out.stat().st_mode) == kept


def test_a_zarr_output_over_a_dangling_symbolic_link_replaces_the_link(tmp_path):
    """A ``.zarr`` output whose path is a symbolic link to nothing (its target removed) is written, the link
    replaced by the array as a file output's is (a mutation audit: renaming the folder onto the link, as
    onto a path that does not exist, failed with 'Not a directory' after the whole run)."""
    out = tmp_path / "out.zarr"
    out.symlink_to(tmp_path / "gone")
    X = np.random.default_rng(4).random((40, 2))
    written = cdfts_dask.cdf_ts(X, max_iter=2, method="dense", output=out)
    assert not out.is_symlink() and not (tmp_path / "gone").exists()
    np.testing.assert_array_equal(written[...], oracle.cdf_ts_dense(X, max_iter=2).X)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr"]  # no temporary left


def test_output_symlink_to_a_directory_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """Regression: refused only after the whole computation."""
    target = tmp_path / "somewhere"
    target.mkdir()
    (target / "keep.txt").write_text("x")
    out = tmp_path / "out.zarr"
    out.symlink_to(target, target_is_directory=True)
    monkeypatch.setattr(cdfts_dask.runner, "run", lambda *a, **k: pytest.fail("computed before refusing"))
    code = cli_main(["transform", str(SYN), str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "symbolic link to a directory" in err[0], err
    assert (target / "keep.txt").read_text() == "x"


@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_a_zarr_folder_named_like_a_file_output_is_refused_before_work(tmp_path, capsys, monkeypatch, suffix):
    """Regression (found by an attack on the command line, 2026-11-25): an existing Zarr array folder named
    `out.npy` passed the output checks; the run computed, then failed with `[Errno 21] ... Is a directory`."""
    out = tmp_path / f"out{suffix}"
    zarr.create_array(str(out), shape=(3, 2), dtype="f8")[...] = 1.0
    monkeypatch.setattr("cdfts_dask.runner.run", lambda *a, **k: pytest.fail("computed before refusing"))
    code = cli_main(["transform", str(SYN), str(out), "--label", "label", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"is an existing Zarr array (a directory), and a {suffix} output is a file" in err[0], err
    assert zarr.open_array(str(out))[...].tolist() == [[1.0, 1.0]] * 3


def test_a_zarr_v2_array_output_is_replaced_as_a_v3_one_is(tmp_path, capsys):
    """Regression (same attack): an existing Zarr v2 array as a `.zarr` output was refused as "an existing
    directory that is not a Zarr array" (only v3's `zarr.json` was read); a v3 one is replaced."""
    out = tmp_path / "out.zarr"
    zarr.create_array(str(out), shape=(3, 2), dtype="f8", zarr_format=2)[...] = 1.0
    code = cli_main(["transform", str(SYN), str(out), "--label", "label", "--quiet", "--method", "dense"])
    assert code == 0, capsys.readouterr().err
    assert zarr.open_array(str(out)).shape == (len(np.loadtxt(SYN, delimiter=",", skiprows=1)), 2)


@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_api_output_npy_and_csv_are_real_files(tmp_path, syn_X, suffix):
    """Regression: cdf_ts(X, output="a.npy") wrote a Zarr directory named a.npy."""
    out = tmp_path / f"a{suffix}"
    Y = cdfts_dask.cdf_ts(syn_X[:80], max_iter=2, method="dense", output=out)
    assert out.is_file()
    got = np.load(out) if suffix == ".npy" else np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(got, Y)
    np.testing.assert_array_equal(Y, cdfts_dask.cdf_ts(syn_X[:80], max_iter=2, method="dense"))
    assert leftovers(tmp_path) == []


def test_api_output_with_an_unknown_suffix_is_refused_before_work(tmp_path, syn_X):
    with pytest.raises(ValueError, match=r"unsupported file type '\.txt'"):
        cdfts_dask.cdf_ts(syn_X[:80], max_iter=1, method="dense", output=tmp_path / "a.txt")
    assert list(tmp_path.iterdir()) == []


# -- a scheduler address that is not a working scheduler (issue 10, item 9) ------------------------------


@contextmanager
def _listener(reply: bytes | None):
    """A TCP listener on 127.0.0.1 that accepts and then sends ``reply`` (or nothing), never closing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    conns = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conns.append(conn)
            if reply:
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in conns:
            conn.close()


@contextmanager
def _closed_port():
    """The address of a loopback port that was just free (nothing listens there: connections refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"tcp://127.0.0.1:{port}"


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda: _listener(None), r"did not answer within 0.5 s \(set DASK_"),
        (_closed_port, r"did not answer within 0.5 s \(connection refused: is a scheduler listening"),
        (lambda: _listener(b"HTTP/1.1 200 OK\r\n\r\nhello" * 10), r"answered with bytes that are not Dask's"),
        (lambda: nullcontext("tcp://127.0.0.1:notaport"), r"not a usable Dask scheduler address"),
        (lambda: nullcontext(":8786"), r"not a usable Dask scheduler address ':8786': no host before the"),
        (lambda: nullcontext("tcp://nohost.invalid:8786"), r"did not answer within 0.5 s \(host not found: "),
        (lambda: nullcontext("inproc://x"), r"not a usable Dask scheduler address 'inproc://x'"),
        (lambda: nullcontext("gopher://host:70"), r"not a usable Dask scheduler address 'gopher://host:70'"),
    ],
    ids=["silent", "refused", "non-dask-bytes", "bad-port", "no-host", "unknown-host", "inproc",
         "unknown-scheme"],
)
def test_bad_scheduler_is_one_line_within_the_timeout(tmp_path, make, pattern, capsys):
    """Regression: a silent listener hung forever; non-Dask bytes gave `Unable to allocate 3.07 EiB` (then,
    until 2026-11-24, that text behind "cannot reach a Dask scheduler"; now what it means).  A port where
    nothing listens was told as either of two wordings, by which timeout fired first, neither of them
    saying the connection was refused (until 2026-11-25).  An address without a host (``:8786``), where
    Dask connects to nothing, waited the whole connect timeout, then said "connection refused" (the probe
    had asked localhost) or, with a scheduler on localhost, nothing (found by a mutation audit,
    2026-12-08); it is refused at once.  The same audit found no test of a host that does not resolve
    (said as "host not found").
    (In process: the command's own error path; a subprocess adds nothing here but its start-up.)"""
    import dask
    import distributed  # noqa: F401  (its config defaults first: leaving dask.config.set would drop them)

    with make() as address, dask.config.set({"distributed.comm.timeouts.connect": "500ms"}):
        tic = time.monotonic()
        code = cli_main(["transform", str(SYN), str(tmp_path / "o.npy"), "--label", "label", "--scheduler",
                         address, "--quiet"])  # fmt: skip
        seconds = time.monotonic() - tic
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert re.search(pattern, lines[0]) and address in lines[0], lines[0]
    assert seconds < 60 and not (tmp_path / "o.npy").exists()


def test_a_long_connection_error_is_cut_to_one_line_of_200_characters(monkeypatch):
    """Found by a mutation audit (2026-12-08): the cut of the connection error's text at 200 characters
    (a TLS failure can run to many lines of certificate detail) dropped passed every test."""
    import distributed.comm

    async def refused(address, **kwargs):
        raise OSError("x" * 300)

    monkeypatch.setattr(distributed.comm, "connect", refused)
    with pytest.raises(ValueError) as e:
        cdfts_dask.cdf_ts(np.zeros((5, 2)), method="tiled", client="tcp://127.0.0.1:8786")
    refused = "client: cannot reach a Dask scheduler at 'tcp://127.0.0.1:8786': OSError: "
    assert str(e.value) == refused + "x" * 200


@pytest.mark.parametrize(
    "error, said",
    [(OSError(101, "Network is unreachable"), " (Network is unreachable)"),
     (TimeoutError(), " (TimeoutError)")],
    ids=["unreachable", "timeout"],
)  # fmt: skip
def test_what_a_plain_connection_meets_is_said_whatever_the_os_error(monkeypatch, error, said):
    """Found by a mutation audit (2026-12-08): the OS errors other than a refusal or an unknown host (a
    network that cannot be reached, a probe that timed out) said as nothing passed every test (which
    of them a network meets depends on where the suite runs: the socket's answer is given here)."""
    import socket

    from cdfts_dask import scheduler_check

    def connect(address, timeout):
        raise error

    monkeypatch.setattr(socket, "create_connection", connect)
    assert scheduler_check._why_unreachable(("192.0.2.1", 8786)) == said


def test_a_connect_timeout_given_as_a_plain_number_is_in_seconds():
    """Found by a mutation audit (2026-12-08): Dask's connect timeout read in milliseconds when it is a
    plain number (``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5``, which Dask reads as 5 s) passed every
    test: the scheduler check would then give up after 5 ms."""
    import dask
    import distributed  # noqa: F401  (its config defaults first: leaving dask.config.set would drop them)

    from cdfts_dask.scheduler_check import connect_timeout

    with dask.config.set({"distributed.comm.timeouts.connect": 5}):
        assert connect_timeout() == 5.0
    with dask.config.set({"distributed.comm.timeouts.connect": "1.5s"}):
        assert connect_timeout() == 1.5


def test_a_scheduler_that_does_not_answer_at_once_is_said_before_the_wait(tmp_path, capsys, monkeypatch,
                                                                          client):  # fmt: skip
    """Regression: `--scheduler` naming a port where nothing listens (a typo, a scheduler not started)
    printed nothing for Dask's whole connect timeout (30 s by default), then its error.  Now a handshake
    not answered within ``scheduler_check.WAIT_NOTICE_S`` is said at once, with what a plain connection
    meets there and how long the wait may last; a scheduler that answers is not."""
    import dask
    import distributed  # noqa: F401  (its config defaults first: leaving dask.config.set would drop them)

    from cdfts_dask import scheduler_check

    monkeypatch.setattr(scheduler_check, "WAIT_NOTICE_S", 0.2)
    args = ["transform", str(SYN), str(tmp_path / "o.npy"), "--label", "label", "--max-iter", "1"]
    with _closed_port() as address, dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        code = cli_main([*args, "--scheduler", address])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(lines) == 2, lines
        assert lines[0] == (
            f"cdfts: no answer yet from the Dask scheduler at {address} (connection refused: is a scheduler "
            "listening on that host and port?); waiting up to 2 s in all (Dask's connect timeout, "
            "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT), as a scheduler may still be starting"
        ), lines
        refused = f"cdfts transform: error: client: the scheduler at '{address}' did not answer within 2 s"
        assert lines[1].startswith(refused), lines
        code = cli_main([*args, "--scheduler", client.scheduler.address])
    err = capsys.readouterr().err
    assert code == 0 and "no answer yet" not in err and "connected to the Dask scheduler" in err, err


def test_a_scheduler_address_without_its_scheme_is_read_as_dask_reads_it(tmp_path, capsys, client, syn_X):
    """Regression (found while checking the wrong-address wording, 2026-11-25): `--scheduler
    127.0.0.1:8786`, which ``distributed.Client`` takes as tcp:// (the form of Dask's own examples), was
    refused: "not a usable Dask scheduler address ...: Invalid url scheme"; a host without a port is
    still refused in one line."""
    X = syn_X[:60]
    np.save(tmp_path / "in.npy", X)
    bare = client.scheduler.address.removeprefix("tcp://")
    args = ["transform", str(tmp_path / "in.npy"), str(tmp_path / "o.npy"), "--max-iter", "2", "--quiet"]
    code = cli_main([*args, "--scheduler", bare])
    assert code == 0, capsys.readouterr().err
    expected = cdfts_dask.cdf_ts(X, method="dense", max_iter=2)
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), expected, rtol=0, atol=1e-9)
    code = cli_main([*args, "--scheduler", "127.0.0.1"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and lines == [
        "cdfts transform: error: client: not a usable Dask scheduler address '127.0.0.1': missing port "
        "number in address '127.0.0.1'"
    ], lines



def test_a_tls_scheduler_given_by_address_is_reached_with_the_given_certificates(tmp_path):
    """Found by a mutation audit (2026-12-07): ``security=`` dropped on its way to the check of a scheduler
    address, or to the client connected to it, passed every test (the TLS tests give a ``Client``, not an
    address): a TLS scheduler by its address was then unusable.  Certificates that do not match are one
    line naming that, without the hint to pass ``security=`` (which was passed)."""
    pytest.importorskip("cryptography")
    from distributed import LocalCluster
    from distributed.security import Security

    X = np.random.default_rng(0).random((60, 2))
    security = Security.temporary()
    options = dict(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1")
    with LocalCluster(dashboard_address=":0", security=security, silence_logs=50, **options) as cluster:
        address = cluster.scheduler_address
        Y = cdfts_dask.cdf_ts(X, max_iter=1, method="tiled", client=address, security=security)
        refused = rf"^client: cannot reach a Dask scheduler at '{address}': "
        with pytest.raises(ValueError, match=refused) as e:
            cdfts_dask.cdf_ts(X, max_iter=1, method="tiled", client=address, security=Security.temporary())
    assert "certificate" in str(e.value) and "pass security=" not in str(e.value), e.value
    np.testing.assert_allclose(Y, cdfts_dask.cdf_ts(X, max_iter=1, method="dense"), rtol=0, atol=1e-9)


def test_a_tls_address_where_nothing_listens_says_the_connection_is_refused():
    """Found by a mutation audit (2026-12-07): the probe of what a connection meets made for tcp:// only
    passed every test; a tls:// address where nothing listens is told as a tcp:// one is."""
    pytest.importorskip("cryptography")
    import dask
    from distributed.security import Security

    with _closed_port() as tcp, dask.config.set({"distributed.comm.timeouts.connect": "500ms"}):
        address = tcp.replace("tcp://", "tls://")
        with pytest.raises(ValueError, match=r"did not answer within 0.5 s \(connection refused: is a"):
            cdfts_dask.cdf_ts(np.zeros((5, 2)), method="tiled", client=address, security=Security.temporary())


def test_a_workers_address_given_for_the_scheduler_is_named(client):
    """Found by a mutation audit (2026-12-07): the check that what answers at the address is a scheduler
    dropped passed every test; a worker's address (the other address a cluster shows) is named so."""
    worker = sorted(client.nthreads())[0]
    with pytest.raises(ValueError, match=rf"^client: '{worker}' answered, but not as a Dask scheduler: "):
        cdfts_dask.cdf_ts(np.zeros((5, 2)), method="tiled", client=worker)


# -- the embedded cluster listens on 127.0.0.1 only (issue 10, item 13) ----------------------------------

_LISTENERS = """
import psutil
from cdfts_dask.dask_client import dask_client
if __name__ == "__main__":
    with dask_client(None, 1) as c:  # the embedded cluster: dask_client.local_cluster
        procs = [psutil.Process()] + psutil.Process().children(recursive=True)
        for p in procs:
            for conn in p.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    print(conn.laddr.ip, conn.laddr.port)
        print("dashboard", c.dashboard_link)
"""


@pytest.mark.slow
def test_embedded_cluster_listens_on_loopback_only(tmp_path):
    """Regression: the embedded cluster's HTTP server (/health, /metrics, /info) listened on 0.0.0.0."""
    script = tmp_path / "listeners.py"
    script.write_text(_LISTENERS)
    res = subprocess.run(
        [sys.executable, str(script)], env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    ips = {line.split()[0] for line in lines if not line.startswith("dashboard")}
    assert len(lines) >= 4 and ips == {"127.0.0.1"}, lines  # scheduler, dashboard, worker, nanny
    assert lines[-1].startswith("dashboard http://127.0.0.1:")


@pytest.mark.slow
def test_cli_start_line_gives_the_loopback_dashboard(tmp_path):
    res = run_cli("transform", SYN, tmp_path / "o.npy", "--label", "label", "--max-iter", "1", "--workers=1")
    assert res.returncode == 0, res.stderr
    assert re.search(r"tiled engine, .*, dashboard http://127\.0\.0\.1:\d+/status\n", res.stderr), res.stderr


_TLS_RUN = """
import numpy as np
from distributed.security import Security
import cdfts_dask
from cdfts_dask.dask_client import dask_client
if __name__ == "__main__":
    X = np.random.default_rng(0).random((60, 2))
    with dask_client(None, 1, security=Security.temporary()) as c:
        print(c.scheduler.address)
        Y = cdfts_dask.cdf_ts(X, max_iter=1, method="tiled", client=c)
        try:  # by its address, without the certificates
            cdfts_dask.cdf_ts(X, max_iter=1, method="tiled", client=c.scheduler.address)
        except ValueError as exc:
            print(str(exc).endswith("(a tls:// scheduler needs its certificates: pass security=)"))
    print(np.abs(Y - cdfts_dask.cdf_ts(X, max_iter=1, method="dense")).max())
"""


@pytest.mark.slow
def test_security_is_passed_to_the_embedded_cluster(tmp_path):
    """A user-supplied Security (here temporary TLS certificates) reaches the cluster: it speaks tls://.
    Reached by its address without them, the error says to pass ``security=`` (a review, 2026-11-29: a
    pickled CDFTS keeps its Client as the address, and a TLS one needs the certificates too)."""
    pytest.importorskip("cryptography")
    script = tmp_path / "tls_run.py"
    script.write_text(_TLS_RUN)
    res = subprocess.run(
        [sys.executable, str(script)], env=cli_env(), capture_output=True, text=True, timeout=180
    )
    assert res.returncode == 0, res.stderr
    address, hinted, diff = res.stdout.split()
    assert address.startswith("tls://127.0.0.1:") and hinted == "True" and float(diff) <= 1e-9


# -- all workers lost, Ctrl-C: one line, nothing left behind (issue 10, items 8 and 11) ---------------------


def _worker_processes(proc: subprocess.Popen) -> list:
    """The embedded cluster's worker processes (multiprocessing spawn children) of a CLI run."""
    import psutil

    return [
        p
        for p in psutil.Process(proc.pid).children(recursive=True)
        if "spawn_main" in " ".join(p.cmdline()) and "resource_tracker" not in " ".join(p.cmdline())
    ]


@pytest.mark.slow
def test_all_workers_killed_goes_on_from_the_checkpoint(tmp_path, syn_X):
    """Regression: killing every worker at once gave a FutureCancelledError traceback, later a one-line
    error asking for ``--resume``; the run now goes on from its checkpoint by itself (one warning line)."""
    ckpt, out = tmp_path / "run.zarr", tmp_path / "out.npy"
    args = ["transform", SYN, out, "--label", "label", "--delta", "1e-12", "--max-iter", "6",
            "--workers", "1", "--tile-size", "500", "--checkpoint", ckpt]  # fmt: skip
    proc = spawn_cli(*args)
    try:
        wait_for_line(proc, "cdfts: iteration 1: ")
        workers = _worker_processes(proc)
        assert workers, "no worker process found"
        for w in workers:
            w.kill()
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert proc.returncode == 0, err
    lost = [line for line in err.splitlines() if "data lost during iteration" in line]
    assert len(lost) == 1 and "going on from iteration" in lost[0] and str(ckpt) in lost[0], err
    assert [line for line in err.splitlines() if not line.startswith("cdfts: ")] == [], err  # no Dask logs
    assert leftovers(tmp_path) == []
    expected = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=6, method="dense")
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-9)
    assert store.Checkpoint(ckpt).completed == 6


@pytest.mark.slow
@pytest.mark.parametrize("engine", [["--method", "dense"], ["--workers", "1", "--tile-size", "500"]],
                         ids=["dense", "tiled"])  # fmt: skip
def test_ctrl_c_is_exit_130_and_one_line(tmp_path, engine):
    """Regression: SIGINT to the process group printed AllExit / KeyboardInterrupt tracebacks per worker."""
    out = tmp_path / "out.npy"
    args = ["--label", "label", "--delta", "1e-12", "--max-iter", "100", *engine]
    proc = spawn_cli("transform", SYN, out, *args)
    try:
        wait_for_line(proc, "cdfts: iteration 1: ")
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    lines = [line for line in err.strip().splitlines() if not line.startswith("cdfts: ")]  # info lines
    assert proc.returncode == 130 and lines == ["cdfts transform: interrupted"], err
    assert not out.exists() and leftovers(tmp_path) == []


# -- found by a security review (2026-11-25) -----------------------------------------------------------------


def test_the_lock_file_swapped_for_a_link_is_never_written_through(tmp_path):
    """Regression: the owner record was written and cleared by reopening `<store>.lock` by name, following
    a symbolic link swapped in for it during the run (by anyone who may rename in that folder): the run's
    end truncated the file the link pointed to (a victim's 0600 file went from 24 bytes to 0)."""
    victim = tmp_path / "precious.txt"
    victim.write_text("not the run's to touch\n")
    lock = store.StoreLock(tmp_path / "run.zarr")
    with lock:
        lock.file.unlink()
        lock.file.symlink_to(victim)
    assert victim.read_text() == "not the run's to touch\n"


def test_a_lock_file_that_is_a_link_is_one_line(tmp_path, syn_X, capsys):
    """Regression: a symbolic link planted where the lock goes was refused (filelock never follows one)
    with only `[Errno 40] Too many levels of symbolic links: '.../run.zarr.lock'`."""
    (tmp_path / "run.zarr.lock").symlink_to(tmp_path / "elsewhere")
    np.save(tmp_path / "in.npy", syn_X[:40])
    args = ["transform", str(tmp_path / "in.npy"), str(tmp_path / "o.npy")]
    assert cli_main([*args, "--checkpoint", str(tmp_path / "run.zarr"), "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    said = r"cannot open its lock file '.*run\.zarr\.lock' \(.*\); it must be a plain file \(or absent\)"
    assert len(lines) == 1 and re.search(said, lines[0]), lines
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "o.npy").exists()


def test_a_zarr_input_of_too_many_chunks_is_refused_before_listing_them(tmp_path, syn_X):
    """Regression: an 8 KB Zarr array declaring shape (1e10, 2) in chunks of one row made the missing-chunk
    count list 1e10 chunk keys: memory exhausted (a raw `MemoryError`), before any check."""
    from cdfts_dask.inputs import MAX_ZARR_CHUNKS

    huge = tmp_path / "huge.zarr"
    zarr.create_array(str(huge), shape=(10**10, 2), dtype="f8", chunks=(1, 2))  # metadata only
    message = rf"has {10**10} chunks \(shape \({10**10}, 2\) in chunks of \(1, 2\)\), more than "
    message += f"{MAX_ZARR_CHUNKS}:"
    tic = time.monotonic()
    with pytest.raises(ValueError, match=message):
        cdfts_dask.cdf_ts(str(huge))
    est = cdfts_dask.CDFTS(max_iter=1).fit(syn_X[:30])
    with pytest.raises(ValueError, match=message):
        est.transform(str(huge))
    assert time.monotonic() - tic < 30


def test_a_model_store_whose_array_shape_was_edited_is_refused_before_reading_it(tmp_path, syn_X):
    """Regression: an iteration array whose metadata was edited to 1e9 rows (its chunks gone) was read one
    chunk-row at a time to its checksum: `cdfts apply` ran at full CPU for as long as one let it.  Each
    array's shape is now checked against the run's (the root's, under its checksum) before it is read."""
    import json

    ckpt = tmp_path / "run.zarr"
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=2, method="dense", checkpoint=ckpt)
    meta = ckpt / "iterations" / "00000" / "X" / "zarr.json"
    doc = json.loads(meta.read_text())
    doc["shape"] = [10**9, 2]
    doc["chunk_grid"]["configuration"]["chunk_shape"] = [1, 2]
    meta.write_text(json.dumps(doc))
    for chunk in (ckpt / "iterations" / "00000" / "X" / "c").rglob("*"):
        if chunk.is_file():
            chunk.unlink()
    tic = time.monotonic()
    from cdfts_dask.model import load

    with pytest.raises(ValueError, match=r"iterations/00000/X has the shape \(1000000000, 2\), not the"):
        load(ckpt)
    assert time.monotonic() - tic < 30


def test_discarding_iterations_never_deletes_through_a_link(tmp_path, syn_X):
    """Regression: a store whose `iterations` folder was a symbolic link had a resume delete, through it,
    the groups it took for iterations beyond the last complete one: another store's iterations."""
    import shutil

    ckpt = tmp_path / "run.zarr"
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=2, method="dense", checkpoint=ckpt)
    other = tmp_path / "other-iterations"
    shutil.copytree(ckpt / "iterations", other)
    shutil.copytree(other / "00002", other / "00099")  # "beyond the last complete one" seen through the link
    shutil.rmtree(ckpt / "iterations")
    (ckpt / "iterations").symlink_to(other)
    with pytest.raises(store.StoreDamaged, match=r"iterations' is a symbolic link; a store's own folders"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=3, method="dense", checkpoint=ckpt, resume=True)
    assert (other / "00099" / "zarr.json").exists()


# -- found by a mutation audit of the atomic writes (2026-12-06) -------------------------------------------


def test_a_temporary_of_another_host_is_left_alone_whatever_its_pid_is_here(tmp_path):
    """A temporary named by another machine's writer (a shared file system) is never removed: its pid says
    nothing of this machine's processes, so one that no process here has is no sign that its writer died."""
    out = tmp_path / "out.zarr"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    dead_here = int(gone.stdout)  # a pid no process of this machine has now
    other_host = tmp_path / f".out.zarr.elsewhere-node.{dead_here}.{'c' * 32}.partial"
    other_host.mkdir()
    same_host_dead = paths.temporary_sibling(out).with_name(
        f".out.zarr.{paths._this_host()}.{dead_here}.{'d' * 32}.partial"
    )
    same_host_dead.mkdir()
    removed = paths.remove_stale_temporaries(out)
    assert other_host.exists() and removed == [same_host_dead.name]


def test_a_temporary_of_this_process_is_removed_once_no_write_of_it_is_in_use(tmp_path, monkeypatch):
    """Found beside the scheduler-loss check (2026-12-07): a worker still running a task when its cluster
    was lost may write into a transform's temporary after the transform removed it; named by this
    process, that temporary was kept for as long as this process lived (an interactive session), as
    if still written.  A temporary of this process is now removed after a later write unless one of
    its threads is writing it, under whatever spelling of the folder."""
    out = tmp_path / "out.zarr"
    stale = paths.temporary_sibling(out)
    stale.mkdir()
    monkeypatch.chdir(tmp_path)
    with paths.replaced_atomically(Path("out.zarr")) as live:  # written now, through a relative path
        live.mkdir()
        (live / "zarr.json").write_text("{}")
        assert paths.remove_stale_temporaries(out) == [stale.name]
        assert live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr"]


def test_a_temporary_of_a_process_that_cannot_be_signalled_is_kept(tmp_path, monkeypatch):
    """A pid of this machine that signal 0 cannot reach (``PermissionError``: another user's process) is a
    live writer: its temporary is kept (found by a mutation audit of the path checks, second pass: taken
    for gone, another user's run writing the same output had its temporary deleted under it)."""
    out = tmp_path / "out.zarr"
    theirs = tmp_path / f".out.zarr.{paths._this_host()}.4242.{'e' * 32}.partial"
    theirs.mkdir()

    def no_permission(pid, sig):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(paths.os, "kill", no_permission)
    assert paths.remove_stale_temporaries(out) == [] and theirs.exists()


def test_a_failed_writes_reason_says_the_disk_is_full_once(tmp_path, monkeypatch):
    """On a full disk, a write error that is not ENOSPC (NumPy's short write, an EIO) says so after its own
    reason; ENOSPC says it itself, and is not told twice (found by a mutation audit of the path checks,
    second pass: "No space left on device (no space left on device)")."""

    class Full:  # what os.statvfs says of a full disk
        f_bavail = 0

    monkeypatch.setattr(paths.os, "statvfs", lambda folder: Full())
    enospc = OSError(errno.ENOSPC, "No space left on device")
    eio = OSError(errno.EIO, "Input/output error")
    assert paths.write_error_reason(enospc, tmp_path) == "No space left on device"
    assert paths.write_error_reason(eio, tmp_path) == "Input/output error (no space left on device)"
    monkeypatch.undo()
    assert paths.write_error_reason(eio, tmp_path) == "Input/output error"  # space left here


@pytest.mark.parametrize("error", [ConnectionResetError(errno.ECONNRESET, "reset"), TimeoutError("timeout")])
def test_a_lost_connection_during_a_write_is_not_renamed_a_write_error(tmp_path, error):
    """A connection error or a timeout inside a named write passes as it is (the run's recovery tells a lost
    cluster by these types), not as "output: cannot write ..." (found by a mutation audit of the path
    checks, second pass)."""
    with pytest.raises(type(error)) as caught:
        with paths.write_errors_named("output", tmp_path / "out.csv"):
            raise error
    assert caught.value is error
    with pytest.raises(OSError, match=r"^\[Errno 5\] output: cannot write '.*out\.csv': Input/output error$"):
        with paths.write_errors_named("output", tmp_path / "out.csv"):
            raise OSError(errno.EIO, "Input/output error")


def test_the_consolidated_group_above_an_output_is_the_outermost_of_a_chain_of_groups(tmp_path):
    """An output's consolidated group is the outermost consolidated group reached through groups only: a
    plain folder between them ends the chain (Zarr lists no member through it), and an inner consolidated
    group under an outer one gives the outer one, whose listing also misses the output (found by a
    mutation audit of the path checks, second pass: the chain read on through a plain folder, and the
    innermost group named)."""
    import warnings

    outer = tmp_path / "outer.zarr"
    zarr.open_group(str(outer), mode="w").create_group("inner")
    (outer / "plain").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr: consolidated metadata is no part of the v3 specification
        zarr.consolidate_metadata(str(outer / "inner"))
        assert paths.consolidated_group_above(outer / "inner" / "out.zarr") == outer / "inner"
        zarr.consolidate_metadata(str(outer))
    assert paths.consolidated_group_above(outer / "inner" / "out.zarr") == outer
    assert paths.consolidated_group_above(outer / "plain" / "out.zarr") is None
    assert paths.consolidated_group_above(tmp_path / "out.zarr") is None


def test_an_output_named_in_upper_case_zarr_is_replaced_as_a_zarr_output(tmp_path, syn_X):
    """``out.ZARR`` is a Zarr output (suffixes are read in any case): a second run replaces the array the
    first one wrote (found by a mutation audit of the path checks, second pass: the existing array was
    refused as a folder that a file output would replace)."""
    out = tmp_path / "out.ZARR"
    cdfts_dask.cdf_ts(syn_X, lam=0.2, max_iter=1, method="dense", output=out)
    cdfts_dask.cdf_ts(syn_X, lam=0.3, max_iter=1, method="dense", output=out)
    expected = cdfts_dask.cdf_ts(syn_X, lam=0.3, max_iter=1, method="dense")
    assert np.array_equal(zarr.open_array(str(out), mode="r")[...], expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ZARR"]


def test_an_output_in_a_folder_that_cannot_be_written_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """A folder its user may not write in refuses the output before any work, naming the folder (found by a
    mutation audit of the outputs: without the check the run computed, then failed at its write; as root,
    which may write anything, ``os.access`` stands in for a user's)."""
    _deny_writing(monkeypatch, tmp_path)
    monkeypatch.setattr("cdfts_dask.runner.run", lambda *a, **k: pytest.fail("computed before refusing"))
    out = tmp_path / "out.csv"
    args = ["transform", str(SYN), str(out), "--label", "label", "--max-iter", "1", "--quiet"]
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cdfts transform: error: output: directory is not writable: {str(tmp_path)!r}"], err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".zarr", ".csv"])
def test_replacing_an_output_leaves_no_temporary_behind(tmp_path, syn_X, suffix):
    """An existing output (a Zarr folder, a file) replaced by a new run: the old one, moved aside while
    the new one is renamed in, is removed; nothing but the output is left in its folder."""
    out = tmp_path / f"out{suffix}"
    cdfts_dask.cdf_ts(syn_X, lam=0.2, max_iter=1, method="dense", output=out)
    cdfts_dask.cdf_ts(syn_X, lam=0.3, max_iter=1, method="dense", output=out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("content", ["attributes", "member", "both"])
def test_checkpoint_that_is_a_users_zarr_group_is_refused_and_kept(tmp_path, syn_X, content):
    """A Zarr group of the user's (attributes, an array, or both) is no empty store to build a run in:
    refused as a folder of other things, its data untouched (taken for empty, it was deleted to make
    way for the store)."""
    folder = tmp_path / "mine.zarr"
    group = zarr.open_group(str(folder), mode="w")
    if content != "member":
        group.attrs.put({"title": "mine"})
    if content != "attributes":
        group.create_array("data", shape=(3,), dtype="f8")[...] = [1.0, 2.0, 3.0]
    before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    for resume in (False, True):
        with pytest.raises(ValueError, match="existing folder that is not a cdfts-dask run store"):
            cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=folder, resume=resume)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == before
    if content != "member":
        assert dict(zarr.open_group(str(folder), mode="r").attrs) == {"title": "mine"}
