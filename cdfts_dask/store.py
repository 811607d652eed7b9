"""Zarr layout of a CDF-TS run: checkpoints, verified resume, the run lock, and array output.

Layout of a checkpoint store (a Zarr v3 group), ``format_version`` 3::

    attrs: format ("cdfts-dask"), format_version (3), params (lam, estimator, k, dtype,
           delta, max_iter, feature_names: the input's column names or None),
           fingerprint (SHA-256 of the input), shape,
           completed (index of the last complete iteration), deltas (Delta of
           iterations 1..completed), status ("running", "converged", "max_iter"),
           result_iteration (once a run finished: the iteration it returned, <= completed),
           run (a random identifier of the store, made with it; stores written since 2026-11-28),
           attributes_digest (SHA-256 of all the other root attributes; format_version >= 3)
    iterations/00000/X          the min-max normalised input
    iterations/00000 attrs:     lo, hi (column range of the raw input; format_version >= 2)
    iterations/<t>/X            positions after iteration t (normalised)
    iterations/<t>/counts       epsilon estimator: c(z) of iteration t
    iterations/<t>/radius       k-NN estimator: lam_k(z) (units of m)
    iterations/<t> attrs:       digests ({array name: "sha256:<hex>"}), m, lo, hi
                                (range used to normalise), delta, seconds,
                                iteration (t) and run (the root's), where the root has a run,
                                attributes_digest (SHA-256 of the others; format_version >= 3)

Commit. Iteration t's arrays are written first, then its attributes with the
SHA-256 digest of every array (dtype, shape and C-order bytes) and of the
attributes themselves, then the root attribute ``completed = t`` (every root
update rewrites the root's ``attributes_digest`` in the same write). Zarr
writes each ``zarr.json`` atomically (temporary file, then rename), so
``completed`` only ever names an iteration whose arrays and digests were
fully written. A new store is built (with iteration 0) under a temporary
sibling name and renamed into place, so a run killed while creating it
leaves no half-made store.

Resume (:meth:`Checkpoint.open_for_resume`). The store must have this
format, the same input fingerprint and the same trajectory parameters.
``completed`` must be an integer. The root attributes are verified against
their digest (an edited or damaged one is refused: :class:`StoreDamaged`).
The iteration ``completed`` names is verified against its digests (its
attributes' too), and it must say that it is that iteration of this store's
run (an iteration folder moved or copied in from another store is refused as
damaged) (a missing chunk reads as the fill value and a truncated
chunk fails to decode: both fail the check); if it is damaged the newest
intact earlier iteration is used instead, with a :class:`CheckpointWarning`,
and everything after it is discarded; if none is intact the store is refused
(:class:`StoreDamaged`). Iterations beyond ``completed`` are half-written
and discarded. A store holding no complete iteration (killed while being
created by an older version) is started again.

Later versions add fields as new attributes; ``FORMAT_VERSION`` is raised
when a reader must know about them.  Stores of ``format = "cdfts-dask/1"``
(no digests) cannot be verified and are refused; stores of format version 2
(array digests, no attribute digests) are read with their arrays verified.

A store whose ``status`` is in :data:`COMPLETE_STATUSES` is a fitted model
(:func:`cdfts_dask.model.load`): iteration t's references are the positions
of iteration t - 1, with iteration t's statistics, m, lo and hi; iteration 0
keeps ``lo``, ``hi``, the raw input's column range.  A resumed run marks the
store ``running`` (with its own ``delta`` and ``max_iter``) before it computes
anything, so a store whose resume was interrupted is no model until resumed
again; a finished run records ``result_iteration``, the iteration it returned
(fewer than ``completed`` when it was resumed with a smaller ``max_iter`` or a
larger ``delta``), and that is the model's last iteration.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import warnings
from pathlib import Path

import numpy as np
import zarr

from ._validation import first_difference, shown_names
from .paths import (
    STORE_FORMAT,
    checkpoint_state,
    consolidated_group_above,
    lock_path,
    real,
    replaced_atomically,
    write_errors_named,
)

#: 2: per-iteration SHA-256 digests, and iteration 0 keeps the raw input's column range (a model);
#: 3: the root's and every iteration's attributes carry the SHA-256 of the others (``attributes_digest``)
FORMAT_VERSION = 3
#: format versions this one reads (2: the arrays are verified, not the attributes)
READABLE_VERSIONS = (2, 3)
#: ``status`` of a run that finished (converged, or stopped at max_iter)
COMPLETE_STATUSES = ("converged", "max_iter")
#: parameters that change the trajectory; a store made with others is refused
TRAJECTORY_PARAMS = ("lam", "estimator", "k", "dtype")


class StoreMismatch(ValueError):
    """A checkpoint store was made for other parameters or other input, or is not a store of this format."""


def _check_same_draw(path, stored: dict | None, this: dict | None) -> None:
    """Refuse a resume whose sampled draw is not the store's (or a sampled resume of an exact fit, or the
    reverse), naming the difference; the fingerprint of the drawn rows would only say "other data"."""
    if not stored and not this:
        return
    if not stored or not this:
        made, runs = ("an exact fit", "a sampled one") if this else ("a sampled fit", "an exact one")
        raise StoreMismatch(f"checkpoint {path!r} was made by {made}, this run is {runs} (n_references)")
    for key in ("rows", "n_references", "random_state"):
        if stored.get(key) != this.get(key):
            raise StoreMismatch(
                f"checkpoint {path!r} was made by a sampled fit with {key}={stored.get(key)!r}, this run has "
                f"{key}={this.get(key)!r}"
            )
    if this.get("random_state") is None:
        raise StoreMismatch(
            f"checkpoint {path!r} was made by a sampled fit without an integer random_state, so no later run "
            "draws the same rows: pass an integer random_state (--random-state) to fit a store that can be "
            "resumed"
        )


class StoreDamaged(ValueError):
    """A checkpoint store whose data fail verification and cannot be resumed."""


class CheckpointWarning(UserWarning):
    """A resume had to fall back to an earlier iteration (the newer one was damaged)."""


def fingerprint(X: np.ndarray) -> str:
    """SHA-256 of the input's shape and float64 bytes."""
    h = hashlib.sha256(repr(tuple(X.shape)).encode())
    h.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    return h.hexdigest()


