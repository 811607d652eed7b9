"""Zarr layout of a CDF-TS run: checkpoints, resume, and array output.

Layout of a checkpoint store (a Zarr v3 group)::

    attrs: format, format_version, params (lam, estimator, k, dtype), fingerprint, shape,
           completed (index of the last complete iteration), deltas, status
    iterations/00000/X          the min-max normalised input
    iterations/00000 attrs:     lo, hi (column range of the raw input; format_version >= 2)
    iterations/<t>/X            positions after iteration t (normalised)
    iterations/<t>/counts       epsilon estimator: c(z) of iteration t
    iterations/<t>/radius       k-NN estimator: lam_k(z) (units of m)
    iterations/<t> attrs:       m, lo, hi (range used to normalise), delta, seconds

An iteration is *complete* once the root attribute ``completed`` names it:
that attribute is written last, and Zarr writes it atomically (temporary
file, then rename).  Anything beyond ``completed`` is a half-written
iteration and is discarded on resume.

A store whose ``status`` is in :data:`COMPLETE_STATUSES` is a fitted model
(:func:`cdfts_dask.model.load`): iteration t's references are the positions
of iteration t - 1, with iteration t's statistics, m, lo and hi.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path

import numpy as np
import zarr

FORMAT = "cdfts-dask/1"
#: 2: iteration 0 keeps the raw input's column range, so a completed run is a model
FORMAT_VERSION = 2
#: ``status`` of a run that finished (converged, or stopped at max_iter)
COMPLETE_STATUSES = ("converged", "max_iter")
#: parameters that change the trajectory; a store made with others is refused
TRAJECTORY_PARAMS = ("lam", "estimator", "k", "dtype")


class StoreMismatch(ValueError):
    """A checkpoint store was made for other parameters or other input."""


def fingerprint(X: np.ndarray) -> str:
    """SHA-256 of the input's shape and float64 bytes."""
    h = hashlib.sha256(repr(tuple(X.shape)).encode())
    h.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    return h.hexdigest()


def iteration_key(t: int) -> str:
    return f"iterations/{t:05d}"


