"""``cdfts bench`` runs on a tiny size and prints its columns (no timing assertions)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import ROOT, cli_env

from cdfts_dask import bench


@pytest.mark.slow
def test_bench_command_prints_columns():
    proc = subprocess.run(
        [sys.executable, "-m", "cdfts_dask", "bench", "--sizes", "60", "--workers", "1", "-d", "3",
         "--dtype", "float64,float32", "--repeat", "1"],
        capture_output=True, text=True, cwd=ROOT, env=cli_env(), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    legend = [line for line in proc.stdout.splitlines() if line.startswith("#")]
    assert [line[1:].split(":")[0].strip() for line in legend] == bench.COLUMNS  # every column explained
    lines = [line for line in proc.stdout.strip().splitlines() if not line.startswith("#")]
    assert lines[0].split() == bench.COLUMNS
    rows = [line.split() for line in lines[1:] if line.split()[0].isdigit()]
    assert [(r[0], r[2], r[3]) for r in rows] == [("60", "float64", "1"), ("60", "float32", "1")]
    assert all(len(r) == len(bench.COLUMNS) for r in rows)
    assert "gemm float64" in lines[-1]


def test_bench_rejects_bad_arguments(capsys):
    from cdfts_dask.cli import main

    code = main(["bench", "--sizes", "60", "--dtype", "float16"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "float16" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--sizes", "inf"], "expected comma-separated integers, got 'inf'"),
        (["--sizes", "1e400"], "expected comma-separated integers"),
        (["--sizes", "300", "--kernels", "-d", "0"], "--dims must be >= 1, got 0"),
        (["--sizes", "300", "--tile-size", "-4"], "--tile-size must be >= 1, got -4"),
        (["--sizes", "300", "--estimator", "knn", "-k", "0"], "-k must be >= 1, got 0"),
        (["--sizes", "300", "--lam", "nan"], "--lam must be in (0, 1), got nan"),
        (["--sizes", "300", "--user-call", "--gpu", "--dtype", "float32", "-k", "5"],
         "--user-call does not use --gpu, --dtype, -k: it times a fixed setup"),
        (["--sizes", "300", "--kernels", "--estimator", "knn", "--workers", "1"],
         "--kernels does not use --workers, --estimator: it times a fixed setup"),
        (["--sizes", "20", "--user-call", "--kernels"],
         "--user-call and --kernels are two modes of the benchmark: give one"),
    ],
)  # fmt: skip
def test_bench_refuses_what_it_would_not_measure(capsys, flags, message):
    """Regressions: ``--sizes inf`` and ``-d 0`` ended in tracebacks; ``--user-call --gpu --dtype float32``
    timed the CPU float64 call and ``--kernels --estimator knn --workers 1`` ignored both, exit 0;
    ``-k 0`` measured k = 10 and ``--lam nan`` was timed; ``--user-call --kernels`` timed the user call
    and dropped ``--kernels``, exit 0."""
    from cdfts_dask.cli import main

    try:
        code = main(["bench", *flags])
    except SystemExit as exc:  # an argument's type error, from the parser
        code = exc.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], lines


def test_bench_kernel_profile_and_the_column_legend(capsys):
    """In process, no cluster: the kernel profile at a tiny n, and the legend explaining every column."""
    from cdfts_dask.cli import main

    assert main(["bench", "--kernels", "--sizes", "60", "-d", "3", "--dtype", "float64,float32"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["n=60 d=3 float64", "n=60 d=3 float32"]
    assert all(line.count("pairs/s") == 3 and "k-NN radii, k = 10," in line for line in lines)
    legend = bench.legend().splitlines()
    assert all(line.startswith("#") for line in legend)
    assert [line[1:].split(":")[0].strip() for line in legend] == bench.COLUMNS
    assert bench.header().split() == bench.COLUMNS


def test_gpu_rows_are_not_compared_with_the_host_gemm(monkeypatch):
    """A GPU row's flop rate over the host CPU's GEMM rate would be a meaningless ratio: ``bench.run`` for
    ``backend="cuda"`` neither measures the GEMM nor fills ``x_gemm``; CPU rows do both."""
    def fake_iteration(X, workers, dtype, lam, estimator, k, repeat, tile_size, backend):
        return 0.5, 0.2, 0.3, 1.0, 0.5, 100.0, 1.0  # s_iter, ref, shift, cpu, cpu_max, peak MiB, cores

    def no_gemm(*args, **kwargs):
        raise AssertionError("the host GEMM was measured for GPU rows")

    monkeypatch.setattr(bench, "engine_iteration", fake_iteration)
    monkeypatch.setattr(bench, "gemm_flops", no_gemm)
    rows, gemm = bench.run([40], d=3, workers=(1,), oracle_max=0, backend="cuda")
    assert gemm is None and rows[0].x_gemm is None
    assert "-" in bench.format_row(rows[0]).split()

    monkeypatch.setattr(bench, "gemm_flops", lambda: 1e9)
    rows, gemm = bench.run([40], d=3, workers=(1,), oracle_max=0, backend="cpu")
    assert bench.flops_per_pair(3) == 4 * 3 + 3  # the module docstring's count: 4 d + 3 flops per pair
    assert gemm == 1e9 and rows[0].x_gemm == pytest.approx(rows[0].pps * 15 / 1e9, rel=1e-12)


def test_a_k_above_n_minus_1_is_said_and_measured_at_n_minus_1(monkeypatch):
    """Regression (a new-user audit, 2026-11-29): ``cdfts bench --sizes 10 --estimator knn -k 50`` measured
    k = 9 without a word (the table has no k column).  It is still measured at n - 1, with a warning."""
    measured = []

    def fake_iteration(X, workers, dtype, lam, estimator, k, repeat, tile_size, backend):
        measured.append(k)
        return 0.5, 0.2, 0.3, 1.0, 0.5, 100.0, 1.0

    monkeypatch.setattr(bench, "engine_iteration", fake_iteration)
    monkeypatch.setattr(bench, "gemm_flops", lambda: 1e9)
    with pytest.warns(UserWarning, match=r"n = 10: k = 50 is more than n - 1; measured with k = 9"):
        bench.run([10], d=3, workers=(1,), oracle_max=0, estimator="knn", k=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bench.run([60], d=3, workers=(1,), oracle_max=0, estimator="knn", k=50)
    assert measured == [9, 50]


class _ClusterAsked(Exception):
    pass


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_benchmarks_take_their_cluster_from_the_loopback_factory(monkeypatch, device):
    """Regression: the benchmarks started their own ``LocalCluster(dashboard_address=None)``, whose HTTP
    server (/health, /metrics) listened on 0.0.0.0:8787 (another port, with a warning, when that one was
    taken).  They now ask :func:`cdfts_dask.dask_client.local_cluster`, whose listeners are checked by
    ``test_faults.py::test_embedded_cluster_listens_on_loopback_only``."""
    asked = []

    def factory(n_workers, gpu=False, security=None):
        asked.append((n_workers, gpu))
        raise _ClusterAsked

    monkeypatch.setattr(bench, "local_cluster", factory)
    with pytest.raises(_ClusterAsked):
        bench.engine_iteration(bench.data(20, 2), 2, "float64", 0.1, "epsilon", None, backend=device)
    with pytest.raises(_ClusterAsked):
        bench.user_call(n=20, d=2, workers=1)
    assert asked == [(2, device == "cuda"), (1, False)]


# --- Found by a mutation audit (2026-12-07) of bench.py, cli/bench.py ---------------------------------


def _in_process_cluster(n_workers, gpu=False, security=None):
    """The benchmarks' cluster as threads of this process (so that a monkeypatched engine is the one run)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False, dashboard_address=None)


