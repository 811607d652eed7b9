"""One CDF-TS iteration with the fused CPU kernels, submitted as a single Dask graph.

Passes (each a set of panel tasks; futures feed futures, so the client waits
only once per iteration, for a few scalars):

1. diameter: bounding-box pruned candidates, then the largest ``sq`` over
   candidate pairs in triangle-balanced panels; ``m = sqrt(max sq)``;
2. reference: epsilon counts over the upper triangle (each unordered pair
   once, counted for both points) or the k-th neighbour distance per row;
3. shift: per target panel, A and ``B = rho^T X`` fused over all references;
4. finish: column range (tree), normalisation, ``sum |X_new - X_old|``.

Sizing.  The kernels' working set is a ``BLOCK`` of 256 targets (coordinates,
accumulators, two buffers: ``(2 d + 4) 256`` values, within L1/L2).  Panel
rows only set the task granularity: about four tasks per worker thread, each
at least 64 rows, at most 4096; the k-NN large-k fallback holds a
``rows x n`` panel, kept under ``KNN_PANEL_BYTES``.  ``tile_size`` overrides
the panel rows.
"""

from __future__ import annotations

import math

import numpy as np

from . import engine as eng
from . import fused, passes
from . import fused_passes as fp

KNN_PANEL_BYTES = 64 * 2**20
TASKS_PER_WORKER = 4


def panel_rows(n: int, workers: int, tile_size: int | None) -> int:
    """Rows per panel task (the ``tile_size`` override, else from n and the worker count)."""
    if tile_size:
        return max(1, min(n, tile_size))
    return max(1, min(n, max(64, min(4096, math.ceil(n / (TASKS_PER_WORKER * workers))))))


def _diameter_part(X, cand_pair, i: int, parts: int) -> float:
    L, cand = cand_pair
    spans = fp.triangle_panels(len(cand), parts)
    if i >= len(spans):
        return L
    a, b = spans[i]
    return fp.panel_max_sq(X, cand, a, b)


def _diameter(cand_pair, *maxima) -> float:
    return fp.diameter_from(cand_pair[0], *maxima)


def _threshold(m: float, lam: float) -> float:
    return float(fused.sq_thresholds(m, lam)[0]) if m > 0 else 0.0


def _counts_part(X, a: int, b: int, T: float, m: float, dtype: str):
    if m == 0:  # all points coincide: every point is in every neighbourhood
        n = np.shape(X)[0]
        out = np.zeros(n, dtype=np.int64)
        out[a:b] = n
        return out
    return fp.panel_counts(X, a, b, T, dtype)


def _nb_epsilon(counts, n: int, d: int, lam: float):
    return eng._neighbourhood_from_counts(counts, n, d, lam)


def _kth_part(X, a: int, b: int, k: int):
    return fp.panel_kth_distance(X, a, b, k)


def _nb_knn(m: float, n: int, d: int, k: int, *kth):
    return eng._neighbourhood_from_kth(np.concatenate(kth), m, n, d, k)


def _plan(X, m: float, nb, dtype: str):
    if m == 0:
        return None
    return fp.shift_plan(X, m, nb[0], nb[1], dtype)


def _shift_part(X, a: int, b: int, plan, dtype: str):
    if plan is None:  # all points coincide: nothing moves
        return fp.as64(fp.cast(X, dtype)[a:b])
    return fp.panel_shift(X, a, b, plan, dtype)


def _normalise_part(Y, X, a: int, b: int, lohi, dtype: str):
    Z, _ = passes.normalise_panel(Y, X, a, b, lohi[0], lohi[1])
    Z = Z.astype(dtype, copy=False)
    old = fp.cast(X[a:b], dtype)
    return Z, float(np.abs(Z.astype(np.float64) - old.astype(np.float64)).sum())


def _sum(*values) -> float:
    return float(sum(values))


def step(engine, X, n: int, d: int, lam: float, estimator: str, k: int | None) -> eng.TiledStep:
    """Submit the whole iteration, then gather ``(sum |dX|, m, lo, hi)``."""
    c = engine.client
    dtype = engine.dtype
    workers = engine.workers()
    rows = panel_rows(n, workers, engine.tile_size)
    parts = eng.panels(n, rows)
    nparts = len(parts)
    if dtype != "float64":  # every pass, the diameter and k-NN included, sees the rounded points
        X = c.submit(fp.cast, X, dtype)
    cand = c.submit(fp.diameter_candidates, X)
    dparts = max(1, min(nparts, 2 * workers))
    maxima = [c.submit(_diameter_part, X, cand, i, dparts) for i in range(dparts)]
    m = c.submit(_diameter, cand, *maxima)
    if estimator == "epsilon":
        T = c.submit(_threshold, m, lam)
        tri = fp.triangle_panels(n, nparts)
        counts = eng.tree_reduce(
            c, fp.sum_counts, [c.submit(_counts_part, X, a, b, T, m, dtype) for a, b in tri]
        )
        stats = counts
        nb = c.submit(_nb_epsilon, counts, n, d, lam)
    else:
        knn_rows = rows if k + 1 <= 64 else max(1, min(rows, KNN_PANEL_BYTES // (8 * n)))
        kth = [c.submit(_kth_part, X, a, b, k) for a, b in eng.panels(n, knn_rows)]
        nb = c.submit(_nb_knn, m, n, d, k, *kth)
        stats = c.submit(eng._first, nb)
    plan = c.submit(_plan, X, m, nb, dtype)
    shifted = [c.submit(_shift_part, X, a, b, plan, dtype) for a, b in parts]
    lohi = eng.tree_reduce(c, eng._combine_ranges, [c.submit(passes.column_range, Y) for Y in shifted])
    finished = [
        c.submit(_normalise_part, Y, X, a, b, lohi, dtype) for Y, (a, b) in zip(shifted, parts, strict=True)
    ]
    abs_sum = eng.tree_reduce(c, _sum, [c.submit(eng._second, f) for f in finished])
    X_new = c.submit(eng._concat, *[c.submit(eng._first, f) for f in finished])
    total, m_value, (lo, hi) = c.gather([abs_sum, m, lohi])
    name = "counts" if estimator == "epsilon" else "radius"
    return eng.TiledStep(
        X_new, stats, name, float(total) / (n * d), float(m_value), np.asarray(lo), np.asarray(hi)
    )
