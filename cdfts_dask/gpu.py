"""GPU backend: one CDF-TS iteration on CuPy arrays held by ``dask_cuda`` workers.

UNVERIFIED: written without access to a GPU; ``tests/test_gpu.py`` exercises it
where CuPy and a CUDA device exist.

The points stay on the device between passes and iterations; only scalars,
d-vectors and (for checkpoints and the final result) the n x d positions are
copied to the host.  The tile math is the xp-generic code of
:mod:`cdfts_dask.kernels` (distances summed column by column as separate
element-wise kernels, so NVRTC cannot contract them into FMAs and every
``sq`` is bit-identical to the oracle's), plus:

* membership as ``sq <= T`` with the exact threshold of
  :func:`cdfts_dask.fused.sq_thresholds` (computed on the host, 64 steps);
* one ``ElementwiseKernel`` for rho per tile (inside: r(z); outside:
  ``a(z) + b(z) m / sqrt(sq)``; 1 where sq = 0);
* the accumulation ``A += rho.sum(0)``, ``B += rho^T Z`` as a cuBLAS GEMM.

Tiles are ``tile_size^2`` float64 values (default 4096: 128 MiB per tile).
float64 only.
"""

from __future__ import annotations

import numpy as np

from . import engine as eng
from . import fused
from . import fused_passes as fp
from .kernels import namespace, sq_distances, to_host
from .normalise import column_span
from .passes import chunks

GPU_TILE = 4096

_RHO_SOURCE = """
double v = sq;
double out = a + bm / sqrt(v);
double r = (v <= T) ? rin : out;
rho = (v == 0.0) ? 1.0 : r;
"""
_rho_kernel = None


def _rho(sq, T, rin, a, bm):
    """rho for a (refs x targets) tile of sq; per-ref constants are column vectors."""
    global _rho_kernel
    import cupy

    if _rho_kernel is None:
        _rho_kernel = cupy.ElementwiseKernel(
            "float64 sq, float64 T, float64 rin, float64 a, float64 bm",
            "float64 rho",
            _RHO_SOURCE,
            "cdfts_rho",
        )
    return _rho_kernel(sq, T, rin, a, bm)


def to_device(X):
    """A CuPy float64 copy of X (X itself when it already is one)."""
    import cupy

    return cupy.ascontiguousarray(cupy.asarray(X, dtype=cupy.float64))


def panel_max_sq(X, start: int, stop: int, tile: int) -> float:
    """Largest ``sq`` between a panel row and any point at index >= start (upper triangle)."""
    best = 0.0
    for lo, hi in chunks(start, X.shape[0], tile):
        best = max(best, float(sq_distances(X[start:stop], X[lo:hi]).max()))
    return best


def panel_counts(X, start: int, stop: int, tile: int, T: float):
    xp = namespace(X)
    counts = xp.zeros(stop - start, dtype=xp.int64)
    for lo, hi in chunks(0, X.shape[0], tile):
        counts += xp.count_nonzero(sq_distances(X[start:stop], X[lo:hi]) <= T, axis=1)
    return to_host(counts)


