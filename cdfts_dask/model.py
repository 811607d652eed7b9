"""A fitted CDF-TS run as a model: replay its T iterations on any points.

A run on fit points F (n_f x d) keeps, for the initial normalisation, the
column range ``lo_0, hi_0`` of the raw F and, for every iteration t = 1..T,
the references ``P_t`` (F's normalised positions at the start of iteration
t), ``m_t``, each reference's radius ``lam_t(z)`` and ``q_t(z)``, and the
end-of-iteration range ``lo_t, hi_t``.  :meth:`CDFTSModel.transform_block`
replays the run on points Y, every row independently::

    y <- (y - lo_0) / span(lo_0, hi_0)                  # constant column -> 0
    for t in 1..T:
        A(y) = mean_{z in P_t} rho_t(z, y);  B(y) = mean_{z in P_t} rho_t(z, y) z
        y <- mean(P_t) + y A(y) - B(y)
        y <- (y - lo_t) / span(lo_t, hi_t)

with ``rho_t`` exactly the fit's (DScale around each reference z with its own
radius, m_t, lambda; rho = 1 where s = 0).  Points beyond the fit data's
range may map outside [0, 1].  Work is O(rows n_f d T) per block; no
n x n_f matrix is formed (the engine's shift kernel tiles the references).

A row equal to a fit point (a reference of iteration 1, after the initial
normalisation) has that point's rho at every iteration, so its replay is
that point's fitted output: :meth:`CDFTSModel.transform_block` returns the
stored output (``outputs``) for it and replays only the other rows.  This
is the algorithm's own answer, taken exactly: a replay sums in another
order than a dense (NumPy) fit, and under the k-NN estimator a point with
more than k duplicates has radius 0, where rho jumps at s = 0 (to about
``q / s``), so a replayed duplicate an ulp away from its references would
move by up to ``q`` where the fit kept it with them.

Rows are independent, so the transform of a dask array (or a Zarr store) is
a ``map_blocks`` over row chunks with the model as one shared graph node:
no worker ever holds all of Y.

The replay runs on a device of the engine's registry (``backend``: ``"cpu"``
or ``"cuda"``, as in the fit): its ``prepare``, ``column_mean`` and
``shift_targets`` task bodies.  Each process copies the model's references,
shift plans and ranges to its device once, on first use, and keeps them with
the model for every later block (:meth:`CDFTSModel.on_device`).  The CUDA
replay is tested under numba's CUDA simulator and, when one is lent, on a GPU.  Devices
sum in other orders, so a replay on another device than the fit's agrees
with it to rounding (fit points take their stored outputs on every device).
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from . import store
from ._validation import (
    ESTIMATORS,
    check_choice,
    check_numeric_dtype,
    check_points,
    first_difference,
    is_integer,
    shown_names,
)
from .engine import DEVICES, device_module, plan
from .log import say_started
from .normalise import apply_range, column_span
from .paths import refuse_url, root_metadata_lost, zarr_node_type
from .row_lookup import NOT_FOUND, RowIndex

#: the device of the model's own arrays (host NumPy, kept in the fit's dtype by its ``prepare``)
HOST_DEVICE = "cpu"
#: rows per task when a NumPy array is transformed in this process (threads on a host device)
NUMPY_ROW_CHUNK = 32768
#: guards the per-process copies of models on devices (made once, by the first thread that needs them)
_RESIDENT_LOCK = threading.Lock()


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


@dataclass(frozen=True)
class ResidentIteration:
    """Iteration t of a model on one device: what its replay step reads there."""

    references: object  # P_t in the fit's dtype (a device array)
    plan: plan.ShiftPlan | None  # the fit's shift plan, its arrays on the device (None when m_t = 0)
    lo: object  # lo_t (float64 d-vector on the device)
    span: object  # column_span(lo_t, hi_t): the engine's end-of-iteration normalisation


@dataclass
class CDFTSModel:
    """A completed CDF-TS run: the input range and every iteration's references and statistics.

    Built by the runner (``keep_model``: each iteration's references and statistics, fetched as it
    finishes, and the fit points' outputs at the end) or by :func:`load` (a checkpoint store of a
    completed run).  Size: ``(T + 1) x n_f x d + T x n_f`` values.
    """

    lo: np.ndarray  # lo_0: column minima of the raw fit points
    hi: np.ndarray  # hi_0
    iterations: list[ModelIteration]
    lam: float
    estimator: str
    k: int | None
    dtype: str = "float64"
    #: the fit points' outputs (n_f x d, the fit's dtype): row j is where reference j of iteration 1 ended
    outputs: np.ndarray | None = None
    #: the fit input's column names (a DataFrame's, a CSV file's header), or None when it had none
    feature_names: list[str] | None = None
    #: backend -> the iterations on that device, made in this process on first use (never pickled)
    _resident: dict = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.lo = np.asarray(self.lo, dtype=np.float64)
        self.hi = np.asarray(self.hi, dtype=np.float64)
        if self.outputs is not None:
            self.outputs = np.asarray(self.outputs, dtype=self.dtype)
            if self.iterations and self.outputs.shape != (self.n_references, self.n_features):
                raise ValueError(
                    f"outputs must hold one row per fit point ({self.n_references} x {self.n_features}), "
                    f"got shape {self.outputs.shape}"
                )

    def __getstate__(self) -> dict:
        """Pickled without the device copies or the fit-point lookup: a worker makes its own once."""
        state = {**self.__dict__, "_resident": {}}
        state.pop("_fit_point_index", None)
        return state

    def on_device(self, backend: str) -> list[ResidentIteration]:
        """Every iteration's references, shift plan and end-of-iteration range on ``backend``'s device.

        Made once per process and kept with the model: a worker copies them to
        its device the first time it transforms a block, not once per block.
        The plan is the fit's (the engine's :mod:`~cdfts_dask.engine.plan`),
        with ``mean(P_t)`` taken by the device's own ``column_mean`` as in the
        fit, so a replay on the fit's device sums exactly as the fit did.
        """
        with _RESIDENT_LOCK:
            if backend not in self._resident:
                dev = device_module(backend)
                self._resident[backend] = [self._resident_iteration(dev, it) for it in self.iterations]
            return self._resident[backend]

    def _resident_iteration(self, dev, it: ModelIteration) -> ResidentIteration:
        P = dev.prepare(it.references, self.dtype)
        mean = dev.column_mean(P)
        if self.estimator == "epsilon":
            shift_plan = plan.epsilon_plan(it.m, self.lam, it.counts, mean, self.dtype)
        else:
            shift_plan = plan.knn_plan(it.m, self.k, it.radius, mean, self.dtype)
        if shift_plan is not None:
            shift_plan = shift_plan.map(lambda values: dev.prepare(values, values.dtype))
        span = column_span(it.lo, it.hi)
        return ResidentIteration(P, shift_plan, dev.prepare(it.lo, "float64"), dev.prepare(span, "float64"))

    @property
    def n_features(self) -> int:
        return int(self.lo.shape[0])

    @property
    def n_references(self) -> int:
        return int(self.iterations[0].references.shape[0]) if self.iterations else 0

    @property
    def n_iter(self) -> int:
        return len(self.iterations)

    def transform_block(self, Y, backend: str = "cpu", name: str = "Y", first_row: int = 0) -> np.ndarray:
        """The run's output for the rows of Y (rows x d, finite, host): rows x d in the fit's dtype.

        A row equal to a fit point after the initial normalisation takes that
        point's stored output (:meth:`fit_point_rows`); the others are
        replayed on ``backend``'s device (:meth:`replay`).  A row too far
        outside the fit's range for the fit's dtype (its replay overflows) is
        refused, naming ``name`` and its row ``first_row + i``.
        """
        y = self.normalised(Y)
        fit_row = self.fit_point_rows(y)
        found = fit_row != NOT_FOUND
        if not found.any():
            return _finite(self._replay(y, backend), Y, self.dtype, name, first_row)
        out = np.empty_like(y)
        out[found] = self.outputs[fit_row[found]]
        if not found.all():
            out[~found] = self._replay(y[~found], backend)
        return _finite(out, Y, self.dtype, name, first_row)

    def replay(self, Y, backend: str = "cpu") -> np.ndarray:
        """The run's T iterations replayed on every row of Y, fit points included (rows x d, fit dtype).

        :meth:`transform_block` does this for the rows that are not fit
        points.  On a fit point, a replay on the fit's device sums as the fit
        did and returns its output bit for bit when the fit was tiled; after a
        dense (NumPy) fit or on another device it agrees to rounding, except
        under the k-NN estimator at points with more than k duplicates (radius
        0: rho jumps at s = 0), which :meth:`transform_block` therefore looks up.
        Y is validated (numeric, finite, 2-D with the model's d columns).
        """
        check_backend(backend)
        check_column_names(self, Y, "Y")
        Y = check_points(Y, "Y", min_rows=1)
        check_features(self, Y.shape, "Y")
        return _finite(self._replay(self.normalised(Y), backend), Y, self.dtype, "Y", 0)

    def normalised(self, Y) -> np.ndarray:
        """Rows of Y through the fit's initial normalisation, on the host in the fit's dtype."""
        return np.ascontiguousarray(apply_range(np.asarray(Y, dtype=np.float64), self.lo, self.hi),
                                    dtype=self.dtype)  # fmt: skip

    def fit_point_rows(self, y: np.ndarray) -> np.ndarray:
        """For each normalised row of y, the fit point (reference of iteration 1) equal to it, else
        :data:`~cdfts_dask.row_lookup.NOT_FOUND` (every row when the model holds no ``outputs``).

        The lookup (:class:`~cdfts_dask.row_lookup.RowIndex`) is made once per process."""
        if self._fit_point_index is None:
            return np.full(len(y), NOT_FOUND, dtype=np.intp)
        return self._fit_point_index.find(y)

    @cached_property
    def _fit_point_index(self) -> RowIndex | None:
        """The fit points' lookup (None without ``outputs``); two threads at once may both build it."""
        if self.outputs is None or not self.iterations:
            return None
        return RowIndex.of(self.iterations[0].references)

    def _replay(self, y: np.ndarray, backend: str) -> np.ndarray:
        """Normalised rows y replayed on ``backend``'s device.

        Each iteration is the engine's shift body (``shift_targets``) with the
        references P_t and y's current positions as targets, then the fit's
        end-of-iteration normalisation (as the engine's ``finish``); all
        references coincided (m_t = 0) means nothing moved in the fit, nor
        here.  y goes to the device once and comes back once; the model's
        arrays are already there (:meth:`on_device`).
        """
        dev = device_module(backend)
        y = dev.prepare(y, self.dtype)
        for it in self.on_device(backend):
            shifted = dev.shift_targets(it.references, y, it.plan)
            y = ((shifted - it.lo) / it.span).astype(self.dtype, copy=False)
        return np.asarray(dev.to_host(y), dtype=self.dtype)


def _finite(out: np.ndarray, Y, dtype: str, name: str, first_row: int) -> np.ndarray:
    """``out`` when every position is finite; else a ``ValueError`` naming the first row whose replay
    overflowed (a finite point so far outside the fit's range that its shift exceeds ``dtype``'s range)."""
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} row {first_row + i} ({np.asarray(Y)[i].tolist()}) lies too far outside the fit data's "
            f"range to be transformed in {dtype}: its shifted position overflows"
        )
    return out