def test_every_figure_of_a_row_is_derived_from_that_rows_own_measurement(monkeypatch):
    """Found by a mutation audit (2026-12-07): no test checked how a row's rates and ratios are derived
    from the measured seconds: ``pairs / shift`` for ``ref_pps``, ``pps`` over n^2 (not 2 n^2) or
    n (n - 1) pairs, ``x_oracle`` inverted, ``x_1w`` / ``x_1w_cpu`` inverted or from the other time,
    the oracle run at ``n == oracle_max`` skipped, and ``dtype``, ``tile_size``, ``backend``,
    ``repeat`` dropped on their way to the run, all passed.  Each (n, dtype, workers) gets its own
    timings here, so a figure taken from another row or measurement shows."""
    calls, oracle_calls = [], []

    def fake_iteration(X, workers, dtype, lam, estimator, k, repeat, tile_size, backend):
        calls.append((len(X), X.shape[1], workers, dtype, lam, estimator, k, repeat, tile_size, backend))
        base = len(X) / 10 + (workers == 1) + (dtype == "float32") / 4  # distinct per configuration
        return base / workers, base / 7, base / 3, 2.0 * base, base / 1.5, 100.0 * workers, 1.5

    def fake_oracle(X, lam, estimator, k):
        oracle_calls.append((len(X), lam, estimator, k))
        return 0.125 * len(X)

    monkeypatch.setattr(bench, "engine_iteration", fake_iteration)
    monkeypatch.setattr(bench, "oracle_seconds", fake_oracle)
    monkeypatch.setattr(bench, "gemm_flops", lambda: 1e9)
    reported = []
    rows, gemm = bench.run(
        [40, 50], d=3, dtypes=("float64", "float32"), workers=(1, 2), lam=0.2, estimator="knn", k=5,
        repeat=2, oracle_max=40, tile_size=7, report=reported.append, backend="cpu",
    )  # fmt: skip
    assert reported == rows
    assert calls == [(n, 3, w, t, 0.2, "knn", 5, 2, 7, "cpu")
                     for n in (40, 50) for t in ("float64", "float32") for w in (1, 2)]  # fmt: skip
    assert oracle_calls == [(40, 0.2, "knn", 5)]  # n == --oracle-max is measured, above it is not
    for row in rows:
        s, ref, shift, cpu, cpu_max, peak, cores = fake_iteration(
            np.zeros((row.n, row.d)), row.workers, row.dtype, 0.2, "knn", 5, 2, 7, "cpu"
        )
        assert (row.n, row.d) in {(40, 3), (50, 3)}
        assert (row.s_iter, row.cpu_s, row.cpu_max, row.peak_mib, row.cores) == (s, cpu, cpu_max, peak, cores)
        pairs = row.n * row.n  # ordered pairs of each pass (the legend's n^2)
        assert row.ref_pps == pytest.approx(pairs / ref, rel=1e-12)
        assert row.shift_pps == pytest.approx(pairs / shift, rel=1e-12)
        assert row.pps == pytest.approx(2 * pairs / s, rel=1e-12)
        if row.n <= 40:
            assert row.x_oracle == pytest.approx(0.125 * row.n / s, rel=1e-12)  # oracle seconds / ours
        else:
            assert row.x_oracle is None
        if row.workers == 1:
            assert row.x_1w is None and row.x_1w_cpu is None
        else:  # over the 1-worker row of the same n and dtype
            (one,) = [r for r in rows if (r.n, r.dtype, r.workers) == (row.n, row.dtype, 1)]
            assert row.x_1w == pytest.approx(one.s_iter / row.s_iter, rel=1e-12)
            assert row.x_1w_cpu == pytest.approx(one.cpu_max / row.cpu_max, rel=1e-12)
    del calls[:]
    bench.run([40], d=3, workers=(1,), oracle_max=0, backend="cuda")
    assert calls[0][-1] == "cuda"


