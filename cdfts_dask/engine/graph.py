"""The one graph builder: a CDF-TS iteration as panel tasks on a ``distributed.Client``.

Per iteration, on points X (n x d, one copy per worker, resident on the
worker's device) it submits, futures feeding futures, so the client waits
only once, for a few scalars:

1. **diameter**: the largest ``sq`` over pairs (one part up to n = 4096,
   else one part per worker thread), ``m = sqrt(max sq)``; above n = 16384
   one task first builds the device's pair index (the CPU's k-d leaves and
   their boxes, O(n d log n)), which the diameter, count and k-NN parts
   share rather than each building it;
2. **reference pass**: epsilon counts over the upper triangle (each
   unordered pair once, counted for both points; triangle-balanced panels,
   each fed the diameter parts' maxima, from which it derives the exact
   threshold on ``sq``) or the k-th neighbour distance per row;
3. **plan**: one task, the per-reference shift coefficients (:mod:`.plan`,
   NumPy), fed by the partial count vectors (summed there) or the k-th
   distance pieces (joined there);
4. **shift**: per target panel, ``A`` and ``B = rho^T X`` over all
   references, giving the shifted rows;
5. **finish**: the O(n d) normalisation, ``sum |X_new - X_old|``, the
   column range, as two tasks fed by the same shifted blocks: the summary,
   which is all the client fetches, then on its worker the new positions,
   which stay there (computed while the client fetches the summary and
   submits the next iteration).

Every value that all panels of a pass share is bit-identical wherever
they run, so equal points (duplicates) get bit-identical results: the
plan is computed by exactly one task and handed to the panels; the
threshold is a bisection of correctly rounded NumPy operations on the same
maxima, which every count panel repeats (half a millisecond).

Task hops.  Each task a pass waits for costs a scheduler round trip (about
5 ms on a local cluster: the scheduler batches its messages to a worker
every 5 ms), whatever the task's size; at small n the iteration is mostly
these hops.  So no task on the chain from the diameter to the client only
reshapes another's result: the count panels derive the threshold
themselves, the k-NN plan the diameter, and the finish is computed twice
(for the summary, then for the positions) rather than split by a task
after it.  The positions task depends on the summary task, so that it
runs where the shifted blocks already are (two finish tasks side by side
could land on two workers and send all n x d shifted rows twice).

Partial results meet in trees of fan-in :data:`FAN_IN` (``split_every``-style):
:func:`narrow` combines them until at most ``FAN_IN`` remain, and the
consumer (a count panel, the plan, the finish) takes those itself, so the
last level of each tree costs no task hop of its own: per-part maxima, the
epsilon count vectors (n values each: no task ever holds more than
``FAN_IN`` of them, never n x P), the k-th radii and the shifted panels
(concatenated in order).  So a pass of P panels has P + about P / 7 tasks,
and the graph grows linearly in n.  The statistics the checkpoint and a
model keep (the summed counts, the radii) are computed beside the critical
path by tasks of their own.

The builder knows nothing of the device: the task bodies come from the
module registered for ``device`` (:mod:`.devices`), all with the interface
documented in :mod:`.cpu`.
"""

from __future__ import annotations

import time

import numpy as np

from . import plan
from .devices import device_module
from .plan import chunks
from .step import Step

#: most partial results one reduction task combines
FAN_IN = 8
#: broadcasts of the input tried when workers leave during one (see :meth:`TiledEngine.put`)
SCATTER_ATTEMPTS = 3
#: up to this n the diameter is one task (n^2 / 2 sq at most, ~10 ms on a CPU); above, one part per thread
#: (every part repeats an O(n d) set-up, the farthest-point bound, so more parts than threads only add
#: work and task hops)
DIAMETER_SINGLE_MAX_N = 4096
#: count and k-NN parts per worker thread, at most (fewer where there are fewer shift panels): every part
#: repeats an O(n d) set-up (the CPU's points in k-d order; up to SHARED_INDEX_MIN_N the O(n d log n) k-d
#: split too), so parts beyond what balances the load only add work (at n = 1e5 on 2 workers, 25 parts
#: each building its own k-d split spent 1.2 s of CPU time on it)
REFERENCE_TASKS_PER_THREAD = 4
#: above this n one task per iteration builds the device's pair index (the CPU's k-d leaves and boxes)
#: and hands it to every diameter, count and k-NN part: at n = 1e5 it takes 0.04 s, which 16 diameter
#: and 64 count parts on 16 threads each repeated (2.5x the reference pass's CPU time).  Up to it each
#: part builds its own, which costs less than the task hop (about 5 ms) that a shared one adds to the
#: chain: a worker thread runs about 5 parts, and the split takes 1.3 ms at n = 7200, 6 ms at 2e4
#: (d = 8)
SHARED_INDEX_MIN_N = 16384


