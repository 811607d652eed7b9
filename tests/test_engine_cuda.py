"""The CUDA device's numba-cuda kernels and task bodies equal the oracle (1e-9 float64, exact membership).

Without a GPU (CI) the kernels run under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, set by conftest.py) on NumPy arrays, on small n:
the simulator runs every thread in Python.  Tests marked ``gpu`` need a real
device with CuPy (and dask-cuda for the end-to-end ones) and skip elsewhere.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import simulated_cuda, slow_unless
from points import (
    assert_bodies_step_is_the_oracles,
    assert_step_is_the_oracles,
    awkward,
    blobs,
    bodies_step,
    float32_misordered,
    float32_subnormal_rounding_cases,
    float32_underflow_cases,
    float32_worst_rounded_case,
    ill_conditioned_rho_cases,
    normalised,
    rounded32,
)

from cdfts_dask import cdf_ts, oracle
from cdfts_dask.bench import data
from cdfts_dask.engine import TiledEngine, cpu, cuda_kernels, graph, plan

UNDERFLOW = float32_underflow_cases()
SUBNORMAL = float32_subnormal_rounding_cases()
ILL_CONDITIONED = ill_conditioned_rho_cases()


@pytest.fixture
def cuda(monkeypatch):
    """The CUDA task bodies with 16 threads per block (tiles of 16 points: small n still spans tiles)."""
    from cdfts_dask.engine import cuda

    monkeypatch.setattr(cuda, "THREADS", 16)
    return cuda


def _lattice() -> np.ndarray:
    """A 5^3 grid plus duplicated grid points: many pairs exactly at the boundary distances."""
    g = np.arange(5) / 4
    X = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)
    return np.vstack([X, X[::9]])


SLOW = [pytest.mark.slow]


#: tiles of 16: 16 and 64 divide, 21 and 37 do not, 2 is one part tile.  The simulator runs every thread in
#: Python (about a second a case at n = 37), so the quick suite runs three cases: both estimators on the
#: smallest partial-tile case and k-NN on the one part tile; the whole suite runs all fifteen
BODY_QUICK = {(21, "epsilon", None), (21, "knn", 5), (2, "knn", 1)}


@simulated_cuda
@pytest.mark.parametrize(
    "n,estimator,k",
    [pytest.param(n, e, k, id=f"{e}-{k}-{n}", marks=slow_unless((n, e, k) in BODY_QUICK))
     for e, k in [("epsilon", None), ("knn", 1), ("knn", 5)] for n in [2, 16, 21, 37, 64]],
)  # fmt: skip
def test_simulated_bodies_equal_oracle(cuda, n, estimator, k):
    X = normalised(awkward(n, 3, seed=n))  # lattice coordinates, duplicates, a constant column
    k = None if k is None else min(k, n - 1)
    ref = oracle.cdf_ts_step(X, 0.2, estimator, k)
    m, stats, Xn, delta = bodies_step(cuda, X, 0.2, estimator, k, parts=2, rows=max(1, n // 3))
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= 1e-9 and abs(delta - ref.delta) <= 1e-9


@simulated_cuda
@pytest.mark.slow  # 139 points: 8 s a case in the simulator (the CPU bodies' boundary ties run quick)
@pytest.mark.parametrize(
    "estimator,k,dtype",
    [pytest.param(e, k, t, id=f"{e}-{k}-{t}") for e, k in [("epsilon", None), ("knn", 3)]
     for t in ["float64", "float32"]],
)
def test_simulated_boundary_ties_are_exact(cuda, dtype, estimator, k):
    """On the lattice lam = 0.25 sqrt(2) / sqrt(3) puts pairs on the boundary: counts and radii equal the
    float64 oracle's on the (float32-rounded) points bit for bit; positions to 1e-9 / 1e-6."""
    X = _lattice()
    lam = 0.25 * np.sqrt(2) / np.sqrt(3)
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, lam, estimator, k)
    m, stats, Xn, _ = bodies_step(cuda, X, lam, estimator, k, dtype=dtype, parts=3, rows=50)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-6)


