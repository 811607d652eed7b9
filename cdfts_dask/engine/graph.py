"""The one graph builder: a CDF-TS iteration as panel tasks on a ``distributed.Client``.

Per iteration, on points X (n x d, one copy per worker, resident on the
worker's device) it submits, futures feeding futures, so the client waits
only once, for a few scalars:

1. **diameter**: the largest ``sq`` over pairs (one part up to n = 4096,
   else one part per worker thread), ``m = sqrt(max sq)``;
2. **reference pass**: epsilon counts over the upper triangle (each
   unordered pair once, counted for both points; triangle-balanced panels;
   each panel derives the exact threshold on ``sq`` from the diameter
   parts' maxima itself) or the k-th neighbour distance per row (beside the
   diameter: it does not need m);
3. **shift**: per target panel, the plan (:mod:`.plan`: per-reference
   coefficients from the summed counts or joined radii, and X's column
   mean; O(n), made in the panel: cheaper than a task hop at small n, under
   1 % of the panel's pair work at large n), then ``A`` and ``B = rho^T X``
   over all references, giving the shifted rows;
4. **finish**: the O(n d) normalisation, twice over the same shifted rows:
   one task returns ``sum |X_new - X_old|`` and the column range (all the
   client waits for), the other keeps ``X_new`` on its worker.

So the critical path is four task hops (diameter -> reference -> shift ->
finish) and one wait; m, the count vector and the radii the checkpoint or a
model keeps are computed beside it.  The workers' addresses are asked of the
scheduler at most every :data:`WORKERS_REFRESH_S` seconds.

Partial results are combined in trees of fan-in :data:`FAN_IN`
(``split_every``-style): :func:`narrow` combines them until at most
``FAN_IN`` remain, and the consumer takes those (the last level of the tree
fused into it): per-part maxima, the epsilon count vectors (n values each:
no task ever holds more than ``FAN_IN`` of them, never n x P), the k-th radii
and the shifted panels (concatenated in order).  So a pass of P panels has
P + about P / 7 tasks, and the graph grows linearly in n.

The builder knows nothing of the device: the task bodies come from the
module registered for ``device`` (:mod:`.devices`), all with the interface
documented in :mod:`.cpu`.
"""

from __future__ import annotations

import time

import numpy as np

from . import plan
from .devices import device_module
from .plan import chunks, triangle_panels
from .step import Step

#: most partial results one reduction task combines
FAN_IN = 8
#: up to this n the diameter is one task (n^2 / 2 sq at most, ~10 ms on a CPU); above, one part per thread
DIAMETER_SINGLE_MAX_N = 4096
#: task priorities: the small tasks the critical path waits for first, the statistics kept for later last
URGENT, LATER = 1, -1
#: the engine asks the scheduler for its workers at most this often (seconds)
WORKERS_REFRESH_S = 5.0


def narrow(client, func, futures: list, fan_in: int = FAN_IN) -> list:
    """Combine futures with ``func(*group)``, groups of ``fan_in`` in order, until ``fan_in`` remain."""
    while len(futures) > fan_in:
        futures = [client.submit(func, *futures[i : i + fan_in]) for i in range(0, len(futures), fan_in)]
    return futures


def submit_placed(client, func, calls: list[tuple], addresses: list) -> list:
    """Futures of ``func(*args)`` for every ``args`` in ``calls``, call i placed on worker ``i mod W``
    (round robin over ``addresses``; another worker may take it), submitted with one ``client.map``
    per worker rather than one ``client.submit`` per call (a tenth of the client's time per task)."""
    futures: list = [None] * len(calls)
    for w, address in enumerate(addresses):
        placed = range(w, len(calls), len(addresses))
        if not placed:
            continue
        where = {} if address is None else {"workers": [address], "allow_other_workers": True}
        columns = zip(*(calls[i] for i in placed), strict=True)  # argument j of every call placed here
        for i, future in zip(placed, client.map(func, *columns, **where), strict=True):
            futures[i] = future
    return futures


