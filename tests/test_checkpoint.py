"""Zarr checkpoints: content, resume after a real kill, and refusal of foreign stores."""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import zarr
from conftest import cli_env
from faultkit import DenseLosingWorkers, rewrite_attributes

from cdfts_dask import cdf_ts
from cdfts_dask.model import load
from cdfts_dask.oracle import cdf_ts_dense
from cdfts_dask.store import Checkpoint, CheckpointWarning, StoreDamaged, StoreMismatch


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
    with pytest.raises(StoreMismatch, match=r"other input data \(fingerprint differs: other values or row"):
        cdf_ts(points + np.eye(120, 2), lam=0.2, method="dense", checkpoint=store, resume=True)
    wider = np.hstack([points, points[:, :1]])  # found by a review of resume (2026-11-25): say what differs
    with pytest.raises(StoreMismatch, match=r"other input data \(fingerprint differs: 120 x 2 points there, "
                       r"120 x 3 here\)"):  # fmt: skip
        cdf_ts(wider, lam=0.2, method="dense", checkpoint=store, resume=True)


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


# -- a resumed iteration is verified against the checksums stored at commit (issue 10, item 2) -----------


def _damage_chunk(store, t: int, how: str) -> None:
    chunk = store / "iterations" / f"{t:05d}" / "X" / "c" / "0" / "0"
    assert chunk.is_file(), sorted(p.name for p in chunk.parent.iterdir())
    if how == "deleted":
        chunk.unlink()  # reads back as Zarr's fill value (zeros)
    else:
        chunk.write_bytes(chunk.read_bytes()[: chunk.stat().st_size // 2])  # fails to decompress


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_damaged_last_iteration_falls_back_to_the_previous_intact_one(tmp_path, points, how):
    """Regression: a deleted chunk of the last iteration was read as zeros (result off by up to 1.0, exit 0);
    a truncated one gave a 90-line Zstd traceback."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    _damage_chunk(store, 2, how)
    with pytest.warns(CheckpointWarning, match=r"iterations/00002/X .*resuming from iteration 1"):
        Y, info = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    ref = cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12)
    assert info.resumed_from == 1
    assert np.abs(Y - ref.X).max() <= 1e-9 and np.allclose(info.deltas, ref.deltas, atol=1e-12)
    assert Checkpoint(store).verify(2) is None  # redone and intact again


@pytest.mark.parametrize("estimator,k,stats", [("epsilon", None, "counts"), ("knn", 5, "radius")])
def test_a_lost_chunk_of_the_last_iterations_statistics_is_damage_too(tmp_path, points, estimator, k, stats):
    """The counts (k-NN: radii) of the last iteration are what its model replays with: a deleted chunk of
    them, read back as zeros, makes the store no model, and a resume redoes that iteration (a mutation
    audit: checking X's checksum alone passed the tests; a resume needs X only, so it went on, and the
    store stayed a wrong model)."""
    store = tmp_path / "run.zarr"
    kw = dict(lam=0.2, delta=1e-12, estimator=estimator, k=k, method="dense", checkpoint=store)
    cdf_ts(points, max_iter=2, **kw)
    chunk = store / "iterations" / "00002" / stats / "c" / "0"
    assert chunk.is_file(), sorted(p.name for p in chunk.parent.iterdir())
    chunk.unlink()  # read back as Zarr's fill value (zeros)
    with pytest.raises(ValueError, match=rf"damaged: iterations/00002/{stats} does not match its checksum"):
        load(store)
    with pytest.warns(CheckpointWarning, match=rf"iterations/00002/{stats} .*resuming from iteration 1"):
        Y = cdf_ts(points, max_iter=3, resume=True, **kw)
    ref = cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12, estimator=estimator, k=k)
    assert np.abs(Y - ref.X).max() <= 1e-9
    assert load(store).n_iter == 3


@pytest.mark.parametrize("damaged", ["00001/zarr.json", "00002/X/zarr.json", "00002/counts/zarr.json"])
def test_a_garbled_zarr_json_of_an_iteration_is_damage_that_falls_back(tmp_path, points, damaged, capsys):
    """Found by a kill/resume audit (2026-12-06): an iteration whose zarr.json (its own or an array's)
    was garbled ended a resume with a bare ``JSONDecodeError`` (``Expecting value: line 1 column 1``),
    naming nothing, in the check and again in the discarding of later iterations (listing them read
    every one's zarr.json).  It is damage like a garbled chunk now: the resume falls back to the last
    intact iteration before it, with a warning naming it, and ends equal to the oracle; the CLI's
    ``apply`` names it."""
    from cdfts_dask.cli import main

    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    (store / "iterations" / damaged).write_text("garbage")
    np.save(tmp_path / "in.npy", points)
    assert main(["apply", str(store), str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--quiet"]) == 2
    err = capsys.readouterr().err
    folder, t = damaged.rsplit("/zarr.json", 1)[0], int(damaged[:5])
    assert f"iterations/{folder} cannot be read (JSONDecodeError" in err, err
    said = rf"iterations/{folder} cannot be read .*resuming from iteration {t - 1}"
    with pytest.warns(CheckpointWarning, match=said):
        Y, info = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    ref = cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12)
    assert info.resumed_from == t - 1 and np.abs(Y - ref.X).max() <= 1e-9
    assert all(Checkpoint(store).verify(i) is None for i in range(4))  # redone and intact again


@pytest.mark.parametrize("how", ["garbled", "empty", "missing"])
def test_a_store_whose_own_zarr_json_is_lost_is_named_damaged(tmp_path, points, how):
    """Found by a kill/resume audit (2026-12-06): a store whose root zarr.json was garbled, empty or
    missing was refused as "an existing folder that is not a cdfts-dask run store" (resume) and with
    Zarr's words (as a model), never saying that it is a damaged store.  Both say so now."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    root = store / "zarr.json"
    root.unlink() if how == "missing" else root.write_text("garbage" if how == "garbled" else "")
    with pytest.raises(ValueError, match=r"holds a run store's iterations, but its zarr\.json .* is damaged"):
        cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=True)
    with pytest.raises(ValueError, match=r"^model: .* is a damaged cdfts-dask run store: its zarr\.json"):
        load(store)
    other = tmp_path / "project"  # a folder of the user's that holds an 'iterations' folder is no store
    (other / "iterations").mkdir(parents=True)
    (other / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"is an existing folder that is not a cdfts-dask run store"):
        cdf_ts(points, lam=0.2, max_iter=1, method="dense", checkpoint=other)
    with pytest.raises(ValueError, match=r"^model: .* is not a cdfts-dask run store"):
        load(other)


def _swap_folders(a, b) -> None:
    tmp = a.with_name("swapping")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


@pytest.mark.parametrize("how", ["swapped", "copied-from-another-run"])
def test_an_iteration_folder_in_the_wrong_place_is_damage(tmp_path, points, how):
    """Regression: each iteration's checksums covered its arrays and attributes, not which iteration of
    which store it is: two iteration folders swapped, or one copied in from a run with another lam on
    the same data, passed verification; model.load built a model 0.06 off and a resume went on from the
    wrong positions (exit 0).  Each iteration now names its number and its store's run."""
    store, other = tmp_path / "run.zarr", tmp_path / "other.zarr"
    cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    folders = store / "iterations"
    if how == "swapped":
        _swap_folders(folders / "00002", folders / "00003")
        said = r"iterations/00002 holds iteration 3 of this store's run, not iteration 2 of its own"
    else:
        cdf_ts(points, lam=0.3, max_iter=3, delta=1e-12, method="dense", checkpoint=other)
        shutil.rmtree(folders / "00003")
        shutil.copytree(other / "iterations" / "00003", folders / "00003")
        said = r"iterations/00003 holds iteration 3 of another run, not iteration 3 of its own"
    with pytest.raises(ValueError, match=said):
        load(store)
    with pytest.warns(CheckpointWarning, match=r"resuming from iteration (1|2)"):
        Y, info = cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    ref = cdf_ts_dense(points, lam=0.2, max_iter=4, delta=1e-12)
    assert np.abs(Y - ref.X).max() <= 1e-9 and np.allclose(info.deltas, ref.deltas, atol=1e-12)
    assert all(Checkpoint(store).verify(t) is None for t in range(5))


def test_damaged_iteration_through_the_cli_is_one_warning_line(tmp_path, points, capsys):
    from cdfts_dask.cli import main

    src, out, store = tmp_path / "in.npy", tmp_path / "out.npy", tmp_path / "run.zarr"
    np.save(src, points)
    args = ["transform", str(src), str(out), "--lam", "0.2", "--delta", "1e-12", "--max-iter", "2"]
    args += ["--checkpoint", str(store)]

    assert main([*args, "--quiet"]) == 0
    _damage_chunk(store, 2, "deleted")
    capsys.readouterr()
    assert main([*args, "--quiet", "--resume"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cdfts: warning: ")
    assert "resuming from iteration 1" in lines[0]
    ref = cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12)
    assert np.abs(np.load(out) - ref.X).max() <= 1e-9


def test_completed_past_the_stored_iterations_falls_back(tmp_path, points):
    """Regression: `completed` naming an iteration that is not stored raised KeyError."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    rewrite_attributes(zarr.open_group(str(store), mode="a"), completed=9)  # as an older version could
    with pytest.warns(CheckpointWarning, match=r"iteration 3 is missing.*resuming from iteration 2"):
        Y, info = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert info.resumed_from == 2
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X).max() <= 1e-9


def test_an_edited_iteration_attribute_falls_back_to_the_previous_intact_iteration(tmp_path, points):
    """Regression: an iteration's attributes (m, lo, hi: what the next iteration and a model read) had no
    checksum; an edited one was resumed from as it was.  Now it fails its checksum: the resume goes on from
    the iteration before, redoes it, and equals the uninterrupted run."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    last = zarr.open_group(str(store), mode="a")["iterations/00002"]
    last.attrs["lo"] = [v - 0.1 for v in last.attrs["lo"]]
    with pytest.warns(CheckpointWarning, match=r"iteration 2's attributes do not match their checksum.*"
                      r"resuming from iteration 1"):  # fmt: skip
        Y, info = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert info.resumed_from == 1
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X).max() <= 1e-9


@pytest.mark.parametrize(
    "key, value", [("deltas", [0.5, 1e-13]), ("shape", [1, 1]), ("fingerprint", "0" * 64)]
)
def test_an_edited_root_attribute_is_refused_on_resume(tmp_path, points, key, value):
    """Regression: the root attributes had no checksum: edited Deltas decided where a resume stopped (here a
    run that should go on stopped at iteration 2, "converged"), an edited fingerprint let other data in."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    zarr.open_group(str(store), mode="a").attrs[key] = value
    with pytest.raises(StoreDamaged, match=r"is damaged: its root attributes do not match their checksum"):
        cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store, resume=True)


def test_a_read_that_fails_in_the_storage_deletes_nothing(tmp_path, points, monkeypatch):
    """Regression (found by a review of the new fallback, 2026-11-25): an ``OSError`` while reading an early
    iteration (EIO, a stale NFS handle) was taken for damage: the resume went back to the iteration before
    it and deleted every later, intact iteration.  Now it is raised, and the store is left as it was."""
    from cdfts_dask import store as store_module

    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=5, delta=1e-12, method="dense", checkpoint=store)
    before = sorted(p.name for p in (store / "iterations").iterdir())
    real = store_module.stored_digest
    failures = {"left": 1}

    def flaky(arr):
        if failures["left"] and arr.path.startswith("iterations/00001"):
            failures["left"] -= 1
            raise OSError(5, "Input/output error")
        return real(arr)

    monkeypatch.setattr(store_module, "stored_digest", flaky)
    read_error = r"iterations/00001/X could not be read \(OSError: \[Errno 5\] Input/output error\); the"
    with pytest.raises(OSError, match=read_error + " store is left as it is"):
        cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert sorted(p.name for p in (store / "iterations").iterdir()) == before
    assert Checkpoint(store).completed == 5 and load(store).n_iter == 5  # still the finished model
    Y = cdf_ts(points, lam=0.2, max_iter=6, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=6, delta=1e-12).X).max() <= 1e-9


def test_a_run_killed_in_the_fallback_leaves_a_store_that_resumes(tmp_path, points, monkeypatch):
    """Regression (same review): the fallback wrote ``completed`` but kept ``status`` and
    ``result_iteration`` until the resume reopened the store, so a run killed in between left a finished
    store that ``load`` called damaged ("remove the store and start again").  Now it reads as unfinished
    (resume it), and a resume finishes it."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store)
    _damage_chunk(store, 2, "deleted")

    def killed(self):
        raise _Killed

    monkeypatch.setattr(Checkpoint, "discard_incomplete", killed)
    with pytest.warns(CheckpointWarning, match="resuming from iteration 1"), pytest.raises(_Killed):
        cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store, resume=True)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"not complete \(status='running', 1 iteration\(s\) done\); resume"):
        load(store)
    Y = cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=4, delta=1e-12).X).max() <= 1e-9
    assert load(store).n_iter == 4