@simulated_cuda
@pytest.mark.parametrize("dtype", ["float64", pytest.param("float32", marks=SLOW)])  # 3 s a case
def test_simulated_kth_radii_equal_the_cpu_bodies_on_both_paths(cuda, dtype):
    """The k-th neighbour distances bit for bit as the CPU device's (tested equal to the oracle), through
    the sorted-buffer kernel (k + 1 <= KTH_BUFFER_MAX, its edge included) and the sub-panel partition
    (above it, sub-panels of 7 rows), on 75 points with duplicates, in 3 parts."""
    X = normalised(awkward(75, 3, seed=4)).astype(dtype)
    Xd = cuda.prepare(X, dtype)
    edge = plan.KTH_BUFFER_MAX - 1  # the largest k of the buffer
    for k in (1, 6, edge, edge + 1, 70):
        kth = sum(cuda.kth_part(Xd, part, 3, k, budget_bytes=7 * 8 * 75) for part in range(3))
        want = sum(cpu.kth_part(X, part, 3, k) for part in range(3))
        np.testing.assert_array_equal(kth, want, err_msg=f"k = {k}")


@simulated_cuda
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_simulated_shift_sums_equal_the_cpu_bodies(cuda, dtype):
    """References and targets apart (an out-of-sample shift), the guard band included."""
    P = normalised(awkward(40, 3, seed=9)).astype(dtype)
    Y = np.vstack([np.random.default_rng(2).uniform(-0.1, 1.1, size=(21, 3)), P[:4]]).astype(dtype)
    radius = np.random.default_rng(3).uniform(0.05, 0.5, size=40)
    shift_plan = plan.shift_plan(1.3, radius, radius * 0.9, P.astype(np.float64).mean(axis=0), dtype)
    A, B = cuda.shift_sums(cuda.prepare(P, dtype), cuda.prepare(Y, dtype), shift_plan)
    A_cpu, B_cpu = cpu.shift_sums(P, Y, shift_plan)
    assert np.abs(cuda.to_host(A) - A_cpu).max() <= 1e-12
    assert np.abs(cuda.to_host(B) - B_cpu).max() <= 1e-12


@simulated_cuda
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_simulated_finish_equals_the_cpu_bodies(cuda, dtype):
    """The end-of-iteration normalisation of the same shifted blocks: the new positions in the working
    dtype, bit for bit, and the sum of |X_new - X| in float64 over them, as the CPU device's (found by a
    mutation audit of the CUDA bodies, second pass: the sum taken in float32, about 1e-7 off, and the
    positions left in float64, passed the oracle tests' tolerances)."""
    X = normalised(awkward(60, 3, seed=5)).astype(dtype)
    rng = np.random.default_rng(6)
    shifted = [rng.normal(size=(25, 3)), rng.normal(size=(35, 3))]
    Z, total, lo, hi = cuda.finish(cuda.prepare(X, dtype), *[cuda.prepare(s, "float64") for s in shifted])
    Z_cpu, total_cpu, lo_cpu, hi_cpu = cpu.finish(X, *shifted)
    Z = cuda.to_host(Z)
    assert Z.dtype == np.dtype(dtype) and np.array_equal(Z, Z_cpu)
    assert total == pytest.approx(total_cpu, rel=1e-13, abs=0)
    assert np.array_equal(lo, lo_cpu) and np.array_equal(hi, hi_cpu)


@simulated_cuda
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 3)])
def test_simulated_launches_one_row_past_whole_blocks_equal_oracle(cuda, estimator, k):
    """Every launch over a number of rows one past a whole number of blocks (its last block has one live
    thread): 17 rows in blocks of 16 for the counts, the k-th radii and the shift (one part, one chunk),
    and for the diameter a first triangle panel of 17 of 58 rows whose last row holds the farthest pair
    (no other row sees it as i < j)."""
    X = normalised(awkward(17, 3, seed=17))
    ref = oracle.cdf_ts_step(X, 0.2, estimator, k)
    m, stats, Xn, delta = bodies_step(cuda, X, 0.2, estimator, k, parts=1, rows=17)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= 1e-9 and abs(delta - ref.delta) <= 1e-9

    X = np.random.default_rng(58).uniform(size=(58, 2))
    X[16], X[-1] = -1.0, 2.0  # the one farthest pair: (16, 57)
    assert plan.triangle_panels(58, 2)[0] == (0, 17)
    Xd = cuda.prepare(X, "float64")
    m = plan.diameter(*[cuda.diameter_part(Xd, part, 2) for part in range(2)])
    assert m == oracle.pairwise_distances(X).max()


