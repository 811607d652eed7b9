"""Fault injection: lost workers, a killed client, half-written stores, full disks, concurrent runs."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from faultkit import SYN, kill_group, run_cli, spawn_cli, wait_for_line

import cdfts_dask
from cdfts_dask import store
from cdfts_dask.cli import main as cli_main

zarr = pytest.importorskip("zarr")


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
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
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
    assert store.lock_path(ckpt).exists()  # left behind by the dead run: stale, taken over below
    assert not out.exists()
    res = run_cli(*args, "--resume")
    assert res.returncode == 0, res.stderr
    assert f"iteration {done + 1}: " in res.stderr and f"iteration {done}: " not in res.stderr
    expected = cdfts_dask.cdf_ts(syn_X, delta=1e-12, max_iter=6, method="dense")
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-9)
    assert not store.lock_path(ckpt).exists()


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


def test_api_output_under_a_regular_file_raises_oserror(tmp_path, syn_X):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError):
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
    code = cli_main(["transform", str(SYN), str(out), "--label", "label", "--max-iter", "1", "--quiet"])
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
    res = run_cli("transform", SYN, out, "--label", "label", "--max-iter", "1", "--quiet")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "no space left on device" in lines[0].lower() and str(out) in lines[0]
    assert list(tiny_tmpfs.iterdir()) == []


# -- two runs on the same store at once ----------------------------------------------------------


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
    assert not store.lock_path(ckpt).exists()
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


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path, syn_X):
    ckpt = tmp_path / "run.zarr"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.lock_path(ckpt).write_text(f'{{"pid": {dead.pid}, "host": "{socket.gethostname()}", "token": "x"}}')
    cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    assert not store.lock_path(ckpt).exists()


def test_lock_held_on_another_host_is_refused(tmp_path, syn_X):
    ckpt = tmp_path / "run.zarr"
    store.lock_path(ckpt).write_text('{"pid": 1, "host": "some-other-node", "token": "x"}')
    with pytest.raises(store.StoreLocked, match="some-other-node"):
        cdfts_dask.cdf_ts(syn_X[:50], max_iter=1, method="dense", checkpoint=ckpt)
    assert store.lock_path(ckpt).exists()  # not ours to remove


# -- the same run repeated on one client ------------------------------------------------------------------


def test_back_to_back_runs_on_equal_data_do_not_share_keys(client):
    """Regression: equal input gave equal task keys, and a run could pick up keys the previous run was
    still releasing ("FutureCancelledError ... lost dependencies", 4 failures in 6 before the fix)."""
    X = np.full((6, 3), 42.0)
    for estimator, k in [("epsilon", None), ("knn", 2)] * 4:
        Y = cdfts_dask.cdf_ts(X, estimator=estimator, k=k, method="tiled", client=client)
        np.testing.assert_array_equal(Y, np.zeros((6, 3)))
