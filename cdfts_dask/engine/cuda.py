"""CUDA task bodies: points resident on the GPU as CuPy arrays, numba-cuda kernels
(:mod:`cdfts_dask.engine.cuda_kernels`); the same interface as :mod:`cdfts_dask.engine.cpu`.

One ``dask_cuda`` worker per GPU holds the points on its device across
passes; what crosses to the host is scalars, d-vectors, the O(n) count or
radius vectors, and the positions only when a checkpoint or the result asks
for them (``to_host``).  With several GPUs, each iteration's new positions
are assembled on one worker (the graph's positions task) and copied from
there to every other worker that runs a panel: O(n d) bytes per worker and
iteration, through host memory over dask-cuda's default TCP transport.  The k-th neighbour radius is
one kernel sweep keeping each row's k + 1 smallest ``sq`` for small k (as on the CPU), and for larger k
works in sub-panels of full rows of ``sq`` (at most :data:`KNN_PANEL_BYTES`), selected with the array
module's ``partition``.

Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, no GPU needed) the
array module is NumPy and the same kernels run on NumPy arrays: that is how
the CI tests this module.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda as numba_cuda

from ..normalise import column_span
from . import cuda_kernels
from .cuda_kernels import SIMULATOR
from .plan import ShiftPlan, chunks, guard_band, kth_buffered, share, triangle_panels

if SIMULATOR:
    xp = np
else:  # pragma: no cover - needs a GPU
    import cupy as xp

#: CuPy points in GPU memory (prepared on a worker)
HOST = False
#: threads per block, also the number of points per shared-memory tile
THREADS = 128
#: the k-NN pass holds at most this many bytes of ``sq`` per sub-panel
KNN_PANEL_BYTES = 256 * 2**20


def _blocks(rows: int) -> int:
    return max(1, math.ceil(rows / THREADS))


def _stream():
    """CuPy's current stream as numba's launch argument, so that a kernel runs in order with the CuPy
    operations around it (which read its output and return its arguments' memory to CuPy's pool) also
    inside ``with cupy.cuda.Stream(non_blocking=True):``.  0 (numba's default, the legacy default stream)
    when CuPy's current stream is that one, as on a dask-cuda worker, and under the simulator (no streams:
    each launch runs to completion)."""
    if SIMULATOR:
        return 0
    ptr = xp.cuda.get_current_stream().ptr
    return 0 if ptr == 0 else numba_cuda.external_stream(ptr)


def _kernels(d: int, dtype) -> tuple:
    """``(max_sq, count_rows, sq_rows, shift_sums)`` for blocks of :data:`THREADS` threads (compiled
    once per process and signature; tiles within the static shared-memory limit)."""
    return cuda_kernels.kernels(d, str(dtype), THREADS, cuda_kernels.STATIC_SHARED_BYTES)


def prepare(X, dtype: str):
    """The points on the device in the working dtype (C-contiguous; X itself when it already is)."""
    return xp.ascontiguousarray(xp.asarray(X, dtype=dtype))


def to_host(X) -> np.ndarray:
    return X.get() if hasattr(X, "get") else np.asarray(X)


def panel_rows(n: int, threads: int) -> int:
    """One panel per GPU (a dask-cuda worker has one thread): a kernel launch over all its rows keeps
    every multiprocessor busy."""
    return max(1, math.ceil(n / threads))


#: no index shared by an iteration's parts (the interface's ``pair_index``; the CPU's is a function that
#: builds a k-d split): the CUDA parts sweep full rows, and the graph submits no task for one
pair_index = None


def diameter_part(X, part: int, parts: int, index: None = None) -> float:
    """Largest float64 ``sq`` over the pairs (i, j > i), i in the part-th of ``parts`` triangle panels
    (``index``: None, :data:`pair_index` being None)."""
    n, d = X.shape
    spans = triangle_panels(n, parts)
    if part >= len(spans) or n < 2:
        return 0.0
    a, b = spans[part]
    out = xp.zeros(b - a)
    max_sq = _kernels(d, X.dtype)[0]
    max_sq[_blocks(b - a), THREADS, _stream()](X, a, b, out)
    return float(out.max())


def counts_part(X, part: int, parts: int, T: float, index: None = None) -> np.ndarray:
    """Epsilon counts of the part-th of ``parts`` equal row ranges over every point, i itself included,
    in an n-vector that is 0 outside those rows (int64, host; parts are summed; ``index``: None,
    :data:`pair_index` being None).  Full rows, not the
    CPU's triangle: each thread counts its own row in a register, where a triangle needs shared-memory
    atomics for the column counts (the full-row kernel did its n^2 pairs 5x faster than the triangle
    kernel did n^2 / 2 on an H100)."""
    n, d = X.shape
    counts = xp.zeros(n, dtype=np.int64)
    rows = share(n, part, parts)
    if rows is not None:
        a, b = rows
        Tlo, Thi = guard_band(np.array([T]), d, X.dtype)
        count_rows = _kernels(d, X.dtype)[1]
        count_rows[_blocks(b - a), THREADS, _stream()](X, a, b, np.float64(T), Tlo[0], Thi[0], counts)
    return to_host(counts)


def kth_part(
    X, part: int, parts: int, k: int, index: None = None, budget_bytes: int = KNN_PANEL_BYTES
) -> np.ndarray:
    """Distance from each row of the part-th of ``parts`` equal row ranges to its k-th nearest other
    point, in an n-vector that is 0 outside those rows (float64, host; parts are summed; ``index``:
    None, :data:`pair_index` being None).

    The (k+1)-th smallest exact float64 ``sq`` of a row (its own 0 included)
    is the oracle's k-th neighbour, as sqrt is monotone.  Small k (k + 1 <=
    :data:`~cdfts_dask.engine.plan.KTH_BUFFER_MAX`): one kernel sweep, each
    thread keeping its row's k + 1 smallest in a sorted buffer, as the CPU
    device does.  Large k: sub-panels of ``budget_bytes // (8 n)`` full rows
    of ``sq`` (at least one row), each reduced by the array module's partition.
    """
    n, d = X.shape
    kth_sq = np.zeros(n)
    rows = share(n, part, parts)
    if rows is None:
        return kth_sq
    a, b = rows
    if kth_buffered(k):
        out = xp.empty(b - a)
        kern = cuda_kernels.kth_kernel(d, k + 1, str(X.dtype), THREADS, cuda_kernels.STATIC_SHARED_BYTES)
        kern[_blocks(b - a), THREADS, _stream()](X, a, b, out)
        kth_sq[a:b] = to_host(out)
        return np.sqrt(kth_sq)
    sq_rows = _kernels(d, X.dtype)[2]
    for lo, hi in chunks(a, b, budget_bytes // (8 * n)):
        sq = xp.empty((hi - lo, n))
        sq_rows[_blocks(n), THREADS, _stream()](X, lo, hi, sq)
        kth_sq[lo:hi] = to_host(xp.partition(sq, k, axis=1)[:, k])
    return np.sqrt(kth_sq)


def column_mean(X) -> np.ndarray:
    return to_host(X.astype(np.float64).mean(axis=0))


def shift_sums(P, Y, plan: ShiftPlan):
    """``A(y) = mean_z rho(z, y)`` and ``B(y) = mean_z rho(z, y) z`` over the references z in P
    (device arrays in the working dtype; targets Y need not be references); as in
    :func:`cdfts_dask.engine.cpu.shift_sums`.  float64 results on the device."""
    n_ref, d = P.shape
    A = xp.zeros(Y.shape[0])
    B = xp.zeros((Y.shape[0], d))
    kern = _kernels(d, P.dtype)[3]
    coef = [xp.asarray(v) for v in (plan.T, plan.Tlo, plan.Thi, plan.rin, plan.a, plan.bm, plan.lam, plan.q)]
    kern[_blocks(Y.shape[0]), THREADS, _stream()](P, xp.ascontiguousarray(Y), *coef, float(plan.m[0]), A, B)
    return A / n_ref, B / n_ref


def shift_targets(P, Y, plan: ShiftPlan | None):
    """Shifted (not yet normalised) float64 positions ``mean(P) + y A(y) - B(y)`` of the targets Y
    against the references P (device arrays in the working dtype; see :func:`shift_sums`), on the
    device; a None plan (m = 0) moves nothing.  The plan's arrays may be host NumPy (copied for this
    call) or already on the device (a fitted model keeps them there)."""
    Y64 = Y.astype(np.float64)
    if plan is None:  # all points coincide: nothing moves
        return Y64
    A, B = shift_sums(P, Y, plan)
    return xp.asarray(plan.mean) + Y64 * A[:, None] - B


def shift_part(X, a: int, b: int, plan: ShiftPlan | None):
    """Shifted (not yet normalised) float64 positions ``mean(X) + y A(y) - B(y)`` of rows [a, b)."""
    return shift_targets(X, X[a:b], plan)


def concat(*parts):
    """Consecutive row blocks (or vector pieces) joined in order, on the device (host pieces stay host)."""
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return xp.concatenate(parts)


def finish(X, *shifted):
    """Min-max normalise the shifted row blocks (in order): ``(X_new, sum |X_new - X|, lo, hi)``;
    X_new stays on the device in X's dtype, the rest goes to the host."""
    Y = concat(*shifted)
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    Z = ((Y - lo) / column_span(lo, hi)).astype(X.dtype, copy=False)
    total = float(xp.abs(Z.astype(np.float64) - X.astype(np.float64)).sum())
    return Z, total, to_host(lo), to_host(hi)