def narrow(client, func, futures: list) -> list:
    """Combine futures with ``func(*group)``, groups of :data:`FAN_IN` in order, until ``FAN_IN`` remain."""
    while len(futures) > FAN_IN:
        futures = [client.submit(func, *futures[i : i + FAN_IN]) for i in range(0, len(futures), FAN_IN)]
    return futures


def _max(*values: float) -> float:
    return max(values)


def _add(*vectors):
    total = vectors[0].copy()
    for v in vectors[1:]:
        total += v
    return total


def _counts_part(counts_part, X, part: int, parts: int, lam: float, index, *max_sq: float):
    """The device's ``counts_part`` (the part-th of ``parts``, over the pair ``index``) under the
    epsilon pass's exact threshold on ``sq``, derived here from the diameter parts' maxima
    (:func:`~cdfts_dask.engine.plan.count_threshold`)."""
    return counts_part(X, part, parts, plan.count_threshold(plan.diameter(*max_sq), lam), index)


def _epsilon_plan(m: float, lam: float, mean, dtype: str, *partial):
    """The epsilon shift plan from the partial count vectors (summed here, exactly: int64)."""
    return plan.epsilon_plan(m, lam, _add(*partial), mean, dtype)


def _knn_radius(m: float, *kth):
    """``lam_k(z)`` from the partial k-th distance vectors (summed here: each row's distance is in one
    of them, 0 in the others, so the sum is exact)."""
    return plan.knn_radius(_add(*kth), m)


def _knn_plan(max_sq: list, k: int, mean, dtype: str, *kth):
    """The k-NN shift plan from the diameter parts' maxima (m derived here) and the partial k-th
    distance vectors (summed here)."""
    m = plan.diameter(*max_sq)
    return plan.knn_plan(m, k, _knn_radius(m, *kth), mean, dtype)


def _positions(finish, X, summary, *shifted):
    """``X_new`` of the device's ``finish(X, *shifted)``: the new positions, kept on the worker.

    Run after the ``summary`` task (whose worker holds the shifted blocks: no transfer), while the
    client fetches that summary; the column range computed here must be the summary's (the finish is
    deterministic), or the iteration fails rather than go on from positions its summary does not describe.
    """
    new, _, lo, hi = finish(X, *shifted)
    if not (np.array_equal(lo, summary[1]) and np.array_equal(hi, summary[2])):
        raise RuntimeError("the finish gave the positions another column range than the summary's")
    return new


def _summary(finish, X, *shifted):
    """``(sum |X_new - X|, lo, hi)`` of the device's ``finish(X, *shifted)``: all the client fetches."""
    return finish(X, *shifted)[1:]