def iteration_of(references, statistics: dict, m: float, lo, hi, lam: float, k, dtype: str) -> ModelIteration:
    """One :class:`ModelIteration` from what the fit measured in that iteration (``{"counts": ...}``
    or ``{"radius": ...}``)."""
    refs = device_module(HOST_DEVICE).prepare(np.asarray(references), dtype)
    return ModelIteration(
        refs, float(m), np.asarray(lo, np.float64), np.asarray(hi, np.float64),
        counts=_array(statistics.get("counts")), radius=_array(statistics.get("radius")),
    )  # fmt: skip


def _array(values):
    return None if values is None else np.asarray(values)


# -- reading a completed run's checkpoint store -----------------------------------------------------------


def load(path, n_iter: int | None = None) -> CDFTSModel:
    """The model of the completed run stored at ``path`` (a ``--checkpoint`` / ``checkpoint=`` store):
    its first ``n_iter`` iterations (an integer in [1, iterations stored]; None: those of the result the
    last run returned, which is all the store holds unless that run was resumed with a smaller
    ``max_iter`` or a larger ``delta``).
    Every iteration read is verified against the checksums stored at commit.

    Raises ``ValueError`` naming the path when it is not a cdfts-dask run, the
    run did not complete, or the store predates model support.
    """
    import zarr

    refuse_url(path, "model")
    path = str(path)
    if not os.path.exists(path):
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store (nothing there)")
    if not os.path.isdir(path):  # a store is a folder: a CSV given as MODEL is named as such
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store: it is a file (a store is the .zarr "
                         "folder that a completed run was given as --checkpoint / checkpoint=)")  # fmt: skip
    if root_metadata_lost(path):
        raise ValueError(f"model: {path!r} is a damaged cdfts-dask run store: its zarr.json (the run's "
                         "attributes) is missing or cannot be read")  # fmt: skip
    if zarr_node_type(path) == "array":  # Zarr's own words: "An array already exists in store ..."
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store: it is a Zarr array (points?); a "
                         "store is the folder a completed run was given as --checkpoint / checkpoint=")
    try:
        group = zarr.open_group(path, mode="r")
        attrs = dict(group.attrs)
    except Exception as exc:
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store: {exc}") from None
    if attrs.get("format") != store.STORE_FORMAT:
        raise ValueError(f"model: {path!r} is not a cdfts-dask run store (format={attrs.get('format')!r})")
    try:
        store.check_root(attrs, path)  # a format version this one reads, root attributes as written
    except ValueError as exc:
        raise ValueError(f"model: {exc}") from None
    status = attrs.get("status")
    if status not in store.COMPLETE_STATUSES:
        raise ValueError(
            f"model: the run stored at {path!r} is not complete (status={status!r}, "
            f"{attrs.get('completed', -1)} iteration(s) done); resume it first (cdfts transform --resume)"
        )
    params = attrs.get("params", {})
    try:
        returned = store.result_iteration(attrs, path)  # the iteration the run returned: the model's last
    except store.StoreDamaged as exc:
        raise ValueError(f"model: {exc}") from None
    last = returned if n_iter is None else _checked_n_iter(n_iter, int(attrs["completed"]), path)
    for t in range(0, last + 1):  # before any iteration's attributes are read
        problem = store.verify_iteration(group, t)
        if problem is not None:
            raise ValueError(f"model: the run stored at {path!r} is damaged: {problem}")
    first = dict(group[store.iteration_key(0)].attrs)
    if "lo" not in first or "hi" not in first:
        raise ValueError(
            f"model: the run stored at {path!r} was written before stores kept the input range "
            f"(store format version {attrs.get('format_version', 1)}); run it again to use it as a model"
        )
    try:
        return _model_of(group, params, first, last)
    except (KeyError, TypeError, ValueError) as exc:  # a store of format 2 has no attribute checksums
        raise ValueError(
            f"model: the run stored at {path!r} is damaged: its attributes cannot make a model "
            f"({type(exc).__name__}: {exc})"
        ) from None


