"""Zarr layout of a CDF-TS run: checkpoints, resume, and array output.

Layout of a checkpoint store (a Zarr v3 group)::

    attrs: format, params (lam, estimator, k, dtype), fingerprint, shape,
           completed (index of the last complete iteration), deltas, status
    iterations/00000/X          the min-max normalised input
    iterations/<t>/X            positions after iteration t (normalised)
    iterations/<t>/counts       epsilon estimator: c(z) of iteration t
    iterations/<t>/radius       k-NN estimator: lam_k(z) (units of m)
    iterations/<t> attrs:       m, lo, hi (range used to normalise), delta, seconds

An iteration is *complete* once the root attribute ``completed`` names it:
that attribute is written last, and Zarr writes it atomically (temporary
file, then rename).  Anything beyond ``completed`` is a half-written
iteration and is discarded on resume.
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
    def create(cls, path, params: dict, fp: str, X0: np.ndarray) -> Checkpoint:
        """Start a new store holding the normalised input as iteration 0."""
        ckpt = cls(path)
        ckpt.group.attrs.update(
            {
                "format": FORMAT,
                "params": params,
                "fingerprint": fp,
                "shape": list(X0.shape),
                "completed": -1,
                "deltas": [],
                "status": "running",
            }
        )
        ckpt.write_iteration(0, X0, {}, {})
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
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        arr = zarr.create_array(str(tmp), shape=X.shape, dtype=X.dtype, chunks=_row_chunks(*X.shape))
        arr[...] = X
        if attrs:
            arr.attrs.update(_jsonable(attrs))
        if path.exists():
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