@simulated_cuda
@pytest.mark.parametrize("dtype", [pytest.param("float64", marks=SLOW), "float32"])  # float32: the band
def test_simulated_pairs_whose_sq_is_the_threshold_itself_are_inside(cuda, dtype):
    """The 3 x 3 x 3 grid of step 1/2 (exact in float32), lam = 1/2: m = sqrt(3) and the pairs at sq 3/4 have
    s = lam exactly, and 3/4 is the threshold T itself (the largest sq with s <= lam; the boundary-ties test
    above has pairs at s = lam but sq below T).  Such a pair is inside: for the counts (decided in float64
    in float32's guard band) and the shift's rho (float64: at T_lo = T), as the oracle has them."""
    g = np.arange(3) / 2
    X = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)
    lam = 0.5
    sq = ((X[:, None] - X[None]) ** 2).sum(axis=-1)  # exact: coordinates and sums are dyadic
    ref = oracle.cdf_ts_step(X, lam, "epsilon", None)
    assert np.count_nonzero(sq == plan.count_threshold(ref.m, lam)) > 0  # the case under test
    m, stats, Xn, delta = bodies_step(cuda, X, lam, "epsilon", None, dtype=dtype, parts=2)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts)
    assert np.abs(Xn - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-6)


@pytest.fixture
def fresh_kernels():
    """Kernels compiled for this test only, none left behind; calling it drops those built so far (after a
    change to what they are built from)."""

    def clear():
        for built in (cuda_kernels._working_functions, cuda_kernels.kernels, cuda_kernels.kth_kernel):
            built.cache_clear()

    clear()
    yield clear
    clear()


@simulated_cuda
def test_simulated_float32_prefilters_keep_pairs_their_float32_sq_misorders(cuda, monkeypatch, fresh_kernels):
    """float32 points whose float32 ``sq`` order two pairs the other way round from their float64 ``sq``:
    the diameter and the nearest-neighbour radius are still the float64 ones (the CPU device's, bit for
    bit).  With the float32 error bound set to 0 the pre-filters drop the right pair: the points do test
    the bound."""
    far, near = float32_misordered()

    def on_both_devices():
        got = (cuda.diameter_part(cuda.prepare(far, "float32"), 0, 1), cuda.kth_part(near, 0, 1, 1))
        want = (cpu.diameter_part(far, 0, 1), cpu.kth_part(near, 0, 1, 1))
        return got, want

    (diameter, radii), (cpu_diameter, cpu_radii) = on_both_devices()
    assert diameter == cpu_diameter
    assert np.sqrt(diameter) == oracle.pairwise_distances(far.astype(np.float64)).max()
    np.testing.assert_array_equal(radii, cpu_radii)

    monkeypatch.setattr(cuda_kernels, "sq_bound_factors", lambda d, dtype: (1.0, 1.0, 0.0))
    fresh_kernels()
    (diameter, radii), (cpu_diameter, cpu_radii) = on_both_devices()
    assert diameter < cpu_diameter
    assert radii[0] > cpu_radii[0]