def test_a_store_edited_to_say_format_version_2_is_still_checked(tmp_path, points):
    """Regression (found by a review of resume, 2026-11-25): version 2 stores carry no attribute checksums,
    so setting ``format_version`` to 2 beside an edit switched the root's check off: edited Deltas made a
    resume stop at iteration 2 (0.40 from the uninterrupted run), exit 0.  A store that carries a checksum
    is now checked whatever version it names, the root and each iteration."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    root = zarr.open_group(str(store), mode="a")
    attrs = dict(root.attrs)
    root.attrs.put({**attrs, "format_version": 2, "deltas": [attrs["deltas"][0], 1e-13, attrs["deltas"][2]]})
    with pytest.raises(StoreDamaged, match=r"is damaged: its root attributes do not match their checksum"):
        cdf_ts(points, lam=0.2, max_iter=5, delta=1e-12, method="dense", checkpoint=store, resume=True)
    v2 = {key: value for key, value in attrs.items() if key != "attributes_digest"}
    root.attrs.put({**v2, "format_version": 2})  # the root as version 2 wrote it: no checksum
    last = root["iterations/00003"]
    last.attrs.put({**dict(last.attrs), "m": 0.5})  # its checksum kept: still checked
    with pytest.warns(CheckpointWarning, match=r"iteration 3's attributes do not match their checksum.*"
                      r"resuming from iteration 2"):  # fmt: skip
        Y = cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=4, delta=1e-12).X).max() <= 1e-9


@pytest.mark.parametrize("target", ["absent", "empty folder"])
def test_a_checkpoint_given_as_a_symbolic_link_is_made_where_it_points(tmp_path, points, target):
    """Regression (found by a review of resume, 2026-11-25): a link to a store not made yet was replaced by
    a store in the link's own folder (on a cluster: a local folder for a link to shared storage), while the
    lock was taken where the link pointed, so a second run through the link was not locked out; a link to
    an empty folder gave `[Errno 20] Not a directory`.  The store is now made where the link points."""
    from cdfts_dask.paths import lock_path

    (tmp_path / "shared").mkdir()
    where = tmp_path / "shared" / "run.zarr"
    if target == "empty folder":
        where.mkdir()
    link = tmp_path / "run.zarr"
    link.symlink_to(where)
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=link)
    assert link.is_symlink() and Checkpoint(where).completed == 2
    assert lock_path(link) == lock_path(where)  # one lock for both spellings, beside the store
    Y = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=link, resume=True)
    assert Checkpoint(where).completed == 3 and link.is_symlink()
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X).max() <= 1e-9


class _Killed(BaseException):
    """A run stopped dead between two writes (as by SIGKILL: no handler runs)."""


def test_a_run_killed_after_any_metadata_write_resumes_to_the_oracle(tmp_path, points, monkeypatch):
    """Regression: Zarr's ``attrs.update`` writes ``zarr.json`` once per key, so a run killed between two
    keys of one update left root attributes whose checksum named other values: the resume was refused
    ("do not match their checksum").  Every update is now one write.  Here the run is stopped after each
    group-metadata write in turn, and each store left behind resumes (or starts again) to the oracle."""
    import zarr.core.group as zarr_group

    writes = {"n": 0, "stop": None}
    real_save = zarr_group.save_metadata

    async def save_then_maybe_die(*args, **kwargs):
        await real_save(*args, **kwargs)
        writes["n"] += 1
        if writes["n"] == writes["stop"]:
            raise _Killed

    monkeypatch.setattr(zarr_group, "save_metadata", save_then_maybe_die)
    X = points[:40]
    cdf_ts(X, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=tmp_path / "whole.zarr")
    total = writes["n"]
    assert total >= 6  # the root and iteration groups of 4 iterations
    expected = cdf_ts_dense(X, lam=0.2, max_iter=3, delta=1e-12).X
    for stop in range(1, total + 1):
        store = tmp_path / f"killed-{stop}.zarr"
        writes.update(n=0, stop=stop)
        try:
            cdf_ts(X, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
        except _Killed:
            pass
        writes["stop"] = None
        Y = cdf_ts(X, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store, resume=True)
        assert np.abs(Y - expected).max() <= 1e-9, stop


@pytest.mark.parametrize("value", ["2", 2.5, None, True])
def test_completed_not_an_integer_is_refused(tmp_path, points, value):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    rewrite_attributes(zarr.open_group(str(store), mode="a"), completed=value)
    with pytest.raises(StoreDamaged, match=f"'completed' attribute is {value!r}, not an iteration number"):
        cdf_ts(points, lam=0.2, max_iter=3, method="dense", checkpoint=store, resume=True)


def test_store_whose_iteration_0_is_damaged_is_refused(tmp_path, points):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=1, delta=1e-12, method="dense", checkpoint=store)
    _damage_chunk(store, 0, "deleted")
    with pytest.raises(StoreDamaged, match=r"is damaged: iterations/00000/X does not match .* the normalised "
                       r"input every iteration starts from; remove it"):  # fmt: skip
        cdf_ts(points, lam=0.2, max_iter=3, method="dense", checkpoint=store, resume=True)


def test_a_damaged_earlier_iteration_is_computed_again_before_any_work(tmp_path, points):
    """Regression (found by a review of resume, 2026-11-25): a resume verified only the iteration it went
    on from.  With iteration 1 of 3 damaged, the run went on from 3 and marked the store finished, a model
    that ``load`` / ``cdfts apply`` then refused; a sampled fit (which loads its model at the end) failed
    only after computing its new iterations, and again on every later resume; a resume stopping at a
    damaged earlier iteration was refused ("remove it and start again") after rewriting the root.  Now
    every stored iteration is verified first and the run goes on from the one before the first damaged."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    _damage_chunk(store, 1, "deleted")
    with pytest.warns(CheckpointWarning, match=r"iterations/00001/X .*resuming from iteration 0"):
        Y, info = cdf_ts(points, lam=0.2, max_iter=4, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert info.resumed_from == 0
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=4, delta=1e-12).X).max() <= 1e-9
    assert load(store).n_iter == 4  # a whole model again

    _damage_chunk(store, 3, "truncated")  # a resume that stops before the last stored iteration
    with pytest.warns(CheckpointWarning, match=r"iterations/00003/X .*resuming from iteration 2"):
        Y = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X).max() <= 1e-9

    sampled = tmp_path / "sampled.zarr"
    draw = dict(lam=0.2, delta=1e-12, n_references=60, random_state=3, method="dense", checkpoint=sampled)
    cdf_ts(points, max_iter=3, **draw)
    _damage_chunk(sampled, 1, "deleted")
    with pytest.warns(CheckpointWarning, match=r"iterations/00001/X .*resuming from iteration 0"):
        Y = cdf_ts(points, max_iter=5, resume=True, **draw)
    expected = cdf_ts(points, max_iter=5, **{**draw, "checkpoint": tmp_path / "fresh.zarr"})
    assert np.abs(Y - expected).max() <= 1e-9


