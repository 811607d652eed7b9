"""``cdfts bench`` runs on a tiny size and prints its columns (no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
import warnings

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