def test_every_device_offers_the_bodies_its_callers_use_with_the_same_parameters(cuda):
    """The graph and the model call a device's bodies by name (``dev.counts_part(...)``): every name they
    use exists on both devices, and each function takes the same parameters in the same order (but
    ``pair_index``, which a device whose parts share nothing sets to None)."""
    engine = Path(cpu.__file__).parent
    callers = (engine / "graph.py", engine.parent / "model.py")
    used = {m for path in callers for m in re.findall(r"\b(?:dev|tasks)\.(\w+)", path.read_text())}
    assert {"pair_index", "diameter_part", "counts_part", "kth_part", "shift_part", "finish"} <= used
    assert cuda.pair_index is None  # its parts share nothing: the graph test below checks it submits no task
    for name in sorted(used - {"pair_index"}):
        on_cpu, on_cuda = getattr(cpu, name), getattr(cuda, name)
        if callable(on_cpu):
            parameters = [list(inspect.signature(f).parameters) for f in (on_cpu, on_cuda)]
            assert parameters[0] == parameters[1], name
        else:
            assert type(on_cuda) is type(on_cpu), name


@simulated_cuda
@pytest.mark.parametrize(
    "estimator,k", [pytest.param("epsilon", None, marks=SLOW), ("knn", 2)]
)  # the bodies test above covers both estimators in the quick suite; one of them through the graph here
def test_simulated_device_through_the_graph_equals_oracle(client, estimator, k):
    """``backend="cuda"`` end to end on the session's workers (simulated kernels), two iterations."""
    X = awkward(40, 3, seed=5)
    ref = oracle.cdf_ts_dense(X, lam=0.2, delta=1e-12, max_iter=2, estimator=estimator, k=k)
    out, info = cdf_ts(X, lam=0.2, delta=1e-12, max_iter=2, estimator=estimator, k=k, client=client,
                       tile_size=15, backend="cuda", return_info=True)  # fmt: skip
    assert np.abs(out - ref.X).max() <= 1e-9
    assert np.allclose(info.deltas, ref.deltas, rtol=0, atol=1e-9)


@simulated_cuda
def test_simulated_device_shares_no_pair_index_and_the_graph_submits_no_task_for_one(client, monkeypatch):
    """CUDA's ``pair_index`` is None: above ``SHARED_INDEX_MIN_N`` (lowered here) the graph submits no
    index task (it would be a no-op hop on the chain) and the statistics and positions stay the oracle's."""
    monkeypatch.setattr(graph, "SHARED_INDEX_MIN_N", 10)
    X = normalised(awkward(40, 3, seed=5))
    for backend, tasks in (("cpu", 1), ("cuda", 0)):
        engine = TiledEngine(client, 15, backend=backend)
        for estimator, k in (("epsilon", None), ("knn", 3)):
            ref = oracle.cdf_ts_step(X, 0.2, estimator, k)
            seen: list = []
            st = engine.step(engine.put(X), 40, 3, 0.2, estimator, k, watch=seen.extend)
            assert len([f for f in seen if str(f.key).startswith("pair_index")]) == tasks, backend
            for stat, value in ref.statistics.items():
                np.testing.assert_array_equal(st.statistics[stat].result(), value)
            assert np.abs(st.X.result() - ref.X).max() <= 1e-9


#: whether this process's simulator is locked; evaluated by the builtin ``eval`` in a worker, so that checking
#: does not import a test module (which imports conftest and so would lock it)
SIMULATOR_IS_LOCKED = (
    'getattr(__import__("numba.cuda.simulator.kernelapi", fromlist=["FakeCUDAShared"]).FakeCUDAShared.array, '
    '"serialised", False)'
)


@simulated_cuda
def test_every_worker_the_tests_start_locks_the_simulators_shared_arrays(client):
    """The session's workers and a cluster a run starts of its own (``client=None``) preload
    ``simulator_lock.py`` (without it, simulated blocks could each get their own shared array)."""
    from distributed import Client

    from cdfts_dask.dask_client import local_cluster

    assert eval(SIMULATOR_IS_LOCKED)
    assert list(client.run(eval, SIMULATOR_IS_LOCKED).values()) == [True, True]
    with local_cluster(1) as cluster, Client(cluster) as own:
        assert list(own.run(eval, SIMULATOR_IS_LOCKED).values()) == [True]

