"""The graph builder: the tiled engine equals the dense oracle (1e-9, float64) on every path, its graph
grows linearly, its reductions are trees, and a task's memory is bounded by its panel."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_tiled_equals_oracle, slow_unless
from points import awkward, blobs, normalised, rounded32

from cdfts_dask import cdf_ts, oracle
from cdfts_dask.engine import TiledEngine, cpu, graph
from cdfts_dask.engine.graph import DIAMETER_SINGLE_MAX_N, FAN_IN

SHAPES = [(2, 1), (2, 2), (3, 2), (17, 5), (64, 16), (300, 64), (300, 300), (301, 100)]
ESTIMATORS = [("epsilon", None), ("knn", 1), ("knn", "half")]


def _quick(i: int, j: int) -> bool:
    """The quick suite runs every shape once (the estimators in turn) and every estimator on the last shape
    (tiles that do not divide n); the whole suite runs all 24 cases."""
    return i % len(ESTIMATORS) == j or i == len(SHAPES) - 1


@pytest.mark.parametrize(
    "n,tile,estimator,k",
    [pytest.param(n, tile, e, k, id=f"{e}-{k}-{n}-{tile}", marks=slow_unless(_quick(i, j)))
     for j, (e, k) in enumerate(ESTIMATORS) for i, (n, tile) in enumerate(SHAPES)],
)  # fmt: skip
def test_tiled_equals_oracle(client, n, tile, estimator, k):
    if k == "half":
        k = max(1, n // 2)
    assert_tiled_equals_oracle(blobs(n, 3, seed=n), client, tile, estimator, k, lam=0.3 if n < 20 else 0.1)


@pytest.mark.parametrize(
    "n,tile,estimator,k",
    [
        (2, 1, "epsilon", None),
        (5, 2, "knn", 1),
        pytest.param(97, 10, "epsilon", None, marks=pytest.mark.slow),
        (97, 10, "knn", 5),
        pytest.param(300, 64, "knn", 150, marks=pytest.mark.slow),
        (640, 128, "epsilon", None),
        pytest.param(2000, 333, "epsilon", None, marks=pytest.mark.slow),  # n = 2500 runs quick below
        pytest.param(2000, 333, "knn", 10, marks=pytest.mark.slow),
    ],
)  # the quick suite: each estimator on one and on many tiles that do not divide n
def test_boundary_ties_and_duplicates_equal_oracle(client, n, tile, estimator, k):
    lam = 0.3 if n < 20 else 0.1
    iters = 2 if n >= 2000 else 3
    assert_tiled_equals_oracle(awkward(n, 4, seed=n + 1), client, tile, estimator, k, lam=lam, max_iter=iters)


@pytest.mark.slow
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 40)])
def test_one_worker_and_larger_n(client1, estimator, k):
    assert_tiled_equals_oracle(blobs(1500, 4, seed=7), client1, 256, estimator, k, max_iter=2)


def test_two_workers_larger_n_uneven_tiles(client):
    assert_tiled_equals_oracle(blobs(2500, 2, seed=8), client, 333, max_iter=2)


def test_default_panel_rows_one_worker(client1):
    X = blobs(600, 5, seed=2)  # panels of 256 rows: 3, the last partial
    ref = oracle.cdf_ts_dense(X, delta=1e-12, max_iter=2)
    out = cdf_ts(X, delta=1e-12, max_iter=2, method="tiled", client=client1)
    assert np.abs(out - ref.X).max() <= 1e-9


@pytest.mark.slow
def test_above_single_task_diameter(client):
    """n above DIAMETER_SINGLE_MAX_N: the diameter is split into parts across the workers."""
    X = awkward(DIAMETER_SINGLE_MAX_N + 100, 2, seed=3)
    ref = oracle.cdf_ts_dense(X, delta=1e-12, max_iter=1)
    out = cdf_ts(X, delta=1e-12, max_iter=1, method="tiled", client=client)
    assert np.abs(out - ref.X).max() <= 1e-9


def test_syn_reference_deltas_on_engine(client, syn):
    X, _ = syn
    _, info = cdf_ts(X, lam=0.1, delta=0.01, method="tiled", client=client, tile_size=400, return_info=True)
    assert np.allclose(info.deltas, [0.16476, 0.03125, 0.01524, 0.01092, 0.00864], atol=1e-5)


def test_duplicates_constant_columns_and_identical_points(client):
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.uniform(size=40), np.zeros(40)])
    X = np.vstack([X, X[:8], X[:8]])
    for est, k in [("epsilon", None), ("knn", 1), ("knn", 2)]:
        assert_tiled_equals_oracle(X, client, 7, est, k)
    same = cdf_ts(np.ones((9, 3)), method="tiled", client=client, tile_size=4)
    assert np.all(same == 0.0)
    ref = oracle.cdf_ts_dense(np.ones((20, 3)), delta=1e-12, max_iter=2)
    out = cdf_ts(np.ones((20, 3)), delta=1e-12, max_iter=2, method="tiled", client=client, tile_size=6)
    assert np.abs(out - ref.X).max() <= 1e-9


@pytest.mark.parametrize("k", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_duplicates_stay_duplicates_under_knn(client, k):
    """Duplicates keep k-NN radius 0 in every iteration, in the engine and the oracle alike (the 9-point
    example of issue 9 split its duplicates by an ulp in the oracle's BLAS product, then moved 0.047)."""
    X = np.array([3.0, 2, 2, 1, 1, 0, 0, 0, 0])[:, None]
    assert_tiled_equals_oracle(X, client, 4, "knn", k, lam=0.05, max_iter=4)
    out = cdf_ts(X, lam=0.05, delta=1e-12, max_iter=4, estimator="knn", k=k, client=client, tile_size=4)
    assert np.all(out[5:] == out[5]) and np.all(out[1:3] == out[1]) and np.all(out[3:5] == out[3])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 4)])