def panel_kth(X, start: int, stop: int, k: int, budget: int):
    """Distance from each panel row to its k-th nearest other point, in sub-panels of ``budget // n`` rows.

    The task holds at most about ``budget`` squared distances whatever n and k
    are; sqrt is monotone, so selecting on ``sq`` picks the oracle's element.
    """
    xp = namespace(X)
    n = X.shape[0]
    out = xp.empty(stop - start, dtype=X.dtype)
    for lo, hi in chunks(start, stop, max(1, budget // n)):
        sq = sq_distances(X[lo:hi], X)
        out[lo - start : hi - start] = xp.sqrt(xp.partition(sq, k, axis=1)[:, k])
    return to_host(out)


def device_plan(X, m: float, radius, q):
    """The shift plan of :func:`cdfts_dask.fused_passes.shift_plan` with per-ref arrays on the device."""
    import cupy

    n, d = X.shape
    plan = fp.shift_plan(np.zeros((1, d)), m, radius, q, "float64")
    return {
        "T": cupy.asarray(plan.T), "rin": cupy.asarray(plan.rin), "a": cupy.asarray(plan.a),
        "bm": cupy.asarray(plan.bm), "mean": X.mean(axis=0),
    }  # fmt: skip


def panel_shift(X, start: int, stop: int, tile: int, plan):
    """Shifted (not normalised) targets ``X[start:stop]``, on the device."""
    xp = namespace(X)
    n = X.shape[0]
    Y = X[start:stop]
    if plan is None:
        return Y.copy()
    A = xp.zeros(stop - start)
    B = xp.zeros_like(Y)
    for lo, hi in chunks(0, n, tile):
        Z = X[lo:hi]
        col = (slice(lo, hi), None)
        rho = _rho(sq_distances(Z, Y), plan["T"][col], plan["rin"][col], plan["a"][col], plan["bm"][col])
        A += rho.sum(axis=0)
        B += rho.T @ Z
    return plan["mean"] + Y * (A / n)[:, None] - B / n


def _diameter(*maxima) -> float:
    return float(np.sqrt(max(maxima)))


def _plan_epsilon(X, m: float, lam: float, *counts):
    n, d = X.shape
    c = np.concatenate(counts)
    radius, q = eng._neighbourhood_from_counts(c, n, d, lam)
    return (device_plan(X, m, radius, q) if m > 0 else None), c


def _plan_knn(X, m: float, k: int, *kth):
    n, d = X.shape
    radius, q = eng._neighbourhood_from_kth(np.concatenate(kth), m, n, d, k)
    return (device_plan(X, m, radius, q) if m > 0 else None), radius


def _counts_or_all(X, a: int, b: int, tile: int, m: float, lam: float):
    if m == 0:
        return np.full(b - a, X.shape[0], dtype=np.int64)
    return panel_counts(X, a, b, tile, float(fused.sq_thresholds(m, lam)[0]))


def _shift(X, a: int, b: int, tile: int, plan_stats):
    return panel_shift(X, a, b, tile, plan_stats[0])


def _finish(X, *shifted):
    xp = namespace(X)
    Y = xp.concatenate(shifted)
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    Z = (Y - lo) / column_span(lo, hi)
    return Z, float(xp.abs(Z - X).sum()), to_host(lo), to_host(hi)


def _summary(fin):
    return fin[1:]


def step(engine, X, n: int, d: int, lam: float, estimator: str, k: int | None) -> eng.TiledStep:
    """One iteration on the GPU workers (same graph shape as :mod:`cdfts_dask.fused_engine`)."""
    if engine.dtype != "float64":
        raise ValueError(f"backend='cupy' supports dtype='float64' only, got dtype={engine.dtype!r}")
    c = engine.client
    tile = min(n, engine.tile_size or GPU_TILE)
    parts = eng.panels(n, tile)
    X = c.submit(to_device, X)
    m = c.submit(_diameter, *[c.submit(panel_max_sq, X, a, b, tile) for a, b in parts])
    if estimator == "epsilon":
        counts = [c.submit(_counts_or_all, X, a, b, tile, m, lam) for a, b in parts]
        plan = c.submit(_plan_epsilon, X, m, lam, *counts)
    else:
        kth = [c.submit(panel_kth, X, a, b, k, tile * tile) for a, b in parts]
        plan = c.submit(_plan_knn, X, m, k, *kth)
    stats = c.submit(eng._second, plan)
    shifted = [c.submit(_shift, X, a, b, tile, plan) for a, b in parts]
    fin = c.submit(_finish, X, *shifted)
    X_new = c.submit(eng._first, fin)
    (total, lo, hi), m_value = c.gather([c.submit(_summary, fin), m])
    name = "counts" if estimator == "epsilon" else "radius"
    return eng.TiledStep(X_new, stats, name, total / (n * d), float(m_value), np.asarray(lo), np.asarray(hi))