def _cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if cuda_kernels.SIMULATOR:
        pytest.skip("NUMBA_ENABLE_CUDASIM=1: the CUDA device runs simulated, not on the GPU")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception as exc:  # CUDA driver missing or broken
        pytest.skip(f"no usable CUDA device: {exc}")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 5)])
@pytest.mark.parametrize("stream", ["legacy default", "non-blocking"])
def test_gpu_bodies_equal_oracle(dtype, estimator, k, stream):
    """The task bodies on CuPy arrays on one device, tiles of 128 threads against n = 1000; also inside a
    caller's non-blocking CuPy stream (which does not wait for the legacy default stream: a kernel left
    there would be read before it ends)."""
    import contextlib

    cupy = _cupy()
    from cdfts_dask.engine import cuda

    X = normalised(awkward(1000, 4, seed=1))
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, 0.1, estimator, k)
    assert isinstance(cuda.prepare(X, dtype), cupy.ndarray)
    where = cupy.cuda.Stream(non_blocking=True) if stream == "non-blocking" else contextlib.nullcontext()
    if stream == "non-blocking":  # the legacy default stream busy for a while (10 float64 products of
        # 8192^2): a kernel left there would end long after the caller's stream read its output
        with cupy.cuda.Stream.null:
            busy = cupy.full((8192, 8192), 1 / 8192)
            for _ in range(10):
                busy = busy @ busy
    with where:
        m, stats, Xn, _ = bodies_step(cuda, X, 0.1, estimator, k, dtype=dtype, parts=3, rows=300)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-6)


def test_kernels_launch_on_cupys_current_stream(monkeypatch):
    """A launch goes to CuPy's current stream (wrapped by numba's ``external_stream``), and to numba's
    default (0) when that is the legacy default stream (pointer 0), as on a dask-cuda worker."""
    from types import SimpleNamespace

    from cdfts_dask.engine import cuda

    current = SimpleNamespace(ptr=0)
    fake_cupy = SimpleNamespace(cuda=SimpleNamespace(get_current_stream=lambda: current))
    monkeypatch.setattr(cuda, "SIMULATOR", False)
    monkeypatch.setattr(cuda, "xp", fake_cupy)
    monkeypatch.setattr(cuda, "numba_cuda", SimpleNamespace(external_stream=lambda ptr: ("external", ptr)))
    assert cuda._stream() == 0
    current.ptr = 0x5A17
    assert cuda._stream() == ("external", 0x5A17)
    source = inspect.getsource(cuda)
    assert source.count(", THREADS, _stream()](") == 5 and ", THREADS](" not in source  # every launch


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 7)])
def test_gpu_device_end_to_end(dtype, estimator, k, tmp_path):
    """``backend="cuda"`` on a LocalCUDACluster (all visible GPUs), checkpoint written from the device."""
    _cupy()
    pytest.importorskip("dask_cuda", reason="dask-cuda is not installed")
    X = blobs(3000, 4, seed=2)
    ref = oracle.cdf_ts_dense(X, delta=1e-12, max_iter=3, estimator=estimator, k=k)
    out = cdf_ts(X, delta=1e-12, max_iter=3, estimator=estimator, k=k, backend="cuda", dtype=dtype,
                 checkpoint=tmp_path / "run.zarr")  # fmt: skip
    assert isinstance(out, np.ndarray)
    assert np.abs(out - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("d", [64, 200])
@pytest.mark.parametrize("estimator,k", [("epsilon", None), ("knn", 10), ("knn", 100)])
def test_gpu_high_dimensions_equal_oracle(dtype, d, estimator, k):
    """At d = 64 and 200 a shared-memory tile holds fewer points than a block has threads (the 48 KiB cap of
    ``tile_points``); k = 10 takes the sorted-buffer k-NN kernel, k = 100 > ``KTH_BUFFER_MAX`` - 1 the
    partition path."""
    _cupy()
    from cdfts_dask.engine import cuda

    X = normalised(awkward(700, d, seed=d))
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, 0.3, estimator, k)
    m, stats, Xn, _ = bodies_step(cuda, X, 0.3, estimator, k, dtype=dtype, parts=3, rows=250)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts if estimator == "epsilon" else ref.radius)
    assert np.abs(Xn - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-6)