def test_tiled_resume_verifies_too(tmp_path, points, client):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="tiled", client=client, tile_size=50,
           checkpoint=store)  # fmt: skip
    _damage_chunk(store, 2, "truncated")
    with pytest.warns(CheckpointWarning, match="resuming from iteration 1"):
        Y = cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="tiled", client=client, tile_size=50,
                   checkpoint=store, resume=True)  # fmt: skip
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12).X).max() <= 1e-9


def test_store_layout_has_a_format_version_and_digests(tmp_path, points):
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=1, delta=1e-12, method="dense", checkpoint=store)
    g = zarr.open_group(str(store), mode="r")
    assert g.attrs["format"] == "cdfts-dask" and g.attrs["format_version"] == 3
    digests = g["iterations/00001"].attrs["digests"]
    assert set(digests) == {"X", "counts"} and all(v.startswith("sha256:") for v in digests.values())


# -- resume on a store that holds more, or nothing yet (issue 10, item 12) -----------------------------------


def test_resume_with_fewer_iterations_returns_that_iteration_and_says_so(tmp_path, points, caplog):
    """Regression: --resume --max-iter 5 on a store with 8 iterations silently returned all 8 (and then
    logged 'resuming after iteration 8' beside the warning that iteration 5 is returned)."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=8, delta=1e-12, method="dense", checkpoint=store)
    with pytest.warns(CheckpointWarning, match=r"holds 8 iterations; this run stops at iteration 5 \(max_it"):
        with caplog.at_level(logging.INFO, logger="cdfts_dask"):
            Y, info = cdf_ts(points, lam=0.2, max_iter=5, delta=1e-12, method="dense", checkpoint=store,
                             resume=True, return_info=True)  # fmt: skip
    assert f"{store} already holds iteration 5, where this run stops: nothing to run" in caplog.messages
    assert not any(m.startswith("resuming") for m in caplog.messages)
    ref = cdf_ts_dense(points, lam=0.2, max_iter=5, delta=1e-12)
    assert info.n_iter == 5 and np.allclose(info.deltas, ref.deltas, atol=1e-12)
    assert np.abs(Y - ref.X).max() <= 1e-9
    assert Checkpoint(store).completed == 8  # the later iterations are kept


def test_resume_stops_at_max_iter_before_a_stored_iteration_that_meets_delta(tmp_path, points):
    """A store of 8 iterations whose Delta first meets ``delta`` at iteration 8, resumed with max_iter 5:
    iteration 5 is returned, not converged, as a fresh run returns it (found by a mutation audit,
    2026-12-07: the first stored iteration that met delta returned past max_iter passed, a wrong result
    with exit 0)."""
    store = tmp_path / "run.zarr"
    _, full = cdf_ts(points, lam=0.2, max_iter=8, delta=1e-12, method="dense", checkpoint=store,
                     return_info=True)  # fmt: skip
    delta = full.deltas[7]
    assert all(d > delta for d in full.deltas[:7])  # iteration 8 is the first to meet it
    fresh, ref = cdf_ts(points, lam=0.2, max_iter=5, delta=delta, method="dense", return_info=True)
    with pytest.warns(CheckpointWarning, match=r"this run stops at iteration 5 \(max_iter=5\)"):
        Y, info = cdf_ts(points, lam=0.2, max_iter=5, delta=delta, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert (info.n_iter, info.converged) == (ref.n_iter, ref.converged) == (5, False)
    np.testing.assert_array_equal(Y, fresh)


def test_resume_with_a_larger_delta_stops_where_a_fresh_run_would(tmp_path, points):
    store = tmp_path / "run.zarr"
    _, full = cdf_ts(points, lam=0.2, max_iter=6, delta=1e-12, method="dense", checkpoint=store,
                     return_info=True)  # fmt: skip
    delta = full.deltas[3]  # a fresh run with this delta stops at iteration 4 or earlier
    fresh, ref = cdf_ts(points, lam=0.2, max_iter=6, delta=delta, method="dense", return_info=True)
    assert ref.converged and ref.n_iter < 6
    with pytest.warns(CheckpointWarning, match=f"stops at iteration {ref.n_iter} "):
        Y, info = cdf_ts(points, lam=0.2, max_iter=6, delta=delta, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert info.converged and info.n_iter == ref.n_iter and info.deltas == ref.deltas
    np.testing.assert_allclose(Y, fresh, atol=1e-12)


@pytest.mark.parametrize("left", ["empty-group", "group-without-iterations", "empty-folder"])
@pytest.mark.parametrize("resume", [False, True])
def test_store_killed_right_after_creation_starts_again(tmp_path, points, left, resume):
    """Regression: a store killed right after its group was created was refused with and without --resume."""
    store = tmp_path / "run.zarr"
    if left == "empty-folder":
        store.mkdir()
    else:
        group = zarr.open_group(str(store), mode="w")
        if left == "group-without-iterations":  # what the old creation order left after writing attributes
            group.attrs.update({"format": "cdfts-dask", "format_version": 2, "completed": -1})
    Y = cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=resume)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12).X).max() <= 1e-12
    assert Checkpoint(store).completed == 2


def test_a_store_killed_in_its_first_iteration_is_a_run_kept_without_resume(tmp_path, points):
    """A store that committed iteration 0 only (its run killed during iteration 1) holds a run: without
    resume it is refused and kept, as any other, and with resume it goes on (a mutation audit: taking
    ``completed <= 0`` for "committed nothing" let a run without resume replace it, exit 0)."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=1, delta=1e-12, method="dense", checkpoint=store)
    shutil.rmtree(store / "iterations" / "00001")  # as if killed before iteration 1 was committed
    rewrite_attributes(zarr.open_group(str(store), mode="a"), completed=0, deltas=[], status="running")
    other = points[::-1].copy()
    with pytest.raises(FileExistsError, match=r"already exists; pass resume=True"):
        cdf_ts(other, lam=0.2, max_iter=1, method="dense", checkpoint=store)
    assert Checkpoint(store).completed == 0
    Y = cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12).X).max() <= 1e-9


