"""One CDF-TS iteration with the fused CPU kernels, submitted as a single Dask graph.

Passes (each a set of panel tasks; futures feed futures, so the client waits
only once per iteration, for a few scalars):

1. diameter: the largest ``sq`` over pairs of k-d blocks whose bounding
   boxes can beat the running maximum (one task up to n = 4096, else
   ``2 x workers`` triangle-balanced parts); ``m = sqrt(max sq)``;
2. reference: epsilon counts over the upper triangle (each unordered pair
   once, counted for both points) or the k-th neighbour distance per row;
3. shift: A and ``B = rho^T X`` fused with the distances, per target panel
   over all references (O(panel) outputs).  Every target sums its terms in
   the same order (references 0..n-1), so duplicate points stay bit-identical
   duplicates, as in the oracle.  ``TiledEngine(symmetric=True)`` instead
   visits unordered pairs once (one ``sq`` and one ``1 / sqrt(sq)`` serve
   rho(z, y) and rho(y, z); ~1.25x faster in float64 on a 2-core AVX-512
   machine, ~1.05x in float32) but sums each target in a different order:
   duplicates then drift apart by an ulp, which under k-NN with duplicates
   turns radius 0 into ~1e-17 and rho into ~1e16 (ill-conditioned), so it is
   opt-in, not the default;
4. finish (one O(n d) task): column range, normalisation, ``sum |X_new - X_old|``.

Sizing.  The kernels' working set is a ``BLOCK`` of 256 targets (coordinates,
accumulators, two buffers: ``(2 d + 4) 256`` values, within L1/L2).  Panel
rows only set the task granularity: about four tasks per worker thread, each
at least 256 rows, at most 4096, so every pass has O(n / 4096 + workers)
tasks; the k-NN large-k fallback works through its panel in sub-panels of
full rows of ``sq`` kept under ``KNN_PANEL_BYTES``.  ``tile_size``
overrides the panel rows.
"""

from __future__ import annotations

import math
import time

import numpy as np
from distributed import wait

from . import engine as eng
from . import fused
from . import fused_passes as fp
from .normalise import column_span

KNN_PANEL_BYTES = 64 * 2**20
TASKS_PER_WORKER = 4
MIN_ROWS = 256


def panel_rows(n: int, workers: int, tile_size: int | None) -> int:
    """Rows per panel task (the ``tile_size`` override, else from n and the worker count)."""
    if tile_size:
        return max(1, min(n, tile_size))
    return max(1, min(n, max(MIN_ROWS, min(4096, math.ceil(n / (TASKS_PER_WORKER * workers))))))


#: up to this n the diameter is one task (n^2 / 2 sq at most, ~10 ms); above, 2 parts per worker
DIAMETER_SINGLE_MAX_N = 4096


def _diameter(*maxima) -> float:
    """``m = sqrt(max sq)`` over the parts' maxima (each at least a true pair's sq)."""
    return fp.diameter_from(0.0, *maxima)


def _counts_part(X, a: int, b: int, m: float, lam: float, dtype: str):
    n = np.shape(X)[0]
    if m == 0:  # all points coincide: every point is in every neighbourhood
        out = np.zeros(n, dtype=np.int64)
        out[a:b] = n
        return out
    return fp.panel_counts(X, a, b, float(fused.sq_thresholds(m, lam)[0]), dtype)


def _kth_part(X, a: int, b: int, k: int):
    return fp.panel_kth_distance(X, a, b, k, KNN_PANEL_BYTES)


def _plan_epsilon(X, m: float, lam: float, dtype: str, *count_parts):
    n, d = np.shape(X)
    counts = fp.sum_counts(*count_parts)
    radius, q = eng._neighbourhood_from_counts(counts, n, d, lam)
    return (fp.shift_plan(X, m, radius, q, dtype) if m > 0 else None), counts


def _plan_knn(X, m: float, k: int, dtype: str, *kth):
    n, d = np.shape(X)
    radius, q = eng._neighbourhood_from_kth(np.concatenate(kth), m, n, d, k)
    return (fp.shift_plan(X, m, radius, q, dtype) if m > 0 else None), radius


def _shift_part(X, a: int, b: int, plan_stats, dtype: str):
    plan = plan_stats[0]
    if plan is None:  # all points coincide: nothing moves
        return fp.as64(fp.cast(X, dtype)[a:b])
    return fp.panel_shift(X, a, b, plan, dtype)


