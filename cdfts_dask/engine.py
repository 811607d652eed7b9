"""The Dask engine: one CDF-TS iteration as passes of panel tasks.

:class:`TiledEngine` runs the fused numba kernels on CPU workers
(:mod:`cdfts_dask.fused_engine`, the default) or the array-API passes on
CuPy workers (:mod:`cdfts_dask.gpu`).  :meth:`TiledEngine.step_xp`, below,
is the plain array-API version of the same iteration (NumPy or CuPy), kept
as the readable reference of the tiling.  On points X (n x d, one copy per
worker) it runs

1. **diameter pass** (epsilon estimator): ``m = max S`` over the upper
   triangle of the pair space, reduced as a tree;
2. **reference pass**: per-point neighbourhood statistics, ``c(z)``
   (epsilon) or the k-th neighbour radius (k-NN, which also yields m);
3. **shift pass**: for every target panel, the column sums of rho and
   ``rho^T X`` streamed over reference chunks, giving the shifted rows;
4. a tiny O(n d) finish: global column range (tree reduction), per-panel
   normalisation and ``sum |X_new - X_old|``.

Every pass has ``P = ceil(n / tile_size)`` tasks, each over one panel of
``tile_size`` rows, plus O(P / 8) tree-reduction tasks and a few tiny
bookkeeping tasks: about 7.5 P tasks per iteration (measured: n = 6400,
tile_size = 100 gives 472 tasks for epsilon, 536 for k-NN), so the graph
grows linearly in n / tile_size, never quadratically.  No task holds more
than about ``tile_size^2`` pair values (the k-NN pass handles its panel in
sub-panels of ``tile_size^2 // n`` full rows).  Only scalars and d-vectors
travel back to the client.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import passes
from .kernels import to_host

DEFAULT_TILE_SIZE = 1024
FAN_IN = 8


def default_tile_size(n: int) -> int:
    """Points per tile side: 1024 (8 MiB float64 temporaries), never more than n."""
    return max(1, min(n, DEFAULT_TILE_SIZE))


def panels(n: int, rows: int) -> list[tuple[int, int]]:
    return list(passes.chunks(0, n, rows))


def _max(*values):
    return max(values)


def _combine_ranges(*ranges):
    from .kernels import namespace

    xp = namespace(ranges[0][0])
    lo = xp.min(xp.stack([r[0] for r in ranges]), axis=0)
    hi = xp.max(xp.stack([r[1] for r in ranges]), axis=0)
    return lo, hi


def _concat(*parts):
    from .kernels import namespace

    return namespace(parts[0]).concatenate(parts)


def _neighbourhood_from_counts(counts, n: int, d: int, lam: float):
    counts = np.asarray(counts)
    return np.full(n, lam), (counts / n) ** (1.0 / d)


def _neighbourhood_from_kth(kth, m: float, n: int, d: int, k: int):
    kth = np.asarray(kth)
    radius = kth / m if m > 0 else kth
    return radius, np.full(n, (k / n) ** (1.0 / d))


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def tree_reduce(client, func, futures: list, fan_in: int = FAN_IN):
    """Reduce futures with ``func(*group)`` in a tree of fan-in ``fan_in``."""
    while len(futures) > 1:
        futures = [client.submit(func, *futures[i : i + fan_in]) for i in range(0, len(futures), fan_in)]
    return futures[0]


@dataclass
class TiledStep:
    """What one engine iteration leaves behind: futures for the arrays, plain numbers for the rest."""

    X: object  # future of the new normalised positions (n x d)
    stats: object  # future of counts (epsilon) or radii (k-NN)
    stats_name: str
    delta: float
    m: float
    lo: np.ndarray
    hi: np.ndarray


class TiledEngine:
    """Runs CDF-TS iterations as panel tasks on a ``distributed.Client``.

    ``backend="numpy"`` (default) runs the fused numba kernels of
    :mod:`cdfts_dask.fused` (``dtype`` float64, or float32 with exact
    neighbourhoods); ``backend="cupy"`` runs the xp-generic kernels of
    :mod:`cdfts_dask.passes` on CuPy arrays held on the GPU workers.
    """

    def __init__(
        self,
        client,
        tile_size: int | None = None,
        dtype: str = "float64",
        backend: str = "numpy",
        symmetric: bool = False,
    ):
        self.client = client
        self.symmetric = symmetric
        self.tile_size = tile_size
        self.dtype = dtype
        self.backend = backend

    def tile(self, n: int) -> int:
        return min(n, self.tile_size) if self.tile_size else default_tile_size(n)

    def workers(self) -> int:
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:  # pragma: no cover - exotic clients
            return 1

    def step(
        self, X, n: int, d: int, lam: float, estimator: str, k: int | None, *, timings: dict | None = None
    ) -> TiledStep:
        """One iteration on the future ``X``; returns the new positions as a future.

        ``timings``: when a dict, per-pass seconds are recorded in it (benchmarks).
        """
        if self.backend == "cupy":
            from . import gpu

            return gpu.step(self, X, n, d, lam, estimator, k)
        if self.backend != "numpy":
            raise ValueError(f"backend must be 'numpy' or 'cupy', got {self.backend!r}")
        return fused_engine.step(self, X, n, d, lam, estimator, k, timings=timings)

    def step_xp(self, X, n: int, d: int, lam: float, estimator: str, k: int | None) -> TiledStep:
        """The xp-generic (NumPy or CuPy) unfused iteration of :mod:`cdfts_dask.passes`."""
        c = self.client
        tile = self.tile(n)
        parts = panels(n, tile)
        if estimator == "epsilon":
            maxima = [c.submit(passes.panel_max_distance, X, a, b, tile) for a, b in parts]
            m = float(tree_reduce(c, _max, maxima).result())
            counts = [c.submit(passes.panel_counts, X, a, b, tile, m, lam) for a, b in parts]
            stats = c.submit(_concat, *counts)
            nb = c.submit(_neighbourhood_from_counts, stats, n, d, lam)
        else:
            kth = [c.submit(passes.panel_kth_distance, X, a, b, k, tile * tile) for a, b in parts]
            m = float(tree_reduce(c, _max, [c.submit(_second, f) for f in kth]).result())
            kth_all = c.submit(_concat, *[c.submit(_first, f) for f in kth])
            nb = c.submit(_neighbourhood_from_kth, kth_all, m, n, d, k)
            stats = c.submit(_first, nb)
        radius, q = c.submit(_first, nb), c.submit(_second, nb)
        shifted = [c.submit(passes.panel_shift, X, a, b, tile, m, radius, q) for a, b in parts]
        ranges = [c.submit(passes.column_range, Y) for Y in shifted]
        lo, hi = (to_host(v) for v in tree_reduce(c, _combine_ranges, ranges).result())
        finished = [
            c.submit(passes.normalise_panel, Y, X, a, b, lo, hi)
            for Y, (a, b) in zip(shifted, parts, strict=True)
        ]
        abs_sum = sum(c.gather([c.submit(_second, f) for f in finished]))
        X_new = c.submit(_concat, *[c.submit(_first, f) for f in finished])
        return TiledStep(
            X_new, stats, "counts" if estimator == "epsilon" else "radius", abs_sum / (n * d), m, lo, hi
        )


from . import fused_engine  # noqa: E402  (uses the helpers above)