def test_a_printed_row_shows_each_figure_in_its_own_column():
    """Found by a mutation audit (2026-12-07): ``format_row`` printing ``shift_pps`` under ``ref_pps``,
    ``cpu_max`` under ``cpu_s`` or ``x_1w_cpu`` under ``x_1w`` passed: every row tested had equal or
    unmeasured values there.  A row of distinct values prints each under its own header, to 1 %
    (``s_iter`` printed to 2 decimals, 0.01 for 0.01234, passed a row of 0.25 s: found by a mutation
    audit, 2026-12-08)."""
    row = bench.Row(60, 3, "float32", 2, 0.01234, 1.5e6, 2.5e6, 3.5e6, 0.75, 0.5, 400.0, 1.75, 12.5, 0.125,
                    1.25, 2.75)  # fmt: skip
    printed = dict(zip(bench.COLUMNS, bench.format_row(row).split(), strict=True))
    for name, value in vars(row).items():
        shown = printed[name]
        assert (shown == value) if isinstance(value, str) else float(shown) == pytest.approx(value, rel=1e-2)


@pytest.mark.parametrize("measured", [True, False], ids=["all-ratios", "no-ratios"])
def test_every_figure_of_a_printed_row_ends_under_the_end_of_its_header(measured):
    """Found by a mutation audit (2026-12-07): an unmeasured ratio printed as a bare ``-``, not padded to
    its column, so every figure after it on the line sat under the header before its own (the n = 1e5
    rows of docs/BENCHMARKS.md showed ``x_gemm`` under ``x_oracle``); a split on whitespace still found
    them all, so no test saw it.  Each field of a row ends where its header ends, measured or not."""
    ratios = (12.5, 0.125, 1.25, 2.75) if measured else (None, 0.125, None, None)
    row = bench.Row(100000, 6, "float64", 2, 0.25, 1.5e6, 2.5e6, 3.5e6, 0.75, 0.5, 400.0, 1.75, *ratios)

    def ends(line: str) -> list[int]:
        return [m.end() for m in re.finditer(r"\S+", line)]

    assert ends(bench.format_row(row)) == ends(bench.header())


