"""The iteration loop shared by the dense and the tiled methods: stopping, checkpoints, resume, progress."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import model as fitted
from . import oracle, paths, store
from .dask_client import lost_its_scheduler, workers_lost_errors
from .engine import Step, TiledEngine
from .log import logger
from .normalise import minmax_normalise

#: how often a run goes back to its last state outside the workers after their data was lost, then gives up
MAX_RECOVERIES = 3
#: seconds a recovery waits for at least one worker (a restarted one, or the survivors)
RECOVERY_WAIT_S = 60


@dataclass
class IterationReport:
    """Progress of one finished iteration (passed to the ``progress`` callback)."""

    iteration: int
    delta: float
    seconds: float
    n: int

    @property
    def pairs_per_second(self) -> float:
        """Pair evaluations per second, counting 2 n^2 per iteration (reference + shift pass)."""
        return 2.0 * self.n * self.n / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class RunResult:
    X: object  # the method's handle of the final positions
    deltas: list[float] = field(default_factory=list)
    converged: bool = False
    resumed_from: int | None = None
    model: fitted.CDFTSModel | None = None  # with ``keep_model=True``: the run as a model
    sample_indices: np.ndarray | None = None  # sampled fit: the rows drawn as references

    @property
    def n_iter(self) -> int:
        return len(self.deltas)


class DenseMethod:
    """The oracle, in this process."""

    #: errors that mean the data of a run was lost with its workers: none here
    lost_errors: tuple[type[BaseException], ...] = ()

    def normalise(self, X):
        return minmax_normalise(X)[0]

    def input_range(self, X) -> tuple[np.ndarray, np.ndarray]:
        return column_range(X)

    def fetch_step(self, X, info: Step) -> tuple[np.ndarray, dict]:
        """The iteration's references (its starting positions) and statistics, here."""
        return X, info.statistics

    def fingerprint(self, X) -> str:
        return store.fingerprint(X)

    def step(self, X, shape, lam, estimator, k, watch=None) -> Step:
        return oracle.cdf_ts_step(X, lam, estimator, k)  # one NumPy call: nothing to watch

    def save(self, path, t, info: Step, seconds: float) -> None:
        store.Checkpoint(path).write_iteration(t, info.X, info.statistics, _iteration_attrs(info, seconds))

    def create_store(self, path, params, fp, X0, input_range) -> None:
        store.Checkpoint.create(path, params, fp, X0, input_range)

    def load_positions(self, path, t):
        return store.Checkpoint(path).positions(t)

    def fetch(self, X) -> np.ndarray:
        return X

    def write_output(self, path, X, attrs) -> None:
        store.write_output_zarr(path, X, attrs)


def _iteration_attrs(info: Step, seconds: float) -> dict:
    return {"delta": info.delta, "m": info.m, "lo": info.lo, "hi": info.hi, "seconds": seconds}


def _save_on_worker(to_host, path, t, X, stats_name, stats, attrs):
    store.Checkpoint(path).write_iteration(t, to_host(X), {stats_name: to_host(stats)}, attrs)


def _write_output_on_worker(to_host, path, X, attrs):
    store.write_output_zarr(path, to_host(X), attrs)


def _create_on_worker(path, params, fp, X0, input_range):
    store.Checkpoint.create(path, params, fp, X0, input_range)


def column_range(X) -> tuple[np.ndarray, np.ndarray]:
    """Column minima and maxima of the raw input (``lo_0, hi_0`` of a model; host NumPy input)."""
    return np.asarray(X.min(axis=0)), np.asarray(X.max(axis=0))


def _positions_on_worker(path, t):
    return store.Checkpoint(path).positions(t)


def _normalise_on_worker(X):
    return minmax_normalise(X)[0]