def test_engine_step_statistics(client, dtype, estimator, k):
    """One ``TiledEngine.step``: positions, Delta, m and the named statistics against the oracle step."""
    X = normalised(awkward(211, 3, seed=11))
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, 0.1, estimator, k)
    engine = TiledEngine(client, 50, dtype=dtype)
    st = engine.step(engine.prepare(engine.put(X)), 211, 3, 0.1, estimator, k)
    tol = 1e-9 if dtype == "float64" else 1e-6
    assert np.abs(st.X.result() - ref.X).max() <= tol
    assert abs(st.delta - ref.delta) <= tol and st.m == ref.m
    assert set(st.statistics) == set(ref.statistics)
    for name, value in ref.statistics.items():
        np.testing.assert_array_equal(st.statistics[name].result(), value)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 30)])
def test_graph_grows_linearly_with_n(client, estimator, k):
    """Tasks per iteration are proportional to the number of panels n / tile, not its square."""
    from distributed import get_task_stream

    counts = []
    for n in (400, 1600):
        X = blobs(n, 2, seed=n)
        with get_task_stream(client) as ts:
            cdf_ts(X, lam=0.1, delta=1e-12, max_iter=1, method="tiled", client=client, tile_size=100,
                   estimator=estimator, k=k)  # fmt: skip
        counts.append(len(ts.data))
    ratio = counts[1] / counts[0]
    assert ratio < 6, counts  # 4x the panels; a quadratic graph would give ~16x


def test_every_reduction_task_has_bounded_fan_in(client, monkeypatch):
    """No task of an iteration depends on more than FAN_IN + 2 others (the count vectors meet in a tree)."""
    monkeypatch.setattr(graph, "REFERENCE_TASKS_PER_THREAD", 1000)  # as many count parts as panels
    engine = TiledEngine(client, 20)  # 100 panels
    st = engine.step(engine.put(normalised(blobs(2000, 2, seed=1))), 2000, 2, 0.1, "epsilon", None)
    st.X.result()
    widest = client.run_on_scheduler(
        lambda dask_scheduler: max(len(ts.dependencies) for ts in dask_scheduler.tasks.values())
    )
    assert widest <= FAN_IN + 2, widest