def _digest_start(dtype, shape) -> hashlib._Hash:
    return hashlib.sha256(f"{np.dtype(dtype).str}{tuple(int(s) for s in shape)}".encode())


def array_digest(values: np.ndarray) -> str:
    """``sha256:<hex>`` of an array's dtype, shape and C-order bytes."""
    h = _digest_start(values.dtype, values.shape)
    h.update(np.ascontiguousarray(values).tobytes())
    return "sha256:" + h.hexdigest()


def attributes_digest(attrs: dict) -> str:
    """``sha256:<hex>`` of a node's attributes other than ``attributes_digest`` itself, as canonical JSON
    (sorted keys; floats as Python writes them, which read back exactly)."""
    others = {key: value for key, value in attrs.items() if key != "attributes_digest"}
    text = json.dumps(jsonable(others), sort_keys=True, separators=(",", ":"), allow_nan=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def with_attributes_digest(attrs: dict) -> dict:
    """``attrs`` as plain JSON values, with their :func:`attributes_digest` added."""
    plain = jsonable(attrs)
    return {**plain, "attributes_digest": attributes_digest(plain)}  # a stale digest in attrs is replaced


def attributes_problem(attrs: dict, what: str, version) -> str | None:
    """None if a node's attributes match their stored digest, else what is wrong, naming ``what``
    (``"its attributes"``, ``"iteration 3's attributes"``).  A store of format ``version`` 2 carries
    none; one that carries a digest is checked whatever version it names (a version 3 store edited to
    say 2 is still checked)."""
    if "attributes_digest" not in attrs:
        return f"{what} carry no checksum" if isinstance(version, int) and version >= 3 else None
    if attrs["attributes_digest"] != attributes_digest(attrs):
        return f"{what} do not match their checksum (edited or damaged)"
    return None


def check_root(attrs: dict, path) -> None:
    """Refuse (:class:`StoreMismatch`) a store of a format version this one cannot read, and
    (:class:`StoreDamaged`) one whose root attributes fail their checksum (:func:`attributes_problem`)."""
    version = attrs.get("format_version")
    if attrs.get("format") != STORE_FORMAT or version not in READABLE_VERSIONS:
        raise StoreMismatch(
            f"checkpoint {str(path)!r} is not a cdfts-dask store of format version {FORMAT_VERSION} "
            f"(format={attrs.get('format')!r}, format_version={version!r}); "
            "stores of earlier versions carry no checksums and cannot be verified: start a new one"
        )
    problem = attributes_problem(attrs, "its root attributes", version)
    if problem is not None:
        raise StoreDamaged(f"checkpoint {str(path)!r} is damaged: {problem}; remove it and start again")


def stored_digest(arr: zarr.Array) -> str:
    """:func:`array_digest` of a stored array, read one chunk-row at a time (memory: one chunk row)."""
    h = _digest_start(arr.dtype, arr.shape)
    step = max(1, int(arr.chunks[0])) if arr.ndim else 1
    for start in range(0, int(arr.shape[0]) if arr.ndim else 1, step):
        h.update(np.ascontiguousarray(arr[start : start + step] if arr.ndim else arr[...]).tobytes())
    return "sha256:" + h.hexdigest()


def statistics_name(estimator: str) -> str:
    """The array an iteration keeps beside ``X``: ``counts`` (epsilon estimator) or ``radius`` (k-NN)."""
    return "counts" if estimator == "epsilon" else "radius"


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
    def create(cls, path, params: dict, fp: str, X0: np.ndarray, input_range: tuple) -> Checkpoint:
        """Build a new store holding the normalised input as iteration 0 and ``input_range``, the raw
        input's column minima and maxima ``(lo, hi)`` (a model replays new points from them), then
        rename it into place.

        ``path`` must be absent, an empty folder, or an empty group (:func:`paths.checkpoint_state`).
        A symbolic link is followed: the store is made where it points (where :func:`lock_path` locks),
        and the link stays.
        """
        path = real(path)
        with replaced_atomically(path, "checkpoint") as tmp:
            ckpt = cls(tmp)
            ckpt.update_root(
                {
                    "format": STORE_FORMAT,
                    "format_version": FORMAT_VERSION,
                    "params": params,
                    "fingerprint": fp,
                    "shape": list(X0.shape),
                    "completed": -1,
                    "deltas": [],
                    "status": "running",
                    "run": uuid.uuid4().hex,
                }
            )
            ckpt._write_iteration(0, X0, {}, {"lo": input_range[0], "hi": input_range[1]})
            _remove_empty_store(path)
        return cls(path)

    @staticmethod
    def exists(path) -> bool:
        """Whether ``path`` holds a cdfts-dask store (of any version) that committed an iteration."""
        return checkpoint_state(path) == "run"

    @classmethod
    def open_for_resume(cls, path, params: dict, fp: str, shape: tuple[int, int]) -> Checkpoint:
        """Reopen and verify a store for resuming (one with a committed iteration: :meth:`exists`).

        Refuses (:class:`StoreMismatch`) a store of another format or made with
        other parameters or input, and (:class:`StoreDamaged`) one whose
        iteration 0 fails verification.  Verifies every complete iteration and
        falls back, with a warning, to the one before the first damaged one.
        """
        try:
            ckpt = cls(path)
            attrs = dict(ckpt.group.attrs)
        except Exception as exc:  # not a Zarr group at all
            raise StoreMismatch(f"checkpoint {path!r} is not a cdfts-dask store: {exc}") from None
        check_root(attrs, path)
        stored = attrs.get("params", {})
        if "sample" in stored:  # stores written before the draw was kept: the fingerprint decides
            _check_same_draw(path, stored["sample"], params.get("sample"))
        if attrs.get("fingerprint") != fp:
            stored_shape = tuple(attrs.get("shape") or ())
            how = (
                f"{' x '.join(map(str, stored_shape))} points there, {' x '.join(map(str, shape))} here"
                if stored_shape != tuple(shape)
                else "other values or row order"
            )
            raise StoreMismatch(
                f"checkpoint {path!r} was made from other input data (fingerprint differs: {how})"
            )
        for key in TRAJECTORY_PARAMS:
            if stored.get(key) != params.get(key):
                of_sample = (
                    f" (the k of a sampled fit's {params['sample']['n_references']} references, from k="
                    f"{params['sample']['k']!r} given for {params['sample']['rows']} rows)"
                    if key == "k" and params.get("sample")
                    else ""
                )
                raise StoreMismatch(
                    f"checkpoint {path!r} was made with {key}={stored.get(key)!r}, "
                    f"this run has {key}={params.get(key)!r}{of_sample}"
                )
        names, stored_names = params.get("feature_names"), stored.get("feature_names")
        if names is not None and stored_names is not None and list(names) != list(stored_names):
            raise StoreMismatch(
                f"checkpoint {path!r} was fitted on the columns {shown_names(stored_names)}, this run's "
                f"X has the columns {shown_names(names)} ({first_difference(names, stored_names)}); resume "
                "with the fit's column names (or start a new store)"
            )
        done = attrs.get("completed")
        if isinstance(done, bool) or not isinstance(done, int):
            raise StoreDamaged(
                f"checkpoint {path!r} is damaged: its 'completed' attribute is {done!r}, not an iteration "
                "number; remove the store and start again"
            )
        ckpt.restore_last_intact(done)
        return ckpt

    def verify(self, t: int) -> str | None:
        """None if iteration t's arrays match the digests stored at commit, else what is wrong."""
        return verify_iteration(self.group, t)

    def restore_last_intact(self, done: int) -> None:
        """Make the last iteration t <= ``done`` such that iterations 0..t are all intact the last complete
        one (a later one is then computed again, so the store stays a whole model); refuse if iteration 0
        is not intact.  Every stored iteration is read back and verified, before any work."""
        problem = None
        for t in range(0, done + 1):
            problem = self.verify(t)
            if problem is not None:
                break
        if problem is None:
            self.discard_incomplete()
            return
        if t == 0:
            raise StoreDamaged(
                f"checkpoint {self.path!r} is damaged: {problem}, the normalised input every iteration "
                "starts from; remove it and start again"
            )
        t -= 1
        warnings.warn(
            f"checkpoint {self.path!r}: {problem}; resuming from iteration {t}, the last before it (those "
            "after it are computed again)",
            CheckpointWarning,
            stacklevel=3,
        )
        deltas = [float(self.iteration_attrs(s)["delta"]) for s in range(1, t + 1)]
        # "running" in the same write: killed before the resume reopens it, the store reads as unfinished
        self.update_root({"completed": t, "deltas": deltas, "status": "running"})
        self.discard_incomplete()

    def stored_stop(self, delta: float, max_iter: int) -> int | None:
        """The iteration at which a run with ``delta`` / ``max_iter`` stops, if this store already holds it.

        That is the first t with Delta_t <= delta, or ``max_iter``, whichever
        comes first; None when it lies beyond ``completed`` (the run goes
        on).  Every iteration up to ``completed`` was verified when the store was opened
        (:meth:`open_for_resume`); a :class:`CheckpointWarning` says that the later ones are not used.
        """
        done, deltas = self.completed, self.deltas
        stop = next((t for t, d in enumerate(deltas[:done], start=1) if d <= delta), None)
        stop = max_iter if stop is None or stop > max_iter else stop
        if stop > done:
            return None
        if stop < done:
            why = f"max_iter={max_iter}" if stop == max_iter else f"Delta <= delta={delta} there"
            warnings.warn(
                f"checkpoint {self.path!r} holds {done} iterations; this run stops at iteration {stop} "
                f"({why}): returning iteration {stop}, the later ones are kept but not used",
                CheckpointWarning,
                stacklevel=3,
            )
        return stop

    def discard_incomplete(self) -> None:
        """Delete iterations written after the last complete one (a run killed mid-write): only folders
        named as iterations are (``00007``), and never through a symbolic link, which could lead out of
        the store (refused: :class:`StoreDamaged`)."""
        done = self.completed
        if "iterations" not in self.group:
            return
        folder = Path(self.path) / "iterations"
        its = self.group["iterations"]
        # the folder's names, not Zarr's members: listing those reads each one's zarr.json, which a damaged
        # iteration may not have readable
        named = [p for p in folder.iterdir() if p.name.isdigit() and p.name.isascii()]
        later = [p.name for p in named if (p.is_dir() or p.is_symlink()) and int(p.name) > done]
        for link in [folder, *(folder / name for name in later)]:
            if link.is_symlink():
                raise StoreDamaged(
                    f"checkpoint {self.path!r}: {str(link)!r} is a symbolic link; a store's own folders are "
                    "never links (deleting through it could delete outside the store): remove the store"
                )
        for name in later:
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
        """Write iteration t's arrays, then its attributes and digests, then mark it complete (atomically).
        A failed write (a full disk) names the store: ``checkpoint: cannot write '<store>': <reason>``."""
        with write_errors_named("checkpoint", self.path):
            self._write_iteration(t, X, arrays, attrs)

    def _write_iteration(self, t: int, X: np.ndarray, arrays: dict, attrs: dict) -> None:
        grp = self.group.require_group(iteration_key(t))
        run = self.group.attrs.get("run")
        attrs = attrs if run is None else {**attrs, "iteration": t, "run": run}
        arrays = {"X": X, **{name: np.asarray(values) for name, values in arrays.items()}}
        for name, values in arrays.items():
            write_array(grp, name, values)
        digests = {name: array_digest(values) for name, values in arrays.items()}
        grp.attrs.put(with_attributes_digest({**attrs, "digests": digests}))  # one write, as update_root
        deltas = self.deltas[: max(t - 1, 0)] + ([float(attrs["delta"])] if "delta" in attrs else [])
        self.update_root({"deltas": deltas, "completed": t})

    def update_root(self, changes: dict) -> None:
        """Change root attributes, rewriting their ``attributes_digest`` in the same (atomic) write.

        ``attrs.put``: one write of ``zarr.json`` (Zarr's ``attrs.update`` writes it once per key, so a
        run killed between two keys left a file whose digest named other values).  A failed write names
        the store (:func:`~cdfts_dask.paths.write_errors_named`), not Zarr's temporary file in it."""
        with write_errors_named("checkpoint", self.path):
            self.group.attrs.put(with_attributes_digest({**dict(self.group.attrs), **changes}))

    def reopen(self, params: dict) -> None:
        """A resumed run: ``running`` again, with this run's parameters (``delta``, ``max_iter``), until
        :meth:`finish` (a resume killed before it leaves no store that reads as a finished model).  The
        fit's column names are kept when this run's X has none (a NumPy array, a ``.npy``): the model
        that ``cdfts apply`` reads still matches a CSV's columns by name."""
        if params.get("feature_names") is None:
            stored = dict(self.group.attrs).get("params", {})
            params = {**params, "feature_names": stored.get("feature_names")}
        self.update_root({"status": "running", "params": params})

    def finish(self, status: str, result_iteration: int) -> None:
        """The run finished (``status`` in :data:`COMPLETE_STATUSES`), returning ``result_iteration``."""
        self.update_root({"status": status, "result_iteration": int(result_iteration)})


def result_iteration(attrs: dict, path) -> int:
    """The iteration the last finished run on the store at ``path`` (root attributes ``attrs``) returned:
    ``result_iteration``, or ``completed`` for stores written before it was recorded.  Refused
    (:class:`StoreDamaged`) unless an iteration number in 1..completed."""
    done = attrs.get("completed")
    t = attrs.get("result_iteration", done)
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (t, done)) and 1 <= t <= done
    if not ok:
        raise StoreDamaged(
            f"checkpoint {str(path)!r} is damaged: its 'result_iteration' ({t!r}) is not an iteration number "
            f"in 1..completed ({done!r}); remove the store and start again"
        )
    return t