def _model_of(group, params: dict, first: dict, last: int) -> CDFTSModel:
    """The model of a verified store's iterations 1..last (``first``: iteration 0's attributes)."""
    lam, estimator, k, dtype = params["lam"], params["estimator"], params.get("k"), params.get("dtype")
    check_choice(estimator, "estimator", ESTIMATORS)
    stats_name = store.statistics_name(estimator)
    iterations = []
    for t in range(1, last + 1):
        prev, cur = group[store.iteration_key(t - 1)], group[store.iteration_key(t)]
        it_attrs = dict(cur.attrs)
        iterations.append(
            iteration_of(
                prev["X"][...], {stats_name: cur[stats_name][...]}, it_attrs["m"], it_attrs["lo"],
                it_attrs["hi"], lam, k, dtype or "float64",
            )
        )  # fmt: skip
    outputs = group[store.iteration_key(last)]["X"][...]  # verified above, with every iteration read
    return CDFTSModel(first["lo"], first["hi"], iterations, lam, estimator, k, dtype or "float64", outputs,
                      params.get("feature_names"))  # fmt: skip


def _checked_n_iter(n_iter, completed: int, path: str) -> int:
    """``n_iter`` when it names a stored iteration (an integer in [1, completed]), else an error naming it."""
    if not is_integer(n_iter):
        raise TypeError(f"n_iter must be an integer or None, got {n_iter!r}")
    if not 1 <= n_iter <= completed:
        raise ValueError(
            f"n_iter must lie in [1, {completed}] (the iterations stored at {path!r}), got {n_iter!r}"
        )
    return int(n_iter)