def _max(*values: float) -> float:
    return max(values)


def _add(*vectors):
    total = vectors[0].copy()
    for v in vectors[1:]:
        total += v
    return total


# -- task bodies of the graph: a device's body with the tiny step that feeds it fused in ---------------------


def _counts_panel(counts_part, X, a: int, b: int, lam: float, *max_sq: float):
    """Epsilon counts of the pairs (z, y >= z), z in [a, b), with the threshold on ``sq`` derived here
    from the diameter parts' maxima (tens of microseconds: cheaper than a task hop)."""
    return counts_part(X, a, b, plan.count_threshold(plan.diameter(*max_sq), lam))


def _knn_radius(concat, m: float, *kth):
    return plan.knn_radius(concat(*kth), m)


def _epsilon_shift(shift_part, column_mean, X, a: int, b: int, m: float, lam: float, dtype: str, *partial):
    """Shifted rows [a, b) under the epsilon plan, made here from the partial count vectors (summed)
    and X's column mean: O(n) work, less than a task hop at small n and under 1 % of a panel's pairs."""
    return shift_part(X, a, b, plan.epsilon_plan(m, lam, _add(*partial), column_mean(X), dtype))


def _knn_shift(shift_part, column_mean, concat, X, a: int, b: int, m: float, k: int, dtype: str, *kth):
    """Shifted rows [a, b) under the k-NN plan, made here from the k-th distance pieces (joined)."""
    return shift_part(X, a, b, plan.knn_plan(m, k, _knn_radius(concat, m, *kth), column_mean(X), dtype))


def _finish_summary(finish, X, *shifted):
    """``(sum |X_new - X|, lo, hi)`` of the device's ``finish`` (the client waits for this alone)."""
    return finish(X, *shifted)[1:]


def _finish_positions(finish, X, *shifted):
    """``X_new`` of the device's ``finish`` (stays on the worker: the next iteration's points)."""
    return finish(X, *shifted)[0]