@pytest.mark.parametrize("estimator,k,name", [("epsilon", None, "_counts_part"), ("knn", 3, "kth_part")])
def test_reference_parts_are_at_most_four_per_thread(client, estimator, k, name):
    """Every count or k-NN part repeats its device's set-up (the points in k-d order, and at this n the
    k-d split), so 100 shift panels on 2 worker threads get 8 reference parts, not 100; and the
    statistics stay the oracle's."""
    engine = TiledEngine(client, 20)
    seen: list = []
    X = normalised(blobs(2000, 2, seed=1))
    st = engine.step(engine.put(X), 2000, 2, 0.1, estimator, k, watch=seen.extend)
    ref = oracle.cdf_ts_step(X, 0.1, estimator, k)
    assert sum(str(f.key).startswith("shift_part") for f in seen) == 100
    assert sum(str(f.key).startswith(name) for f in seen) == graph.REFERENCE_TASKS_PER_THREAD * 2
    for stat, value in ref.statistics.items():
        np.testing.assert_array_equal(st.statistics[stat].result(), value)
    assert np.abs(st.X.result() - ref.X).max() <= 1e-9


@pytest.mark.parametrize("estimator,k,name", [("epsilon", None, "_counts_part"), ("knn", 3, "kth_part")])
def test_one_task_builds_the_pair_index_that_every_part_shares(client, monkeypatch, estimator, k, name):
    """Above ``SHARED_INDEX_MIN_N`` (lowered here) one task per iteration builds the k-d split and every
    diameter, count or k-NN part depends on it, rather than each building its own; the statistics and
    positions stay the oracle's (duplicates and lattice ties included).  At or below it, no such task."""
    monkeypatch.setattr(graph, "DIAMETER_SINGLE_MAX_N", 0)  # a diameter part per worker thread
    engine = TiledEngine(client, 100)
    X = normalised(awkward(700, 3, seed=4))
    ref = oracle.cdf_ts_step(X, 0.1, estimator, k)
    for threshold, tasks in ((699, 1), (700, 0)):
        monkeypatch.setattr(graph, "SHARED_INDEX_MIN_N", threshold)
        seen: list = []
        st = engine.step(engine.put(X), 700, 3, 0.1, estimator, k, watch=seen.extend)
        for stat, value in ref.statistics.items():
            np.testing.assert_array_equal(st.statistics[stat].result(), value)
        assert np.abs(st.X.result() - ref.X).max() <= 1e-9
        index = [str(f.key) for f in seen if str(f.key).startswith("pair_index")]
        parts = [f.key for f in seen if str(f.key).startswith(("diameter_part", name))]
        assert len(index) == tasks and len(parts) == 2 + 7  # 2 threads; 7 panels of 100 rows

        def dependencies(dask_scheduler, keys):
            return [[str(dep.key) for dep in dask_scheduler.tasks[key].dependencies] for key in keys]

        for deps in client.run_on_scheduler(dependencies, keys=parts):
            assert [dep for dep in deps if dep.startswith("pair_index")] == index


@pytest.mark.parametrize("estimator,k,hops", [("epsilon", None, 5), ("knn", 3, 4)])
def test_the_client_waits_for_a_chain_of_only_the_passes_tasks(client, estimator, k, hops):
    """Every task on the chain the client waits for costs a scheduler round trip (about 5 ms), so the
    chain that ends at the summary it fetches holds one task per pass and nothing between: epsilon
    diameter -> counts (each panel derives the threshold) -> plan -> shift -> summary (a finish); k-NN
    k-th radii (beside the diameter) -> plan (which derives m) -> shift -> summary.  The new positions
    come one task later, while the client fetches the summary.  Before, a threshold task, a diameter
    task before the k-NN plan and a task that only took the summary out of the finish's result made the
    chain to the summary 7 (epsilon) and 6 (k-NN) tasks long."""
    engine = TiledEngine(client)
    seen: list = []
    X = engine.put(normalised(blobs(100, 2, seed=3)))
    st = engine.step(X, 100, 2, 0.1, estimator, k, watch=seen.extend)
    st.X.result()

    def longest_chain(dask_scheduler, key):
        def depth(ts):  # tasks on the longest path of dependencies ending at ts (scattered data: 0)
            return 0 if ts.run_spec is None else 1 + max((depth(dep) for dep in ts.dependencies), default=0)

        return depth(dask_scheduler.tasks[key])

    summary = next(f for f in seen if str(f.key).startswith("_summary"))
    assert client.run_on_scheduler(longest_chain, key=summary.key) == hops
    assert client.run_on_scheduler(longest_chain, key=st.X.key) == hops + 1