# -- transforming arrays of any kind ----------------------------------------------------------------------


def _block(block: np.ndarray, model: CDFTSModel, name: str, backend: str, block_info=None) -> np.ndarray:
    """Validate one row chunk (finite, numeric) and replay the model on it on ``backend``'s device."""
    from .lazy import _check_block

    first_row = block_info[0]["array-location"][0][0] if block_info else 0
    return model.transform_block(_check_block(block, name, block_info), backend, name, first_row)


def check_backend(backend) -> str:
    """``backend`` names a device of the engine's registry (``"cpu"``, ``"cuda"``)."""
    return check_choice(backend, "backend", tuple(DEVICES))


def transform_dask(model: CDFTSModel, Y, name: str = "X", backend: str = "cpu"):
    """Lazy transform of a dask array (n x d): one task per row chunk, the model one shared graph node.

    Columns are gathered into one chunk per row block (a row needs all its
    coordinates); every block is validated (NaN / inf, named by global row)
    and transformed independently on ``backend``'s device, so no task holds
    more than its row chunk (and the model, copied to the device once per worker).
    """
    import dask
    import dask.array as da

    check_backend(backend)
    if not isinstance(Y, da.Array):
        raise TypeError(
            f"{name} must be a dask array (transform_numpy takes an in-memory one), got {type(Y).__name__}"
        )
    check_numeric_dtype(Y.dtype, name)
    check_features(model, Y.shape, name)
    Y = Y.rechunk({1: -1})
    shared = dask.delayed(model, name=f"cdfts-model-{uuid.uuid4().hex}")
    token = f"cdfts-transform-{uuid.uuid4().hex}"
    meta = np.empty((0, model.n_features), dtype=model.dtype)
    return Y.map_blocks(_block, shared, name, backend, dtype=meta.dtype, meta=meta, name=token)