class TiledMethod:
    """The Dask engine; arrays stay on the workers (on their device) as futures."""

    def __init__(self, client, tile_size=None, dtype: str = "float64", backend: str = "cpu"):
        self.client = client
        self.engine = TiledEngine(client, tile_size, dtype=dtype, backend=backend)
        self.to_host = self.engine.tasks.to_host
        self._ready = None  # the last step's positions: already in the device's form

    @property
    def lost_errors(self) -> tuple[type[BaseException], ...]:
        """What Dask raises when a run's data went with its workers
        (:func:`~cdfts_dask.dask_client.workers_lost_errors`)."""
        return workers_lost_errors()

    def lost_its_scheduler(self, exc: BaseException) -> bool:
        """Whether the lost data (``exc``) went with the client's link to its scheduler: nothing is left to
        recover on this client (:func:`~cdfts_dask.dask_client.lost_its_scheduler`)."""
        return lost_its_scheduler(self.client, exc)

    def await_workers(self, timeout: float) -> None:
        """Wait until at least one worker is there (a nanny restarts a killed one)."""
        self.client.wait_for_workers(1, timeout=timeout)

    def normalise(self, X):
        if isinstance(X, np.ndarray):  # normalised here, scattered once
            return self.engine.put(minmax_normalise(X)[0])
        return self.client.submit(_normalise_on_worker, X)

    def input_range(self, X) -> tuple[np.ndarray, np.ndarray]:
        return self.client.submit(column_range, X).result()

    def fetch_step(self, X, info: Step) -> tuple[np.ndarray, dict]:
        ((name, stats),) = info.statistics.items()
        refs, stats = self.client.gather([self.client.submit(self.to_host, a) for a in (X, stats)])
        return refs, {name: stats}

    def fingerprint(self, X) -> str:
        if isinstance(X, np.ndarray):
            return store.fingerprint(X)
        return self.client.submit(store.fingerprint, X).result()

    def step(self, X, shape, lam, estimator, k, watch=None) -> Step:
        n, d = shape
        if X is not self._ready:  # the first iteration's points (fresh or resumed)
            X = self.engine.prepare(X)
        info = self.engine.step(X, n, d, lam, estimator, k, watch=watch)
        self._ready = info.X
        return info

    def save(self, path, t, info: Step, seconds: float) -> None:
        attrs = store.jsonable(_iteration_attrs(info, seconds))
        ((name, stats),) = info.statistics.items()
        args = (self.to_host, path, t, info.X, name, stats, attrs)
        self.client.submit(_save_on_worker, *args, pure=False).result()

    def create_store(self, path, params, fp, X0, input_range) -> None:
        self.client.submit(_create_on_worker, path, params, fp, X0, input_range, pure=False).result()

    def load_positions(self, path, t):
        # not pure: the key must not be (path, t) alone, or a future still held from an earlier read of
        # that path (another store since) would be handed back instead of reading this store
        return self.client.submit(_positions_on_worker, path, t, pure=False)

    def fetch(self, X) -> np.ndarray:
        if self.engine.tasks.HOST:  # already a NumPy array on a worker
            return X.result()
        return self.client.submit(self.to_host, X).result()

    def write_output(self, path, X, attrs) -> None:
        self.client.submit(_write_output_on_worker, self.to_host, path, X, attrs, pure=False).result()


def panel_progress(description: str):
    """A ``watch(futures)`` for the engine: a tqdm bar (stderr) over the tasks as they finish."""

    def watch(futures) -> None:
        from distributed import as_completed
        from tqdm import tqdm

        with tqdm(total=len(futures), desc=description, unit="task", leave=False) as bar:
            for _ in as_completed(futures, loop=futures[0].client.loop):  # not the default client
                bar.update()

    return watch


def _recover(method, X, checkpoint, t: int, exc: BaseException) -> tuple[int, object, list[float]]:
    """Where a run goes on after its workers' data was lost during iteration ``t``.

    The data (the current positions, or the input they were computed from)
    existed on workers only; Dask cannot recompute what was scattered there.
    So the run goes back to the last state that exists outside the workers:
    the checkpoint's last complete iteration (verified, as ``--resume`` reads
    it), or, without a checkpoint, the input itself (iteration 1 again).  Every
    iteration is deterministic, so the result is the undisturbed run's.
    Returns the iteration to run next, its starting positions and the Deltas of
    the iterations before it.  The checkpoint's last iteration may be t itself
    (the save task wrote it, then its worker was lost before the client heard):
    its Delta comes from the store with the others, never from the client's list.
    """
    method.await_workers(RECOVERY_WAIT_S)  # raises TimeoutError when none comes back
    reason = str(exc).splitlines()[0][:200] if str(exc) else ""
    lost = f"workers' data lost during iteration {t} ({type(exc).__name__}: {reason})"
    if checkpoint is not None:
        ckpt = store.Checkpoint(checkpoint)
        done = ckpt.completed
        problem = ckpt.verify(done)
        if problem is not None:
            raise store.StoreDamaged(f"{lost}; checkpoint {str(checkpoint)!r}: {problem}") from exc
        logger.warning("%s; going on from iteration %d of the checkpoint %s", lost, done, checkpoint)
        return done + 1, method.load_positions(checkpoint, done), ckpt.deltas[:done]
    logger.warning("%s; starting again from the input (a checkpoint keeps finished iterations)", lost)
    return 1, method.normalise(X), []