def test_an_input_inside_a_store_that_committed_nothing_is_refused_and_kept(tmp_path, points):
    """A store killed before it committed an iteration is replaced whole by the next run (it holds nothing
    of a run); an input file put inside it is refused as inside the checkpoint, and kept, never deleted
    with the store (a mutation audit: without the "contains" half of the path clash, the run removed
    the folder and the input in it, exit 0)."""
    store = tmp_path / "run.zarr"
    group = zarr.open_group(str(store), mode="w")
    group.attrs.update({"format": "cdfts-dask", "format_version": 3, "completed": -1})
    src = store / "in.npy"
    np.save(src, points)
    with pytest.raises(ValueError, match=r"checkpoint .* contains the input .*; refusing to overwrite it"):
        cdf_ts(str(src), lam=0.2, max_iter=1, method="dense", checkpoint=store)
    assert np.array_equal(np.load(src), points)


def test_a_resume_reads_its_own_store_while_another_runs_result_is_held(tmp_path, client):
    """Regression: the task reading a stored iteration had the key of ``(path, t)`` alone.  While a
    result of an earlier run at that path was still held (a resume with nothing to run returns a dask
    array on it), a new store at the same path resumed from the old run's positions: the wrong result,
    and iterations computed from the other data written to the new store, with exit 0."""
    import dask.array as da

    rng = np.random.default_rng(12)
    Xa, Xb = rng.random((120, 2)), rng.normal(size=(120, 2)) * 3 + 1
    store, kw = tmp_path / "run.zarr", dict(lam=0.1, delta=1e-12, method="tiled", client=client, tile_size=64)
    cdf_ts(da.from_array(Xa, chunks=60), checkpoint=store, max_iter=2, **kw)
    held = cdf_ts(da.from_array(Xa, chunks=60), checkpoint=store, resume=True, max_iter=2, **kw)
    expected_a = cdf_ts_dense(Xa, lam=0.1, delta=1e-12, max_iter=2).X
    np.testing.assert_allclose(client.compute(held).result(), expected_a, rtol=0, atol=1e-9)
    shutil.rmtree(store)  # a new run at the same path, on other data, while `held` is alive
    cdf_ts(Xb, checkpoint=store, max_iter=2, **kw)
    resumed = cdf_ts(Xb, checkpoint=store, resume=True, max_iter=4, **kw)
    expected = cdf_ts_dense(Xb, lam=0.1, delta=1e-12, max_iter=4).X
    np.testing.assert_allclose(resumed, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(load(store).outputs, expected, rtol=0, atol=1e-9)  # what the store holds


def test_a_resume_keeps_the_fits_column_names_and_refuses_other_ones(tmp_path, points):
    """Regression: a resume replaced the stored parameters with its own, column names included, so a
    resume from a ``.npy`` (no names; even one with nothing left to run) erased a CSV fit's names, and
    ``cdfts apply`` then read a CSV with the columns swapped by position: every row wrong, exit 0.  Now
    a resume without names keeps the fit's, and one with other names is refused before any change."""
    from cdfts_dask.cli import main

    store = tmp_path / "run.zarr"
    names = ["height", "weight"]
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, feature_names=names)
    for max_iter in (2, 3):  # nothing to run, then one more iteration
        cdf_ts(points, lam=0.2, max_iter=max_iter, delta=1e-12, method="dense", checkpoint=store, resume=True)
        assert load(store).feature_names == names and load(store).n_iter == max_iter
    with pytest.raises(StoreMismatch, match=r"fitted on the columns \['height', 'weight'\], this run's X has "
                                            r"the columns \['weight', 'height'\] \(name 1 is 'weight', "
                                            r"fitted 'height'\); resume with"):  # fmt: skip
        cdf_ts(points, lam=0.2, max_iter=4, method="dense", checkpoint=store, resume=True,
               feature_names=names[::-1])  # fmt: skip
    assert load(store).feature_names == names and zarr.open_group(str(store)).attrs["status"] == "max_iter"
    swapped = tmp_path / "swapped.csv"
    np.savetxt(swapped, points[:5, ::-1], delimiter=",", header="weight,height", comments="")
    assert main(["apply", str(store), str(swapped), str(tmp_path / "o.csv"), "--quiet"]) == 2
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("failing", ["store", "iteration", "output"])
def test_a_full_disk_names_the_checkpoint_or_the_output(tmp_path, capsys, monkeypatch, failing):
    """Regression (a new-user audit, 2026-11-29): a full disk under ``--checkpoint`` or a ``.zarr`` output
    was only ``cdfts transform: error: [Errno 28] No space left on device``, naming no path (a ``.csv``
    output named its own).  The store's creation, an iteration's write and a Zarr output now name the
    path the user gave (not the temporary written to), and nothing is left behind.  The disk fills
    here by a write that raises ENOSPC: in the store's arrays (``store.write_array``: the store's
    iteration 0, or iteration 2) or in the output's."""
    import errno

    from cdfts_dask import store
    from cdfts_dask.cli import main as cli_main

    rng = np.random.default_rng(0)
    np.save(tmp_path / "in.npy", rng.random((60, 2)))
    real_write, real_create = store.write_array, store.zarr.create_array
    written = []

    def write_array(group, name, values):
        written.append(name)
        if failing == "store" or (failing == "iteration" and written.count("X") == 3):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(group, name, values)

    def create_array(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "write_array", write_array)
    if failing == "output":
        monkeypatch.setattr(store.zarr, "create_array", create_array)
    ckpt, out = tmp_path / "run.zarr", tmp_path / "out.zarr"
    args = ["transform", str(tmp_path / "in.npy"), str(out), "--method", "dense", "--checkpoint", str(ckpt)]
    code = cli_main([*args, "--quiet", "--max-iter", "3", "--delta", "1e-12"])
    monkeypatch.setattr(store.zarr, "create_array", real_create)
    what, where = ("output", out) if failing == "output" else ("checkpoint", ckpt)
    said = f"cdfts transform: error: [Errno 28] {what}: cannot write {str(where)!r}: No space left on device"
    assert code == 2 and capsys.readouterr().err.strip().splitlines() == [said]
    assert not out.exists()
    kept = sorted(p.name for p in tmp_path.iterdir() if p.name != "run.zarr.lock")  # the lock file stays
    assert kept == (["in.npy"] if failing == "store" else ["in.npy", "run.zarr"])
    if failing != "store":
        assert Checkpoint(ckpt).completed == (1 if failing == "iteration" else 3)