def _worst_rounded(d: int, side: str):
    X32, lam, _ = float32_worst_rounded_case(d, side)
    return X32, lam, "epsilon", None


#: the simulator's float32 edge cases, each made when its test runs: (X, lam, estimator, k)
FLOAT32_EDGE_CASES = [
    *(pytest.param(lambda case=case: case[1:], id=case[0]) for case in UNDERFLOW + SUBNORMAL),
    *(
        pytest.param(lambda d=d, side=side: _worst_rounded(d, side), id=f"worst-rounded-d{d}-{side}")
        for d in (1, 3, 8, 16)
        for side in ("outside", "inside")
    ),
]


@pytest.mark.gpu
@pytest.mark.parametrize("make_case", FLOAT32_EDGE_CASES)
def test_gpu_float32_edge_cases_are_decided_in_float64(make_case):
    """The float32 cases the simulator runs (squared distances that underflow, subnormal ones rounded up to
    twice the float64 value, the worst-rounded pairs at d = 1, 3, 8, 16 on either side of lam) on a real
    GPU, whose compiler may fuse the squared-distance sums into multiply-adds (rounded once, not twice):
    the guard band must hold there too, so counts and radii equal the float64 oracle's on the float32
    points."""
    _cupy()
    from cdfts_dask.engine import cuda

    X, lam, estimator, k = make_case()
    assert_bodies_step_is_the_oracles(cuda, X, lam, estimator, k, "float32", parts=1)


@pytest.mark.gpu
def test_gpu_run_resumes_on_the_device_and_its_model_transforms_there(tmp_path):
    """A run checkpointed from the GPU resumes on it; a sampled fit on the GPU (both estimators) transforms
    new points on the GPU as the dense oracle's sampled fit does."""
    _cupy()
    pytest.importorskip("dask_cuda", reason="dask-cuda is not installed")
    from cdfts_dask import CDFTS

    X = blobs(1500, 4, seed=3)
    store = tmp_path / "run.zarr"
    cdf_ts(X, delta=1e-12, max_iter=2, method="tiled", backend="cuda", checkpoint=store)
    Y, info = cdf_ts(X, delta=1e-12, max_iter=4, method="tiled", backend="cuda", checkpoint=store,
                     resume=True, return_info=True)  # fmt: skip
    ref = oracle.cdf_ts_dense(X, delta=1e-12, max_iter=4)
    assert info.resumed_from == 2 and info.n_iter == 4
    assert np.abs(Y - ref.X).max() <= 1e-9
    new = X[::7] + np.random.default_rng(0).normal(0, 0.01, X[::7].shape)
    for estimator, k in [("epsilon", None), ("knn", 20)]:
        kw = dict(estimator=estimator, k=k, delta=0.01, n_references=600, random_state=1)
        on_gpu = CDFTS(method="tiled", backend="cuda", **kw).fit(X)
        dense = CDFTS(method="dense", **kw).fit(X)
        assert np.abs(on_gpu.embedding_ - dense.embedding_).max() <= 1e-9
        assert np.abs(on_gpu.transform(new) - dense.transform(new)).max() <= 1e-9


def _record_static_shared(monkeypatch) -> list:
    """The simulator's per-block shared memory (one ``FakeCUDAShared`` per simulated block; its
    ``_allocations`` are the block's ``cuda.shared.array`` call sites) of every launch from now on."""
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    blocks: list = []
    init = FakeCUDAShared.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        blocks.append(self)

    monkeypatch.setattr(FakeCUDAShared, "__init__", recording)
    return blocks


