"""numba-cuda kernels of the CUDA device (run by :mod:`cdfts_dask.engine.cuda`).

Each thread owns one row (a point z of the reference pass, or a target y of
the shift pass) and sweeps the other points in tiles of (up to) ``threads``
points that the block stages in shared memory; per-row results stay in registers.

Exactness.  NVVM contracts ``acc + x * y`` into one FMA unless told not to,
which would change ``sq`` in its last bits; every float64 ``sq`` that decides
membership or the diameter is therefore summed column by column with
``dmul_rn`` (a product that is never contracted), in the oracle's order, and
compared with the exact thresholds of :mod:`cdfts_dask.engine.plan`.  float32
``sq`` may contract (its guard band covers that); pairs inside the band are
re-evaluated in float64 from the exactly upcast coordinates.  rho and the
A / B accumulations may contract (they round at the 1e-16 level, not a
membership decision).

float32 throughput.  On the points of a float32 run, the diameter and the
k-th radii (float64 results, bit for bit the oracle's on those points) first
compute the float32 ``sq`` of a pair, and compute the float64 one only where
the float32 value cannot rule the pair out
(:func:`~cdfts_dask.engine.plan.float32_sq_tolerance`): after a few pairs a
row's running maximum (or k-th smallest) rules out nearly every other pair,
so the sweep runs at the float32 rate.  The shift pass keeps a float64 copy
of its reference tile in shared memory for the float64 sums: converting each
coordinate per pair (d ``cvt.f64.f32`` per pair, a 16-per-clock instruction on
an H100 against 128 float32 or 64 float64 FMAs) would otherwise bound it.

The same kernels run under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)
on NumPy arrays, where ``dmul_rn`` is plain IEEE multiplication, the same
value.  Kernels are built per (d, dtype, threads): shared and local arrays
need their sizes at compile time.

Shared memory.  A kernel may declare at most 48 KiB of static shared memory
(``cuda.shared.array``; ptxas rejects more: "uses too much shared data
(..., 0xc000 max)"), and the simulator does not check.  A tile therefore holds
``min(threads, what fits)`` points (:func:`tile_points`): 128 points up to
d = 48 for the coordinate tiles of float64 points, and for the shift's tile
(coordinates and per-point constants) up to d = 41 in float64 and d = 29 in
float32 (which also keeps a float64 copy), fewer above; the block still has ``threads`` threads
(rows), the first ``tile`` of them load the tile.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from .plan import exact_below, rho_float64, sq_bound_factors


def numba_cuda_is_simulated() -> bool:
    """Whether ``numba.cuda`` was imported as numba's CUDA simulator (kernels run on NumPy arrays, in
    Python: tests on machines without a GPU), told by the ``jit`` it gave (the simulator's own), not by
    ``NUMBA_ENABLE_CUDASIM`` as the environment says now: it may have changed since, and numba re-reads
    its config on every compile.  The kernels must be built for what numba compiles them with: on a real
    GPU, float64 ``mul_rn`` taken for the simulator's plain multiply would be fused into FMAs, and exact
    membership silently lost."""
    return cuda.jit.__module__.startswith("numba.cuda.simulator")


#: numba's CUDA simulator runs the kernels on NumPy arrays, in Python (tests on machines without a GPU)
SIMULATOR = numba_cuda_is_simulated()
#: the most static shared memory one kernel may declare (CUDA: 48 KiB on every architecture)
STATIC_SHARED_BYTES = 48 * 1024

#: :func:`~cdfts_dask.engine.plan.rho_float64` compiled for the device (the CPU kernels compile the same one)
rho64 = cuda.jit(device=True)(rho_float64)


def check_numba_cuda_takes_this_numpy() -> None:
    """Raise ImportError, saying what to install, where numba-cuda cannot compile a kernel on this NumPy.

    numba-cuda 0.30.4 (its last release: the project is in maintenance mode) registers an overload of
    ``np.row_stack`` when it first compiles a kernel, and NumPy 2.5 removed that function
    (NVIDIA/numba-cuda#907): every launch would then fail on a worker, deep inside numba-cuda, with
    ``module 'numpy' has no attribute 'row_stack'``.  Importing that registry here finds out at once.
    """
    try:
        import numba.cuda.np.arrayobj  # noqa: F401  (the registry the first kernel compile loads)
    except AttributeError as exc:
        if "row_stack" not in str(exc):
            raise
        from importlib.metadata import version

        raise ImportError(
            f"numba-cuda {version('numba-cuda')} cannot compile CUDA kernels with NumPy {np.__version__}"
            " (NumPy 2.5 removed np.row_stack, which it registers; NVIDIA/numba-cuda#907): "
            "install NumPy 2.4 for the GPU, pip install 'numpy<2.5' (the gpu extras ask for it)"
        ) from exc


if SIMULATOR:

    @cuda.jit(device=True)
    def mul_rn(x, y):
        return x * y

else:
    check_numba_cuda_takes_this_numpy()
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def mul_rn(x, y):
        """float64 ``x * y`` rounded to nearest, never fused with an add."""
        return libdevice.dmul_rn(x, y)


def tile_points(point_bytes: int, threads: int, shared_bytes: int = STATIC_SHARED_BYTES) -> int:
    """Points per shared-memory tile: at most ``threads``, and no more than fit in ``shared_bytes``
    at ``point_bytes`` each (the tile's coordinates and per-point constants)."""
    if point_bytes > shared_bytes:
        raise ValueError(
            f"d: one point needs {point_bytes} bytes of shared memory, more than the {shared_bytes} a CUDA "
            "kernel may declare; use the cpu backend for data of this dimension"
        )
    return min(threads, shared_bytes // point_bytes)


@functools.cache
def _tile_functions(d: int) -> tuple:
    """Device functions shared by every kernel of dimension d: ``load_tile``, ``load_own`` and
    ``sq_exact``."""

    @cuda.jit(device=True, inline="always")
    def load_tile(tile, X, j0, tid):
        """Thread tid copies point j0 + tid (when it exists and tid < the tile size) into the shared tile."""
        if tid < tile.shape[0] and j0 + tid < X.shape[0]:
            for j in range(d):
                tile[tid, j] = X[j0 + tid, j]

    @cuda.jit(device=True, inline="always")
    def load_own(me, X, i):
        """Copy point i (the last point when i is past the end) into ``me[0]``, a (1, d) local array the
        kernel passes to ``sq_exact`` / ``sq_tile`` as ``(me, 0)``: the row is read once per kernel, not
        once per pair.  A read under a per-pair branch is not hoisted out of the loop: 8 global loads per
        pair made the triangle kernels 5-7x slower on an H100 (n = 2e5, d = 8)."""
        r = min(i, X.shape[0] - 1)
        if r >= 0:  # no points: nothing to hold (the kernel does nothing with it)
            for j in range(d):
                me[0, j] = X[r, j]

    @cuda.jit(device=True, inline="always")
    def sq_exact(P, z, Y, y):
        """float64 ``||P[z] - Y[y]||^2``, column by column, no FMA: the oracle's value (P may be a
        shared tile; ``sq(y, z)`` has the same bits, the differences being only negated)."""
        acc = 0.0
        for j in range(d):
            diff = np.float64(P[z, j]) - np.float64(Y[y, j])
            acc += mul_rn(diff, diff)
        return acc

    return load_tile, load_own, sq_exact


@functools.cache
def _working_functions(d: int, dtype: str) -> tuple:
    """``(sq_tile, sq_above, floor_of, ceil_of)``: ``sq`` in the working dtype, and how the diameter and
    k-th radius kernels get float64 results from a sweep in it.

    * ``sq_tile(tile, t, Y, y)``: ``sq`` between tile point t and Y[y] in the working dtype: in float64
      ``sq_exact``; in float32 with FMA allowed (the guard band covers its error);
    * ``sq_above(v, X, j, i)``: the float64 ``sq(X[j], X[i])`` of a pair whose working-dtype ``sq`` is
      v (v itself in float64);
    * ``floor_of(best)``: a bound in the working dtype such that ``v < floor_of(best)`` proves the
      float64 ``sq`` below ``best`` (a pair that cannot raise a running maximum);
    * ``ceil_of(worst)``: a bound such that ``v > ceil_of(worst)`` proves it above ``worst`` (a pair
      that cannot enter a buffer of smallest values).

    In float64 the bounds are the values themselves.  In float32 they widen ``best`` / ``worst`` by the
    float32 error of ``sq`` (:func:`~cdfts_dask.engine.plan.sq_bound_factors`), and rule nothing out
    below :data:`~cdfts_dask.engine.plan.FLOAT32_SQ_FLOOR` (0 and inf).
    """
    from numba import float32

    _, _, sq_exact = _tile_functions(d)
    if np.dtype(dtype) == np.float64:

        @cuda.jit(device=True, inline="always")
        def sq_tile(tile, t, Y, y):
            return sq_exact(tile, t, Y, y)

        @cuda.jit(device=True, inline="always")
        def sq_above(v, X, j, i):
            return v

        @cuda.jit(device=True, inline="always")
        def floor_of(best):
            return best

        @cuda.jit(device=True, inline="always")
        def ceil_of(worst):
            return worst

        return sq_tile, sq_above, floor_of, ceil_of

    shrink, grow, tiny = sq_bound_factors(d, dtype)

    @cuda.jit(device=True, inline="always")
    def sq_tile(tile, t, Y, y):
        acc = float32(0.0)
        for j in range(d):
            diff = tile[t, j] - Y[y, j]
            acc += diff * diff
        return acc

    @cuda.jit(device=True, inline="always")
    def sq_above(v, X, j, i):
        return sq_exact(X, j, X, i)

    @cuda.jit(device=True, inline="always")
    def floor_of(best):
        return float32(best * shrink) if best >= tiny else float32(0.0)

    @cuda.jit(device=True, inline="always")
    def ceil_of(worst):
        return float32(worst * grow) if worst >= tiny else float32(math.inf)

    return sq_tile, sq_above, floor_of, ceil_of


@functools.cache
def kernels(d: int, dtype: str, threads: int, shared_bytes: int = STATIC_SHARED_BYTES):
    """The kernels for points of dimension d in ``dtype``, blocks of ``threads`` threads; shared-memory
    tiles of at most ``threads`` points, within ``shared_bytes`` per kernel (:func:`tile_points`)."""
    work = np.dtype(dtype)
    exact_work = work == np.float64
    from numba import float32, float64

    wt = float64 if exact_work else float32
    size = work.itemsize
    tile_coords = tile_points(size * d, threads, shared_bytes)  # the diameter's and the counts' tiles
    # per point: coordinates, T (float64), 5 constants, and in float32 the coordinates again in float64 for
    # the sums; float64 sums from the tile itself, beside a 1 x 1 placeholder for the unused copy
    # (8 bytes are kept back for the 1 x 1 placeholder, or for the 4 bytes of padding that align the float64
    # copy after an odd number of float32 coordinates: ptxas counts them, d = 1363 went 4 bytes past 48 KiB)
    if exact_work:
        tile_shift = tile_points(size * d + 8 + 5 * size, threads, shared_bytes - 8)
        shadow_shape = (1, 1)
    else:
        tile_shift = tile_points(size * d + 8 + 5 * size + 8 * d, threads, shared_bytes - 8)
        shadow_shape = (tile_shift, d)
    tiny = wt(exact_below(d, dtype))  # a working sq at most this: rho from the float64 sq (-1 in float64)

    load_tile, load_own, sq_exact = _tile_functions(d)
    sq_tile, sq_above, floor_of, _ = _working_functions(d, dtype)

    @cuda.jit
    def max_sq(X, a, b, out):
        """``out[i - a]`` = largest float64 ``sq(X[i], X[j])`` over j > i, for rows a <= i < b.

        ``sq`` in the working dtype is computed for every pair of the block's
        sweep, against the row held in a local array (see ``load_own``); a
        pair j > i whose value reaches the row's bound ``floor_of(best)``
        (float64: ``best`` itself; float32: below it by the float32 error) has
        its float64 ``sq`` taken (``sq_above``) into the running maximum.
        """
        n = X.shape[0]
        tid = cuda.threadIdx.x
        first = a + cuda.blockIdx.x * threads
        i = first + tid
        tile = cuda.shared.array((tile_coords, d), wt)
        me = cuda.local.array((1, d), wt)
        load_own(me, X, i)
        best = 0.0
        bound = floor_of(best)
        for j0 in range(first, n, tile_coords):
            load_tile(tile, X, j0, tid)
            cuda.syncthreads()
            if i < b:
                for t in range(min(tile_coords, n - j0)):
                    v = sq_tile(tile, t, me, 0)
                    if v >= bound and j0 + t > i:
                        e = sq_above(v, X, j0 + t, i)
                        if e > best:
                            best = e
                            bound = floor_of(best)
            cuda.syncthreads()
        if i < b:
            out[i - a] = best

    @cuda.jit
    def count_rows(X, a, b, T, Tlo, Thi, counts):
        """``counts[i]`` = #{j : sq(X[i], X[j]) <= T}, every j (i itself too), for rows a <= i < b.

        Full rows rather than the CPU's upper triangle: each thread keeps its
        own count in a register and nothing is shared between threads.  On an
        H100 (n = 2e5, d = 8, float64) this loop, timed as a variant before it
        replaced the triangle kernel, did the n^2 pairs in 0.080 s; the
        triangle, with shared-memory atomics for the column counts, took
        0.427 s for n^2 / 2.  ``sq`` in the working dtype decides outside the
        guard band (T_lo, T_hi]; inside it, the exact float64 ``sq`` against T.
        """
        n = X.shape[0]
        tid = cuda.threadIdx.x
        i = a + cuda.blockIdx.x * threads + tid
        tile = cuda.shared.array((tile_coords, d), wt)
        me = cuda.local.array((1, d), wt)
        load_own(me, X, i)
        own = 0
        for j0 in range(0, n, tile_coords):
            load_tile(tile, X, j0, tid)
            cuda.syncthreads()
            if i < b:
                for t in range(min(tile_coords, n - j0)):
                    v = sq_tile(tile, t, me, 0)
                    inside = v <= Tlo
                    if not inside and v <= Thi:
                        inside = sq_exact(X, j0 + t, X, i) <= T
                    if inside:
                        own += 1
            cuda.syncthreads()
        if i < b:
            counts[i] = own

    @cuda.jit
    def sq_rows(X, lo, hi, out):
        """``out[r, j]`` = float64 ``sq(X[lo + r], X[j])`` for lo <= lo + r < hi (one thread per column j)."""
        j = cuda.grid(1)
        if j < X.shape[0]:
            for r in range(hi - lo):
                out[r, j] = sq_exact(X, lo + r, X, j)

    @cuda.jit
    def shift_sums(P, Y, T, Tlo, Thi, rin, ca, cbm, lam, q, m, A, B):
        """``A[y] = sum_z rho(z, y)``, ``B[y, :] = sum_z rho(z, y) P[z]`` over all references z in P.

        One thread per target y, references in tiles staged in shared memory
        with their plan constants (in float32 also a float64 copy of the
        tile's coordinates, ``shadow``, for the float64 sums), visited in the
        order 0..n_ref-1 by every target (equal targets get bit-identical sums).  rho: 1 where sq = 0;
        ``rin[z]`` inside (sq <= T[z], exactly); ``ca[z] + cbm[z] / sqrt(sq)`` outside.  A ``sq`` in the
        guard band ``(Tlo, Thi]``, or in float32 at most ``tiny``
        (:func:`~cdfts_dask.engine.plan.exact_below`: it may have underflowed), has its rho from the
        float64 ``sq`` by :func:`~cdfts_dask.engine.plan.rho_float64` (float64 ``lam[z]``, ``q[z]``
        and diameter ``m``, read from global memory: only band pairs need them).
        """
        n_ref = P.shape[0]
        tid = cuda.threadIdx.x
        y = cuda.blockIdx.x * threads + tid
        live = y < Y.shape[0]
        tile = cuda.shared.array((tile_shift, d), wt)
        shadow = cuda.shared.array(shadow_shape, float64)
        t_T = cuda.shared.array(tile_shift, float64)
        t_lo = cuda.shared.array(tile_shift, wt)
        t_hi = cuda.shared.array(tile_shift, wt)
        t_rin = cuda.shared.array(tile_shift, wt)
        t_a = cuda.shared.array(tile_shift, wt)
        t_bm = cuda.shared.array(tile_shift, wt)
        acc = cuda.local.array(d, float64)
        for j in range(d):
            acc[j] = 0.0
        total = 0.0
        one = wt(1.0)
        for z0 in range(0, n_ref, tile_shift):
            z = z0 + tid
            load_tile(tile, P, z0, tid)
            if not exact_work:
                load_tile(shadow, P, z0, tid)
            if tid < tile_shift and z < n_ref:
                t_T[tid] = T[z]
                t_lo[tid] = Tlo[z]
                t_hi[tid] = Thi[z]
                t_rin[tid] = rin[z]
                t_a[tid] = ca[z]
                t_bm[tid] = cbm[z]
            cuda.syncthreads()
            if live:
                for t in range(min(tile_shift, n_ref - z0)):
                    v = sq_tile(tile, t, Y, y)
                    # in float32 a value at most tiny may have underflowed: it decides nothing
                    if v <= tiny or (v > t_lo[t] and v <= t_hi[t] and v != 0):
                        zt = z0 + t
                        r = rho64(sq_exact(P, zt, Y, y), t_T[t], lam[zt], q[zt], m)
                    else:
                        if v == 0:
                            rho = one
                        elif v <= t_lo[t]:
                            rho = t_rin[t]
                        else:
                            rho = t_a[t] + t_bm[t] / math.sqrt(v)
                        r = np.float64(rho)
                    total += r
                    for j in range(d):
                        acc[j] += r * (tile[t, j] if exact_work else shadow[t, j])
            cuda.syncthreads()
        if live:
            A[y] = total
            for j in range(d):
                B[y, j] = acc[j]

    return max_sq, count_rows, sq_rows, shift_sums


@functools.cache
def kth_kernel(d: int, kk: int, dtype: str, threads: int, shared_bytes: int = STATIC_SHARED_BYTES):
    """``kth_smallest_sq(X, a, b, out)``: ``out[i - a]`` = the kk-th smallest float64 ``sq(X[i], X[j])``
    over all j (i itself included, so kk = k + 1 gives the k-th neighbour), rows a <= i < b, for points
    X in ``dtype``.

    One thread per row, the points in tiles in shared memory; each thread
    keeps its kk smallest values sorted in a local buffer (insertion when a
    value beats the current kk-th, kk <= :data:`~cdfts_dask.engine.plan.KTH_BUFFER_MAX`),
    so nothing of size n x n, nor rows x n, is ever stored: the same order
    statistic, bit for bit, as a partition of the row's ``sq``.  In float32
    a pair's float64 ``sq`` is taken only where its float32 ``sq`` does not
    rule it out (``ceil_of`` of :func:`_working_functions`).
    """
    from numba import float32, float64

    exact_work = np.dtype(dtype) == np.float64
    wt = float64 if exact_work else float32
    load_tile, _, _ = _tile_functions(d)
    sq_tile, sq_above, _, ceil_of = _working_functions(d, dtype)
    tile_kth = tile_points(np.dtype(dtype).itemsize * d, threads, shared_bytes)  # coordinates

    @cuda.jit
    def kth_smallest_sq(X, a, b, out):
        n = X.shape[0]
        tid = cuda.threadIdx.x
        i = a + cuda.blockIdx.x * threads + tid
        tile = cuda.shared.array((tile_kth, d), wt)
        best = cuda.local.array(kk, float64)
        for p in range(kk):
            best[p] = math.inf
        worst = math.inf
        bound = ceil_of(worst)
        for j0 in range(0, n, tile_kth):
            load_tile(tile, X, j0, tid)
            cuda.syncthreads()
            if i < b:
                for t in range(min(tile_kth, n - j0)):
                    v = sq_tile(tile, t, X, i)  # X[i] outside any per-pair branch: loads hoisted
                    if v <= bound:
                        e = sq_above(v, X, j0 + t, i)
                        if e < worst:
                            p = kk - 1
                            while p > 0 and best[p - 1] > e:
                                best[p] = best[p - 1]
                                p -= 1
                            best[p] = e
                            worst = best[kk - 1]
                            bound = ceil_of(worst)
            cuda.syncthreads()
        if i < b:
            out[i - a] = worst

    return kth_smallest_sq