def test_a_resume_that_cannot_write_the_stores_attributes_names_the_store(tmp_path, capsys, monkeypatch):
    """Regression (found by a storage audit, 2026-11-29): resuming a read-only store (even one with
    nothing left to run: a resume marks the store running first) said ``[Errno 13] Permission denied:
    '.../ro.zarr/zarr.<hex>.partial'``, Zarr's temporary file, not the checkpoint.  Root may write a
    read-only folder, so the write of the root attributes raises EACCES here as it does for a user."""
    import errno

    import zarr.core.attributes

    from cdfts_dask.cli import main as cli_main

    np.save(tmp_path / "in.npy", np.random.default_rng(0).random((60, 2)))
    ckpt = tmp_path / "run.zarr"
    args = ["transform", str(tmp_path / "in.npy"), str(tmp_path / "o.npy"), "--method", "dense", "--quiet",
            "--checkpoint", str(ckpt), "--max-iter", "2", "--delta", "1e-12"]  # fmt: skip
    assert cli_main(args) == 0
    before = (ckpt / "zarr.json").read_bytes()

    def read_only(self, *a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(ckpt / "zarr.json.partial"))

    monkeypatch.setattr(zarr.core.attributes.Attributes, "put", read_only)
    for more in ("2", "3"):  # nothing left to run; one more iteration
        assert cli_main([*args[:-3], more, "--delta", "1e-12", "--resume"]) == 2
        said = f"cdfts transform: error: [Errno 13] checkpoint: cannot write {str(ckpt)!r}: Permission denied"
        assert capsys.readouterr().err.strip().splitlines() == [said]
    assert (ckpt / "zarr.json").read_bytes() == before and Checkpoint(ckpt).completed == 2