def test_a_timed_iteration_that_failed_raises_its_error_rather_than_giving_a_time():
    """Found by a mutation audit (2026-12-08): the wait for a timed iteration's result not raising the
    task's error passed every test: a benchmark whose iteration failed on the workers would then print the
    seconds until the failure as a figure of the engine."""
    from distributed import Client

    with _in_process_cluster(1) as cluster, Client(cluster) as c:
        bench._computed(c.submit(sum, [1, 2]))  # a finished task: nothing raised
        with pytest.raises(ZeroDivisionError):
            bench._computed(c.submit(divmod, 1, 0))


def test_the_engine_iteration_runs_what_was_asked_and_reports_its_own_measurements(monkeypatch):
    """Found by a mutation audit (2026-12-07): ``engine_iteration`` building its engine without the
    ``dtype`` or ``tile_size`` asked, timing the ``epsilon`` estimator whatever was asked, swapping the
    reference and shift seconds, keeping the worst repeat, summing absolute CPU times (not the
    iteration's), reporting one worker's peak memory for all, or starting 2 workers whatever was asked,
    passed (no test ran it).  Here the cluster is in this process, so the engine it ran can be
    watched."""
    import time

    from cdfts_dask.engine import TiledEngine

    made, steps = [], []

    class Watched(TiledEngine):
        def __init__(self, client, tile_size=None, dtype="float64", backend="cpu"):
            made.append((tile_size, dtype, backend))
            super().__init__(client, tile_size, dtype=dtype, backend=backend)

        def step(self, X, n, d, lam, estimator, k, timings=None, watch=None):
            out = super().step(X, n, d, lam, estimator, k, timings=timings, watch=watch)
            steps.append((n, d, lam, estimator, k, timings))
            return out

    monkeypatch.setattr(bench, "local_cluster", _in_process_cluster)
    monkeypatch.setattr(bench, "TiledEngine", Watched)
    monkeypatch.setattr(bench, "_peak_rss_mib", lambda: 100.0)
    monkeypatch.setattr(bench, "core_capacity", lambda client: 1.25)
    X = bench.data(80, 3)
    p0 = time.process_time()
    s, ref, shift, cpu, cpu_max, peak, cores = bench.engine_iteration(
        X, 3, "float32", 0.2, "knn", 4, repeat=1, tile_size=16
    )
    p1 = time.process_time()
    assert made == [(16, "float32", "cpu")]
    assert [st[:5] for st in steps] == [(80, 3, 0.2, "knn", 4)] * 2  # the warm-up, then the timed one
    timed = steps[1][5]
    assert steps[0][5] is None and set(timed) >= {"reference", "shift"}
    assert (ref, shift) == (timed["reference"], timed["shift"])
    assert 0 < ref + shift <= s < np.inf
    assert 0 <= cpu_max <= cpu <= 3 * (p1 - p0)  # the iteration's CPU time, not the process's whole
    assert peak == 300.0 and cores == 1.25  # peak memory of the 3 workers asked, together