def transform_numpy(
    model: CDFTSModel, Y, name: str = "X", row_chunk: int = NUMPY_ROW_CHUNK, backend: str = "cpu"
) -> np.ndarray:
    """Transform an in-memory array (validated: numeric, finite, the model's d) in this process, over
    row chunks: with the threaded scheduler on the CPU (the numba kernel releases the GIL), one chunk
    after another on a GPU (one kernel launch already fills the device)."""
    import dask.array as da

    check_backend(backend)
    check_column_names(model, Y, name)
    Y = check_points(Y, name, min_rows=1)
    check_features(model, Y.shape, name)
    if Y.shape[0] <= row_chunk:
        return model.transform_block(Y, backend, name)
    lazy = transform_dask(model, da.from_array(Y, chunks=(row_chunk, -1)), backend=backend)
    return lazy.compute(scheduler="threads" if device_module(backend).HOST else "synchronous")


def check_features(model: CDFTSModel, shape: tuple, name: str) -> None:
    """Y must be 2-D with the model's number of columns (d of the fit)."""
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-dimensional (n points x d attributes), got shape {tuple(shape)}")
    if shape[1] != model.n_features:
        raise ValueError(
            f"{name} has {shape[1]} features (columns), but the model was fitted on {model.n_features}"
        )


def check_column_names(model: CDFTSModel, Y, name: str) -> None:
    """A DataFrame Y whose columns are all named by text (scikit-learn's ``feature_names_in_`` rule) must
    name the fit's columns in the fit's order (:func:`check_feature_names`); other inputs pass."""
    columns = getattr(Y, "columns", None)
    if columns is not None and all(isinstance(c, str) for c in columns):
        check_feature_names(model, list(columns), name)