def _laid_out_bytes(allocations) -> int:
    """Bytes of a block's shared arrays placed one after another in declaration order, each aligned to
    its element size (as ptxas places them: 4 bytes of padding before a float64 array that follows an
    odd number of float32 values)."""
    end = 0
    for a in allocations:
        end = -(-end // a.itemsize) * a.itemsize + a.nbytes
    return end


@simulated_cuda
@pytest.mark.parametrize("n,d,dtype", [(20, 64, "float64"), (5, 1363, "float32")])
def test_simulated_kernels_fit_static_shared_memory(monkeypatch, n, d, dtype):
    """d = 64 in float64 with 128-thread blocks: one tile of 128 points would be 64 KiB of shared memory,
    past the 48 KiB a kernel may declare statically (ptxas: "uses too much shared data (..., 0xc000 max)";
    the simulator does not check).  d = 1363 in float32: the shift's tile of 3 points filled exactly
    48 KiB, and ptxas added 4 bytes of alignment before the float64 copy (0xc004, found by assembling
    the kernels with ptxas in the review of 2026-11-24).  Every block stays within 48 KiB, alignment
    included, and the bodies still equal the oracle."""
    from cdfts_dask.engine import cuda

    blocks = _record_static_shared(monkeypatch)
    X = normalised(awkward(n, d, seed=4))
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, 0.3, "epsilon", None)
    m, stats, Xn, _ = bodies_step(cuda, X, 0.3, "epsilon", None, dtype=dtype, parts=1, rows=n)
    used = [_laid_out_bytes(b._allocations.values()) for b in blocks]
    assert len(used) >= 3 and min(used) > 0  # diameter, counts, shift
    assert max(used) <= 48 * 1024, used
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts)
    assert np.abs(Xn - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-6)


@simulated_cuda
@pytest.mark.parametrize("dtype", ["float64", pytest.param("float32", marks=SLOW)])
def test_simulated_tiles_smaller_than_blocks_equal_oracle(cuda, monkeypatch, dtype):
    """Tiles of fewer points than threads (as high d makes them): 360 bytes of shared memory give tiles of
    15, 11 and 5 points (float64 diameter, counts, shift) to blocks of 16 threads, none dividing n = 21."""
    monkeypatch.setattr(cuda_kernels, "STATIC_SHARED_BYTES", 360)
    X = normalised(awkward(21, 3, seed=21))
    ref = oracle.cdf_ts_step(rounded32(X) if dtype == "float32" else X, 0.2, "epsilon", None)
    m, stats, Xn, _ = bodies_step(cuda, X, 0.2, "epsilon", None, dtype=dtype, parts=2, rows=7)
    assert m == ref.m
    np.testing.assert_array_equal(stats, ref.counts)
    assert np.abs(Xn - ref.X).max() <= (1e-9 if dtype == "float64" else 1e-6)


@simulated_cuda
@pytest.mark.parametrize("name,X,lam,estimator,k", UNDERFLOW, ids=[case[0] for case in UNDERFLOW])
def test_simulated_float32_pairs_whose_sq_underflows_are_decided_in_float64(cuda, name, X, lam, estimator, k):
    """As ``test_float32.py``'s test of the same name, for the CUDA kernels (counts and shift)."""
    assert_bodies_step_is_the_oracles(cuda, X, lam, estimator, k, "float32", parts=2)


@simulated_cuda
@pytest.mark.parametrize("side", ["outside", "inside"])
@pytest.mark.parametrize("d", [1, 16])
def test_simulated_step_decides_the_worst_rounded_pairs_in_float64(cuda, d, side):
    """As ``test_float32.py``'s test of the same name, for the CUDA kernels (counts and shift)."""
    X32, lam, _ = float32_worst_rounded_case(d, side)
    assert_bodies_step_is_the_oracles(cuda, X32, lam, "epsilon", None, "float32", parts=1)


@simulated_cuda
@pytest.mark.parametrize("name,X,lam,estimator,k", SUBNORMAL, ids=[case[0] for case in SUBNORMAL])
def test_simulated_float32_subnormal_sq_rounded_up_is_decided_in_float64(cuda, name, X, lam, estimator, k):
    """As ``test_float32.py``'s test of the same name, for the CUDA kernels (counts, k-th radii, shift)."""
    assert_bodies_step_is_the_oracles(cuda, X, lam, estimator, k, "float32", parts=1)