def _normalised(Y, X, dtype: str):
    """Min-max normalise the shifted points; ``(X_new, sum |X_new - X_old|, lo, hi)`` (O(n d))."""
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    Z = ((Y - lo) / column_span(lo, hi)).astype(dtype, copy=False)
    total = float(np.abs(Z.astype(np.float64) - fp.as64(fp.cast(X, dtype))).sum())
    return Z, total, lo, hi


def _finish(X, dtype: str, *shifted):
    """Normalise the concatenated target panels (row-panel shift)."""
    return _normalised(np.concatenate(shifted), X, dtype)


def _sym_part(X, a: int, b: int, plan_stats, dtype: str):
    plan = plan_stats[0]
    if plan is None:
        return None
    return fp.panel_shift_symmetric(X, a, b, plan, dtype)


def _sum_partials(*parts):
    return None if parts[0] is None else fp.sum_partials(*parts)


def _finish_symmetric(X, plan_stats, dtype: str, partials):
    """Normalise the points shifted with the summed symmetric partials."""
    plan = plan_stats[0]
    if plan is None:  # all points coincide: nothing moves
        return _normalised(fp.as64(fp.cast(X, dtype)), X, dtype)
    return _normalised(fp.shifted_from_partials(X, plan, partials, dtype), X, dtype)


def _summary(fin):
    return fin[1:]


def step(
    engine, X, n: int, d: int, lam: float, estimator: str, k: int | None, timings: dict | None = None
) -> eng.TiledStep:
    """Submit the whole iteration (six task levels), then gather ``(sum |dX|, lo, hi)`` and m.

    With ``timings`` (benchmarks only) the client also waits after the
    reference pass and records ``timings["reference"]`` and ``timings["shift"]``
    (seconds; the shift figure includes the O(n d) finish).
    """
    tic = time.perf_counter()
    c = engine.client
    dtype = engine.dtype
    workers = engine.workers()
    addresses = sorted(c.scheduler_info()["workers"]) or [None]

    def on(i: int) -> dict:
        """Round-robin placement of panel i (equal-work panels): locality heuristics would pile
        tasks onto the worker holding a small shared input (m, the plan)."""
        addr = addresses[i % len(addresses)]
        return {} if addr is None else {"workers": [addr], "allow_other_workers": True}

    rows = panel_rows(n, workers, engine.tile_size)
    parts = eng.panels(n, rows)
    nparts = len(parts)
    if dtype != "float64":  # every pass, the diameter and k-NN included, sees the rounded points
        X = c.submit(fp.cast, X, dtype)
    dparts = 1 if n <= DIAMETER_SINGLE_MAX_N else 2 * len(addresses)
    m = c.submit(_diameter, *[c.submit(fp.diameter_blocks, X, i, dparts, **on(i)) for i in range(dparts)])
    if estimator == "epsilon":
        tri = fp.triangle_panels(n, nparts)
        counts = [c.submit(_counts_part, X, a, b, m, lam, dtype, **on(i)) for i, (a, b) in enumerate(tri)]
        plan = c.submit(_plan_epsilon, X, m, lam, dtype, *counts)
    else:
        kth = [c.submit(_kth_part, X, a, b, k, **on(i)) for i, (a, b) in enumerate(parts)]
        plan = c.submit(_plan_knn, X, m, k, dtype, *kth)
    stats = c.submit(eng._second, plan)
    if timings is not None:
        wait([plan])
        timings["reference"] = time.perf_counter() - tic
        tic = time.perf_counter()
    if engine.symmetric:
        tri = fp.triangle_panels(n, nparts)
        partials = eng.tree_reduce(
            c, _sum_partials, [c.submit(_sym_part, X, a, b, plan, dtype) for a, b in tri]
        )
        fin = c.submit(_finish_symmetric, X, plan, dtype, partials)
    else:
        shifted = [c.submit(_shift_part, X, a, b, plan, dtype, **on(i)) for i, (a, b) in enumerate(parts)]
        fin = c.submit(_finish, X, dtype, *shifted)
    X_new = c.submit(eng._first, fin)
    (total, lo, hi), m_value = c.gather([c.submit(_summary, fin), m])
    if timings is not None:
        timings["shift"] = time.perf_counter() - tic
    name = "counts" if estimator == "epsilon" else "radius"
    return eng.TiledStep(X_new, stats, name, total / (n * d), float(m_value), np.asarray(lo), np.asarray(hi))
