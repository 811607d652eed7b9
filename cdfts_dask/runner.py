"""The iteration loop shared by the dense and the tiled methods: stopping, checkpoints, resume, progress."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import oracle, store
from .engine import Step, TiledEngine
from .log import logger
from .normalise import minmax_normalise


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

    @property
    def n_iter(self) -> int:
        return len(self.deltas)


class DenseMethod:
    """The oracle, in this process."""

    def put(self, X: np.ndarray):
        return X

    def normalise(self, X):
        return minmax_normalise(X)[0]

    def fingerprint(self, X) -> str:
        return store.fingerprint(X)

    def step(self, X, shape, lam, estimator, k, watch=None) -> Step:
        return oracle.cdf_ts_step(X, lam, estimator, k)  # one NumPy call: nothing to watch

    def save(self, path, t, info: Step, seconds: float) -> None:
        store.Checkpoint(path).write_iteration(t, info.X, info.statistics, _iteration_attrs(info, seconds))

    def create_store(self, path, params, fp, X0) -> None:
        store.Checkpoint.create(path, params, fp, X0)

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


def _create_on_worker(path, params, fp, X0):
    store.Checkpoint.create(path, params, fp, X0)


def _positions_on_worker(path, t):
    return store.Checkpoint(path).positions(t)


def _normalise_on_worker(X):
    return minmax_normalise(X)[0]


class TiledMethod:
    """The Dask engine; arrays stay on the workers (on their device) as futures."""

    def __init__(self, client, tile_size=None, dtype: str = "float64", device: str = "cpu"):
        self.client = client
        self.engine = TiledEngine(client, tile_size, dtype=dtype, device=device)
        self.to_host = self.engine.tasks.to_host
        self._ready = None  # the last step's positions: already in the device's form

    def put(self, X):
        """NumPy points stay here until :meth:`normalise` scatters them normalised; a future (input
        the workers read) is used as it is."""
        return X

    def normalise(self, X):
        if isinstance(X, np.ndarray):  # normalised here, scattered once
            return self.engine.put(minmax_normalise(X)[0])
        return self.client.submit(_normalise_on_worker, X)

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
        attrs = store._jsonable(_iteration_attrs(info, seconds))
        ((name, stats),) = info.statistics.items()
        self.client.submit(_save_on_worker, self.to_host, path, t, info.X, name, stats, attrs).result()

    def create_store(self, path, params, fp, X0) -> None:
        self.client.submit(_create_on_worker, path, params, fp, X0).result()

    def load_positions(self, path, t):
        return self.client.submit(_positions_on_worker, path, t)

    def fetch(self, X) -> np.ndarray:
        if self.engine.tasks.HOST:  # already a NumPy array on a worker
            return X.result()
        return self.client.submit(self.to_host, X).result()

    def write_output(self, path, X, attrs) -> None:
        self.client.submit(_write_output_on_worker, self.to_host, path, X, attrs).result()


def panel_progress(description: str):
    """A ``watch(futures)`` for the engine: a tqdm bar (stderr) over the tasks as they finish."""

    def watch(futures) -> None:
        from distributed import as_completed
        from tqdm import tqdm

        with tqdm(total=len(futures), desc=description, unit="task", leave=False) as bar:
            for _ in as_completed(futures, loop=futures[0].client.loop):  # not the default client
                bar.update()

    return watch


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
) -> RunResult:
    """Iterate until ``Delta <= delta`` or iteration ``max_iter``; checkpoint and resume when asked.

    ``X`` is the raw (validated) input as a handle of ``method`` (DenseMethod or TiledMethod).  With a
    checkpoint, iteration t is written and marked complete before
    iteration t+1 starts; ``resume=True`` continues from the last complete
    iteration of an existing store (which must match input and parameters).
    Every iteration is logged (INFO, the ``cdfts_dask`` logger); ``progress_bar``
    shows the tasks of each iteration of the tiled engine as they finish.
    """
    n = shape[0]
    params = {
        "lam": lam,
        "estimator": estimator,
        "k": k,
        "dtype": dtype,
        "delta": delta,
        "max_iter": max_iter,
    }
    fp = method.fingerprint(X) if checkpoint is not None else None
    result = RunResult(None)
    start = 1
    if checkpoint is not None and store.Checkpoint.exists(checkpoint):
        if not resume:
            raise FileExistsError(
                f"checkpoint {str(checkpoint)!r} already exists; pass resume=True (--resume) to continue it, "
                "or choose another path"
            )
        ckpt = store.Checkpoint.open_for_resume(checkpoint, params, fp)  # verified; may fall back, or refuse
        done = ckpt.completed
        stop = ckpt.stored_stop(delta, max_iter)  # where this run would stop, if the store already holds it
        result.deltas = ckpt.deltas[: done if stop is None else stop]
        result.resumed_from = done
        logger.info("resuming %s after iteration %d", checkpoint, done)
        Xt = method.load_positions(checkpoint, done if stop is None else stop)
        start = done + 1
        if stop is not None:
            result.X, result.converged = Xt, bool(result.deltas) and result.deltas[-1] <= delta
            return result
    else:
        Xt = method.normalise(X)
        if checkpoint is not None:
            method.create_store(checkpoint, params, fp, Xt)
    run_tic = time.perf_counter()
    for t in range(start, max_iter + 1):
        tic = time.perf_counter()
        watch = panel_progress(f"iteration {t}") if progress_bar else None
        info = method.step(Xt, shape, lam, estimator, k, watch=watch)
        seconds = time.perf_counter() - tic
        if checkpoint is not None:
            method.save(checkpoint, t, info, seconds)
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
    logger.info(
        "%s after %d iteration(s) (Delta %.6f) in %.2f s",
        f"converged (Delta <= {delta})" if result.converged else f"stopped at max_iter = {max_iter}",
        len(result.deltas), result.deltas[-1], time.perf_counter() - run_tic,
    )  # fmt: skip
    if checkpoint is not None:
        store.Checkpoint(checkpoint).finish("converged" if result.converged else "max_iter")
    result.X = Xt
    return result