class TiledEngine:
    """Runs CDF-TS iterations as panel tasks on a ``distributed.Client``.

    ``device``: ``"cpu"`` (numba kernels on NumPy points) or ``"cuda"``
    (numba-cuda kernels on CuPy points, one ``dask_cuda`` worker per GPU).
    ``dtype``: ``"float64"``, or ``"float32"`` with neighbourhoods exactly the
    float64 oracle's on the float32-rounded points.  ``tile_size``: rows per
    panel task (default: the device's choice from n and the worker count).
    """

    def __init__(self, client, tile_size: int | None = None, dtype: str = "float64", backend: str = "cpu"):
        self.client = client
        self.tile_size = tile_size
        self.dtype = dtype
        self.tasks = device_module(backend)

    def put(self, X: np.ndarray):
        """Future of the NumPy points X on every worker.

        ``hash=False``: a fresh key per run, so repeated runs on equal data
        never share (and race on) keys that the previous run is still releasing.
        A worker that leaves during the broadcast makes the scheduler's copy
        step fail with ``KeyError: <its address>`` (it looks the worker up
        after removing it), or its connection close under it
        (``CommClosedError: in <TCP (closed) Scheduler Broadcast ...>``: a
        worker restarted for memory); the points are still here, and the
        broadcast is made again to the workers that are there, up to
        :data:`SCATTER_ATTEMPTS` times.
        """
        from distributed.comm import CommClosedError

        for attempt in range(1, SCATTER_ATTEMPTS + 1):
            try:
                return self.client.scatter(X, broadcast=True, hash=False)
            except KeyError as exc:
                address = exc.args[0] if exc.args else None
                if attempt == SCATTER_ATTEMPTS or not (isinstance(address, str) and "://" in address):
                    raise
            except CommClosedError as exc:  # a worker's connection (not the client's own: not retried)
                in_broadcast = "Broadcast" in str(exc) and self.client.status == "running"
                if attempt == SCATTER_ATTEMPTS or not in_broadcast:
                    raise
            time.sleep(0.2 * attempt)

    def prepare(self, X):
        """The future X (float64 points on the workers) in the device's form and the working dtype;
        X itself where it already is (float64 on a host device)."""
        if self.tasks.HOST and self.dtype == "float64":
            return X
        return self.client.submit(self.tasks.prepare, X, self.dtype)

    def step(
        self, X, n: int, d: int, lam: float, estimator: str, k: int | None, timings: dict | None = None,
        watch=None,
    ) -> Step:  # fmt: skip
        """One iteration on the future ``X`` (from :meth:`prepare`, or a previous step's positions);
        returns the new positions (and statistics) as futures.

        With ``timings`` (benchmarks only) the client also waits after the
        plan and records ``timings["reference"]`` and ``timings["shift"]``
        (seconds; the shift figure includes the O(n d) finish).  ``watch`` (a
        progress display) receives the futures of the iteration's tasks once all
        are submitted, before the client waits for the result.
        """
        tic = time.perf_counter()
        c, dev, dtype = self.client, self.tasks, self.dtype
        # {address: threads} of every worker: from distributed 2025.x (#9045) until #9308 (2026),
        # scheduler_info() listed at most 5 workers, which would have left GPUs of a LocalCUDACluster idle
        workers = c.nthreads()
        addresses = sorted(workers) or [None]

        def on(i: int) -> dict:
            """Round-robin placement of panel i (equal-work panels): locality heuristics would pile
            tasks onto the worker holding a small shared input (m, the plan)."""
            addr = addresses[i % len(addresses)]
            return {} if addr is None else {"workers": [addr], "allow_other_workers": True}

        threads = max(1, sum(workers.values()))
        rows = min(n, self.tile_size) if self.tile_size else dev.panel_rows(n, threads)
        parts = chunks(0, n, rows)
        dparts = 1 if n <= DIAMETER_SINGLE_MAX_N else threads
        rparts = min(len(parts), REFERENCE_TASKS_PER_THREAD * threads)
        shared_index = dev.pair_index is not None and n > SHARED_INDEX_MIN_N  # None: the device shares none
        index = c.submit(dev.pair_index, X) if shared_index else None
        maxima = [c.submit(dev.diameter_part, X, i, dparts, index, **on(i)) for i in range(dparts)]
        maxima = narrow(c, _max, maxima)
        mean = c.submit(dev.column_mean, X)
        m = c.submit(plan.diameter, *maxima)  # for the client, the epsilon plan and the k-NN radii kept
        counts = radius = None
        if estimator == "epsilon":
            partial = [
                c.submit(_counts_part, dev.counts_part, X, i, rparts, lam, index, *maxima, **on(i))
                for i in range(rparts)
            ]
            reference = narrow(c, _add, partial)
            shift_plan = c.submit(_epsilon_plan, m, lam, mean, dtype, *reference)
            counts = c.submit(_add, *reference)  # the statistic kept; beside the critical path
        else:
            partial = [c.submit(dev.kth_part, X, i, rparts, k, index, **on(i)) for i in range(rparts)]
            reference = narrow(c, _add, partial)
            shift_plan = c.submit(_knn_plan, maxima, k, mean, dtype, *reference)
            radius = c.submit(_knn_radius, m, *reference)  # the statistic kept
        if timings is not None:
            from distributed import wait

            wait([shift_plan])
            timings["reference"] = time.perf_counter() - tic
            tic = time.perf_counter()
        shifted = [c.submit(dev.shift_part, X, a, b, shift_plan, **on(i)) for i, (a, b) in enumerate(parts)]
        blocks = narrow(c, dev.concat, shifted)
        summary = c.submit(_summary, dev.finish, X, *blocks)
        positions = c.submit(_positions, dev.finish, X, summary, *blocks)
        if watch is not None:
            tasks = [index, *maxima, *partial, shift_plan, *shifted, summary, positions]
            watch([task for task in tasks if task is not None])
        (total, lo, hi), m_value = c.gather([summary, m])
        if timings is not None:
            timings["shift"] = time.perf_counter() - tic
        return Step(
            positions, total / (n * d), float(m_value), dev.to_host(lo), dev.to_host(hi),
            counts=counts, radius=radius,
        )  # fmt: skip