class TiledEngine:
    """Runs CDF-TS iterations as panel tasks on a ``distributed.Client``.

    ``device``: ``"cpu"`` (numba kernels on NumPy points) or ``"cuda"``
    (numba-cuda kernels on CuPy points, one ``dask_cuda`` worker per GPU).
    ``dtype``: ``"float64"``, or ``"float32"`` with neighbourhoods exactly the
    float64 oracle's on the float32-rounded points.  ``tile_size``: rows per
    panel task (default: the device's choice from n and the worker count).
    """

    def __init__(self, client, tile_size: int | None = None, dtype: str = "float64", device: str = "cpu"):
        self.client = client
        self.tile_size = tile_size
        self.dtype = dtype
        self.device = device
        self.tasks = device_module(device)
        self._workers: list[tuple[str, int]] | None = None
        self._workers_at = 0.0

    def put(self, X: np.ndarray):
        """Future of the NumPy points X on every worker.

        ``hash=False``: a fresh key per run, so repeated runs on equal data
        never share (and race on) keys that the previous run is still releasing.
        """
        return self.client.scatter(X, broadcast=True, hash=False)

    def prepare(self, X):
        """The future X (float64 points on the workers) in the device's form and the working dtype;
        X itself where it already is (float64 on a host device)."""
        if self.tasks.HOST and self.dtype == "float64":
            return X
        return self.client.submit(self.tasks.prepare, X, self.dtype)

    def workers(self) -> list[tuple[str, int]]:
        """``(address, threads)`` of the workers, asked of the scheduler at most every
        :data:`WORKERS_REFRESH_S` seconds (a round trip saved on every quick iteration; a stale list only
        moves panels, as every placement lets another worker take the task)."""
        now = time.monotonic()
        if self._workers is None or now - self._workers_at > WORKERS_REFRESH_S:
            info = self.client.scheduler_info()["workers"]
            self._workers = [(addr, int(info[addr].get("nthreads", 1))) for addr in sorted(info)]
            self._workers_at = now
        return self._workers

    def step(
        self, X, n: int, d: int, lam: float, estimator: str, k: int | None, timings: dict | None = None,
        watch=None,
    ) -> Step:  # fmt: skip
        """One iteration on the future ``X`` (from :meth:`prepare`, or a previous step's positions);
        returns the new positions (and statistics) as futures.

        The critical path is five task hops: diameter parts -> count panels
        (each derives the threshold from the parts' maxima) or k-th panels
        (beside the diameter) -> the plan (sums the partial counts or joins the
        radii, takes X's column mean) -> shift panels -> the finish summary the
        client waits for; the new positions, m and the statistics are computed
        beside that path.

        With ``timings`` (benchmarks only) the client also waits after the
        plan and records ``timings["reference"]`` and ``timings["shift"]``
        (seconds; the shift figure includes the O(n d) finish).  ``watch`` (a
        progress display) receives the futures of the iteration's tasks once all
        are submitted, before the client waits for the result.
        """
        tic = time.perf_counter()
        c, dev, dtype = self.client, self.tasks, self.dtype
        workers = self.workers()
        addresses = [addr for addr, _ in workers] or [None]

        def placed(func, calls: list[tuple]) -> list:
            """Round-robin placement of equal-work panels: locality heuristics would pile tasks onto
            the worker holding a small shared input (m, the partial counts)."""
            return submit_placed(c, func, calls, addresses)

        threads = max(1, sum(t for _, t in workers))
        rows = min(n, self.tile_size) if self.tile_size else dev.panel_rows(n, threads)
        parts = chunks(0, n, rows)
        dparts = 1 if n <= DIAMETER_SINGLE_MAX_N else threads
        maxima = narrow(c, _max, placed(dev.diameter_part, [(X, i, dparts) for i in range(dparts)]))
        m = c.submit(plan.diameter, *maxima, priority=URGENT)  # beside the critical path: plan, client
        counts = radius = None
        if estimator == "epsilon":
            tri = triangle_panels(n, len(parts))
            panels = placed(_counts_panel, [(dev.counts_part, X, a, b, lam, *maxima) for a, b in tri])
            reference = narrow(c, _add, panels)
            counts = reference[0] if len(reference) == 1 else c.submit(_add, *reference, priority=LATER)
            shift, args = _epsilon_shift, (dev.shift_part, dev.column_mean, X)
            plan_args = (m, lam, dtype, *reference)
        else:
            panels = placed(dev.kth_part, [(X, a, b, k) for a, b in parts])
            reference = narrow(c, dev.concat, panels)
            radius = c.submit(_knn_radius, dev.concat, m, *reference, priority=LATER)
            shift, args = _knn_shift, (dev.shift_part, dev.column_mean, dev.concat, X)
            plan_args = (m, k, dtype, *reference)
        if timings is not None:
            from distributed import wait

            wait([m, *reference])
            timings["reference"] = time.perf_counter() - tic
            tic = time.perf_counter()
        shifted = placed(shift, [(*args, a, b, *plan_args) for a, b in parts])
        shifted = narrow(c, dev.concat, shifted)
        first, second = addresses[0], addresses[-1]  # two workers where there are two
        loose = {"allow_other_workers": True}
        summary = c.submit(_finish_summary, dev.finish, X, *shifted, priority=URGENT, workers=first, **loose)
        positions = c.submit(_finish_positions, dev.finish, X, *shifted, workers=second, **loose)
        if watch is not None:
            watch([*maxima, *panels, *shifted, summary, positions])
        (total, lo, hi), m_value = c.gather([summary, m])
        if timings is not None:
            timings["shift"] = time.perf_counter() - tic
        return Step(
            positions, total / (n * d), float(m_value), dev.to_host(lo), dev.to_host(hi),
            counts=counts, radius=radius,
        )  # fmt: skip
