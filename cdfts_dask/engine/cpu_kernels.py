"""numba kernels of the CPU device: one sweep per block of pairs, no n x n temporaries.

Membership tests ``sq <= T`` use the exact thresholds of
:mod:`cdfts_dask.engine.plan`, with ``sq`` summed column by column in the
oracle's order; no ``fastmath`` is used (it would allow FMA contraction and
reassociation of ``sq``); vectorisation comes from loops whose innermost
index runs over targets, where every operation is elementwise (the shift,
count and k-th kernels take four points at a time and unroll the column loop
inside the target loop, ``d`` being a compile-time constant there, so each
target's four ``sq`` stay in registers).  The same
kernels run on float32 points (8 SIMD lanes instead of 4): float32 ``sq``
inside the guard band ``[T_lo, T_hi]`` is re-evaluated in float64 from the
exactly upcast coordinates; rho is computed in the points' dtype and
accumulated in float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .plan import rho_float64

#: targets per inner block: the block's coordinates, accumulators and buffers stay in L1
BLOCK = 256
#: references per outer chunk of the shift pass (2048 x d values stay in L2 while the target
#: panel's blocks sweep them); each target still sums references in order 0..n-1, four at a time
REF_CHUNK = 2048
#: columns of the shift's ``sq`` summed in registers per sweep (unrolled: the per-d kernel's constant)
SQ_COLUMNS = 8
#: float32's largest finite value: a float32 bound above it is no bound (see :func:`_above_bound`)
FLOAT32_MAX = float(np.finfo(np.float32).max)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sq64(X, z, XT, y):
    """float64 ``sq`` of points X[z] and XT[:, y], column by column (the oracle's order)."""
    acc = 0.0
    for j in range(X.shape[1]):
        diff = np.float64(X[z, j]) - np.float64(XT[j, y])
        acc += diff * diff
    return acc


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sq_row(sq, X, z, XT, lo, hi):
    """``sq[t] = ||X[z] - X[lo + t]||^2`` for t < hi - lo, summed column by column (the oracle's order)."""
    w = hi - lo
    for t in range(w):
        sq[t] = 0.0
    for j in range(X.shape[1]):
        zj = X[z, j]
        col = XT[j, lo:hi]
        for t in range(w):
            diff = zj - col[t]
            sq[t] += diff * diff


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def farthest_sq(X):
    """A lower bound on the largest float64 ``sq``: three farthest-point sweeps (a true pair's ``sq``)."""
    n, d = X.shape
    L = 0.0
    p = 0
    for _ in range(3):
        far, best = p, -1.0
        for i in range(n):
            acc = 0.0
            for j in range(d):
                diff = np.float64(X[p, j]) - np.float64(X[i, j])
                acc += diff * diff
            if acc > best:
                best, far = acc, i
        if best > L:
            L = best
        p = far
    return L


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _count_block(X, XT, z0, z1, y0, y1, band, counts, buffers, columns):
    """Epsilon counts from the pairs (z, y), z in [z0, z1), y in [y0, y1) with y > z, added to both z
    and y; returns how many pairs it tested.

    ``sq <= T`` is the oracle's ``S / m <= lam`` (see module docstring).  The
    blocks are either disjoint (y0 >= z1: every row against every target,
    four rows at a time, their ``sq`` in registers: :func:`_count_group`) or
    one block (z0 = y0, z1 = y1: each row against the targets after it, one
    by one).  ``band``: ``(T, T_lo, T_hi)``; ``columns``: as for
    :func:`shift_accumulate` (d a compile-time constant); ``buffers``: five
    vectors ``(sq, s_0, .., s_3)`` of at least ``y1 - y0`` values.
    """
    T, Tlo, Thi = band
    sq, s0, s1, s2, s3 = buffers
    head = head_columns(len(columns))
    w = y1 - y0
    z = z0
    while z + 4 <= z1 and z + 3 < y0:  # the four rows' targets: all of [y0, y1)
        if head:
            _sq_head(X, XT, y0, w, z, z + 1, z + 2, z + 3, head, s0, s1, s2, s3)
        c0, c1, c2, c3, amb = _count_group(X, XT, y0, w, z, columns, s0, s1, s2, s3, Tlo, Thi, counts)
        counts[z] += c0
        counts[z + 1] += c1
        counts[z + 2] += c2
        counts[z + 3] += c3
        if amb:
            for zk in range(z, z + 4):
                counts[zk] += _count_band(X, XT, zk, y0, y1, T, Tlo, Thi, counts, sq)
        z += 4
    grouped = z
    tested = (grouped - z0) * w
    for z in range(grouped, z1):  # the rows left, one by one
        lo = max(z + 1, y0)
        if y1 <= lo:
            continue
        _sq_row(sq, X, z, XT, lo, y1)
        c = 0
        amb = 0
        cnt = counts[lo:y1]
        for t in range(y1 - lo):
            v = sq[t]
            inside = v <= Tlo
            c += inside
            cnt[t] += inside
            amb += (v > Tlo) & (v <= Thi)
        if amb:
            c += _count_band(X, XT, z, lo, y1, T, Tlo, Thi, counts, sq)
        counts[z] += c
        tested += y1 - lo
    return tested


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _count_group(X, XT, y0, w, z0, columns, s0, s1, s2, s3, Tlo, Thi, counts):
    """Rows z0..z0+3 against targets [y0, y0 + w): ``sq`` from ``s_k`` plus the last columns in registers
    (as :func:`_rho_group`); each target's count gains its rows with ``sq <= T_lo``.  Returns the four
    rows' counts of those targets and the number of targets with some ``sq`` in the guard band."""
    j0, cols, x0, x1, x2, x3 = _group_start(X, z0, z0 + 1, z0 + 2, z0 + 3, columns)
    cnt = counts[y0 : y0 + w]
    c0 = c1 = c2 = c3 = amb = 0
    for t in range(w):
        v0, v1, v2, v3 = _group_sq(XT, y0, t, j0, cols, x0, x1, x2, x3, s0, s1, s2, s3)
        i0, i1, i2, i3 = v0 <= Tlo, v1 <= Tlo, v2 <= Tlo, v3 <= Tlo
        cnt[t] += (np.int64(i0) + np.int64(i1)) + (np.int64(i2) + np.int64(i3))
        c0 += i0
        c1 += i1
        c2 += i2
        c3 += i3
        band = _in_band(v0, Tlo, Thi) | _in_band(v1, Tlo, Thi)
        amb += band | _in_band(v2, Tlo, Thi) | _in_band(v3, Tlo, Thi)
    return c0, c1, c2, c3, amb


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _count_band(X, XT, z, y0, y1, T, Tlo, Thi, counts, sq):
    """Row z's pairs with targets [y0, y1) whose working-dtype ``sq`` (summed again into ``sq``, in the
    same order: the same values) lies in the guard band: those within ``T`` in float64 are counted for
    the target here and returned for z."""
    _sq_row(sq, X, z, XT, y0, y1)
    c = 0
    for t in range(y1 - y0):
        v = sq[t]
        if v > Tlo and v <= Thi and _sq64(X, z, XT, y0 + t) <= T:
            c += 1
            counts[y0 + t] += 1
    return c


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _insert_smallest(b, sq, w, X, z, XT, y0, grow, floor):
    """Merge row z's ``sq`` to targets [y0, y0 + w) into its sorted k+1 smallest float64 ``sq`` (``b``);
    called only for rows with a candidate (most rows, after the first blocks, have none)."""
    k = b.shape[0] - 1
    exact = X.itemsize == 8  # float64 points: sq is already the float64 one
    worst = b[k]
    bound = _above_bound(worst, grow, floor)
    for t in range(w):
        v = sq[t]
        if v <= bound:
            e = np.float64(v) if exact else _sq64(X, z, XT, y0 + t)
            if e < worst:
                p = k
                while p > 0 and b[p - 1] > e:
                    b[p] = b[p - 1]
                    p -= 1
                b[p] = e
                worst = b[k]
                bound = _above_bound(worst, grow, floor)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _above_bound(worst, grow, floor):
    """A working-dtype ``sq`` above this proves the float64 one above ``worst`` (none below ``floor``, and
    none above float32's largest value: a float32 ``sq`` that overflowed to inf proves nothing)."""
    bound = worst * grow
    return bound if worst >= floor and bound <= FLOAT32_MAX else np.inf


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _kth_block(X, XT, z0, z1, y0, y1, best, grow, floor, columns, buffers):
    """Merge the ``sq`` of rows z0 <= z < z1 to the points [y0, y1) (at most ``BLOCK``) into the rows'
    sorted buffers ``best[z - z0]`` of their k + 1 smallest float64 ``sq``.

    Rows go four at a time, their ``sq`` summed in registers (:func:`_sq_group`;
    ``columns`` as for :func:`shift_accumulate`; ``buffers``: four vectors of
    at least ``y1 - y0`` values).  ``sq`` is summed in X's dtype.  float64
    (``grow = 1``, ``floor = 0``): it is the float64 ``sq``.  float32: a value
    above ``worst * grow`` (worst, the row's current (k+1)-th, at least
    ``floor``) proves the float64 ``sq`` above worst
    (:func:`~cdfts_dask.engine.plan.sq_bound_factors`); the rest get their
    float64 ``sq`` from the upcast coordinates (:func:`_insert_smallest`).
    """
    s0, s1, s2, s3 = buffers
    head = head_columns(len(columns))
    k = best.shape[1] - 1
    rows = z1 - z0
    w = y1 - y0
    for i in range(0, rows, 4):
        g = min(4, rows - i)  # rows in this group; a short group repeats its last row
        i1, i2, i3 = i + min(1, g - 1), i + min(2, g - 1), i + min(3, g - 1)
        if head:
            _sq_head(X, XT, y0, w, z0 + i, z0 + i1, z0 + i2, z0 + i3, head, s0, s1, s2, s3)
        h0, h1, h2, h3 = _sq_group(
            X, XT, y0, w, z0 + i, z0 + i1, z0 + i2, z0 + i3, columns, s0, s1, s2, s3,
            _above_bound(best[i, k], grow, floor), _above_bound(best[i1, k], grow, floor),
            _above_bound(best[i2, k], grow, floor), _above_bound(best[i3, k], grow, floor),
        )  # fmt: skip
        if h0:
            _insert_smallest(best[i], s0, w, X, z0 + i, XT, y0, grow, floor)
        if g > 1 and h1:
            _insert_smallest(best[i1], s1, w, X, z0 + i1, XT, y0, grow, floor)
        if g > 2 and h2:
            _insert_smallest(best[i2], s2, w, X, z0 + i2, XT, y0, grow, floor)
        if g > 3 and h3:
            _insert_smallest(best[i3], s3, w, X, z0 + i3, XT, y0, grow, floor)


def columns_token(d: int) -> tuple:
    """The ``columns`` argument of :func:`shift_accumulate` for d columns."""
    return (0,) * d


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def head_columns(d):
    """Columns of the shift's ``sq`` summed through buffers before the last (fused) chunk of at most
    ``SQ_COLUMNS``: none for d <= SQ_COLUMNS."""
    return SQ_COLUMNS * ((d - 1) // SQ_COLUMNS)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _add_columns(YT, u, j0, cols, x0, x1, x2, x3, v0, v1, v2, v3):
    """``v_k + sum_{j < cols} (x_k[j] - YT[j0 + j, u])^2``, column by column, for one target u (cols a
    constant: the loop unrolls; the caller's loop over targets vectorises)."""
    for j in range(cols):
        c = YT[np.uint64(j0 + j), u]
        e0, e1, e2, e3 = x0[j] - c, x1[j] - c, x2[j] - c, x3[j] - c
        v0 += e0 * e0
        v1 += e1 * e1
        v2 += e2 * e2
        v3 += e3 * e3
    return v0, v1, v2, v3


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sq_columns(X, YT, y0, w, z0, z1, z2, z3, j0, s0, s1, s2, s3):
    """``s_k[t] += sum_{j0 <= j < j0 + SQ_COLUMNS} (X[z_k, j] - YT[j, y0 + t])^2`` for the group's references.

    The column loop has a constant length, so it unrolls and the target loop
    vectorises, every target coordinate loaded once for the four references.
    """
    x0, x1, x2, x3 = X[z0, j0:], X[z1, j0:], X[z2, j0:], X[z3, j0:]
    for t in range(w):
        u = np.uint64(y0 + t)  # unsigned: no negative-index wrap, so the loads stay contiguous vectors
        v0, v1, v2, v3 = s0[t], s1[t], s2[t], s3[t]
        v0, v1, v2, v3 = _add_columns(YT, u, j0, SQ_COLUMNS, x0, x1, x2, x3, v0, v1, v2, v3)
        s0[t], s1[t], s2[t], s3[t] = v0, v1, v2, v3


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sq_head(X, YT, y0, w, z0, z1, z2, z3, head, s0, s1, s2, s3):
    """``s_k[t]`` = the ``sq`` of the group's references and target y0 + t over columns [0, head)."""
    for t in range(w):
        s0[t], s1[t], s2[t], s3[t] = 0, 0, 0, 0
    for j0 in range(0, head, SQ_COLUMNS):
        _sq_columns(X, YT, y0, w, z0, z1, z2, z3, j0, s0, s1, s2, s3)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _group_start(X, z0, z1, z2, z3, columns):
    """The last chunk of a group of four points, d = len(columns) (a compile-time constant): its first
    column j0 (the caller has put the ``sq`` of the columns before it in ``s_k``: :func:`_sq_head`), its
    width, and the four points' coordinates from j0."""
    d = len(columns)
    j0 = head_columns(d)
    return j0, d - j0, X[z0, j0:], X[z1, j0:], X[z2, j0:], X[z3, j0:]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _group_sq(YT, y0, t, j0, cols, x0, x1, x2, x3, s0, s1, s2, s3):
    """The four ``sq`` of target y0 + t: the buffered columns from ``s_k`` (j0 = 0, a constant, reads
    none) plus the last chunk's, summed in registers (:func:`_add_columns`)."""
    if j0:
        v0, v1, v2, v3 = s0[t], s1[t], s2[t], s3[t]
    else:
        v0 = v1 = v2 = v3 = s0.dtype.type(0)
    # unsigned: no negative-index wrap, so the loads stay contiguous vectors
    return _add_columns(YT, np.uint64(y0 + t), j0, cols, x0, x1, x2, x3, v0, v1, v2, v3)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _sq_group(X, YT, y0, w, z0, z1, z2, z3, columns, s0, s1, s2, s3, u0, u1, u2, u3):
    """``s_k[t]`` = the ``sq`` of the group's points z_k and target y0 + t, in X's dtype (d = len(columns),
    a compile-time constant; the columns before the last chunk already in ``s_k``).  Returns, per
    point, how many of them are at most ``u_k`` (the candidates for its k smallest)."""
    j0, cols, x0, x1, x2, x3 = _group_start(X, z0, z1, z2, z3, columns)
    h0 = h1 = h2 = h3 = 0
    for t in range(w):
        v0, v1, v2, v3 = _group_sq(YT, y0, t, j0, cols, x0, x1, x2, x3, s0, s1, s2, s3)
        s0[t], s1[t], s2[t], s3[t] = v0, v1, v2, v3
        h0 += v0 <= u0
        h1 += v1 <= u1
        h2 += v2 <= u2
        h3 += v3 <= u3
    return h0, h1, h2, h3


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _rho(v, tlo, rz, az, bz):
    """rho of a pair from its working-dtype ``sq`` v: 1 at v = 0, ``r(z)`` inside, else ``a + b / sqrt v``."""
    out = az + bz / np.sqrt(v)
    return 1.0 if v == 0 else np.float64(rz if v <= tlo else out)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _in_band(v, tlo, thi):
    return (v > tlo) & (v <= thi)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _rho_group(
    X, YT, y0, w, z0, z1, z2, z3, columns, s0, s1, s2, s3, Tlo, Thi, rin, a, bm, tiny, r0, r1, r2, r3
):
    """rho of the group's four references against targets [y0, y0 + w) into ``r_k`` (float64): ``sq``
    from ``s_k`` plus columns [``head_columns(d)``, d), summed in registers (``d = len(columns)``, a
    compile-time constant); returns a mask, bit k set when reference k has a target whose ``sq`` lies in
    its guard band or at most ``tiny`` (the caller re-checks that reference's row in float64)."""
    j0, cols, x0, x1, x2, x3 = _group_start(X, z0, z1, z2, z3, columns)
    l0, l1, l2, l3 = Tlo[z0], Tlo[z1], Tlo[z2], Tlo[z3]
    h0, h1, h2, h3 = Thi[z0], Thi[z1], Thi[z2], Thi[z3]
    i0, i1, i2, i3 = rin[z0], rin[z1], rin[z2], rin[z3]
    a0, a1, a2, a3 = a[z0], a[z1], a[z2], a[z3]
    b0, b1, b2, b3 = bm[z0], bm[z1], bm[z2], bm[z3]
    amb = 0
    for t in range(w):
        v0, v1, v2, v3 = _group_sq(YT, y0, t, j0, cols, x0, x1, x2, x3, s0, s1, s2, s3)
        r0[t] = _rho(v0, l0, i0, a0, b0)
        r1[t] = _rho(v1, l1, i1, a1, b1)
        r2[t] = _rho(v2, l2, i2, a2, b2)
        r3[t] = _rho(v3, l3, i3, a3, b3)
        f0, f1 = int(_in_band(v0, l0, h0) | (v0 <= tiny)), int(_in_band(v1, l1, h1) | (v1 <= tiny))
        f2, f3 = int(_in_band(v2, l2, h2) | (v2 <= tiny)), int(_in_band(v3, l3, h3) | (v3 <= tiny))
        amb |= f0 | (f1 << 1) | (f2 << 2) | (f3 << 3)
    return amb


#: :func:`~cdfts_dask.engine.plan.rho_float64` compiled for the CPU (the CUDA kernels compile the same one)
_rho64 = njit(cache=True, nogil=True, error_model="numpy", inline="always")(rho_float64)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _band_recheck(X, YT, y0, y1, z, rho, T, tlo, thi, lam, q, m, tiny, sq):
    """rho from the float64 ``sq`` e (:func:`~cdfts_dask.engine.plan.rho_float64`) where the working-dtype
    ``sq`` (summed again, in the same order: the same values) lies in the guard band ``(tlo, thi]`` or at
    or below ``tiny`` (float32 values that may have underflowed,
    :func:`~cdfts_dask.engine.plan.exact_below`): exact membership, and rho in the oracle's order of
    operations (a reference of band ``(-1, inf]`` has every pair decided so)."""
    _sq_row(sq, X, z, YT, y0, y1)
    for t in range(y1 - y0):
        v = sq[t]
        if v <= tiny or (v > tlo and v <= thi and v != 0):
            rho[t] = _rho64(_sq64(X, z, YT, y0 + t), T, lam, q, m)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _accumulate_group(X, z0, z1, z2, z3, r0, r1, r2, r3, A, BT, y0, y1):
    """``A(y) += sum_k r_k(y)`` and ``BT[:, y] += sum_k r_k(y) z_k`` over the group's four references."""
    w = y1 - y0
    Ab = A[y0:y1]
    for t in range(w):
        Ab[t] += (r0[t] + r1[t]) + (r2[t] + r3[t])
    for j in range(BT.shape[0]):
        c0, c1 = np.float64(X[z0, j]), np.float64(X[z1, j])
        c2, c3 = np.float64(X[z2, j]), np.float64(X[z3, j])
        acc = BT[j, y0:y1]
        for t in range(w):
            acc[t] += (r0[t] * c0 + r1[t] * c1) + (r2[t] * c2 + r3[t] * c3)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _buffers(dtype):
    """Four zeroed ``BLOCK``-long vectors (separate arrays: each a contiguous 1-d type)."""
    return np.zeros(BLOCK, dtype), np.zeros(BLOCK, dtype), np.zeros(BLOCK, dtype), np.zeros(BLOCK, dtype)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def shift_accumulate(X, YT, T, Tlo, Thi, rin, a, bm, lam, q, m, tiny, A, BT, columns):
    """Accumulate ``A(y) += sum_z rho(z, y)`` and ``BT[:, y] += sum_z rho(z, y) z`` over all refs z.

    ``X``: reference points (rows z), ``YT``: target block transposed (d x nt),
    ``columns``: a tuple of ``d = X.shape[1]`` zeros (:func:`columns_token`): its length is
    part of the kernel's type, so d is a compile-time constant (one compiled kernel per d).
    Per reference z: ``T[z]`` its membership threshold on ``sq`` (float64;
    ``Tlo``/``Thi`` the guard band in X's dtype), ``rin[z] = r(z)`` (rho inside),
    and rho outside ``= a[z] + bm[z] / sqrt(sq)`` (the oracle's
    ``((s - lam) (1 - q) / (1 - lam) + q) / s`` with ``s = sqrt(sq) / m``);
    rho = 1 where sq = 0.  A working-dtype ``sq`` in the band or at most ``tiny``
    (:func:`~cdfts_dask.engine.plan.exact_below`: float32 values that may have
    underflowed; -1 in float64) has its rho from the float64 ``sq``, the float64
    ``lam[z]``, ``q[z]`` and the diameter ``m`` (:func:`_band_recheck`).

    References are swept in chunks of ``REF_CHUNK`` (cache blocking) and in
    groups of four against blocks of ``BLOCK`` targets: each target's ``sq``
    to the four references is summed in registers, ``SQ_COLUMNS`` columns at a
    time (the first ``d - last`` columns through a buffer, the last ones
    fused with rho); then A and B take the group's four rho rows in one pass
    (a group short of four references repeats its last one with rho 0).
    Every target sees the same sequence of operations, so duplicate targets
    get bit-identical sums.
    """
    n = X.shape[0]
    nt = YT.shape[1]
    head = head_columns(len(columns))
    s0, s1, s2, s3 = _buffers(X.dtype)  # sq of the columns before the last chunk
    r0, r1, r2, r3 = _buffers(np.float64)  # rho of the group's references
    sq = np.empty(BLOCK, dtype=X.dtype)  # one reference's sq, for the guard band re-check
    for c0 in range(0, n, REF_CHUNK):
        c1 = min(c0 + REF_CHUNK, n)
        for y0 in range(0, nt, BLOCK):
            y1 = min(y0 + BLOCK, nt)
            w = y1 - y0
            for z0 in range(c0, c1, 4):
                g = min(4, c1 - z0)  # references in this group
                z1, z2, z3 = z0 + min(1, g - 1), z0 + min(2, g - 1), z0 + min(3, g - 1)
                if head:
                    _sq_head(X, YT, y0, w, z0, z1, z2, z3, head, s0, s1, s2, s3)
                amb = _rho_group(X, YT, y0, w, z0, z1, z2, z3, columns, s0, s1, s2, s3,
                                 Tlo, Thi, rin, a, bm, tiny, r0, r1, r2, r3)  # fmt: skip
                if amb:  # only the references with a pair to re-check (a band (-1, inf] has every pair)
                    for bit, z, r in ((1, z0, r0), (2, z1, r1), (4, z2, r2), (8, z3, r3)):
                        if amb & bit:
                            coefficients = (T[z], Tlo[z], Thi[z], lam[z], q[z], m, tiny)
                            _band_recheck(X, YT, y0, y1, z, r, *coefficients, sq)
                if g < 4:  # a short group's repeated reference adds nothing
                    r3[:w] = 0
                    if g < 3:
                        r2[:w] = 0
                    if g < 2:
                        r1[:w] = 0
                _accumulate_group(X, z0, z1, z2, z3, r0, r1, r2, r3, A, BT, y0, y1)


#: points per leaf of the k-d blocks of the diameter and the count pass: small leaves have tight boxes
#: (at d = 8, 43% of the leaf pairs of 64 points survive the diameter's bound where 64% of those of 256 do)
KD_LEAF = 32
#: leaves per group: the passes test groups' boxes first, then their leaves'
KD_GROUP = 8


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _select(order, lo, hi, k, X, col):
    """Reorder ``order[lo:hi]`` so that the k-th holds the point of median rank by ``X[:, col]``: those
    before it have keys <= its key, those after >= (Hoare partitions around a median of three)."""
    hi -= 1
    while hi > lo:
        a, b, c = X[order[lo], col], X[order[(lo + hi) // 2], col], X[order[hi], col]
        pivot = max(min(a, b), min(max(a, b), c))
        i, j = lo, hi
        while i <= j:
            while X[order[i], col] < pivot:
                i += 1
            while X[order[j], col] > pivot:
                j -= 1
            if i <= j:
                order[i], order[j] = order[j], order[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def kd_leaves(X, leaf):
    """``(order, starts)`` of a k-d split: halve at the median of the widest column until blocks hold
    at most ``leaf`` points; leaf L is ``order[starts[L]:starts[L + 1]]``, leaves in depth-first order
    (consecutive leaves form subtrees).  Deterministic: every part of a pass computes the same split."""
    n, d = X.shape
    order = np.arange(n)
    starts = np.empty(n + 1, dtype=np.int64)
    nleaves = 0
    stack = np.empty((128, 2), dtype=np.int64)  # depth <= log2(n) + 1
    stack[0, 0], stack[0, 1] = 0, n
    top = 1
    while top > 0:
        top -= 1
        a, b = stack[top, 0], stack[top, 1]
        if b - a <= leaf:
            starts[nleaves] = a
            nleaves += 1
            continue
        col, widest = 0, -1.0
        for j in range(d):
            lo_j = hi_j = X[order[a], j]
            for i in range(a + 1, b):
                v = X[order[i], j]
                lo_j = min(lo_j, v)
                hi_j = max(hi_j, v)
            if hi_j - lo_j > widest:
                col, widest = j, hi_j - lo_j
        half = (b - a) // 2
        _select(order, a, b, a + half, X, col)
        stack[top, 0], stack[top, 1] = a + half, b
        stack[top + 1, 0], stack[top + 1, 1] = a, a + half
        top += 2
    starts[nleaves] = n
    return order, starts[: nleaves + 1].copy()


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _box_bound(lo, hi, a, b):
    """Largest ``sq`` that a point of box a and a point of box b can have: ``sum_j max(hi_a - lo_b,
    hi_b - lo_a)^2``, inflated by 1e-9 (and 1e-300) against its own rounding."""
    ub = 0.0
    for j in range(lo.shape[1]):
        e = max(hi[a, j] - lo[b, j], hi[b, j] - lo[a, j])
        ub += e * e
    return ub * (1.0 + 1e-9) + 1e-300


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _pairs_max(X, order, r0, r1, q0, q1, buf, sq, best):
    """Largest of ``best`` and the float64 ``sq`` of points order[r0:r1] x order[q0:q1], column by column
    (the oracle's order)."""
    d = X.shape[1]
    w = q1 - q0
    for j in range(d):
        for t in range(w):
            buf[j, t] = np.float64(X[order[q0 + t], j])
    for pi in range(r0, r1):
        p = order[pi]
        for t in range(w):
            sq[t] = 0.0
        for j in range(d):
            xj = np.float64(X[p, j])
            row = buf[j]
            for t in range(w):
                diff = xj - row[t]
                sq[t] += diff * diff
        for t in range(w):
            if sq[t] > best:
                best = sq[t]
    return best


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def block_max_sq(X, order, bounds, lo, hi, glo, ghi, best, g0, g1):
    """Largest float64 ``sq`` over the pairs of group pairs (I, J >= I), g0 <= I < g1, pruned by boxes.

    Leaf L holds the points ``order[bounds[L]:bounds[L + 1]]`` with box ``lo[L]..hi[L]``; group I is
    the ``KD_GROUP`` consecutive leaves from ``I * KD_GROUP`` (a subtree of the k-d
    split), with box ``glo[I]..ghi[I]`` around theirs.  No pair of A x B exceeds :func:`_box_bound`,
    so a group pair, then a leaf pair, whose bound is below the running maximum ``best`` (initially a
    true pair's ``sq``) is skipped.  Where most leaf pairs of a group pair survive (high d: boxes prune
    little), the group pair is computed whole, in long vectors; the rest exactly, column by column, as
    the oracle does.
    """
    d = X.shape[1]
    G = KD_GROUP
    nf = bounds.shape[0] - 1
    ng = glo.shape[0]
    width = 1
    for g in range(ng):
        width = max(width, bounds[min(g * G + G, nf)] - bounds[g * G])
    buf = np.empty((d, width))
    sq = np.empty(width)
    leaf_bound = np.empty((G, G))
    for gi in range(g0, g1):
        i0, i1 = gi * G, min(gi * G + G, nf)
        for gj in range(gi, ng):
            if _box_bound(glo, ghi, gi, gj) < best:
                continue
            j0, j1 = gj * G, min(gj * G + G, nf)
            kept = 0
            total = 0
            for fi in range(i0, i1):
                for fj in range(max(fi, j0) if gi == gj else j0, j1):
                    ub = _box_bound(lo, hi, fi, fj)
                    leaf_bound[fi - i0, fj - j0] = ub
                    total += 1
                    kept += ub >= best
            if 2 * kept > total:
                best = _pairs_max(X, order, bounds[i0], bounds[i1], bounds[j0], bounds[j1], buf, sq, best)
                continue
            for fi in range(i0, i1):
                for fj in range(max(fi, j0) if gi == gj else j0, j1):
                    if leaf_bound[fi - i0, fj - j0] >= best:
                        best = _pairs_max(X, order, bounds[fi], bounds[fi + 1], bounds[fj], bounds[fj + 1],
                                          buf, sq, best)  # fmt: skip
    return best


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _box_gap(alo, ahi, a, blo, bhi, b):
    """Smallest ``sq`` that a point of box a (``alo[a]..ahi[a]``) and a point of box b (``blo[b]..bhi[b]``)
    can have: ``sum_j g_j^2``, ``g_j = max(0, lo_b - hi_a, lo_a - hi_b)``, deflated by 1e-9 against its
    own rounding."""
    lb = 0.0
    for j in range(alo.shape[1]):
        g = max(0.0, blo[b, j] - ahi[a, j], alo[a, j] - bhi[b, j])
        lb += g * g
    return lb * (1.0 - 1e-9)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _add_whole(whole, p0, p1, q0, q1):
    """Every pair (z, y >= z) of points [p0, p1) x [q0, q1) is inside: each point of one block gains
    the other block's size (a block with itself: its own size, the point itself included), through the
    difference vector ``whole`` (its running sum is the count)."""
    whole[p0] += q1 - q0
    whole[p1] -= q1 - q0
    if q0 != p0:
        whole[q0] += p1 - p0
        whole[q1] -= p1 - p0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def count_leaf_pairs(X, XT, bounds, lo, hi, glo, ghi, T, Tlo, Thi, g0, g1, counts, columns):
    """Epsilon counts from the pairs (z, y >= z) of group pairs (I, J >= I), g0 <= I < g1, by boxes;
    returns how many pairs it tested one by one.

    X holds the points in k-d order (:func:`kd_leaves`), XT its transpose;
    leaf L is ``X[bounds[L]:bounds[L + 1]]`` with box ``lo[L]..hi[L]``, and
    group I the ``KD_GROUP`` consecutive leaves from ``I * KD_GROUP``
    with box ``glo[I]..ghi[I]``.  A group pair, then a leaf pair, is skipped
    when its boxes are farther apart than the threshold (:func:`_box_gap`
    above ``T``: no pair inside) and counted whole when they are within it
    (:func:`_box_bound` at most ``T``: every pair inside); only the leaf
    pairs between the two are tested pair by pair (:func:`_count_block`,
    exact; a row leaf's consecutive such leaves in one block of up to
    ``BLOCK`` targets).  Each pair counts for both of its points, the point
    itself once.
    """
    n = X.shape[0]
    G = KD_GROUP
    nf = bounds.shape[0] - 1
    ng = glo.shape[0]
    buffers = (np.empty(BLOCK, dtype=X.dtype), *_buffers(X.dtype))
    band = (T, Tlo, Thi)
    whole = np.zeros(n + 1, dtype=np.int64)
    tested = 0
    for gi in range(g0, g1):
        i0, i1 = gi * G, min(gi * G + G, nf)
        for gj in range(gi, ng):
            if _box_gap(glo, ghi, gi, glo, ghi, gj) > T:
                continue
            j0, j1 = gj * G, min(gj * G + G, nf)
            if _box_bound(glo, ghi, gi, gj) <= T:
                _add_whole(whole, bounds[i0], bounds[i1], bounds[j0], bounds[j1])
                continue
            for fi in range(i0, i1):
                p0, p1 = bounds[fi], bounds[fi + 1]
                q0 = q1 = p1  # the pending run of consecutive mixed leaves [q0, q1), tested in one block
                for fj in range(max(fi, j0), j1):
                    if _box_gap(lo, hi, fi, lo, hi, fj) > T:
                        continue
                    r0, r1 = bounds[fj], bounds[fj + 1]
                    if _box_bound(lo, hi, fi, fj) <= T:
                        _add_whole(whole, p0, p1, r0, r1)
                    elif fj == fi:
                        for z in range(p0, p1):
                            counts[z] += 1
                        tested += _count_block(X, XT, p0, p1, p0, p1, band, counts, buffers, columns)
                    elif r0 == q1 and r1 - q0 <= BLOCK:
                        q1 = r1
                    else:
                        if q1 > q0:
                            tested += _count_block(X, XT, p0, p1, q0, q1, band, counts, buffers, columns)
                        q0, q1 = r0, r1
                if q1 > q0:
                    tested += _count_block(X, XT, p0, p1, q0, q1, band, counts, buffers, columns)
    running = 0
    for z in range(n):
        running += whole[z]
        counts[z] += running
    return tested


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def kth_leaf_pairs(X, XT, bounds, lo, hi, glo, ghi, L0, L1, k, grow, floor, columns):
    """For the rows of leaves L0 <= A < L1: the (k+1)-th smallest float64 ``sq`` over all points (self
    included), in row order (X in k-d order, XT its transpose, leaves and groups as for
    :func:`count_leaf_pairs`).

    Each row leaf keeps a sorted buffer of the k + 1 smallest values per row
    (memory O(leaf k)) and visits the groups in order of the smallest ``sq``
    their boxes allow against its own box (:func:`_box_gap`), then each
    group's leaves (:func:`_kth_block`).  Once a group's, or a leaf's, box
    gap is above the largest (k+1)-th value of the leaf's rows so far, none
    of its points can enter a buffer: the leaf is skipped, and the groups
    after it too.  A group's consecutive leaves not skipped go in one block
    (a whole group where boxes rule out little: high d).  The values kept
    are the float64 ``sq`` of the pairs, so the result does not depend on
    the order.  ``sqrt`` of it divided by m is the oracle's k-NN radius (the
    map is monotone).
    """
    nf = bounds.shape[0] - 1
    ng = glo.shape[0]
    G = KD_GROUP
    buffers = _buffers(X.dtype)
    group_gap = np.empty(ng)
    out = np.empty(bounds[L1] - bounds[L0])
    for a in range(L0, L1):
        p0, p1 = bounds[a], bounds[a + 1]
        best = np.full((p1 - p0, k + 1), np.inf)
        for g in range(ng):
            group_gap[g] = _box_gap(lo, hi, a, glo, ghi, g)
        worst = np.inf
        for g in np.argsort(group_gap):
            if group_gap[g] > worst:
                break
            f1 = min(g * G + G, nf)
            f = g * G
            while f < f1:  # runs of consecutive leaves not ruled out, each in one block
                if _box_gap(lo, hi, a, lo, hi, f) > worst:
                    f += 1
                    continue
                run = f + 1
                while run < f1 and _box_gap(lo, hi, a, lo, hi, run) <= worst:
                    run += 1
                _kth_block(X, XT, p0, p1, bounds[f], bounds[run], best, grow, floor, columns, buffers)
                worst = best[0, k]
                for r in range(1, p1 - p0):
                    worst = max(worst, best[r, k])
                f = run + 1  # leaf ``run`` (if any) was ruled out, and worst only decreases
        for r in range(p1 - p0):
            out[p0 - bounds[L0] + r] = best[r, k]
    return out


def _cached_signatures(kernel) -> list[tuple]:
    """Argument types of the compiled versions of a ``cache=True`` kernel in numba's on-disk cache that
    this process would load: those of the kernel's current code, for this CPU and its features."""
    _, here, code = kernel._cache._index_key((), kernel.targetctx.codegen())
    index = kernel._cache._cache_file._load_index()
    return [sig for sig, cpu, version in index if cpu == here and version == code]


def kernels_cached(d: int, dtype: str, kernels: tuple[str, ...]) -> tuple[bool, bool] | None:
    """``(any, these)`` for numba's on-disk cache (``cache=True``) as this process sees it: whether it
    holds any compiled kernel of this module from an earlier run, and whether it holds the named
    ``kernels``, of those compiled once per number of columns (:func:`count_leaf_pairs`,
    :func:`kth_leaf_pairs`, :func:`shift_accumulate`: d is part of their type, :func:`columns_token`),
    for d columns of ``dtype`` points.  None when numba's cache cannot be inspected.

    Used only to say "compiling kernels" before a run that will compile them.
    """
    from numba import typeof
    from numba.core.dispatcher import Dispatcher

    try:
        cached = {name: _cached_signatures(k) for name, k in globals().items() if isinstance(k, Dispatcher)}
        points, token = typeof(np.empty((1, 1), dtype)), typeof(columns_token(d))
        these = all(any(sig[0] == points and sig[-1] == token for sig in cached[name]) for name in kernels)
        return any(cached.values()), these
    except Exception:  # numba internals moved: say nothing rather than something wrong
        return None