@simulated_cuda
@pytest.mark.parametrize("name,X,estimator,k,dtype", ILL_CONDITIONED, ids=[c[0] for c in ILL_CONDITIONED])
def test_simulated_references_whose_rho_cancels_are_decided_in_float64(cuda, name, X, estimator, k, dtype):
    """As ``test_engine_cpu.py``'s test of the same name, for the CUDA shift kernel."""
    assert_step_is_the_oracles(cuda, X, estimator, k, dtype)


def test_tile_points_within_static_shared_memory():
    assert cuda_kernels.tile_points(8 * 4, 128) == 128
    assert cuda_kernels.tile_points(8 * 64 + 48, 128) == 87
    with pytest.raises(ValueError, match="d: one point needs"):
        cuda_kernels.tile_points(8 * 7000, 128)


def test_numba_cuda_on_a_numpy_without_row_stack_fails_at_import_saying_what_to_install():
    """numba-cuda 0.30.4 under NumPy 2.5 (no ``np.row_stack``): importing the kernels raises an ImportError
    that names both versions and ``numpy<2.5``, instead of every kernel launch failing on a worker."""
    code = (
        "import numpy as np\n"
        "if hasattr(np, 'row_stack'):\n    del np.row_stack\n"
        "import cdfts_dask.engine.cuda_kernels\n"
    )
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 1, run.stderr
    assert last.startswith("ImportError: numba-cuda ") and "NumPy" in last and "'numpy<2.5'" in last, last


@pytest.mark.parametrize("imported,later", [("1", "0"), ("0", "1")])
def test_the_kernels_follow_how_numba_cuda_was_imported_not_the_environment_later(imported, later):
    """Regression: the simulator flag was read from ``NUMBA_ENABLE_CUDASIM`` when the kernels were imported.
    Changed after ``numba.cuda`` was imported, the kernels were built for the other target: on a real GPU,
    float64 ``mul_rn`` as the simulator's plain multiply (fused into FMAs: exact membership lost)."""
    code = (
        "import os\n"
        "from numba import cuda, njit\n"
        f"os.environ['NUMBA_ENABLE_CUDASIM'] = {later!r}\n"
        "njit(lambda x: x + 1)(1)\n"  # a compile re-reads numba's config from the environment
        "from cdfts_dask.engine import cuda_kernels\n"
        "print(cuda_kernels.SIMULATOR, cuda.jit.__module__)\n"
    )
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": imported}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    simulated, jit_module = run.stdout.split()
    assert simulated == str(imported == "1")
    assert (jit_module == "numba.cuda.simulator.api") == (imported == "1")


@simulated_cuda
def test_kernel_profile_script_times_every_kernel(tmp_path):
    """``docs/scripts/cuda_kernel_profile.py`` (the ``kernels`` and ``ab`` stages of gpu_figures.sh) times
    the four production kernels and the diameter and count passes, one line each, then prints the bits
    to compare:
    the diameter's sq (the oracle's) and a digest of the shift sums, the same however often the kernels
    ran, another digest where the sums differ (another lambda).  Under the simulator on 40 points."""
    script = Path(__file__).resolve().parents[1] / "docs" / "scripts" / "cuda_kernel_profile.py"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}

    def bits(*args: str) -> tuple[float, str]:
        run = subprocess.run([sys.executable, str(script), "--n", "40", "--dtype", "float64", *args],
                             env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()[1:]
        kernels = ["max_sq", "diameter_part", "count_rows", "counts_part", "kth_smallest_sq", "shift_sums"]
        assert [line.split()[0] for line in lines[:6]] == kernels, run.stdout
        found = re.fullmatch(r"  bits: diameter sq (\S+), shift sums sha256 ([0-9a-f]{16})", lines[6])
        assert len(lines) == 7 and found, run.stdout
        return float(found[1]), found[2]

    diameter, once = bits("--repeat", "1")
    assert diameter == cpu.diameter_part(data(40, 8), 0, 1)
    assert bits("--repeat", "2") == (diameter, once)
    assert bits("--repeat", "1", "--lam", "0.3")[1] != once