def test_core_capacity_is_all_workers_cpu_seconds_over_the_wall_seconds(monkeypatch):
    """Found by a mutation audit (2026-12-07): ``cores`` as CPU seconds times (not over) the wall seconds,
    or spinning on one worker only, passed.  A client double spins each worker once; a fake clock gives
    the wall seconds."""
    from types import SimpleNamespace

    asked, clock = [], iter([10.0, 10.25])
    cpu = {"tcp://a": 0.5, "tcp://b": 0.375, "tcp://c": 0.25}

    class Client:
        def nthreads(self):
            return dict.fromkeys(cpu, 1)

        def submit(self, f, seconds, workers, pure):
            asked.append((f, seconds, tuple(workers)))
            return cpu[workers[0]]

        def gather(self, futures):
            return list(futures)

    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    assert bench.core_capacity(Client(), seconds=0.5) == pytest.approx(1.125 / 0.25, rel=1e-12)
    assert sorted(w for _, _, (w,) in asked) == sorted(cpu) and {(f, s) for f, s, _ in asked} == {
        (bench._busy, 0.5)
    }


def test_the_gemm_rate_is_the_best_of_its_runs_and_peak_memory_is_in_mib(monkeypatch):
    """Found by a mutation audit (2026-12-07): the GEMM rate counting ``n^3`` flops (not ``2 n^3``) or
    taken from the slowest run, and the workers' peak memory divided by 1000 (not 1024: ``VmHWM`` is
    in KiB), passed."""
    times = iter([0.5, 0.25, 0.375])
    monkeypatch.setattr(bench, "_timed", lambda f: next(times))
    assert bench.gemm_flops(size=16, repeat=3) == pytest.approx(2 * 16**3 / 0.25, rel=1e-12)
    monkeypatch.undo()
    with open("/proc/self/status") as fh:
        kib = [int(line.split()[1]) for line in fh if line.startswith("VmHWM:")]
    if not kib:
        pytest.skip("no /proc/self/status VmHWM here")
    assert bench._peak_rss_mib() == pytest.approx(kib[0] / 1024, rel=1e-3)


def test_the_oracle_is_timed_with_the_estimator_and_k_asked(monkeypatch):
    """Found by a mutation audit (2026-12-07): ``oracle_seconds`` timing the epsilon estimator whatever
    was asked passed (``x_oracle`` of a k-NN row compared with another computation)."""
    asked = []
    real = bench.oracle.cdf_ts_step

    def watched(X, lam, estimator, k):
        asked.append((len(X), lam, estimator, k))
        return real(X, lam, estimator, k)

    monkeypatch.setattr(bench.oracle, "cdf_ts_step", watched)
    assert bench.oracle_seconds(bench.data(30, 2), 0.2, "knn", 4) > 0
    assert asked == [(30, 0.2, "knn", 4)]


def test_the_kernel_profile_rates_are_its_pairs_over_its_seconds(monkeypatch):
    """Found by a mutation audit (2026-12-07): the count pass's rate over n^2 (not the n^2 / 2 unordered
    pairs the docstring says), the k-NN rate over the shift's seconds, the profile run in float64 or at
    k = 10 whatever was asked, all passed; and (2026-12-08) the count pass timed at lambda 0.1 whatever
    was asked."""
    from cdfts_dask.engine import cpu, plan

    seen = []
    real_kth, real_shift, real_threshold = cpu.kth_part, cpu.shift_part, plan.count_threshold

    def kth(X, a, b, k):
        seen.append(("kth", X.dtype, k))
        return real_kth(X, a, b, k)

    def shift(X, a, b, p):
        seen.append(("shift", X.dtype))
        return real_shift(X, a, b, p)

    def threshold(m, lam):
        seen.append(("threshold", lam))
        return real_threshold(m, lam)

    monkeypatch.setattr(cpu, "kth_part", kth)
    monkeypatch.setattr(cpu, "shift_part", shift)
    monkeypatch.setattr(plan, "count_threshold", threshold)
    n = 200
    r = bench.kernel_profile(n, 3, "float32", lam=0.2, k=5)
    assert r["count_pairs_per_s"] * r["count_s"] == pytest.approx(n * n / 2, rel=1e-9)
    assert r["kth_pairs_per_s"] * r["kth_s"] == pytest.approx(n * n, rel=1e-9)
    assert r["shift_pairs_per_s"] * r["shift_s"] == pytest.approx(n * n, rel=1e-9)
    assert {s for s in seen if s[0] == "kth"} == {("kth", np.dtype("float32"), 5)}
    assert {s for s in seen if s[0] == "shift"} == {("shift", np.dtype("float32"))}
    assert {s for s in seen if s[0] == "threshold"} == {("threshold", 0.2)}
    seen.clear()
    bench.kernel_profile(8, 2, k=50)  # k above n - 1: measured at n - 1, as the command line says
    assert {s[2] for s in seen if s[0] == "kth"} == {7}


