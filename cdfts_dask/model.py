"""A fitted CDF-TS run as a model: replay its T iterations on any points (DESIGN.md section 5).

A run on fit points F (n_f x d) keeps, for the initial normalisation, the
column range ``lo_0, hi_0`` of the raw F and, for every iteration t = 1..T,
the references ``P_t`` (F's normalised positions at the start of iteration
t), ``m_t``, each reference's radius ``lam_t(z)`` and ``q_t(z)``, and the
end-of-iteration range ``lo_t, hi_t``.  :meth:`CDFTSModel.transform_block`
replays the run on points Y, every row independently::

    y <- (y - lo_0) / span(lo_0, hi_0)                  # constant column -> y - lo_0
    for t in 1..T:
        A(y) = mean_{z in P_t} rho_t(z, y);  B(y) = mean_{z in P_t} rho_t(z, y) z
        y <- mean(P_t) + y A(y) - B(y)
        y <- (y - lo_t) / span(lo_t, hi_t)

with ``rho_t`` exactly the fit's (DScale around each reference z with its own
radius, m_t, lambda; rho = 1 where s = 0).  A fit point therefore maps to its
fitted output (it meets itself at s = 0 and sums its terms in the fit's order),
and points beyond the fit data's range may map outside [0, 1].  Work is
O(rows n_f d T) per block; no n x n_f matrix is formed (the engine's shift
kernel tiles the references).

Rows are independent, so the transform of a dask array (or a Zarr store) is
a ``map_blocks`` over row chunks with the model as one shared graph node:
no worker ever holds all of Y.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import store
from ._validation import check_points
from .engine import device_module, plan
from .normalise import apply_range

#: the device whose task bodies replay a model (its ``prepare``, ``column_mean`` and
#: ``shift_targets``: the engine's own shift kernel with references != targets)
DEVICE = "cpu"
#: rows per task when a NumPy array is transformed with the threaded scheduler
NUMPY_ROW_CHUNK = 32768


@dataclass(frozen=True)
class ModelIteration:
    """What iteration t of a fit leaves for replaying it.

    ``counts`` (epsilon estimator: c(z)) or ``radius`` (k-NN: lam_k(z) in units of m), the other None.
    """

    references: np.ndarray  # P_t (n_f x d), in the fit's working dtype
    m: float
    lo: np.ndarray  # column minima of the shifted fit points (end-of-iteration normalisation)
    hi: np.ndarray
    counts: np.ndarray | None = None
    radius: np.ndarray | None = None


@dataclass
class CDFTSModel:
    """A completed CDF-TS run: the input range and every iteration's references and statistics.

    Build it with :func:`from_steps` (a fit in memory) or :func:`load` (a
    checkpoint store of a completed run).  Size: ``T x n_f x (d + 1)`` values.
    """

    lo: np.ndarray  # lo_0: column minima of the raw fit points
    hi: np.ndarray  # hi_0
    iterations: list[ModelIteration]
    lam: float
    estimator: str
    k: int | None
    dtype: str = "float64"
    plans: list[plan.ShiftPlan | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.lo = np.asarray(self.lo, dtype=np.float64)
        self.hi = np.asarray(self.hi, dtype=np.float64)
        self.plans = [self._plan(it) for it in self.iterations]

    def _plan(self, it: ModelIteration) -> plan.ShiftPlan | None:
        """The fit's shift plan of iteration t (the engine's :mod:`~cdfts_dask.engine.plan`)."""
        mean = device_module(DEVICE).column_mean(it.references)
        if self.estimator == "epsilon":
            return plan.epsilon_plan(it.m, self.lam, it.counts, mean, self.dtype)
        return plan.knn_plan(it.m, self.k, it.radius, mean, self.dtype)

    @property
    def n_features(self) -> int:
        return int(self.lo.shape[0])

    @property
    def n_references(self) -> int:
        return int(self.iterations[0].references.shape[0]) if self.iterations else 0

    @property
    def n_iter(self) -> int:
        return len(self.iterations)

    def transform_block(self, Y) -> np.ndarray:
        """Replay the run on the rows of Y (rows x d, finite); returns rows x d in the fit's dtype.

        Each iteration is the engine's shift body (``shift_targets``) with the
        references P_t and Y's current positions as targets, then the fit's
        end-of-iteration normalisation; all references coincided (m_t = 0)
        means nothing moved in the fit, nor here.
        """
        dev = device_module(DEVICE)
        y = apply_range(np.asarray(Y, dtype=np.float64), self.lo, self.hi)
        for it, shift_plan in zip(self.iterations, self.plans, strict=True):
            shifted = dev.shift_targets(it.references, dev.prepare(y, self.dtype), shift_plan)
            y = apply_range(shifted, it.lo, it.hi).astype(self.dtype, copy=False)
        return np.asarray(y, dtype=self.dtype)


def iteration_of(references, statistics: dict, m: float, lo, hi, lam: float, k, dtype: str) -> ModelIteration:
    """One :class:`ModelIteration` from what the fit measured in that iteration (``{"counts": ...}``
    or ``{"radius": ...}``)."""
    refs = device_module(DEVICE).prepare(np.asarray(references), dtype)
    return ModelIteration(
        refs, float(m), np.asarray(lo, np.float64), np.asarray(hi, np.float64),
        counts=_array(statistics.get("counts")), radius=_array(statistics.get("radius")),
    )  # fmt: skip


def _array(values):
    return None if values is None else np.asarray(values)


# -- reading a completed run's checkpoint store -----------------------------------------------------------


def load(path, n_iter: int | None = None) -> CDFTSModel:
    """The model of the completed run stored at ``path`` (a ``--checkpoint`` / ``checkpoint=`` store):
    its first ``n_iter`` iterations (all when None).  Every iteration read is verified against the
    checksums stored at commit.

    Raises ``ValueError`` naming the path when it is not a cdfts-dask run, the
    run did not complete, or the store predates model support.
    """
    import zarr

    path = str(path)
    if not os.path.exists(path):
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store (nothing there)")
    try:
        group = zarr.open_group(path, mode="r")
        attrs = dict(group.attrs)
    except Exception as exc:
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store: {exc}") from None
    if attrs.get("format") != store.FORMAT:
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store (format={attrs.get('format')!r})")
    status = attrs.get("status")
    if status not in store.COMPLETE_STATUSES:
        raise ValueError(
            f"model: the run stored at {path!r} is not complete (status={status!r}, "
            f"{attrs.get('completed', -1)} iteration(s) done); resume it first (cdfts transform --resume)"
        )
    params = attrs.get("params", {})
    first = dict(group[store.iteration_key(0)].attrs)
    if "lo" not in first or "hi" not in first:
        raise ValueError(
            f"model: the run stored at {path!r} was written before stores kept the input range "
            f"(store format version {attrs.get('format_version', 1)}); run it again to use it as a model"
        )
    lam, estimator, k, dtype = params["lam"], params["estimator"], params.get("k"), params.get("dtype")
    stats_name = "counts" if estimator == "epsilon" else "radius"
    iterations = []
    last = int(attrs["completed"]) if n_iter is None else min(int(n_iter), int(attrs["completed"]))
    for t in range(0, last + 1):
        problem = store.verify_iteration(group, t)
        if problem is not None:
            raise ValueError(f"model: the run stored at {path!r} is damaged: {problem}")
    for t in range(1, last + 1):
        prev, cur = group[store.iteration_key(t - 1)], group[store.iteration_key(t)]
        it_attrs = dict(cur.attrs)
        iterations.append(
            iteration_of(
                prev["X"][...], {stats_name: cur[stats_name][...]}, it_attrs["m"], it_attrs["lo"],
                it_attrs["hi"], lam, k, dtype or "float64",
            )
        )  # fmt: skip
    return CDFTSModel(first["lo"], first["hi"], iterations, lam, estimator, k, dtype or "float64")


# -- transforming arrays of any kind ----------------------------------------------------------------------


def _block(block: np.ndarray, model: CDFTSModel, name: str, block_info=None) -> np.ndarray:
    """Validate one row chunk (finite, numeric) and replay the model on it."""
    from .lazy import _check_block

    return model.transform_block(_check_block(block, name, block_info))


def transform_dask(model: CDFTSModel, Y, name: str = "X"):
    """Lazy transform of a dask array (n x d): one task per row chunk, the model one shared graph node.

    Columns are gathered into one chunk per row block (a row needs all its
    coordinates); every block is validated (NaN / inf, named by global row)
    and transformed independently, so no task holds more than its row chunk.
    """
    import dask

    check_features(model, Y.shape, name)
    Y = Y.rechunk({1: -1})
    shared = dask.delayed(model, name=f"cdfts-model-{uuid.uuid4().hex}")
    token = f"cdfts-transform-{uuid.uuid4().hex}"
    meta = np.empty((0, model.n_features), dtype=model.dtype)
    return Y.map_blocks(_block, shared, name, dtype=meta.dtype, meta=meta, name=token)


def transform_numpy(model: CDFTSModel, Y, name: str = "X", row_chunk: int = NUMPY_ROW_CHUNK) -> np.ndarray:
    """Transform an in-memory array (validated: numeric, finite, the model's d) with the threaded
    scheduler over row chunks (the numba kernel releases the GIL)."""
    import dask.array as da

    Y = check_points(Y, name, min_rows=1)
    check_features(model, Y.shape, name)
    if Y.shape[0] <= row_chunk:
        return model.transform_block(Y)
    lazy = transform_dask(model, da.from_array(Y, chunks=(row_chunk, -1)))
    return lazy.compute(scheduler="threads")


def check_features(model: CDFTSModel, shape: tuple, name: str) -> None:
    """Y must be 2-D with the model's number of columns (d of the fit)."""
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-dimensional (n points x d attributes), got shape {tuple(shape)}")
    if shape[1] != model.n_features:
        raise ValueError(
            f"{name} has {shape[1]} features (columns), but the model was fitted on {model.n_features}"
        )


def transform_to_zarr(model: CDFTSModel, Y, output, client=None, n_workers: int | None = None):
    """Transform Y (dask array, Zarr array or path) into a new Zarr array at ``output``, chunk by chunk.

    Runs on ``client`` (or an embedded cluster); the result is written under a
    temporary sibling name and renamed into place once complete, so a failed
    run never leaves a half-written output.  Returns the output opened read-only.
    """
    import zarr

    from .dask_client import dask_client

    check_not_the_input(output, Y)
    lazy = transform_dask(model, as_dask(Y))
    with dask_client(client, n_workers) as c:
        store.write_dask_zarr(Path(output), lazy, c, {"model_iterations": model.n_iter})
    return zarr.open_array(str(output), mode="r")


def check_not_the_input(output, source, name: str = "X") -> None:
    """Refuse an ``output`` path that is the input itself (the input is never overwritten)."""
    from .inputs import is_path

    if output is not None and is_path(source) and Path(source).resolve() == Path(output).resolve():
        raise ValueError(f"output {str(output)!r} is the input {name}; choose another output path")


def as_dask(Y, name: str = "X"):
    """A dask array of a dask array, a Zarr array or a Zarr path (metadata checked, nothing read)."""
    import dask.array as da

    from .lazy import lazy_input

    if type(Y).__module__.startswith("zarr"):
        return da.from_zarr(Y)
    lazy = lazy_input(Y, name, min_rows=1)
    if lazy is None:
        raise TypeError(f"{name} must be a dask array, a Zarr array or a Zarr path, got {type(Y).__name__}")
    return lazy.array