@store.locked_checkpoint  # reliability: one run per checkpoint store at a time
def run(
    method,
    X,
    shape: tuple[int, int],
    lam: float,
    delta: float,
    max_iter: int,
    estimator: str,
    k: int | None,
    checkpoint=None,
    resume: bool = False,
    progress: Callable[[IterationReport], None] | None = None,
    dtype: str = "float64",
    progress_bar: bool = False,
    keep_model: bool = False,
    feature_names: list[str] | None = None,
    sample: dict | None = None,
) -> RunResult:
    """Iterate until ``Delta <= delta`` or iteration ``max_iter``; checkpoint and resume when asked.

    ``X`` is the raw (validated) input as a handle of ``method`` (DenseMethod or TiledMethod).  With a
    checkpoint, iteration t is written and marked complete before
    iteration t+1 starts; ``resume=True`` continues from the last complete
    iteration of an existing store (which must match input and parameters).
    Every iteration is logged (INFO, the ``cdfts_dask`` logger); ``progress_bar``
    shows the tasks of each iteration of the tiled engine as they finish.
    ``keep_model``: also return the run as a :class:`~cdfts_dask.model.CDFTSModel`
    in ``result.model`` (read back from the checkpoint when there is one, else
    each iteration's references and statistics are fetched as it finishes).
    ``sample``: for the fit of a sampled run (X its drawn rows), how they were drawn (``n_references``,
    ``rows``, ``random_state``, the ``k`` given for all rows), kept in the store so that a resume with
    another draw is refused naming the difference.
    """
    n = shape[0]
    params = {
        "lam": lam,
        "estimator": estimator,
        "k": k,
        "dtype": dtype,
        "delta": delta,
        "max_iter": max_iter,
        "feature_names": feature_names,  # the input's column names, or None; not a trajectory parameter
        "sample": sample,  # how a sampled fit drew its rows, or None (an exact fit)
    }
    fp = method.fingerprint(X) if checkpoint is not None else None
    result = RunResult(None)
    start = 1
    if checkpoint is not None and store.Checkpoint.exists(checkpoint):
        if not resume:
            raise FileExistsError(paths.existing_run(checkpoint))  # checked before any work too
        ckpt = store.Checkpoint.open_for_resume(checkpoint, params, fp, shape)  # verified; may fall back
        ckpt.reopen(params)  # "running" until this run finishes: a killed resume leaves no finished model
        done = ckpt.completed
        stop = ckpt.stored_stop(delta, max_iter)  # where this run would stop, if the store already holds it
        result.deltas = ckpt.deltas[: done if stop is None else stop]
        result.resumed_from = done
        if stop is None:
            logger.info("resuming %s after iteration %d", checkpoint, done)
        else:  # not "resuming after iteration done": nothing runs, iteration stop is returned
            logger.info("%s already holds iteration %d, where this run stops: nothing to run", checkpoint,
                        stop)  # fmt: skip
        Xt = method.load_positions(checkpoint, done if stop is None else stop)
        start = done + 1
        if stop is not None:
            result.X, result.converged = Xt, bool(result.deltas) and result.deltas[-1] <= delta
            ckpt.finish("converged" if result.converged else "max_iter", stop)  # the store's model: 1..stop
            if keep_model:
                result.model = fitted.load(checkpoint, n_iter=stop)
            return result
    else:
        input_range = method.input_range(X) if (checkpoint is not None or keep_model) else None
        Xt = method.normalise(X)
        if checkpoint is not None:
            method.create_store(checkpoint, params, fp, Xt, input_range)
    run_tic = time.perf_counter()
    iterations = []
    recoveries = 0
    t = start
    while t <= max_iter:
        tic = time.perf_counter()
        watch = panel_progress(f"iteration {t}") if progress_bar else None
        try:
            info = method.step(Xt, shape, lam, estimator, k, watch=watch)
            seconds = time.perf_counter() - tic
            if checkpoint is not None:
                method.save(checkpoint, t, info, seconds)
            elif keep_model:
                refs, stats = method.fetch_step(Xt, info)
                iterations.append(fitted.iteration_of(refs, stats, info.m, info.lo, info.hi, lam, k, dtype))
        except method.lost_errors as exc:
            recoveries += 1
            if recoveries > MAX_RECOVERIES or method.lost_its_scheduler(exc):
                raise
            t, Xt, result.deltas = _recover(method, X, checkpoint, t, exc)
            del iterations[t - 1 :]  # the iterations to be run again
            if result.deltas and result.deltas[-1] <= delta:  # the run converged at the stored iteration
                result.converged = True
                break
            continue
        Xt = info.X
        result.deltas.append(info.delta)
        report = IterationReport(t, info.delta, seconds, n)
        logger.info(
            "iteration %d: Delta %.6f, %.2f s, %.3g pairs/s", t, info.delta, seconds, report.pairs_per_second
        )
        if progress is not None:
            progress(report)
        if info.delta <= delta:
            result.converged = True
            break
        t += 1
    logger.info(
        "%s after %d iteration(s) (Delta %.6f) in %.2f s",
        f"converged (Delta <= {delta})" if result.converged else f"stopped at max_iter = {max_iter}",
        len(result.deltas), result.deltas[-1], time.perf_counter() - run_tic,
    )  # fmt: skip
    if checkpoint is not None:
        status = "converged" if result.converged else "max_iter"
        store.Checkpoint(checkpoint).finish(status, len(result.deltas))  # the iteration returned
    if keep_model:
        result.model = (
            fitted.load(checkpoint)
            if checkpoint is not None
            else fitted.CDFTSModel(*input_range, iterations, lam, estimator, k, dtype,
                                   outputs=np.array(method.fetch(Xt), dtype=dtype),  # a copy: not result.X
                                   feature_names=feature_names)
        )
    result.X = Xt
    return result