def test_positions_whose_column_range_is_not_the_summarys_are_refused():
    """The positions task repeats the summary task's finish; a finish that gave them another column
    range (not deterministic) fails the iteration instead of handing on positions that its Delta, lo
    and hi do not describe."""
    X = np.zeros((3, 2))
    shifted = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 6.0]])
    new, *summary = cpu.finish(X, shifted)
    np.testing.assert_array_equal(graph._positions(cpu.finish, X, summary, shifted), new)

    def drifting_finish(X, *shifted):  # one ulp off the summary's finish
        return cpu.finish(X, *(np.nextafter(s, np.inf) for s in shifted))

    with pytest.raises(RuntimeError, match="column range"):
        graph._positions(drifting_finish, X, summary, shifted)


@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 2000)])
def test_memory_per_task_is_bounded_by_the_panel(estimator, k):
    """Run each pass's production task body for one panel of 100 rows in this process and trace its
    allocations: n = 4000 would need 128 MB for one n x n float64 matrix; a task may hold O(n d)
    (its outputs, a transposed copy of X) and BLOCK-sized buffers, and for large k sub-panels of
    at most KNN_PANEL_BYTES (set to 400 kB here)."""
    import tracemalloc

    from cdfts_dask.engine import cpu, plan

    def one_panel(X, rows, k):
        n = len(X)
        m = plan.diameter(cpu.diameter_part(X, 0, 1))
        if estimator == "epsilon":
            counts = cpu.counts_part(X, 0, -(-n // rows), plan.count_threshold(m, 0.1)) + 1
            shift_plan = plan.epsilon_plan(m, 0.1, counts, cpu.column_mean(X), "float64")
        else:
            kth = cpu.kth_part(X, 0, -(-n // rows), k, budget_bytes=400_000)
            shift_plan = plan.knn_plan(m, k, np.full(n, kth.mean() / m), cpu.column_mean(X), "float64")
        cpu.shift_part(X, 0, rows, shift_plan)

    X = np.random.default_rng(0).uniform(size=(4000, 3))
    one_panel(X[:200], 10, min(k or 1, 150))  # numba: compile or load the cached kernels first
    tracemalloc.start()
    one_panel(X, 100, k)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2_000_000, peak


def test_every_worker_counts_when_scheduler_info_lists_only_some(client, monkeypatch):
    """distributed 2025.x-2026.6 ``scheduler_info()`` listed at most 5 workers by default (an 8-GPU
    LocalCUDACluster would have run on 5): emulated here by a ``scheduler_info`` that lists one of the two
    workers.  The engine still sizes its panels for both (2048 rows, 2 threads: 8 panels of 256, not 4 of
    512) and places them round-robin on both."""
    real = client.scheduler_info

    def first_worker_only(*args, **kwargs):
        info = dict(real(*args, **kwargs))
        first = sorted(info["workers"])[:1]
        info["workers"] = {w: info["workers"][w] for w in first}
        return info

    monkeypatch.setattr(client, "scheduler_info", first_worker_only)
    engine = TiledEngine(client)
    seen: list = []
    X = normalised(blobs(2048, 2, seed=5))
    st = engine.step(engine.put(X), 2048, 2, 0.1, "epsilon", None, watch=seen.extend)
    st.X.result()
    shifted = [f for f in seen if str(f.key).startswith("shift_part")]
    assert len(shifted) == 8

    def restrictions(dask_scheduler, keys):
        return sorted({w for k in keys for w in dask_scheduler.tasks[k].worker_restrictions or ()})

    restricted = client.run_on_scheduler(restrictions, keys=[f.key for f in shifted])
    assert restricted == sorted(client.nthreads())


def test_a_broadcast_that_a_leaving_worker_broke_is_made_again(client, monkeypatch):
    """Regression: a worker that left during the input's broadcast (killed while two runs shared the
    cluster) failed the run with the scheduler's raw ``KeyError: 'tcp://...'``; the broadcast is now made
    again to the workers that are there, and the result is the oracle's."""
    X = np.random.default_rng(21).random((70, 2))
    real, calls = client.scatter, []

    def scatter(*args, failure="tcp://127.0.0.1:35779", failures=1, **kwargs):
        calls.append(kwargs)
        if len(calls) <= failures:
            raise KeyError(failure)  # what the scheduler's replicate step raises
        return real(*args, **kwargs)

    monkeypatch.setattr(client, "scatter", scatter)
    Y = cdf_ts(X, lam=0.2, max_iter=2, method="tiled", client=client, tile_size=32)
    assert len(calls) == 2 and all(c.get("broadcast") for c in calls)
    np.testing.assert_allclose(Y, oracle.cdf_ts_dense(X, lam=0.2, max_iter=2).X, rtol=0, atol=1e-9)
    calls.clear()
    monkeypatch.setattr(client, "scatter", lambda *a, **k: scatter(*a, failure="x", failures=9, **k))
    with pytest.raises(KeyError, match="'x'"):  # any other KeyError is not a worker that left
        cdf_ts(X, lam=0.2, max_iter=1, method="tiled", client=client, tile_size=32)
    assert len(calls) == 1


def test_each_run_broadcasts_equal_points_under_a_key_of_its_own(client):
    """Equal points put twice (two runs of one input on one client) are two futures of two keys: a run
    never takes over its input's key from an earlier run that may still be releasing it (found by a
    mutation audit, 2026-12-07: keys hashed from the content passed every test)."""
    X = np.random.default_rng(22).random((40, 2))
    engine = TiledEngine(client)
    first, second = engine.put(X), engine.put(X.copy())
    assert first.key != second.key
    np.testing.assert_array_equal(first.result(), second.result())


def test_the_diameter_is_the_largest_of_every_parts_maximum(monkeypatch):
    """The diameter split into parts (one per worker thread, here from n = 1 on) whose maxima meet in a
    tree of fan-in 2: m is the maximum of every part's, the middle one's included.  The points trap the
    farthest-point sweeps (the lower bound every part starts from) on the pair X[0], X[1], and the
    farthest pair, X[2] and X[3], lies in the second of three parts' shares only, so a reduction that
    dropped a part's maximum would give another m."""
    from distributed import Client, LocalCluster

    from cdfts_dask.engine import cpu_kernels

    rng = np.random.default_rng(0)
    bulk = np.column_stack([rng.uniform(0.02, 0.17, 796), 0.436 + rng.uniform(-0.01, 0.01, 796)])
    X = np.concatenate([[[0.0, 0.436], [1.0, 0.904], [0.092, 1.0], [0.775, 0.0]], bulk])
    sq = oracle.pairwise_distances(X) ** 2
    assert np.unravel_index(sq.argmax(), sq.shape) == (2, 3)
    maxima = [cpu.diameter_part(X, i, 3) for i in range(3)]
    assert max(cpu_kernels.farthest_sq(X), maxima[0], maxima[2]) < maxima[1]  # only part 1 finds the pair
    monkeypatch.setattr(graph, "DIAMETER_SINGLE_MAX_N", 1)
    monkeypatch.setattr(graph, "FAN_IN", 2)
    ref = oracle.cdf_ts_dense(X, lam=0.1, delta=1e-12, max_iter=1)
    cluster = LocalCluster(n_workers=1, threads_per_worker=3, processes=False, dashboard_address=":0",
                           silence_logs=40)  # fmt: skip
    with cluster, Client(cluster, set_as_default=False) as client:
        assert sum(client.nthreads().values()) == 3
        out = cdf_ts(X, lam=0.1, delta=1e-12, max_iter=1, method="tiled", client=client, tile_size=128)
    assert np.abs(out - ref.X).max() <= 1e-9
