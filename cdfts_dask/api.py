"""Public functions: :func:`cdf_ts`, :func:`dscale`, :func:`rescale`.

The :class:`CDFTS` estimator built on them is in :mod:`.estimator`.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from . import _validation as v
from . import model, oracle, paths, runner, sampling
from .dask_client import (
    MORE_MEMORY,
    WORKER_FOOTPRINT,
    WorkersLost,
    dask_client,
    first_line,
    outlives_the_run,
    refuse_no_cluster_here,
    scheduler_lost,
    what_was_lost,
)
from .inputs import csv_header, is_path, load_points
from .lazy import LazyInput, lazy_input
from .log import logger, say_started, verbosity
from .normalise import minmax_normalise
from .outputs import checked_output, output_format, write_table
from .params import RunParams


def cdf_ts(
    X,
    lam: float = 0.1,
    delta: float = 0.015,
    max_iter: int = 100,
    estimator: str = "epsilon",
    k: int | None = None,
    method: str = "auto",
    client=None,
    tile_size: int | None = None,
    checkpoint=None,
    resume: bool = False,
    output=None,
    n_workers: int | None = None,
    progress: bool | Callable[[runner.IterationReport], None] | None = None,
    return_info: bool = False,
    dtype: str = "float64",
    backend: str = "cpu",
    verbose: bool = False,
    n_references: int | None = None,
    random_state=None,
    security=None,
    feature_names=None,
):
    """CDF Transform-and-Shift of the points X (n x d).

    Each iteration rescales distances in every point's lambda-neighbourhood
    with DScale and moves every point y to
    ``mean_z [z + rho(z, y) (y - z)]``; points are min-max normalised before
    and after.  Iterations stop once the mean absolute movement
    ``Delta <= delta`` or after ``max_iter`` iterations (at least one runs).

    Parameters
    ----------
    X : array-like, dask array, Zarr array, or path (.csv, .npy, .zarr)
    lam : neighbourhood size relative to the largest pairwise distance, in (0, 1)
    delta : stopping threshold on the mean absolute movement, > 0
    max_iter : most iterations to run
    estimator : ``"epsilon"`` (fixed radius lam) or ``"knn"`` (radius = distance
        to the k-th nearest other point)
    k : neighbours for ``estimator="knn"``, 1 <= k <= n - 1
    method : ``"dense"`` (NumPy oracle), ``"tiled"`` (Dask engine) or ``"auto"``
        (dense for n <= 2000 unless a client, a worker count or a tile size is given, or
        float32 or the CUDA device is asked for: :meth:`cdfts_dask.params.RunParams.for_points`,
        shared with ``CDFTS`` and the CLI)
    client : ``distributed.Client``, scheduler address, or None: the session's default client
        when one is open, else an embedded ``LocalCluster`` of ``n_workers`` processes
    tile_size : rows per panel task of the Dask engine (default: from n and the number of
        workers, 256 to 4096 on the CPU, one panel per GPU with ``backend="cuda"``); a CPU task's
        working set is a few hundred points regardless
    checkpoint : Zarr store path; every complete iteration is written there (a completed
        store is a model: :func:`cdfts_dask.model.load`, ``cdfts apply``)
    resume : continue the run stored at ``checkpoint`` (a new run starts if there is none)
    output : path to write the result to: ``.zarr`` (written by the workers when the result is on
        the cluster, else here; returned opened read-only: the handle reads the path, so a later
        write of the same path, by this or another run, is what it then reads), ``.npy`` or ``.csv``
        (written atomically here, the array returned)
    progress : ``True`` for a progress bar of each iteration's tasks (tqdm, on stderr; tiled engine),
        or a callable receiving an :class:`~cdfts_dask.runner.IterationReport` per iteration
    return_info : also return the :class:`~cdfts_dask.runner.RunResult` (Delta history)
    dtype : ``"float64"`` (default, equals the oracle to 1e-9) or ``"float32"`` (tiled engine;
        neighbourhoods exact on the float32-rounded points, positions to ~1e-5 unless distinct
        points lie closer than float32 resolution; see docs/BENCHMARKS.md)
    backend : the device of the tiled engine: ``"cpu"`` (numba kernels) or ``"cuda"`` (numba-cuda
        kernels on CuPy arrays, one ``dask_cuda`` worker per GPU; the ``gpu`` extra)
    verbose : print the messages of the ``cdfts_dask`` logger (start line, one line per
        iteration, the end) on stderr; without it they go only where the application's
        ``logging`` configuration sends them
    n_references : sampled fit: fit on this many points drawn uniformly without replacement
        (``random_state``), then transform all n points with the fitted run, O(n s T) work
        (k-NN uses ``k_s = max(1, round(k s / n))``).  None or >= n: exact.
    random_state : seed of the draw: None, an int in [0, 2**32 - 1] or a ``numpy.random.RandomState``
    security : a ``distributed.security.Security`` (TLS certificates) for the connection to a
        scheduler given by address, and for the embedded cluster (which listens on 127.0.0.1 only)
    feature_names : the d column names, kept in the checkpoint store (``cdfts apply`` checks a CSV
        input's header against them); default: a DataFrame's columns when all are text, or a CSV
        file's header row

    Returns
    -------
    numpy.ndarray (n x d) in [0, 1]^d; a dask array (the input's chunks; a sampled fit's: its row
    chunks, the columns in one) for a dask array in;
    or a read-only ``zarr.Array`` when ``output`` is a ``.zarr``.  With ``n_references < n`` the
    points that were not drawn may lie slightly outside [0, 1].
    """
    v.check_flag(verbose, "verbose")
    v.check_flag(return_info, "return_info")
    checkpoint, output = checked_run_paths(X, checkpoint, output, resume=resume)
    with verbosity(verbose):
        fit = FitSpec.check(
            X, lam=lam, delta=delta, max_iter=max_iter, estimator=estimator, k=k, method=method,
            client=client, tile_size=tile_size, checkpoint=checkpoint, resume=resume, n_workers=n_workers,
            progress=progress, dtype=dtype, backend=backend, n_references=n_references,
            random_state=random_state, security=security, feature_names=feature_names,
        )  # fmt: skip
        if not fit.sampled:
            out, result = fit_exact(fit, output=output)
        else:
            result = fit_sample(fit)
            out = result.X = transform_input(result.model, fit, output)
        return (out, result) if return_info else out


def checked_run_paths(X, checkpoint, output=None, model=None, resume=None) -> tuple[str | None, str | None]:
    """``(checkpoint, output)`` made absolute here, on the client (workers with another working
    directory write where the user meant), and checked against the input X, the ``model`` store a
    fitted run is replayed from, and each other before any work (:func:`paths.check_run_paths`: none
    may be, or lie inside, another; the input may lie in the model, both only read; a store holding a
    run is refused unless ``resume``).  A URL given for any of them is refused first
    (:func:`paths.refuse_url`)."""
    paths.refuse_url(X, "X")
    paths.refuse_url(model, "model")
    checkpoint = None if checkpoint is None else paths.absolute(checkpoint, "checkpoint")
    output = checked_output(output)
    paths.check_run_paths(paths.input_files(X), output=output, checkpoint=checkpoint, model=model,
                          resume=resume)  # fmt: skip
    return checkpoint, output


@dataclass
class FitSpec:
    """Validated input and parameters of one fit (shared by :func:`cdf_ts` and :class:`CDFTS`)."""

    points: np.ndarray | None  # in-memory input, or None when ``lazy`` holds it
    lazy: LazyInput | None  # Zarr / dask input, read by the workers
    n: int
    d: int
    params: RunParams  # as given (``for_points`` resolves k and "auto" for the points fitted)
    client: object
    checkpoint: str | None
    resume: bool
    progress: object
    n_references: int | None
    random_state: object
    security: object = None  # distributed.security.Security for the Dask connection, or None
    feature_names: list[str] | None = None  # the columns' names: kept in the store and the model

    @property
    def sampled(self) -> bool:
        return self.n_references is not None and self.n_references < self.n

    @classmethod
    def check(cls, X, *, lam, delta, max_iter, estimator, k, method, client, tile_size, checkpoint, resume,
              n_workers, progress, dtype, backend, n_references, random_state,
              security=None, feature_names=None) -> FitSpec:  # fmt: skip
        """Check every parameter (naming the bad one) and open X (lazily for Zarr / dask input).
        ``feature_names``: the columns' names (default: :func:`column_names`)."""
        params = RunParams(lam, delta, max_iter, estimator, k, method, tile_size, n_workers, dtype, backend)
        n_references = sampling.check_n_references(n_references)
        random_state = sampling.check_random_state(random_state)
        v.check_flag(resume, "resume")
        if resume and checkpoint is None:
            raise ValueError("resume=True needs a checkpoint path, got checkpoint=None")
        if not (progress is None or isinstance(progress, bool) or callable(progress)):
            raise TypeError(f"progress must be True, False, None or a callable, got {progress!r}")
        if security is not None:
            from distributed.security import Security

            if not isinstance(security, Security):
                raise TypeError(f"security must be a distributed.security.Security or None, got {security!r}")
        lazy = lazy_input(X)  # Zarr path / dask array: only metadata is read here (out-of-core input)
        points = load_points(X) if lazy is None else None
        n, d = points.shape if lazy is None else lazy.shape
        feature_names = column_names(X) if feature_names is None else _checked_names(feature_names, d)
        params.for_points(n, client)  # k against n, dense vs dtype / device: refused here, before any work
        sampled = n_references is not None and n_references < n
        if method == "dense":
            given = {"client": client, "tile_size": tile_size, "n_workers": n_workers, "security": security,
                     "progress=True": True if progress is True else None}  # fmt: skip
            on_the_cluster = ("client", "n_workers", "security") if sampled else ()  # its transform's
            _warn_unused_beside_dense(
                [name for name, value in given.items() if value is not None and name not in on_the_cluster]
            )
        made = checkpoint is not None and paths.checkpoint_state(checkpoint) != "run"  # not resumed: made
        if sampled and made and not v.is_integer(random_state):
            warnings.warn(
                f"checkpoint {str(checkpoint)!r} of a sampled fit (n_references={n_references}) without an "
                "integer random_state: the store will be a model (load, cdfts apply) but cannot be resumed, "
                "since no later run draws the same rows; pass an integer random_state (--random-state) to "
                "make it resumable",
                UserWarning,
                stacklevel=3,
            )
        return cls(points, lazy, n, d, params, client, None if checkpoint is None else str(checkpoint),
                   resume, progress, n_references, random_state, security, feature_names)  # fmt: skip


def _warn_unused_beside_dense(unused: list[str]) -> None:
    """Name the engine's options given beside ``method='dense'`` (the NumPy oracle, in this process)."""
    if unused:
        verb = "is" if len(unused) == 1 else "are"
        warnings.warn(
            f"{', '.join(unused)} {verb} not used: method='dense' runs the NumPy oracle in this process "
            "(method='tiled' or 'auto' runs the Dask engine)",
            UserWarning,
            stacklevel=4,  # the caller of cdf_ts
        )


def column_names(X) -> list[str] | None:
    """A DataFrame's column names when every one is text (as scikit-learn's ``feature_names_in_``),
    or the header of a CSV file given by path; else None."""
    if is_path(X):
        return csv_header(X)
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return list(columns)


def _checked_names(names, d: int) -> list[str]:
    """``feature_names`` as a list of d strings, or an error naming the argument and the value."""
    listed = None if isinstance(names, str) or not hasattr(names, "__iter__") else list(names)
    if listed is None or len(listed) != d or not all(isinstance(c, str) for c in listed):
        raise ValueError(f"feature_names must be {d} strings (one per column of X), got {names!r}")
    return listed


def fit_exact(fit: FitSpec, output=None, keep_model: bool = False, sample: dict | None = None):
    """CDF-TS on all n points: ``(result, RunResult)`` (NumPy; Zarr with ``output``; dask for dask in);
    ``sample`` describes the draw when these points are a sampled fit's (see :func:`runner.run`)."""
    p = fit.params.for_points(fit.n, fit.client)
    args = dict(
        shape=(fit.n, fit.d),
        lam=p.lam,
        delta=p.delta,
        max_iter=p.max_iter,
        estimator=p.estimator,
        k=p.k,
        checkpoint=fit.checkpoint,
        resume=fit.resume,
        progress=fit.progress if callable(fit.progress) else None,
        progress_bar=fit.progress is True,
        dtype=p.dtype,
        keep_model=keep_model,
        feature_names=fit.feature_names,
        sample=sample,
    )
    where = f"CDF-TS of n = {fit.n} points, d = {fit.d} (lambda = {p.lam}, {p.estimator} estimator)"
    if p.method == "dense":
        logger.info("%s: dense NumPy oracle in this process", where)
        points = fit.lazy.load() if fit.points is None else fit.points
        dense = runner.DenseMethod()
        return _finish(dense, runner.run(dense, points, **args), output, fit.lazy, False,
                       header=fit.feature_names)
    with dask_client(fit.client, p.n_workers, gpu=p.backend == "cuda", security=fit.security) as c:
        say_started(f"{where}: tiled engine, {p.backend} {p.dtype}", c)
        if p.backend == "cpu":
            _say_if_compiling(c, fit.d, p.dtype, p.estimator, p.k)
        try:
            return _fit_tiled(c, fit, p, args, output)
        except BaseException as exc:
            _forget_the_runs_futures(exc)
            lost = what_was_lost(c, exc)
            if lost == "scheduler":
                raise WorkersLost(_scheduler_lost_message(exc, c, fit.checkpoint)) from None
            if lost == "workers":
                raise WorkersLost(_workers_lost_message(exc, fit.checkpoint)) from None
            raise


def _fit_tiled(c, fit: FitSpec, p: RunParams, args: dict, output):
    """The tiled run of :func:`fit_exact` on the client ``c``: its result as :func:`_finish` gives it."""
    tiled = runner.TiledMethod(c, p.tile_size, dtype=p.dtype, backend=p.backend)
    # NumPy points are scattered once normalised (TiledMethod.normalise); workers read lazy input
    handle = fit.points if fit.lazy is None else fit.lazy.to_worker(c)
    result = runner.run(tiled, handle, **args)
    return _finish(tiled, result, output, fit.lazy, outlives_the_run(c), p.dtype, fit.feature_names)


#: the packages whose frames an error of a tiled run passes through holding the run's futures
_HOLDERS_OF_FUTURES = ("cdfts_dask", "distributed", "dask")


def _forget_the_runs_futures(exc: BaseException) -> None:
    """Clear the local variables of the finished frames of this package and of Dask that an error of a
    tiled run passed through, so that the run's futures (its points, statistics, the iteration's parts)
    are released as the error leaves.  Else they stay until the client closes: the client keeps a failed
    task's error, whose traceback holds those frames, for as long as a future of the task lives, and
    those frames hold the futures (a task failing mid-run on a given client: 12 futures and their tasks
    kept per run).  The frames keep their file and line for the traceback; the caller's own frames (a
    ``progress`` callback that raised) keep their variables for a debugger, and the one still running
    is left alone."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_globals.get("__name__", "").partition(".")[0] in _HOLDERS_OF_FUTURES:
            with contextlib.suppress(RuntimeError):  # a frame still running (this call's caller)
                frame.clear()


def _workers_lost_message(exc: BaseException, checkpoint) -> str:
    return (
        f"the Dask workers holding this run's data were lost ({first_line(exc)}); "
        f"{_how_to_go_on(checkpoint)} "
        f"({MORE_MEMORY}: about {WORKER_FOOTPRINT // 2**20} MiB plus its share of the data)"
    )


def _scheduler_lost_message(exc: BaseException, client, checkpoint) -> str:
    """The run's error when the client lost its scheduler (killed, restarted, network cut): Dask's own
    error (``CommClosedError``, a cancelled future, a connect timeout after its reconnect attempts) says
    neither what was lost nor how to go on."""
    return (
        f"{scheduler_lost(client, exc)}, and with it the run's data on the cluster; once the scheduler is "
        f"back, {_how_to_go_on(checkpoint)}"
    )


def _how_to_go_on(checkpoint) -> str:
    if checkpoint is not None:
        return (
            f"continue it from the last saved iteration with resume=True (--resume) and checkpoint "
            f"{checkpoint!r}"
        )
    return "run it again; with a checkpoint (--checkpoint) it could be resumed after such a failure"


def fit_sample(fit: FitSpec) -> runner.RunResult:
    """Fit on ``n_references`` points drawn uniformly without replacement; the result holds the model.

    ``result.X`` is the drawn points' output (NumPy), ``result.sample_indices`` their rows.
    """
    s = fit.n_references
    on_sample_params = replace(fit.params, k=sampling.sampled_k(fit.params.k, s, fit.n))
    if on_sample_params.for_points(s, fit.client).method == "tiled":  # as fit_exact decides it for s points
        refuse_no_cluster_here(fit.client)  # before the draw, which may read a large input
    source = fit.points if fit.lazy is None else fit.lazy.array
    idx, F = sampling.draw_references(source, fit.n, s, fit.random_state)
    sampling.warn_constant_columns(F, fit.points)
    logger.info("sampled fit: %d of %d points drawn as references", s, fit.n)
    on_sample = replace(fit, points=F, lazy=None, n=s, params=on_sample_params, n_references=None)
    seed = fit.random_state if v.is_integer(fit.random_state) else None  # a Generator: not kept
    draw = {"n_references": s, "rows": fit.n, "random_state": None if seed is None else int(seed),
            "k": fit.params.k}  # fmt: skip
    out, result = fit_exact(on_sample, keep_model=True, sample=draw)
    result.X, result.sample_indices = out, idx
    return result


def transform_input(model_, fit: FitSpec, output=None):
    """The fitted model applied to all of the fit's input on the fit's device (:func:`model.apply`): a
    dask array in gives a dask array (lazy unless ``output`` is written); NumPy is replayed in this
    process without a ``client``, else, like a Zarr or large-CSV input, on the cluster."""
    if fit.lazy is not None:
        points = fit.lazy.array
    elif fit.client is not None:
        points = da_from_numpy(fit.points)  # replayed on the given cluster
    else:
        points = fit.points
    return model.apply(
        model_, points, output,
        backend=fit.params.backend, client=fit.client, n_workers=fit.params.n_workers, security=fit.security,
        lazy=fit.lazy is not None and fit.lazy.is_dask, header=fit.feature_names,
    )  # fmt: skip


def da_from_numpy(points: np.ndarray):
    """An in-memory array as a dask array of row chunks."""
    import dask.array as da

    return da.from_array(points, chunks=(model.NUMPY_ROW_CHUNK, -1))


def _say_if_compiling(client, d: int, dtype: str, estimator: str, k: int | None) -> None:
    """Log "compiling kernels" when a worker's numba cache does not hold them yet: none of them (the
    first run on a machine), or those this run calls that are compiled for each number of columns d."""
    if not logger.isEnabledFor(logging.INFO):
        return
    from .engine.cpu import per_d_kernels
    from .engine.cpu_kernels import kernels_cached

    states = [s for s in client.run(kernels_cached, d, dtype, per_d_kernels(estimator, k)).values() if s]
    if any(not any_cached for any_cached, _ in states):
        logger.info("compiling the numba kernels, first run only (cached on disk for later runs)")
    elif any(not these for _, these in states):
        logger.info("compiling the numba kernels for d = %d, %s: a few seconds, once (cached on disk)",
                    d, dtype)  # fmt: skip


def _finish(method, result: runner.RunResult, output, lazy, on_cluster: bool, dtype: str = "float64",
            header: list[str] | None = None):  # fmt: skip
    """The result as the caller expects it: a ``.zarr`` ``output`` written by a worker and returned
    opened read-only; for a dask array in, a dask array of ``dtype`` (the run's), backed by the result on
    the workers when the cluster outlives this call and the run kept no model, else by the values here
    (a copy of a model's ``outputs``, already fetched: an estimator's ``embedding_`` outlives the client and
    pickles); else NumPy, also written to a ``.npy`` / ``.csv`` ``output`` atomically by
    :func:`outputs.write_table` (the command line's writer; a CSV's columns are named ``header``, the
    input's column names, when known).
    Returns ``(result, RunResult)``."""
    if output is not None and output_format(output) == ".zarr":
        import zarr

        attrs = {"deltas": result.deltas, "converged": result.converged}
        method.write_output(str(output), result.X, attrs)
        out = zarr.open_array(str(output), mode="r")
    elif lazy is not None and lazy.is_dask:
        if output is not None:  # a .npy / .csv output: fetched once, written here, returned like the input
            host = _on_host(method, result)
            write_table(output, host, header=header)
            out = lazy.like_input(host)
        else:
            on_workers = on_cluster and result.model is None  # a model holds the outputs here already
            out = lazy.like_input(result.X if on_workers else _on_host(method, result), dtype)
    else:
        out = _on_host(method, result)
        if output is not None:
            write_table(output, out, header=header)
    result.X = out
    return out, result


def _on_host(method, result: runner.RunResult) -> np.ndarray:
    """The final positions as NumPy here: a copy of the model's ``outputs`` when the run kept a model
    (already fetched from the workers once), else fetched."""
    if result.model is not None and result.model.outputs is not None:
        return result.model.outputs.copy()
    return method.fetch(result.X)


def _prepared(X, lam) -> tuple[np.ndarray, float]:
    """X loaded and min-max normalised, and ``lam`` checked (for :func:`dscale` and :func:`rescale`)."""
    lam = v.check_lam(lam)
    points = load_points(X)
    return minmax_normalise(points)[0], lam


def dscale(X, lam: float = 0.1, estimator: str = "epsilon", k: int | None = None) -> np.ndarray:
    """DScale (the paper's Algorithm 1) of min-max normalised X.

    Returns the n x n scaled distance matrix ``S'`` in the units of the
    normalised data: row z is z's view, ``S'(z, y) = m * s'(z, y)`` (see
    :mod:`cdfts_dask.oracle`).  It is asymmetric; use it as a precomputed
    metric with row i as i's neighbourhood.  O(n^2) memory.
    """
    Xn, lam = _prepared(X, lam)
    estimator, k = v.check_estimator(estimator, k, Xn.shape[0])
    return oracle.dscale_dense(Xn, lam, estimator, k)


def rescale(X, lam: float = 0.1, psi: int = 100) -> np.ndarray:
    """ReScale: the per-attribute one-dimensional CDF transform (the paper's baseline).

    On a grid of ``psi + 1`` points over [0, 1], count the points within
    ``lam`` of each grid point; a value's new coordinate is the cumulative
    count up to it; then min-max normalise.
    """
    Xn, lam = _prepared(X, lam)
    psi = v.check_positive_int(psi, "psi", allow_none=False)
    return oracle.rescale_dense(Xn, lam, psi)


__all__ = ["cdf_ts", "dscale", "rescale", "WorkersLost"]