def _row_chunks(n: int, d: int) -> tuple[int, int]:
    return (max(1, min(n, (1 << 23) // max(d, 1))), d)  # ~64 MiB float64 chunks


def write_array(group: zarr.Group, name: str, values: np.ndarray) -> None:
    chunks = _row_chunks(*values.shape) if values.ndim == 2 else (min(values.shape[0], 1 << 23),)
    arr = group.create_array(name, shape=values.shape, dtype=values.dtype, chunks=chunks, overwrite=True)
    arr[...] = values


class Checkpoint:
    """A run's checkpoint store at ``path`` (created or reopened)."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self.group = zarr.open_group(self.path, mode="a")

    # -- creation and resume -------------------------------------------------
    @classmethod
    def create(cls, path, params: dict, fp: str, X0: np.ndarray, input_range=None) -> Checkpoint:
        """Start a new store holding the normalised input as iteration 0 (and the raw input's range)."""
        ckpt = cls(path)
        ckpt.group.attrs.update(
            {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "params": params,
                "fingerprint": fp,
                "shape": list(X0.shape),
                "completed": -1,
                "deltas": [],
                "status": "running",
            }
        )
        lo_hi = {} if input_range is None else {"lo": input_range[0], "hi": input_range[1]}
        ckpt.write_iteration(0, X0, {}, lo_hi)
        return ckpt

    @staticmethod
    def exists(path) -> bool:
        return Path(path, "zarr.json").exists()

    @classmethod
    def open_for_resume(cls, path, params: dict, fp: str) -> Checkpoint:
        """Reopen a store, refusing one made with other parameters or input."""
        try:
            ckpt = cls(path)
            attrs = dict(ckpt.group.attrs)
        except Exception as exc:  # not a Zarr group at all
            raise StoreMismatch(f"checkpoint {path!r} is not a cdfts-dask store: {exc}") from None
        if attrs.get("format") != FORMAT:
            raise StoreMismatch(
                f"checkpoint {path!r} is not a cdfts-dask store (format={attrs.get('format')!r})"
            )
        if attrs.get("fingerprint") != fp:
            raise StoreMismatch(f"checkpoint {path!r} was made from other input data (fingerprint differs)")
        stored = attrs.get("params", {})
        for key in TRAJECTORY_PARAMS:
            if stored.get(key) != params.get(key):
                raise StoreMismatch(
                    f"checkpoint {path!r} was made with {key}={stored.get(key)!r}, "
                    f"this run has {key}={params.get(key)!r}"
                )
        if attrs.get("completed", -1) < 0:
            raise StoreMismatch(f"checkpoint {path!r} holds no complete iteration; remove it and start again")
        ckpt.discard_incomplete()
        return ckpt

    def discard_incomplete(self) -> None:
        """Delete iterations written after the last complete one (a run killed mid-write)."""
        done = self.completed
        if "iterations" not in self.group:
            return
        its = self.group["iterations"]
        for name in list(its.group_keys()):
            if int(name) > done:
                del its[name]

    # -- iterations ------------------------------------------------------------
    @property
    def completed(self) -> int:
        return int(self.group.attrs.get("completed", -1))

    @property
    def deltas(self) -> list[float]:
        return list(self.group.attrs.get("deltas", []))

    def positions(self, t: int | None = None) -> np.ndarray:
        t = self.completed if t is None else t
        return self.group[iteration_key(t) + "/X"][...]

    def iteration_attrs(self, t: int) -> dict:
        return dict(self.group[iteration_key(t)].attrs)

    def write_iteration(self, t: int, X: np.ndarray, arrays: dict, attrs: dict) -> None:
        """Write iteration t's arrays and attributes, then mark it complete (atomically)."""
        grp = self.group.require_group(iteration_key(t))
        write_array(grp, "X", X)
        for name, values in arrays.items():
            write_array(grp, name, np.asarray(values))
        grp.attrs.update(_jsonable(attrs))
        deltas = self.deltas[: max(t - 1, 0)] + ([float(attrs["delta"])] if "delta" in attrs else [])
        self.group.attrs.update({"deltas": deltas, "completed": t})

    def finish(self, status: str) -> None:
        self.group.attrs["status"] = status


def _jsonable(attrs: dict) -> dict:
    out = {}
    for key, value in attrs.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


def write_output_zarr(path, X: np.ndarray, attrs: dict | None = None) -> None:
    """Write X as a Zarr array at ``path`` without ever leaving a half-written one.

    The array is written under a temporary sibling name and renamed into
    place; an existing output is replaced only once the new one is complete.
    """

    def write(tmp: Path) -> None:
        arr = zarr.create_array(str(tmp), shape=X.shape, dtype=X.dtype, chunks=_row_chunks(*X.shape))
        arr[...] = X
        if attrs:
            arr.attrs.update(_jsonable(attrs))

    _write_then_rename(Path(path), write)


def write_dask_zarr(path, X, client, attrs: dict | None = None) -> None:
    """Compute the dask array X on ``client`` straight into a Zarr array at ``path``, chunk by chunk.

    Each task writes its own row chunk (Zarr chunks = X's row chunks, whole
    rows), so no process ever holds all of X; atomic as :func:`write_output_zarr`.
    """
    import dask.array as da

    def write(tmp: Path) -> None:
        rows = max(X.chunks[0])
        X2 = X.rechunk({0: rows, 1: -1})  # one task per Zarr chunk: no two tasks write the same chunk
        arr = zarr.create_array(str(tmp), shape=X2.shape, dtype=X2.dtype, chunks=(rows, X2.shape[1]))
        if attrs:
            arr.attrs.update(_jsonable(attrs))
        client.compute(da.store(X2, arr, lock=False, compute=False)).result()

    _write_then_rename(Path(path), write)


def _write_then_rename(path: Path, write) -> None:
    """``write(tmp)`` to a temporary sibling of ``path``, then rename it into place (replacing ``path``)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        write(tmp)
        if path.exists():
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# -- reliability: one run per store at a time ---------------------------------------------------------


class StoreLocked(FileExistsError):
    """Another run holds the checkpoint store (its lock file exists and its owner may be alive)."""


def lock_path(path) -> Path:
    """The lock file of a checkpoint store: a sibling ``<store>.lock``."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def _pid_alive(pid: int) -> bool:
    """Whether a local process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class StoreLock:
    """An exclusive lock on a checkpoint store, held for the whole run.

    The lock is a file created with ``O_CREAT | O_EXCL`` holding the owner's
    pid, host and a random token.  A lock left by a dead process on this host
    (a run killed with SIGKILL) is stale and is taken over; a lock held by a
    live process, or by any process on another host, is refused with
    :class:`StoreLocked` naming the store.  Released (only if still ours) on exit.
    """

    def __init__(self, path):
        self.store = str(path)
        self.file = lock_path(path)
        self.token = uuid.uuid4().hex

    def _create(self) -> bool:
        import json
        import socket
        import time

        try:
            fd = os.open(self.file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as fh:
            json.dump({"pid": os.getpid(), "host": socket.gethostname(), "token": self.token,
                       "since": time.strftime("%Y-%m-%dT%H:%M:%S")}, fh)
        return True

    def owner(self) -> dict:
        import json

        try:
            return json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}

    def _stale(self, owner: dict) -> bool:
        import socket

        pid = owner.get("pid")
        return owner.get("host") == socket.gethostname() and isinstance(pid, int) and not _pid_alive(pid)

    def acquire(self) -> StoreLock:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            if self._create():
                return self
            owner = self.owner()
            if not self._stale(owner):
                if not self.file.exists():  # released meanwhile: try again
                    continue
                raise StoreLocked(
                    f"checkpoint {self.store!r} is in use by another run (pid {owner.get('pid')} on host "
                    f"{owner.get('host')!r} since {owner.get('since')}); wait for it to finish, or delete "
                    f"{str(self.file)!r} if that run is dead"
                )
            self.file.unlink(missing_ok=True)  # stale: its owner died without releasing it
        raise StoreLocked(f"checkpoint {self.store!r}: could not take the lock {str(self.file)!r}")

    def release(self) -> None:
        if self.owner().get("token") == self.token:
            self.file.unlink(missing_ok=True)

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def locked_checkpoint(func):
    """Decorator: run ``func`` holding :class:`StoreLock` on its ``checkpoint`` argument (when not None)."""
    import functools
    import inspect

    signature = inspect.signature(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        checkpoint = signature.bind(*args, **kwargs).arguments.get("checkpoint")
        if checkpoint is None:
            return func(*args, **kwargs)
        with StoreLock(checkpoint):
            return func(*args, **kwargs)

    return wrapper