def check_feature_names(model: CDFTSModel, names, name: str) -> None:
    """Y's column names (a CSV header), when both Y and the fit had names, must be the fit's, in order:
    a column is replayed as the fit's column in its place, whatever its name."""
    if names is None or model.feature_names is None or list(names) == list(model.feature_names):
        return
    raise ValueError(
        f"{name} has the columns {shown_names(names)}, but the model was fitted on "
        f"{shown_names(model.feature_names)} (same names in the same order; "
        f"{first_difference(names, model.feature_names)})"
    )


def output_attrs(model: CDFTSModel) -> dict:
    """The attributes of a ``.zarr`` output of the model, whoever writes it: the iterations replayed."""
    return {"model_iterations": model.n_iter}


def transform_to_zarr(
    model: CDFTSModel, Y, output, client=None, n_workers: int | None = None, backend: str = "cpu",
    security=None,
):  # fmt: skip
    """Transform Y (dask array, Zarr array or path) into a new Zarr array at ``output``, chunk by chunk.

    Runs on ``client`` (or an embedded cluster: one ``dask_cuda`` worker per GPU for
    ``backend="cuda"``), connected with ``security`` (as by
    :func:`~cdfts_dask.dask_client.dask_client`); the result is written under a
    temporary sibling name and renamed into place once complete, so a failed run
    never leaves a half-written output.  Returns the output opened read-only.  The caller has
    checked ``output`` against the input and the store (:func:`cdfts_dask.paths.check_run_paths`).
    """
    import zarr

    lazy = transform_dask(model, as_dask(Y), backend=backend)
    with _cluster_for(lazy.shape[0], client, n_workers, backend, security) as c:
        store.write_dask_zarr(Path(output), lazy, c, output_attrs(model))
    return zarr.open_array(str(output), mode="r")


@contextlib.contextmanager
def _cluster_for(rows: int, client, n_workers: int | None, backend: str, security):
    """The client a chunked transform runs on (:func:`~cdfts_dask.dask_client.dask_client`), said in a
    start line as a fit's is: the rows, the device and the workers.  The block's error when the cluster
    lost its scheduler or the workers running the transform is
    :class:`~cdfts_dask.dask_client.WorkersLost`, saying so (:func:`_replay_lost_message`)."""
    from .dask_client import WorkersLost, dask_client, what_was_lost

    with dask_client(client, n_workers, gpu=backend == "cuda", security=security) as c:
        say_started(f"model transform of {rows} points: {backend}", c)
        try:
            yield c
        except Exception as exc:
            lost = what_was_lost(c, exc)
            if lost is None:
                raise
            raise WorkersLost(_replay_lost_message(lost, exc, c, rows)) from None


def _replay_lost_message(lost: str, exc: BaseException, client, rows: int) -> str:
    """The error of a transform whose cluster lost its scheduler or workers (``lost``, as
    :func:`~cdfts_dask.dask_client.what_was_lost` says): Dask's own error names neither what was lost nor
    that the transform wrote no output (outputs are renamed into place once complete) and can simply run
    again: the model and its input are unchanged.  (A worker still running a task may write into the
    output's temporary sibling after it was removed; the next write of that output removes it,
    :func:`~cdfts_dask.paths.remove_stale_temporaries`.)"""
    from .dask_client import MORE_MEMORY, first_line, scheduler_lost

    doing = f"the model's transform of {rows} points"
    if lost == "scheduler":
        what = f"{scheduler_lost(client, exc)} during {doing}"
        when = ", once the scheduler is back"
    else:
        what = f"the Dask workers running {doing} were lost ({first_line(exc)})"
        when = f" ({MORE_MEMORY})"
    return f"{what}; no output was written and the model is unchanged: run it again{when}"