def test_a_zarr_output_inside_a_zarr_v2_group_is_one_of_its_members(tmp_path, client):
    """Regression: an output array written into a Zarr v2 group was a v3 array there, which the group
    does not list; it is written in the group's format now (in memory and chunk by chunk on workers),
    and in v3 elsewhere."""
    import dask.array as da

    from cdfts_dask.store import write_dask_zarr, write_output_zarr

    X = np.random.default_rng(0).normal(size=(30, 2))
    zarr.open_group(str(tmp_path / "v2.zarr"), mode="w", zarr_format=2)
    write_output_zarr(tmp_path / "v2.zarr" / "mem.zarr", X, {"n_iter": 1})
    lazy = da.from_array(X, chunks=(7, 2))
    write_dask_zarr(tmp_path / "v2.zarr" / "lazy.zarr", lazy, client, {"n_iter": 1})
    write_output_zarr(tmp_path / "plain.zarr", X)
    group = zarr.open_group(str(tmp_path / "v2.zarr"), mode="r")
    assert sorted(group.array_keys()) == ["lazy.zarr", "mem.zarr"]
    for name in ("lazy.zarr", "mem.zarr"):
        assert np.array_equal(group[name][...], X) and group[name].attrs["n_iter"] == 1
    assert zarr.open_array(str(tmp_path / "plain.zarr"), mode="r").metadata.zarr_format == 3


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_an_output_hidden_by_a_groups_consolidated_metadata_is_warned_of(tmp_path, client, zarr_format):
    """An output written inside a Zarr group with consolidated metadata (xarray writes it by default) is
    not one of the group's members until it is consolidated again: the write warns, naming the group
    and the call that lists it; the group's metadata is not rewritten; no warning where the group has
    none."""
    import warnings

    import dask.array as da

    from cdfts_dask.store import write_dask_zarr, write_output_zarr

    X = np.random.default_rng(1).normal(size=(20, 3))
    group_path = tmp_path / "data.zarr"
    group = zarr.open_group(str(group_path), mode="w", zarr_format=zarr_format)
    group.create_group("sub")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr: consolidated metadata is no part of the v3 specification
        zarr.consolidate_metadata(str(group_path), zarr_format=zarr_format)
    before = {p.name: p.read_bytes() for p in group_path.iterdir() if p.is_file()}
    for write, where in ((write_output_zarr, "out.zarr"), (write_dask_zarr, "sub/lazy.zarr")):
        with pytest.warns(UserWarning) as caught:
            if write is write_output_zarr:
                write(group_path / where, X)
            else:
                write(group_path / where, da.from_array(X, chunks=(6, 3)), client)
        said = [str(w.message) for w in caught if str(w.message).startswith("output: ")]
        assert len(said) == 1 and f"zarr.consolidate_metadata({str(group_path)!r})" in said[0]
    assert {p.name: p.read_bytes() for p in group_path.iterdir() if p.is_file()} == before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(KeyError):
            zarr.open_group(str(group_path), mode="r")["out.zarr"]
        zarr.consolidate_metadata(str(group_path), zarr_format=zarr_format)  # the call the warning gives
        reopened = zarr.open_group(str(group_path), mode="r")
        assert np.array_equal(reopened["out.zarr"][...], X)
        assert np.array_equal(reopened["sub"]["lazy.zarr"][...], X)
    zarr.open_group(str(tmp_path / "plain.zarr"), mode="w", zarr_format=zarr_format)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_output_zarr(tmp_path / "plain.zarr" / "out.zarr", X)


# -- found by a mutation audit of the store (2026-12-06) ---------------------------------------------------


