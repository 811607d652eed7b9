"""numba kernels of the CPU device: one sweep per block of pairs, no n x n temporaries.

Membership tests ``sq <= T`` use the exact thresholds of
:mod:`cdfts_dask.engine.plan`, with ``sq`` summed column by column in the
oracle's order; no ``fastmath`` is used (it would allow FMA contraction and
reassociation of ``sq``); vectorisation comes from loops whose innermost
index runs over targets, where every operation is elementwise.  The same
kernels run on float32 points (8 SIMD lanes instead of 4): float32 ``sq``
inside the guard band ``[T_lo, T_hi]`` is re-evaluated in float64 from the
exactly upcast coordinates; rho is computed in the points' dtype and
accumulated in float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: targets per inner block: the block's coordinates, accumulators and buffers stay in L1
BLOCK = 256
#: references per outer chunk of the shift pass (even; 2048 x d values stay in L2 while the
#: target panel's blocks sweep them); each target still sums references in order 0..n-1
REF_CHUNK = 2048


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
def count_upper(X, XT, start, stop, T, Tlo, Thi, counts):
    """Epsilon counts from the pairs (z, y), start <= z < stop, y > z, added to both z and y.

    ``sq <= T`` is the oracle's ``S / m <= lam`` (see module docstring); each
    unordered pair is visited once and counts for both of its points; the
    point itself (sq = 0) is counted here for the panel rows.
    """
    n, d = X.shape
    sq = np.empty(BLOCK, dtype=X.dtype)
    for y0 in range(start + 1, n, BLOCK):
        y1 = min(y0 + BLOCK, n)
        for z in range(start, min(stop, y1 - 1)):
            lo = max(z + 1, y0)
            w = y1 - lo
            if w <= 0:
                continue
            _sq_row(sq, X, z, XT, lo, y1)
            c = 0
            amb = 0
            cnt = counts[lo:y1]
            for t in range(w):
                v = sq[t]
                inside = v <= Tlo
                c += inside
                cnt[t] += inside
                amb += (v > Tlo) & (v <= Thi)
            if amb:
                for t in range(w):
                    v = sq[t]
                    if v > Tlo and v <= Thi and _sq64(X, z, XT, lo + t) <= T:
                        c += 1
                        counts[lo + t] += 1
            counts[z] += c
    for z in range(start, stop):
        counts[z] += 1


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _above_bound(worst, grow, floor):
    """A working-dtype ``sq`` above this proves the float64 one above ``worst`` (none below ``floor``)."""
    return worst * grow if worst >= floor else np.inf


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def kth_smallest_sq(X, XT, start, stop, k, grow, floor):
    """For rows start <= z < stop: the (k+1)-th smallest float64 ``sq`` over all points (self included).

    Keeps a sorted buffer of the k+1 smallest values per row (insertion when a
    value beats the current largest), so memory is O(rows k).  ``sqrt`` of the
    result divided by m is the oracle's k-NN radius (the map is monotone).

    ``sq`` is summed in X's dtype.  float64 (``grow = 1``, ``floor = 0``): it
    is the float64 ``sq``.  float32: a value above ``worst * grow`` (worst,
    the row's current (k+1)-th, at least ``floor``) proves the float64 ``sq``
    above worst (:func:`~cdfts_dask.engine.plan.sq_bound_factors`); the rest
    get their float64 ``sq`` from the upcast coordinates.
    """
    n, d = X.shape
    exact = X.itemsize == 8  # float64 points: sq is already the float64 one
    rows = stop - start
    best = np.full((rows, k + 1), np.inf)
    sq = np.empty(BLOCK, dtype=X.dtype)
    for y0 in range(0, n, BLOCK):
        y1 = min(y0 + BLOCK, n)
        w = y1 - y0
        for i in range(rows):
            z = start + i
            _sq_row(sq, X, z, XT, y0, y1)
            b = best[i]
            worst = b[k]
            bound = _above_bound(worst, grow, floor)
            hits = 0
            for t in range(w):  # vectorised: after the first blocks, most rows have none
                hits += sq[t] <= bound
            if hits == 0:
                continue
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
    out = np.empty(rows)
    for i in range(rows):
        out[i] = best[i, k]
    return out


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _rho_row(sq, rho, w, X, z, YT, y0, T, tlo, thi, rz, az, bz):
    """rho(z, y) for one reference z over a target block (exact membership, guard band re-check)."""
    one = rho.dtype.type(1.0)
    amb = 0
    for t in range(w):
        v = sq[t]
        out = az + bz / np.sqrt(v)
        r = rz if v <= tlo else out
        rho[t] = one if v == 0 else r
        amb += (v > tlo) & (v <= thi)
    if amb:
        for t in range(w):
            v = sq[t]
            if v > tlo and v <= thi and v != 0 and _sq64(X, z, YT, y0 + t) <= T:
                rho[t] = rz


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def shift_accumulate(X, YT, T, Tlo, Thi, rin, a, bm, A, BT):
    """Accumulate ``A(y) += sum_z rho(z, y)`` and ``BT[:, y] += sum_z rho(z, y) z`` over all refs z.

    ``X``: reference points (rows z), ``YT``: target block transposed (d x nt).
    Per reference z: ``T[z]`` its membership threshold on ``sq`` (float64;
    ``Tlo``/``Thi`` the guard band in X's dtype), ``rin[z] = r(z)`` (rho inside),
    and rho outside ``= a[z] + bm[z] / sqrt(sq)`` (the oracle's
    ``((s - lam) (1 - q) / (1 - lam) + q) / s`` with ``s = sqrt(sq) / m``);
    rho = 1 where sq = 0.

    References are swept in chunks of ``REF_CHUNK`` (cache blocking) and taken
    two at a time (register blocking): one load of each
    target coordinate serves both ``sq`` sums, and A and B are read and
    written once per pair of references.  Every target sees the same sequence
    of operations, so duplicate targets get bit-identical sums.
    """
    n = X.shape[0]
    sq0 = np.empty(BLOCK, dtype=X.dtype)
    sq1 = np.empty(BLOCK, dtype=X.dtype)
    r0 = np.empty(BLOCK, dtype=X.dtype)
    r1 = np.empty(BLOCK, dtype=X.dtype)
    for c0 in range(0, n, REF_CHUNK):
        c1 = min(c0 + REF_CHUNK, n)
        _shift_chunk(X, YT, T, Tlo, Thi, rin, a, bm, A, BT, c0, c1, sq0, sq1, r0, r1)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _shift_chunk(X, YT, T, Tlo, Thi, rin, a, bm, A, BT, c0, c1, sq0, sq1, r0, r1):
    """References [c0, c1) against every target block (the chunk stays in L2 meanwhile)."""
    d = X.shape[1]
    nt = YT.shape[1]
    for y0 in range(0, nt, BLOCK):
        y1 = min(y0 + BLOCK, nt)
        w = y1 - y0
        Ab = A[y0:y1]
        for z in range(c0, c1 - 1, 2):
            zb = z + 1
            for t in range(w):
                sq0[t] = 0.0
                sq1[t] = 0.0
            for j in range(d):
                za = X[z, j]
                zc = X[zb, j]
                col = YT[j, y0:y1]
                for t in range(w):
                    c = col[t]
                    d0 = za - c
                    d1 = zc - c
                    sq0[t] += d0 * d0
                    sq1[t] += d1 * d1
            _rho_row(sq0, r0, w, X, z, YT, y0, T[z], Tlo[z], Thi[z], rin[z], a[z], bm[z])
            _rho_row(sq1, r1, w, X, zb, YT, y0, T[zb], Tlo[zb], Thi[zb], rin[zb], a[zb], bm[zb])
            for t in range(w):
                Ab[t] += np.float64(r0[t]) + np.float64(r1[t])
            for j in range(d):
                za = np.float64(X[z, j])
                zc = np.float64(X[zb, j])
                acc = BT[j, y0:y1]
                for t in range(w):
                    acc[t] += r0[t] * za + r1[t] * zc
        if (c1 - c0) % 2:  # the chunk's last reference alone
            z = c1 - 1
            for t in range(w):
                sq0[t] = 0.0
            for j in range(d):
                za = X[z, j]
                col = YT[j, y0:y1]
                for t in range(w):
                    d0 = za - col[t]
                    sq0[t] += d0 * d0
            _rho_row(sq0, r0, w, X, z, YT, y0, T[z], Tlo[z], Thi[z], rin[z], a[z], bm[z])
            for t in range(w):
                Ab[t] += r0[t]
            for j in range(d):
                za = np.float64(X[z, j])
                acc = BT[j, y0:y1]
                for t in range(w):
                    acc[t] += r0[t] * za


#: points per leaf of the diameter's k-d blocks: small leaves have tight boxes (at d = 8, 43% of the leaf
#: pairs of 64 points survive the bound where 64% of those of 256 do)
DIAMETER_LEAF = 32
#: leaves per group: the diameter tests groups' boxes first, then their leaves'
DIAMETER_GROUP = 8


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
    the ``DIAMETER_GROUP`` consecutive leaves from ``I * DIAMETER_GROUP`` (a subtree of the k-d
    split), with box ``glo[I]..ghi[I]`` around theirs.  No pair of A x B exceeds :func:`_box_bound`,
    so a group pair, then a leaf pair, whose bound is below the running maximum ``best`` (initially a
    true pair's ``sq``) is skipped.  Where most leaf pairs of a group pair survive (high d: boxes prune
    little), the group pair is computed whole, in long vectors; the rest exactly, column by column, as
    the oracle does.
    """
    d = X.shape[1]
    G = DIAMETER_GROUP
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


def kernels_cached() -> bool | None:
    """Whether numba's on-disk cache (``cache=True``) holds compiled kernels of this module from an
    earlier run, as this process sees it; None when numba's cache cannot be inspected.

    Used only to say "compiling kernels, first run only" before the first run on a machine.
    """
    from numba.core.dispatcher import Dispatcher

    try:
        return any(
            bool(kernel._cache._cache_file._load_index())
            for kernel in globals().values()
            if isinstance(kernel, Dispatcher)
        )
    except Exception:  # numba internals moved: say nothing rather than something wrong
        return None