def apply(
    model: CDFTSModel, X, output=None, *, backend: str = "cpu", client=None, n_workers: int | None = None,
    security=None, lazy: bool = False, name: str = "X", header: list[str] | None = None, labels=None,
    label_name: str = "label",
):  # fmt: skip
    """The model applied to X, and ``output`` written: the one path of a sampled ``cdf_ts``,
    ``CDFTS.transform`` and ``cdfts apply``.  Where the work runs follows X's type:

    * NumPy X: replayed in this process (:func:`transform_numpy`); an ``output`` is written here.
    * dask X: a ``.zarr`` ``output`` (without ``labels``) is computed by the workers of ``client``
      (``n_workers``, ``security``: as :func:`~cdfts_dask.dask_client.dask_client` reads them) straight
      into the store, chunk by chunk, and returned opened read-only (:func:`transform_to_zarr`).
      Otherwise, with ``lazy``, the lazy result (:func:`transform_dask`) is returned, or, for a ``.npy`` /
      ``.csv`` ``output``, computed once (the default scheduler, as a dask collection is), written, and
      returned as a dask array chunked like X; without ``lazy`` it is computed on ``client``'s workers
      and returned as NumPy.

    Every ``output`` other than the workers' Zarr is written atomically by
    :func:`~cdfts_dask.outputs.write_table`: ``labels`` (named ``label_name``) as a CSV's last column,
    the columns named ``header`` (default: the fit's column names, when known).  A ``.zarr`` ``output``,
    whoever wrote it, is returned opened read-only.  The caller has checked ``output`` against the
    input and the model (:func:`cdfts_dask.paths.check_run_paths`).
    """
    import dask.array as da

    from .outputs import output_format, write_table

    to_zarr = output is not None and output_format(output) == ".zarr"
    chunks = None  # a lazy result written to a .npy / .csv is returned chunked as it was
    if isinstance(X, da.Array) and to_zarr and labels is None:
        return transform_to_zarr(model, X, output, client, n_workers, backend, security)
    if not isinstance(X, da.Array):
        Y = transform_numpy(model, X, name=name, backend=backend)
    elif lazy:
        lazy_Y = transform_dask(model, X, name, backend)
        if output is None:
            return lazy_Y
        Y, chunks = lazy_Y.compute(), lazy_Y.chunks
    else:
        with _cluster_for(X.shape[0], client, n_workers, backend, security) as c:
            Y = c.compute(transform_dask(model, X, name, backend)).result()
    if output is not None:
        names = header if header is not None else model.feature_names
        write_table(output, Y, labels, names, label_name, attrs=output_attrs(model))
        if to_zarr:  # as the workers' Zarr output is (and an exact cdf_ts's): the store, opened read-only
            import zarr

            return zarr.open_array(str(output), mode="r")
    return Y if chunks is None else da.from_array(Y, chunks=chunks)


def as_dask(Y, name: str = "X"):
    """A dask array of a dask array, a Zarr array, a Zarr path (metadata checked, nothing read) or a CSV
    path of :data:`~cdfts_dask.csv_blocks.CSV_ON_WORKERS_BYTES` or more (its blocks' lines counted)."""
    import dask.array as da

    from .inputs import check_zarr_chunks
    from .lazy import lazy_input

    if type(Y).__module__.startswith("zarr"):
        check_zarr_chunks(Y, name=name)
        return da.from_zarr(Y)
    lazy = lazy_input(Y, name, min_rows=1)
    if lazy is None:
        raise TypeError(f"{name} must be a dask array, a Zarr array or a Zarr path, got {type(Y).__name__}")
    return lazy.array