def _remove_empty_store(path: Path) -> None:
    """Remove an empty folder or empty Zarr group (only ``zarr.json``) before a store takes its place."""
    state = checkpoint_state(path)
    if state == "absent":
        return
    if state != "empty":
        raise FileExistsError(f"checkpoint {str(path)!r} exists and is not empty; refusing to replace it")
    if {p.name for p in path.iterdir()} <= {"zarr.json"}:
        (path / "zarr.json").unlink(missing_ok=True)
        path.rmdir()
    else:  # a cdfts-dask store that committed nothing (checkpoint_state checked its format attribute)
        shutil.rmtree(path)


def jsonable(value):
    """``value`` with NumPy arrays and scalars (at any depth) as lists and Python numbers, tuples as lists:
    what a JSON attribute reads back as."""
    if isinstance(value, dict):
        return {str(key): jsonable(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Undecodable(Exception):
    """What was read of a store does not decode (garbled metadata, a truncated chunk): damage."""


def _read_in_storage(what: str, read, *args):
    """``read(*args)`` (open or read ``what`` of a store); a ``KeyError`` (missing) and an ``ImportError``
    (a codec this installation lacks: no damage) are passed on; a failure
    of the storage or of this machine (``OSError``, ``MemoryError``) says nothing of the data and is
    raised as an ``OSError`` that says so; anything else (a garbled ``zarr.json``, a chunk that fails to
    decode) is damage: :class:`_Undecodable`, naming ``what``."""
    try:
        return read(*args)
    except (KeyError, ImportError):  # missing; a codec this installation lacks (not damage)
        raise
    except (OSError, MemoryError) as exc:
        raise OSError(
            f"{what} could not be read ({type(exc).__name__}: {str(exc)[:200]}); the store is left as it "
            "is: try again when the storage answers"
        ) from exc
    except Exception as exc:
        raise _Undecodable(f"{what} cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from exc


def verify_iteration(group, t: int) -> str | None:
    """None if iteration t's arrays in the run ``group`` match the digests stored at commit, else what
    is wrong (missing iteration, no checksums, an unreadable chunk, a changed or missing chunk).  A read
    that fails in the storage (``OSError``, ``MemoryError``) says nothing of the data: it is raised, as
    an ``OSError``, so that no caller takes the iteration for damaged (and a resume deletes nothing)."""
    key = iteration_key(t)
    try:
        grp = _read_in_storage(key, group.__getitem__, key)
    except KeyError:
        return f"iteration {t} is missing"
    except _Undecodable as exc:
        return str(exc)
    attrs, root = dict(grp.attrs), dict(group.attrs)
    problem = attributes_problem(attrs, f"iteration {t}'s attributes", root.get("format_version"))
    if problem is not None:
        return problem
    if "run" in root and (attrs.get("run"), attrs.get("iteration")) != (root["run"], t):
        whose = "this store's run" if attrs.get("run") == root["run"] else "another run"
        return f"{key} holds iteration {attrs.get('iteration')!r} of {whose}, not iteration {t} of its own"
    digests = attrs.get("digests")
    stats = statistics_name(dict(root.get("params") or {}).get("estimator"))
    if not isinstance(digests, dict) or "X" not in digests or (t >= 1 and stats not in digests):
        return f"iteration {t} has no checksums"
    points = root.get("shape")  # the run's (n, d), under the root's checksum
    for name, expected in digests.items():
        try:
            arr = _read_in_storage(f"{key}/{name}", grp.__getitem__, name)
            want = None if points is None else tuple(points) if name == "X" else tuple(points[:1])
            if want is not None and tuple(arr.shape) != want:  # before reading: the shape bounds the work
                return f"{key}/{name} has the shape {tuple(arr.shape)}, not the run's {want}"
            got = _read_in_storage(f"{key}/{name}", stored_digest, arr)
        except KeyError:
            return f"{key}/{name} is missing"
        except _Undecodable as exc:
            return str(exc)
        if got != expected:
            return f"{key}/{name} does not match its checksum (a chunk is missing or changed)"
    return None


#: outputs store every chunk, even one of nothing but the fill value (Zarr's default leaves those out):
#: read back, a missing chunk then always means a lost one (see ``inputs.check_zarr_chunks``)
EVERY_CHUNK = {"write_empty_chunks": True}


def _zarr_format_beside(path) -> int:
    """The Zarr format to write an output array at ``path`` in: 2 where its folder is a Zarr v2 group
    (it holds ``.zgroup``), so that the array is one of that group's members (a v3 array there is
    invisible to the group); 3 otherwise."""
    return 2 if (Path(path).parent / ".zgroup").is_file() else 3


def warn_if_consolidated_above(path) -> None:
    """Warn where an output array written at ``path`` is hidden from a Zarr group above it by that group's
    consolidated metadata (:func:`~cdfts_dask.paths.consolidated_group_above`; xarray writes it by
    default).  The group's metadata is left as it is: rewriting it is not this run's to do (zarr
    rewrites ``zarr.json`` in place, and a killed rewrite would lose the group's attributes); the
    warning gives the one call that lists the array."""
    top = consolidated_group_above(path)
    if top is not None:
        warnings.warn(
            f"output: {str(path)!r} is written, but the Zarr group {str(top)!r} has consolidated metadata, "
            f"which does not list it (opened through the group it is a KeyError): list it with "
            f"zarr.consolidate_metadata({str(top)!r}), or open the array by its own path",
            stacklevel=2,
        )


def write_output_zarr(path, X: np.ndarray, attrs: dict | None = None) -> None:
    """Write X as a Zarr array at ``path`` without ever leaving a half-written one.

    The array is written under a temporary sibling name and renamed into
    place; an existing output is replaced only once the new one is complete.  A failed write (a full
    disk) names the output: ``output: cannot write '<path>': <reason>``.
    """

    with replaced_atomically(path, "output") as tmp:
        arr = zarr.create_array(
            str(tmp),
            shape=X.shape,
            dtype=X.dtype,
            chunks=_row_chunks(*X.shape),
            config=EVERY_CHUNK,
            zarr_format=_zarr_format_beside(path),
        )
        arr[...] = X
        if attrs:
            arr.attrs.put(jsonable(attrs))
    warn_if_consolidated_above(path)


def write_dask_zarr(path, X, client, attrs: dict | None = None) -> None:
    """Compute the dask array X on ``client`` straight into a Zarr array at ``path``, chunk by chunk.

    Each task writes its own row chunk (Zarr chunks = X's row chunks, whole
    rows), so no process ever holds all of X; atomic as :func:`write_output_zarr`.
    """
    import dask.array as da

    rows = max(X.chunks[0])
    X2 = X.rechunk({0: rows, 1: -1})  # one task per Zarr chunk: no two tasks write the same chunk
    with replaced_atomically(path) as tmp:
        arr = zarr.create_array(
            str(tmp),
            shape=X2.shape,
            dtype=X2.dtype,
            chunks=(rows, X2.shape[1]),
            config=EVERY_CHUNK,
            zarr_format=_zarr_format_beside(path),
        )
        if attrs:
            arr.attrs.put(jsonable(attrs))
        client.compute(da.store(X2, arr, lock=False, compute=False)).result()
    warn_if_consolidated_above(path)


# -- one run per store at a time ---------------------------------------------------------------------


class StoreLocked(FileExistsError):
    """Another live run holds the checkpoint store's lock."""


class StoreLock:
    """An exclusive lock on a checkpoint store, held for the whole run.

    An OS lock (``flock``, through the ``filelock`` package) on
    ``<store>.lock``: the kernel grants it to one holder at a time and drops
    it when the holder exits, however it dies, so a lock left by a killed run
    is free again at once, and the content of the file (empty, garbage, a
    dead owner) never decides anything.  While held, the file names the
    owner (pid, host, start time) for the refusal message.  The file itself
    stays after release (removing it could let two runs lock two different
    files).  On network file systems ``flock`` must be supported across hosts
    (NFSv4 does); ``filelock`` warns and falls back to an existence lock where
    it is not.
    """

    def __init__(self, path):
        import filelock

        self.store = str(path)
        self.file = lock_path(path)
        self._lock = filelock.FileLock(str(self.file), blocking=False)

    def owner(self) -> dict:
        try:
            owner = json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}
        return owner if isinstance(owner, dict) else {}

    def acquire(self) -> StoreLock:
        import filelock

        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except PermissionError as exc:  # before any work: a run must write its store and its lock
            raise PermissionError(
                f"checkpoint {self.store!r}: cannot write its lock file {str(self.file)!r} ({exc.strerror}); "
                "a run writes its checkpoint store and the lock beside it: choose a checkpoint in a writable "
                "folder"
            ) from None
        except filelock.Timeout:
            self._refuse_as_locked()
        except OSError as exc:  # e.g. a symbolic link where the lock file goes (filelock never follows one)
            raise OSError(
                f"checkpoint {self.store!r}: cannot open its lock file {str(self.file)!r} ({exc.strerror}); "
                "it must be a plain file (or absent) beside the store"
            ) from None
        self._write_owner()
        return self

    def _refuse_as_locked(self):
        owner = self.owner()
        who = (
            f"pid {owner.get('pid')} on host {owner.get('host')!r} since {owner.get('since')}"
            if owner
            else "owner unknown"
        )
        raise StoreLocked(
            f"checkpoint {self.store!r} is in use by another run ({who}); wait for it to finish "
            f"(lock file {str(self.file)!r})"
        ) from None

    def _write_owner(self) -> None:
        import socket
        import time

        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self._rewrite(json.dumps(info))

    def _rewrite(self, text: str) -> None:
        """Replace the lock file's content, never through a symbolic link: one swapped in for the file
        (by anyone who may rename in its folder) would have this run truncate the file it points to.
        The owner record only informs a refusal message, so a file that cannot be opened so is left."""
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            return
        with os.fdopen(fd, "r+") as fh:
            fh.truncate()
            fh.write(text)

    def release(self) -> None:
        if self._lock.is_locked:
            self._rewrite("")  # still ours: clear the owner before letting go
            self._lock.release()

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
