"""Public API: :func:`cdf_ts`, the :class:`CDFTS` estimator, :func:`dscale`, :func:`rescale`."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable

import numpy as np

from . import _validation as v
from . import oracle, paths, runner
from .dask_client import dask_client, outlives_the_run
from .inputs import is_path, load_points
from .lazy import lazy_input
from .log import describe_client, logger, verbosity
from .normalise import minmax_normalise
from .outputs import check_writable, output_format, write_table
from .params import RunParams


class WorkersLost(ConnectionError):
    """The Dask workers holding the run's data were lost (killed, out of memory, network cut)."""


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
    security=None,
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
        (dense for n <= 2000 unless a client, a worker count or a tile size is given:
        :meth:`cdfts_dask.params.RunParams.for_points`, shared with ``CDFTS`` and the CLI)
    client : ``distributed.Client``, scheduler address, or None: the session's default client
        when one is open, else an embedded ``LocalCluster`` of ``n_workers`` processes
    tile_size : points per tile side in the Dask engine (memory per task ~ tile_size^2)
    checkpoint : Zarr store path; every complete iteration is written there
    resume : continue the run stored at ``checkpoint`` (a new run starts if there is none)
    output : path to write the result to: ``.zarr`` (written by a worker, returned opened
        read-only), ``.npy`` or ``.csv`` (written atomically here, the array returned)
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
    security : a ``distributed.security.Security`` (TLS certificates) for the connection to a
        scheduler given by address, and for the embedded cluster (which listens on 127.0.0.1 only)

    Returns
    -------
    numpy.ndarray (n x d) in [0, 1]^d; a dask array (the input's chunks) for a dask array in;
    or a read-only ``zarr.Array`` when ``output`` is a ``.zarr``.
    """
    if not isinstance(verbose, bool):
        raise TypeError(f"verbose must be True or False, got {verbose!r}")
    with verbosity(verbose):
        return _cdf_ts(
            X, lam, delta, max_iter, estimator, k, method, client, tile_size, checkpoint, resume, output,
            n_workers, progress, return_info, dtype, backend, security,
        )  # fmt: skip


def _cdf_ts(
    X, lam, delta, max_iter, estimator, k, method, client, tile_size, checkpoint, resume, output,
    n_workers, progress, return_info, dtype, backend, security,
):  # fmt: skip
    params = RunParams(lam, delta, max_iter, estimator, k, method, tile_size, n_workers, dtype, backend)
    if not isinstance(resume, bool):
        raise TypeError(f"resume must be True or False, got {resume!r}")
    if resume and checkpoint is None:
        raise ValueError("resume=True needs a checkpoint path, got checkpoint=None")
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be True, False, None or a callable, got {progress!r}")
    # absolute here, on the client: workers with another working directory write where the user meant
    checkpoint = None if checkpoint is None else paths.absolute(checkpoint)
    output = None if output is None else paths.absolute(output)
    if output is not None:
        output_format(output)
        check_writable(output)
    paths.check_run_paths(input=X if is_path(X) else None, output=output, checkpoint=checkpoint)
    lazy = lazy_input(X)  # Zarr path / dask array: only metadata is read here (out-of-core input)
    points = load_points(X) if lazy is None else None
    n, d = points.shape if lazy is None else lazy.shape
    p = params.for_points(n, client)
    lam, estimator, dtype, backend = p.lam, p.estimator, p.dtype, p.backend
    args = dict(
        shape=(n, d),
        lam=lam,
        delta=p.delta,
        max_iter=p.max_iter,
        estimator=estimator,
        k=p.k,
        checkpoint=None if checkpoint is None else str(checkpoint),
        resume=resume,
        progress=progress if callable(progress) else None,
        progress_bar=progress is True,
        dtype=dtype,
    )
    where = f"CDF-TS of n = {n} points, d = {d} (lambda = {lam}, {estimator} estimator)"
    if p.method == "dense":
        logger.info("%s: dense NumPy oracle in this process", where)
        points = lazy.load() if points is None else points
        dense = runner.DenseMethod()
        return _finish(dense, runner.run(dense, points, **args), output, return_info, lazy, False)
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    with dask_client(client, p.n_workers, gpu=backend == "cuda", security=security) as c:
        if logger.isEnabledFor(logging.INFO):  # describe_client asks the scheduler: only when it is shown
            logger.info("%s: tiled engine, %s %s, %s", where, backend, dtype, describe_client(c))
        if backend == "cpu":
            _say_if_compiling(c)
        try:
            tiled = runner.TiledMethod(c, p.tile_size, dtype=dtype, device=backend)
            handle = tiled.put(points) if lazy is None else lazy.to_worker(c)  # workers read lazy input
            result = runner.run(tiled, handle, **args)
            return _finish(tiled, result, output, return_info, lazy, outlives_the_run(c))
        except (FutureCancelledError, KilledWorker) as exc:
            raise WorkersLost(_workers_lost_message(exc, checkpoint)) from None


def _workers_lost_message(exc: BaseException, checkpoint) -> str:
    how = (
        f"continue it from the last saved iteration with resume=True (--resume) and checkpoint {checkpoint!r}"
        if checkpoint is not None
        else "run it again; with a checkpoint (--checkpoint) it could be resumed after such a failure"
    )
    reason = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"the Dask workers holding this run's data were lost ({type(exc).__name__}: {reason}); {how}"


def _say_if_compiling(client) -> None:
    """Log "compiling kernels" once: when a worker's numba cache does not hold them yet."""
    if not logger.isEnabledFor(logging.INFO):
        return
    from .engine.cpu_kernels import kernels_cached

    if any(cached is False for cached in client.run(kernels_cached).values()):
        logger.info("compiling the numba kernels, first run only (cached on disk for later runs)")


def _finish(method, result: runner.RunResult, output, return_info: bool, lazy, on_cluster: bool):
    """The result as the caller expects it: a ``.zarr`` ``output`` written by a worker and returned
    opened read-only; for a dask array in, a dask array (backed by the result on the workers when the
    cluster outlives this call); else NumPy, also written to a ``.npy`` / ``.csv`` ``output`` atomically
    by :func:`outputs.write_table` (the command line's writer)."""
    if output is not None and output_format(output) == ".zarr":
        import zarr

        attrs = {"deltas": result.deltas, "converged": result.converged}
        method.write_output(str(output), result.X, attrs)
        out = zarr.open_array(str(output), mode="r")
    elif lazy is not None and lazy.is_dask:
        out = lazy.like_input(result.X if on_cluster else method.fetch(result.X))
    else:
        out = method.fetch(result.X)
        if output is not None:
            write_table(output, out)
    result.X = out
    return (out, result) if return_info else out


class CDFTS:
    """CDF Transform-and-Shift as a scikit-learn style transformer.

    Parameters are those of :func:`cdf_ts`.  After :meth:`fit`:

    * ``embedding_``: the transformed points (n x d, in [0, 1]^d);
    * ``n_iter_``: iterations run; ``deltas_``: Delta after each iteration;
    * ``converged_``: whether Delta fell to ``delta`` before ``max_iter``;
    * ``n_features_in_``.
    """

    def __init__(
        self,
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
        n_workers: int | None = None,
        dtype: str = "float64",
        backend: str = "cpu",
        verbose: bool = False,
        progress: bool | Callable[[runner.IterationReport], None] | None = None,
        security=None,
    ):
        self.lam = lam
        self.delta = delta
        self.max_iter = max_iter
        self.estimator = estimator
        self.k = k
        self.method = method
        self.client = client
        self.tile_size = tile_size
        self.checkpoint = checkpoint
        self.resume = resume
        self.n_workers = n_workers
        self.dtype = dtype
        self.backend = backend
        self.verbose = verbose
        self.security = security
        self.progress = progress

    @classmethod
    def _get_param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict:
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params) -> CDFTS:
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for estimator CDFTS; valid parameters: {valid}")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if defaults[k].default != v]
        return f"CDFTS({', '.join(changed)})"

    def fit(self, X, y=None) -> CDFTS:
        """Transform X and keep the result in ``embedding_`` (y is ignored)."""
        emb, info = cdf_ts(X, return_info=True, **self.get_params())
        self.embedding_ = emb
        self.deltas_ = list(info.deltas)
        self.n_iter_ = info.n_iter
        self.converged_ = info.converged
        self.n_features_in_ = emb.shape[1]
        return self

    def fit_transform(self, X, y=None) -> np.ndarray:
        return self.fit(X, y).embedding_


def _prepared(X, lam) -> np.ndarray:
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


__all__ = ["cdf_ts", "CDFTS", "dscale", "rescale", "is_path", "WorkersLost"]
