"""``cdfts evaluate`` and ``cdfts plot`` end to end."""

import subprocess
import sys
import warnings

import pytest

from tests.conftest import DATA, ROOT, cli_env


def _cdfts(*args, timeout=300, warnings="default"):
    return subprocess.run(
        [sys.executable, "-W", warnings, "-m", "cdfts_dask", *args],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_evaluate_writes_tables(tmp_path):
    out = tmp_path / "res"
    r = _cdfts(
        "evaluate",
        "--data",
        str(DATA / "3L.csv"),
        "--eps-step",
        "0.1",
        "--no-train-test",
        "--workers",
        "1",
        "--out",
        str(out),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    md = (out / "clustering.md").read_text()
    assert "| 3L |" in md and "(0.59)" in md and "#Top 1" in md
    assert "Values in parentheses are the paper's; the others are this run's best F-measure." in md
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert csv_lines[0].startswith("task,dataset,algorithm,transform")
    assert len(csv_lines) == 1 + 4 * 4  # 4 algorithms x 4 views
    assert (out / "parameters.json").exists()


@pytest.mark.slow
def test_evaluate_without_datasets_is_a_clean_error(tmp_path):
    r = _cdfts("evaluate", "--out", str(tmp_path))
    assert r.returncode == 2 and "no datasets" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_plot_two_and_high_dimensional(tmp_path):
    r = _cdfts("plot", str(DATA / "3L.csv"), "--out", str(tmp_path), "--iterations", "3", warnings="error")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "3L_iterations.png").stat().st_size > 1000
    assert (tmp_path / "3L_convergence.png").exists()
    hd = tmp_path / "hd.csv"
    lines = ["a,b,c,label"] + [f"{i % 7},{(i * 3) % 11},{i % 5},{i % 2}" for i in range(60)]
    hd.write_text("\n".join(lines) + "\n")
    r = _cdfts("plot", str(hd), "--out", str(tmp_path), "--iterations", "2", warnings="error")
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr  # -W error: any warning (e.g. scikit-learn's MDS FutureWarning) fails
    assert (tmp_path / "hd_mds.png").stat().st_size > 1000


def _main(capsys, *args) -> tuple[int, str]:
    """``cdfts ARGS`` in this process: (exit status, stderr)."""
    from cdfts_dask.cli import main

    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def test_evaluate_resume_runs_only_missing_tasks(tmp_path, client, capsys):
    """In process on the session's cluster, 50 stratified rows of 3L (EC's least): the same 16 tasks."""
    out = tmp_path / "res"
    args = ["evaluate", "--data", DATA / "3L.csv", "--max-n", "50", "--eps-step", "0.1",
            "--scheduler", client.scheduler.address, "--out", out]  # fmt: skip
    assert _main(capsys, *args, "--quiet") == (0, "")
    full = (out / "results.csv").read_text()
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 16 * 4  # 16 tasks (original + 3 views x 5 lambdas) x 4 algorithms
    (out / "records.jsonl").write_text("\n".join(lines[:-6]) + "\n")  # the last task and half of another
    code, err = _main(capsys, *args, "--resume")
    assert code == 0 and "2 tasks (14 resumed)" in err
    assert (out / "results.csv").read_text() == full
    (out / "records.jsonl").write_text(lines[0] + "\n{not json\n")
    code, err = _main(capsys, *args, "--resume")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "line 2 is not JSON" in lines[0]


def test_plot_in_process_without_warnings(tmp_path, capsys):
    """2-D (80 of 3L's points) and 3-D (MDS) figures, every warning an error (the subprocess test with
    -W error is slow)."""
    hd = tmp_path / "hd.csv"
    lines = ["a,b,c,label"] + [f"{i % 7},{(i * 3) % 11},{i % 5},{i % 2}" for i in range(40)]
    hd.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        small = ["--iterations", "2", "--max-n", "80"]
        assert _main(capsys, "plot", DATA / "3L.csv", "--out", tmp_path, *small)[0] == 0
        assert _main(capsys, "plot", hd, "--out", tmp_path, "--iterations", "2")[0] == 0
    for name in ("3L_iterations", "3L_convergence", "hd_convergence", "hd_mds"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    assert not (tmp_path / "hd_iterations.png").exists()  # scatter plots for 2-D data only


@pytest.mark.parametrize(
    "flags, got",
    [(["--max-n", "40"], "got 40 "), (["--max-n", "60", "--train-test"], "on each train/test half, got 30")],
)
def test_evaluate_too_few_points_for_ec_is_one_line_before_any_work(tmp_path, capsys, flags, got):
    """Regression: --max-n 40 started the cluster and failed in a worker (Dask's 'Compute Failed' log and a
    traceback on stderr before the error)."""
    out = tmp_path / "res"
    code, err = _main(capsys, "evaluate", "--data", DATA / "3L.csv", *flags, "--out", out, "--quiet")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "dataset '3L': EC needs at least 50 points" in lines[0] and got in lines[0]
    assert not out.exists()