def test_the_user_call_times_the_call_asked_and_derives_its_ratios(monkeypatch):
    """Found by a mutation audit (2026-12-07): ``user_call`` timing the tiled call or the engine step at
    the default lambda whatever was asked, ``x_dense`` inverted and the overhead negated, passed."""
    import cdfts_dask.api as api
    from cdfts_dask.engine import TiledEngine

    lams = []
    real = api.cdf_ts

    def watched(X, *args, **kwargs):
        lams.append((kwargs.get("method"), len(X), kwargs.get("lam", 0.1)))
        return real(X, *args, **kwargs)

    class Watched(TiledEngine):
        def step(self, X, n, d, lam, *args, **kwargs):
            lams.append(("step", n, lam))
            return super().step(X, n, d, lam, *args, **kwargs)

    monkeypatch.setattr(bench, "local_cluster", _in_process_cluster)
    monkeypatch.setattr(bench, "TiledEngine", Watched)
    monkeypatch.setattr(api, "cdf_ts", watched)
    r = bench.user_call(n=60, d=2, workers=1, lam=0.25, repeat=1)
    assert r["x_dense"] == pytest.approx(r["dense_s"] / r["call_s"], rel=1e-12)
    assert r["overhead_s"] == pytest.approx(r["call_s"] - r["step_s"], rel=1e-12)
    assert lams == [("tiled", 60, 0.1), ("tiled", 60, 0.25), ("step", 60, 0.25), ("dense", 60, 0.25)]


def test_the_command_line_passes_every_option_to_the_benchmark_and_prints_its_gemm_roof(monkeypatch, capsys):
    """Found by a mutation audit (2026-12-07): ``cdfts bench`` dropping ``--lam``, ``--estimator``,
    ``-k``, ``--repeat``, ``--oracle-max``, ``--tile-size``, ``-d`` or ``--gpu`` on their way to
    ``bench.run`` (the table printed as if they had been honoured) passed, and so did the GEMM line's
    roof for d = 6 whatever ``-d`` was, or its GFLOP/s off by 1000.  And (2026-12-08) a size written as
    its help says (``1e3``) refused, and ``--dtype "float64, float32"`` refused for its blank."""
    from cdfts_dask.cli import main

    asked = []

    def fake_run(sizes, **kwargs):
        asked.append((sizes, kwargs))
        return [], None if kwargs["backend"] == "cuda" else 3.0e9

    monkeypatch.setattr(bench, "run", fake_run)
    flags = ["--sizes", "4e1,50", "-d", "4", "--dtype", "float64, float32", "--workers", "1,3",
             "--lam", "0.25", "--estimator", "knn", "-k", "7", "--repeat", "2", "--oracle-max", "45",
             "--tile-size", "9"]  # fmt: skip
    assert main(["bench", *flags]) == 0
    ((sizes, kwargs),) = asked
    assert sizes == [40, 50]
    assert {name: value for name, value in kwargs.items() if name != "report"} == dict(
        d=4, dtypes=("float64", "float32"), workers=(1, 3), lam=0.25, estimator="knn", k=7, repeat=2,
        oracle_max=45, tile_size=9, backend="cpu",
    )  # fmt: skip
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"gemm float64: 3.0 GFLOP/s = {3.0e9 / 19:.3g} pairs/s roof (19 flops per pair evaluation)"
    assert main(["bench", "--sizes", "40", "--gpu"]) == 0
    assert asked[-1][1]["backend"] == "cuda"
    assert "gemm float64:" not in capsys.readouterr().out  # no host GEMM line for GPU rows


