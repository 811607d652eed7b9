"""Zarr checkpoints: content, resume after a real kill, and refusal of foreign stores."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import zarr
from conftest import cli_env

from cdfts_dask import cdf_ts
from cdfts_dask.oracle import cdf_ts_dense
from cdfts_dask.store import Checkpoint, StoreMismatch


@pytest.fixture
def points():
    rng = np.random.default_rng(11)
    return np.vstack([rng.normal(0, 0.1, (60, 2)), rng.normal(2, 1.0, (60, 2))])


@pytest.mark.parametrize("method", ["dense", "tiled"])
def test_checkpoint_holds_every_iteration(tmp_path, points, method, client):
    store = tmp_path / "run.zarr"
    kw = dict(client=client, tile_size=50) if method == "tiled" else {}
    Y, info = cdf_ts(
        points, lam=0.2, delta=1e-12, max_iter=3, method=method, checkpoint=store, return_info=True, **kw
    )
    ref = cdf_ts_dense(points, lam=0.2, delta=1e-12, max_iter=3, keep_steps=True)
    g = zarr.open_group(str(store), mode="r")
    assert g.attrs["completed"] == 3 and g.attrs["status"] == "max_iter"
    assert np.allclose(g.attrs["deltas"], info.deltas)
    assert g.attrs["params"]["lam"] == 0.2
    Xn = (points - points.min(0)) / (points.max(0) - points.min(0))
    assert np.allclose(g["iterations/00000/X"][...], Xn)
    for t, step in enumerate(ref.steps, start=1):
        it = g[f"iterations/{t:05d}"]
        assert np.allclose(it["X"][...], step.X, atol=1e-9)
        assert np.array_equal(it["counts"][...], step.counts)
        assert it.attrs["m"] == pytest.approx(step.m)
        assert np.allclose(it.attrs["lo"], step.lo) and np.allclose(it.attrs["hi"], step.hi)
        assert it.attrs["delta"] == pytest.approx(step.delta)
    assert np.allclose(Y, ref.X, atol=1e-9)


def test_knn_checkpoint_stores_radii(tmp_path, points):
    store = tmp_path / "knn.zarr"
    cdf_ts(points, estimator="knn", k=5, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    ref = cdf_ts_dense(points, estimator="knn", k=5, max_iter=2, delta=1e-12, keep_steps=True)
    g = zarr.open_group(str(store), mode="r")
    assert np.allclose(g["iterations/00002/radius"][...], ref.steps[1].radius)


def test_existing_store_needs_resume_and_matching_run(tmp_path, points):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    with pytest.raises(FileExistsError, match="resume"):
        cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    with pytest.raises(StoreMismatch, match="lam=0.2"):
        cdf_ts(points, lam=0.3, max_iter=2, method="dense", checkpoint=store, resume=True)
    with pytest.raises(StoreMismatch, match="estimator"):
        cdf_ts(points, lam=0.2, estimator="knn", k=3, method="dense", checkpoint=store, resume=True)
    with pytest.raises(StoreMismatch, match="other input"):
        cdf_ts(points + np.eye(120, 2), lam=0.2, method="dense", checkpoint=store, resume=True)


def test_resume_continues_to_more_iterations(tmp_path, points, client):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    Y, info = cdf_ts(
        points,
        lam=0.2,
        max_iter=4,
        delta=1e-12,
        method="tiled",
        client=client,
        tile_size=40,
        checkpoint=store,
        resume=True,
        return_info=True,
    )
    ref = cdf_ts_dense(points, lam=0.2, max_iter=4, delta=1e-12)
    assert info.resumed_from == 2 and info.n_iter == 4
    assert np.allclose(info.deltas, ref.deltas, atol=1e-9)
    assert np.abs(Y - ref.X).max() <= 1e-9


def test_half_written_iteration_is_discarded(tmp_path, points):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    g = zarr.open_group(str(store), mode="a")
    g.create_array("iterations/00003/X", shape=(5, 2), dtype="f8")  # a crash mid-write of iteration 3
    Y, info = cdf_ts(
        points,
        lam=0.2,
        max_iter=3,
        delta=1e-12,
        method="dense",
        checkpoint=store,
        resume=True,
        return_info=True,
    )
    assert info.resumed_from == 2
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X).max() <= 1e-9
    assert Checkpoint(store).positions(3).shape == points.shape


@pytest.mark.slow
def test_resume_after_killing_a_real_process(tmp_path):
    """SIGKILL a `cdfts transform --checkpoint` run mid-way, resume it, compare with an uninterrupted run."""
    rng = np.random.default_rng(12)
    X = np.vstack([rng.normal(0, 0.05, (900, 3)), rng.normal(1, 0.5, (900, 3))])
    src = tmp_path / "in.npy"
    np.save(src, X)
    store, out = tmp_path / "ckpt.zarr", tmp_path / "out.npy"
    cmd = [
        sys.executable,
        "-m",
        "cdfts_dask",
        "transform",
        str(src),
        str(out),
        "--method",
        "dense",
        "--lam",
        "0.1",
        "--delta",
        "1e-12",
        "--max-iter",
        "12",
        "--checkpoint",
        str(store),
    ]
    proc = subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if Checkpoint.exists(store) and Checkpoint(store).completed >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    killed_at = Checkpoint(store).completed
    assert 2 <= killed_at < 12 and not out.exists()
    done = subprocess.run(cmd + ["--resume"], env=cli_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ref = cdf_ts_dense(X, lam=0.1, delta=1e-12, max_iter=12)
    assert np.abs(np.load(out) - ref.X).max() <= 1e-9
    assert np.allclose(Checkpoint(store).deltas, ref.deltas, atol=1e-9)
    assert f"iteration {killed_at + 1}: " in done.stderr and "iteration 1: " not in done.stderr


def test_resume_without_a_store_starts_a_new_run(tmp_path, points):
    store = tmp_path / "new.zarr"
    Y, info = cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store,
                     resume=True, return_info=True)
    assert info.resumed_from is None and info.n_iter == 2
    assert Checkpoint(store).completed == 2
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12).X).max() <= 1e-12