def test_a_resume_with_another_dtype_is_refused(tmp_path, points, client):
    """``dtype`` changes the trajectory (float32 rounds every position): a float64 store resumed as a
    float32 run (or the reverse) is refused, naming it, and the store is left as it was."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="tiled", client=client, checkpoint=store)
    with pytest.raises(StoreMismatch, match=r"dtype='float64', this run has dtype='float32'"):
        cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="tiled", client=client, dtype="float32",
               checkpoint=store, resume=True)  # fmt: skip
    assert Checkpoint(store).completed == 2


def test_the_same_values_in_another_shape_are_other_input(tmp_path, points):
    """The input's fingerprint covers its shape: the same float64 bytes as 80 x 3 points are not the
    120 x 2 points a store was made from (its positions could not even be the run's)."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    reshaped = np.ascontiguousarray(points).reshape(80, 3)
    with pytest.raises(StoreMismatch, match=r"fingerprint differs: 120 x 2 points there, 80 x 3 here"):
        cdf_ts(reshaped, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store, resume=True)


def test_a_resume_of_a_store_that_converged_at_its_last_iteration_runs_nothing(tmp_path, points, caplog):
    """A run that converged (Delta <= delta at its last stored iteration), resumed with the same delta and a
    larger max_iter: nothing runs and that iteration is returned, as a fresh run would (a mutation audit:
    taking "stops at the last stored iteration" for "go on" ran one iteration more, with no word)."""
    store = tmp_path / "run.zarr"
    X1, first = cdf_ts(points, lam=0.2, max_iter=30, delta=0.01, method="dense", checkpoint=store,
                       return_info=True)  # fmt: skip
    assert first.converged and first.n_iter < 30
    with caplog.at_level(logging.INFO, logger="cdfts_dask"):
        Y, info = cdf_ts(points, lam=0.2, max_iter=60, delta=0.01, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    stop = first.n_iter
    assert f"{store} already holds iteration {stop}, where this run stops: nothing to run" in caplog.messages
    assert info.converged and info.n_iter == stop and info.deltas == first.deltas
    assert np.array_equal(Y, X1) and Checkpoint(store).completed == stop


def test_an_iteration_written_twice_keeps_one_delta_per_iteration(tmp_path, points):
    """The save task of iteration t run again (Dask retries a task whose worker was lost after it wrote,
    before it reported) leaves the store as one write did: one Delta per iteration, a resume that stops
    where a fresh run does (a mutation audit: appending to the stored Deltas instead of to those of
    1..t-1 passed the tests, and a later resume read its stopping point from shifted Deltas)."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    ckpt = Checkpoint(store)
    deltas = ckpt.deltas
    stored = ckpt.iteration_attrs(3)
    attrs = {key: stored[key] for key in ("delta", "m", "lo", "hi", "seconds")}
    counts = zarr.open_group(str(store), mode="r")["iterations/00003/counts"][...]
    ckpt.write_iteration(3, ckpt.positions(3), {"counts": counts}, attrs)  # the retried save task
    assert Checkpoint(store).deltas == deltas and Checkpoint(store).completed == 3
    fresh = cdf_ts_dense(points, lam=0.2, max_iter=6, delta=1e-12)
    Y, info = cdf_ts(points, lam=0.2, max_iter=6, delta=1e-12, method="dense", checkpoint=store, resume=True,
                     return_info=True)  # fmt: skip
    assert info.deltas == pytest.approx(fresh.deltas, abs=1e-12) and Checkpoint(store).deltas == info.deltas
    assert np.abs(Y - fresh.X).max() <= 1e-9


def test_a_resume_with_nothing_to_run_still_discards_a_half_written_iteration(tmp_path, points):
    """Iterations beyond ``completed`` are half-written and discarded on every resume, the one right after
    ``completed`` included, also when the store already holds where the run stops (nothing is computed
    that would overwrite it): the store the run leaves, a model, holds no half-written iteration."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    g = zarr.open_group(str(store), mode="a")
    g.create_array("iterations/00003/X", shape=(5, 2), dtype="f8")  # a crash mid-write of iteration 3
    g.create_array("iterations/00004/X", shape=(5, 2), dtype="f8")
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=True)
    kept = sorted(p.name for p in (store / "iterations").iterdir() if p.is_dir())
    assert kept == ["00000", "00001", "00002"]


def test_creating_a_store_where_a_run_is_stored_is_refused_and_keeps_it(tmp_path, points):
    """``Checkpoint.create`` replaces an empty folder or group only: over a store holding a run (reached
    without the run's own checks, as by a run that lost a race to another) it refuses, and the run's
    iterations are kept; no temporary is left beside it."""
    from cdfts_dask.store import fingerprint

    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    X0 = Checkpoint(store).positions(0)
    with pytest.raises(OSError, match="exists and is not empty; refusing to replace it"):
        Checkpoint.create(store, {"lam": 0.2}, fingerprint(points), X0, (points.min(0), points.max(0)))
    assert Checkpoint(store).completed == 2 and Checkpoint(store).verify(2) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.zarr", "run.zarr.lock"]


def test_a_run_killed_while_writing_an_iteration_leaves_the_last_one_complete(tmp_path, points, monkeypatch):
    """Commit order: an iteration's arrays, then its checksums, then ``completed``.  A run killed after
    iteration 2's positions were written, before its statistics, leaves ``completed = 1`` (never an
    iteration without its data and checksums), and the resume goes on from 1 with no damage to report."""
    from cdfts_dask import store as store_module

    real_write = store_module.write_array

    def write_or_die(group, name, values):
        if group.path.endswith("00002") and name == "counts":
            raise _Killed
        real_write(group, name, values)

    monkeypatch.setattr(store_module, "write_array", write_or_die)
    store = tmp_path / "run.zarr"
    with pytest.raises(_Killed):
        cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store)
    monkeypatch.setattr(store_module, "write_array", real_write)
    assert Checkpoint(store).completed == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)  # nothing damaged: no fall-back
        Y, info = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert info.resumed_from == 1
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X).max() <= 1e-9


def test_a_recovery_from_lost_workers_verifies_the_iteration_it_goes_on_from(tmp_path, points):
    """Workers lost mid-run: the run goes back to the checkpoint's last iteration only once it is verified;
    a damaged one stops the run (StoreDamaged, naming it), never a run that goes on from zeros."""
    from cdfts_dask import runner

    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    t, X, deltas = runner._recover(DenseLosingWorkers(), points, store, 3, RuntimeError("lost"))
    assert (t, len(deltas)) == (3, 2) and np.array_equal(X, Checkpoint(store).positions(2))
    _damage_chunk(store, 2, "deleted")
    with pytest.raises(StoreDamaged, match=r"lost during iteration 3 .*iterations/00002/X does not match"):
        runner._recover(DenseLosingWorkers(), points, store, 3, RuntimeError("lost"))