def test_the_command_lines_other_modes_print_the_figures_of_the_configuration_asked(monkeypatch, capsys):
    """Found by a mutation audit (2026-12-07): ``--user-call`` timing lambda 0.1 or 2 workers whatever was
    asked, or printing the call's seconds as the engine iteration's, and ``--kernels`` profiling float64
    or k = 10 whatever was asked, or printing k = ``-k`` where the profile measured n - 1, passed."""
    from cdfts_dask.cli import main

    calls = []

    def fake_user_call(n, d, workers, lam, repeat):
        calls.append(("user_call", n, d, workers, lam, repeat))
        return dict(call_s=1.5, step_s=0.25, overhead_s=1.25, dense_s=4.5, x_dense=3.0)

    def fake_profile(n, d, dtype, lam, k):
        calls.append(("kernels", n, d, dtype, lam, k))
        return dict(diameter_s=0.125, count_s=0.25, count_pairs_per_s=2e6, kth_s=0.375, kth_pairs_per_s=3e6,
                    shift_s=0.5, shift_pairs_per_s=4e6)  # fmt: skip

    monkeypatch.setattr(bench, "user_call", fake_user_call)
    monkeypatch.setattr(bench, "kernel_profile", fake_profile)
    assert main(["bench", "--user-call", "--sizes", "40", "-d", "3", "--workers", "3", "--lam", "0.25",
                 "--repeat", "2"]) == 0  # fmt: skip
    assert capsys.readouterr().out.strip() == (
        "n=40 d=3 workers=3: cdf_ts tiled call 1.500 s (engine iteration 0.250 s, "
        "per-call overhead 1.250 s); dense oracle iteration 4.500 s; dense / tiled call = 3.0x"
    )
    assert main(["bench", "--kernels", "--sizes", "20", "-d", "3", "--dtype", "float32", "--lam", "0.25",
                 "-k", "50"]) == 0  # fmt: skip
    assert capsys.readouterr().out.strip() == (
        "n=20 d=3 float32: diameter 0.125 s; counts 0.250 s (2e+06 pairs/s); k-NN radii, k = 19, 0.375 s "
        "(3e+06 pairs/s); shift 0.500 s (4e+06 pairs/s)"
    )
    assert calls == [("user_call", 40, 3, 3, 0.25, 2), ("kernels", 20, 3, "float32", 0.25, 50)]


@pytest.mark.parametrize(
    "flags",
    [["--sizes", "1"], ["--sizes", "60", "--workers", "0"], ["--sizes", "60", "--repeat", "0"],
     ["--sizes", "60", "--lam", "1"], ["--sizes", "60", "--workers", "1,x"],
     ["--sizes", "60", "--user-call", "--oracle-max", "5"],
     ["--sizes", "60", "--kernels", "--oracle-max", "5"]],
)  # fmt: skip
def test_the_command_line_refuses_a_size_worker_count_repeat_or_lambda_it_cannot_time(monkeypatch, capsys,
                                                                                       flags):  # fmt: skip
    """Found by a mutation audit (2026-12-07): ``--sizes 1`` (no pair to time), ``--workers 0``,
    ``--repeat 0`` (no timed iteration: every figure ``inf``) and ``--lam 1`` accepted passed.  And
    (2026-12-08) ``--workers 1,x`` read as ``1`` (the ``x`` dropped), and ``--oracle-max`` accepted by
    ``--user-call`` and ``--kernels``, which time no oracle against it."""
    from cdfts_dask.cli import main

    for mode in ("run", "user_call", "kernel_profile"):
        monkeypatch.setattr(bench, mode, lambda *a, **k: pytest.fail("timed what it should have refused"))
    try:
        code = main(["bench", *flags])
    except SystemExit as exc:
        code = exc.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