def test_an_array_rewritten_in_another_dtype_with_the_same_bytes_is_damage(tmp_path, points):
    """A checksum covers an array's dtype and shape as well as its bytes (found by a mutation audit,
    2026-12-07: a checksum of the bytes alone passed): iteration 2's positions rewritten as int64 of the
    same bytes (they would read as integers near 4.6e18) are damage, and the resume falls back to 1."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    it2 = zarr.open_group(str(store), mode="a")["iterations/00002"]
    X = it2["X"][...]
    as_int = it2.create_array("X", shape=X.shape, dtype="i8", chunks=it2["X"].chunks, overwrite=True)
    as_int[...] = X.view("i8")
    damage = "iterations/00002/X does not match its checksum (a chunk is missing or changed)"
    assert Checkpoint(store).verify(2) == damage
    with pytest.warns(CheckpointWarning, match="resuming from iteration 1"):
        Y = cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=True)
    np.testing.assert_array_equal(Y, cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12).X)


def test_attributes_written_back_in_another_key_order_are_intact(tmp_path, points):
    """A node's attributes checksum is of their canonical JSON (sorted keys), so a store whose ``zarr.json``
    files another writer re-serialised in another key order is intact: nothing falls back, nothing is
    deleted (found by a mutation audit, 2026-12-07: a checksum of the keys in written order passed)."""
    import json

    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    for meta_file in (store / "zarr.json", store / "iterations" / "00002" / "zarr.json"):
        meta = json.loads(meta_file.read_text())
        meta["attributes"] = dict(reversed(list(meta["attributes"].items())))
        meta_file.write_text(json.dumps(meta))
    assert Checkpoint(store).verify(2) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        Y, info = cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store,
                         resume=True, return_info=True)  # fmt: skip
    assert info.resumed_from == 2
    expected = cdf_ts_dense(points, lam=0.2, max_iter=3, delta=1e-12).X
    np.testing.assert_allclose(Y, expected, rtol=0, atol=1e-12)


def test_a_store_of_another_format_of_ours_is_not_resumed(tmp_path, points):
    """A store whose ``format`` names another cdfts-dask format (a later one: the path check takes any
    ``cdfts-dask...`` store for a run) is refused by name, whatever version it says (found by a mutation
    audit, 2026-12-07: the root check's exact format name unchecked passed)."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    rewrite_attributes(zarr.open_group(str(store), mode="a"), format="cdfts-dask-next")
    message = r"is not a cdfts-dask store of format version 3 \(format='cdfts-dask-next', format_version=3\)"
    with pytest.raises(StoreMismatch, match=message):
        cdf_ts(points, lam=0.2, max_iter=3, delta=1e-12, method="dense", checkpoint=store, resume=True)


def test_an_iteration_without_the_checksum_of_its_statistics_is_damage(tmp_path, points):
    """Every iteration after 0 is verified in both its arrays: one whose checksums leave out its
    statistics (``counts``), even with its attributes' own checksum made to agree, is damaged (its
    counts could not be checked), so the resume falls back past it."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    it2 = zarr.open_group(str(store), mode="a")["iterations/00002"]
    rewrite_attributes(it2, digests={"X": it2.attrs["digests"]["X"]})
    assert Checkpoint(store).verify(2) == "iteration 2 has no checksums"
    with pytest.warns(CheckpointWarning, match=r"iteration 2 has no checksums; resuming from iteration 1"):
        cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=True)


def test_a_resume_that_stops_at_a_stored_iteration_leaves_that_iteration_as_the_model(tmp_path, points):
    """A resume with a smaller ``max_iter`` returns iteration 5 of 8 stored: the store records 5 as the
    run's result, so the model read from it is the run's (its 5 iterations), not the 8 stored."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=8, delta=1e-12, method="dense", checkpoint=store)
    with pytest.warns(CheckpointWarning, match="this run stops at iteration 5"):
        Y = cdf_ts(points, lam=0.2, max_iter=5, delta=1e-12, method="dense", checkpoint=store, resume=True)
    attrs = Checkpoint(store).group.attrs
    assert (attrs["status"], attrs["result_iteration"], attrs["completed"]) == ("max_iter", 5, 8)
    model = load(store)
    assert len(model.iterations) == 5
    np.testing.assert_array_equal(model.outputs, Y)


@pytest.mark.parametrize("value", [0, -1, 9])
def test_a_result_iteration_outside_the_stored_ones_is_damage(tmp_path, points, value):
    """``result_iteration`` (made to agree with the root's checksum) must name an iteration in
    1..completed: 0 (a model of no iteration) or one beyond the store is refused as damage, never read."""
    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    rewrite_attributes(zarr.open_group(str(store), mode="a"), result_iteration=value)
    with pytest.raises(ValueError, match=rf"damaged: its 'result_iteration' \({value}\) is not an iteration"):
        load(store)


def test_an_iteration_replaced_by_one_of_another_shape_is_damage(tmp_path, points):
    """An iteration whose positions were replaced by an array of another shape, with checksums that agree
    with it (a copy from another store of the same run), is damaged: its shape is checked against the
    run's (under the root's checksum) before it is read, and the resume falls back past it."""
    from cdfts_dask.store import array_digest, write_array

    store = tmp_path / "run.zarr"
    cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store)
    it2 = zarr.open_group(str(store), mode="a")["iterations/00002"]
    fewer = it2["X"][:60]
    write_array(it2, "X", fewer)
    rewrite_attributes(it2, digests={**it2.attrs["digests"], "X": array_digest(fewer)})
    assert Checkpoint(store).verify(2) == "iterations/00002/X has the shape (60, 2), not the run's (120, 2)"
    with pytest.warns(CheckpointWarning, match=r"has the shape \(60, 2\).*resuming from iteration 1"):
        Y = cdf_ts(points, lam=0.2, max_iter=2, delta=1e-12, method="dense", checkpoint=store, resume=True)
    assert np.abs(Y - cdf_ts_dense(points, lam=0.2, max_iter=2, delta=1e-12).X).max() <= 1e-9
