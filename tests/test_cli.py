"""The ``cdfts`` console script, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import zarr
from conftest import DATA, ROOT, cli_env

from cdfts_dask.oracle import cdf_ts_dense


def cdfts(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "cdfts_dask", *map(str, args)],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=cwd,
    )


@pytest.mark.slow
def test_help_documents_subcommands_and_options():
    top = cdfts("--help")
    assert top.returncode == 0 and "transform" in top.stdout
    sub = cdfts("transform", "--help")
    for option in [
        "--lam",
        "--delta",
        "--max-iter",
        "--estimator",
        "--k",
        "--tile-size",
        "--scheduler",
        "--workers",
        "--checkpoint",
        "--resume",
        "--label",
    ]:
        assert option in sub.stdout


def test_a_label_column_keeps_its_header_name_and_a_points_only_output_says_it_drops_it(tmp_path, capsys):
    """Regressions: ``--label 0`` on the header ``x0,x1,label`` wrote the passed-through column ``x0``
    as ``label``, beside the feature already called ``label``; a ``.npy`` / ``.zarr`` output dropped the
    labels without a word."""
    from cdfts_dask.cli import main

    src = tmp_path / "in.csv"
    src.write_text("x0,x1,label\n" + "".join(f"{i % 3},{i * 0.1},{i % 2}\n" for i in range(12)))
    out = tmp_path / "out.csv"
    assert main(["transform", str(src), str(out), "--label", "0", "--quiet"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "x1,label,x0" and [line.split(",")[-1] for line in lines[1:]] == [
        str(i % 3) for i in range(12)
    ]
    indexed = tmp_path / "indexed.csv"  # pandas' default index column: warned about once, not per look
    indexed.write_text(",a,cls\n0,1.5,x\n1,2.5,y\n2,4.0,x\n")
    assert main(["transform", str(indexed), str(out), "--label", "cls", "--quiet"]) == 0
    assert capsys.readouterr().err.count("has no name in the header") == 1
    assert out.read_text().splitlines()[0] == ",a,cls"
    for suffix in (".npy", ".zarr"):
        target = tmp_path / f"out{suffix}"
        assert main(["transform", str(src), str(target), "--label", "label", "--quiet"]) == 0
        message = f"cdfts: warning: output: a {suffix} output holds the transformed points only"
        assert message in capsys.readouterr().err


def test_transform_csv_passes_label_through(tmp_path):
    out = tmp_path / "out.csv"
    res = cdfts("transform", DATA / "3L.csv", out, "--label", "label", "--delta", "0.01")
    assert res.returncode == 0, res.stderr
    src = np.loadtxt(DATA / "3L.csv", delimiter=",", skiprows=1)
    ref = cdf_ts_dense(src[:, :-1], 0.1, 0.01)
    assert f"iteration {len(ref.deltas)}: Delta {ref.deltas[-1]:.6f}" in res.stderr
    assert "pairs/s" in res.stderr
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    assert out.read_text().splitlines()[0] == "x0,x1,label"
    assert np.array_equal(table[:, -1], src[:, -1])
    assert np.abs(table[:, :-1] - ref.X).max() <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_transform_npy_and_zarr_on_workers(tmp_path, suffix):
    X = np.random.default_rng(3).uniform(size=(200, 3))
    src = tmp_path / f"in{suffix}"
    if suffix == ".npy":
        np.save(src, X)
    else:
        zarr.create_array(str(src), shape=X.shape, dtype="f8")[...] = X
    out = tmp_path / f"out{suffix}"
    res = cdfts(
        "transform",
        src,
        out,
        "--workers",
        "2",
        "--tile-size",
        "64",
        "--estimator",
        "knn",
        "-k",
        "10",
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    Y = np.load(out) if suffix == ".npy" else zarr.open_array(str(out), mode="r")[...]
    assert np.abs(Y - cdf_ts_dense(X, estimator="knn", k=10).X).max() <= 1e-9


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,message",
    [
        (["--label", "label", "--lam", "2"], "--lam must lie in the open interval (0, 1), got 2.0"),
        (["--no-label", "--estimator", "knn", "-k", "5000"], "-k must lie in [1, n - 1] = [1, 1499]"),
        (["--label", "-1", "--delta", "0"], "--delta must be a positive finite number, got 0.0"),
        (["--label", "nolabel"], "label column 'nolabel' not found"),
    ],
)
def test_bad_options_print_one_line_and_write_nothing(tmp_path, args, message):
    out = tmp_path / "out.csv"
    res = cdfts("transform", DATA / "syn.csv", out, *args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cdfts transform: error: {message}")
    assert "Traceback" not in res.stderr and not out.exists()


@pytest.mark.slow
def test_bad_files(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,oops\n")
    res = cdfts("transform", bad, tmp_path / "o.csv")
    assert res.returncode == 2 and "non-numeric value 'oops' at row 2, column 2" in res.stderr
    res = cdfts("transform", tmp_path / "missing.csv", tmp_path / "o.csv")
    assert res.returncode == 2 and "file not found" in res.stderr
    res = cdfts("transform", DATA / "syn.csv", tmp_path / "o.txt")
    assert res.returncode == 2 and "unsupported file type '.txt'" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,message",
    [
        (["transform", "a.csv", "b.csv", "--lam", "abc"], "--lam/--lambda: invalid float value: 'abc'"),
        (["transform", "a.csv", "b.csv", "--estimator", "gauss"], "argument --estimator: invalid choice"),
        (["transform"], "the following arguments are required: input, output"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line(args, message):
    res = cdfts(*args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr


def test_missing_optional_dependency_is_one_line(monkeypatch, capsys):
    """`cdfts evaluate` without scipy installed names the package and the extra to install."""
    from cdfts_dask.cli import main

    monkeypatch.setitem(sys.modules, "scipy.optimize", None)  # import of scipy.optimize now fails
    for name in [m for m in sys.modules if m.startswith("cdfts_dask.evaluation")]:
        monkeypatch.delitem(sys.modules, name)
    code = main(["evaluate", "--data", str(DATA / "3L.csv"), "--out", "unused", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "needs the optional package 'scipy.optimize'" in err[0]
    assert "pip install '.[eval]' in the cdfts-dask checkout" in err[0]  # the package is on no index


def test_missing_gpu_dependency_names_both_gpu_extras(monkeypatch, capsys):
    """`cdfts transform --gpu` without dask-cuda names the CUDA 12 and the CUDA 13 extra, in one line."""
    from cdfts_dask.cli import main

    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # import of dask_cuda now fails
    code = main(["transform", str(DATA / "3L.csv"), "unused.csv", "--label", "label", "--gpu", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "needs the optional package 'dask_cuda'" in err[0]
    assert "pip install '.[gpu]' in the cdfts-dask checkout ('.[gpu-cu13]' for CUDA 13)" in err[0]


def test_a_missing_core_dependency_is_not_sent_to_an_extra(capsys):
    """Regression (found by a review of the dependencies, 2026-11-25): any missing module but CuPy and
    dask-cuda was said to need the 'eval' extra, e.g. fsspec, which every install must have."""
    from types import SimpleNamespace

    from cdfts_dask.cli import run_command

    def missing(args):
        raise ModuleNotFoundError("No module named 'fsspec'", name="fsspec")

    assert run_command(SimpleNamespace(command="transform", func=missing)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "cdfts transform: error: the package 'fsspec' is missing: install cdfts-dask again (pip install . "
        "in the checkout)"
    ], err



@pytest.mark.parametrize(
    "name,extra",
    [("numba_cuda", "gpu"), ("numba.cuda.cudadrv", "gpu"), ("cupy", "gpu"), ("matplotlib.pyplot", "eval")],
)
def test_a_missing_optional_package_names_its_extra(capsys, name, extra):
    """Found by a mutation audit (2026-12-07): numba-cuda (a module of the 'gpu' extra) or matplotlib (of
    the 'eval' extra) dropped from the optional packages passed every test: a missing one was said to
    break every command ("install cdfts-dask again").  And (2026-12-08) the CUDA 13 variant of the 'gpu'
    extra named after the 'eval' one too."""
    from types import SimpleNamespace

    from cdfts_dask.cli import run_command

    def missing(args):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    assert run_command(SimpleNamespace(command="plot", func=missing)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    said = f"cdfts plot: error: needs the optional package {name!r}; "
    assert len(err) == 1 and err[0].startswith(said), err
    assert f"install the {extra!r} extra: pip install '.[{extra}]'" in err[0], err
    assert ("'.[gpu-cu13]' for CUDA 13" in err[0]) == (extra == "gpu"), err


@pytest.mark.parametrize("command", ["transform", "apply", "evaluate"])
def test_workers_below_one_is_refused_by_its_option_name_before_anything_is_made(tmp_path, capsys, command):
    """Found by a mutation audit (2026-12-07): the command line's own check of ``--workers`` dropped passed
    every test: ``--workers 0`` was then refused by the API as ``n_workers must be >= 1``, an option the
    command line does not have, and ``cdfts evaluate`` had made its output folder first."""
    from cdfts_dask.cli import main

    np.save(tmp_path / "in.npy", np.random.default_rng(0).random((30, 2)))
    argv = {
        "transform": ["transform", str(tmp_path / "in.npy"), str(tmp_path / "out.npy")],
        "apply": ["apply", str(tmp_path / "model.zarr"), str(tmp_path / "in.npy"), str(tmp_path / "out.npy")],
        "evaluate": ["evaluate", "--data", str(DATA / "3L.csv"), "--out", str(tmp_path / "ev")],
    }[command]
    assert main([*argv, "--workers", "0", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cdfts {command}: error: --workers must be >= 1, got 0"], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy"]



def test_a_task_failing_on_an_embedded_worker_is_one_line_without_dasks_record(tmp_path):
    """Found by a mutation audit (2026-12-07): the embedded cluster's log level left at Dask's ERROR on the
    command line (``cdfts.embedded-cluster.silence-logs``) passed every test (their failing tasks ran on
    the session's cluster or in this process): the worker then printed its ``distributed.worker - ERROR
    - Compute Failed`` record, a dozen lines, before the one-line error."""
    src = tmp_path / "in.zarr"
    zarr.create_array(str(src), shape=(40, 2), chunks=(10, 2), dtype="f8")[...] = np.ones((40, 2))
    chunk = src / "c" / "2" / "0"
    chunk.write_bytes(chunk.read_bytes()[:7])  # truncated: read on a worker of the embedded cluster
    res = cdfts("transform", src, tmp_path / "out.npy", "--quiet", "--method", "tiled", "--workers", "1")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("cdfts transform: error: input: cannot read the Zarr chunk at [20:30, 0:2]")


def test_package_that_cannot_work_here_is_one_line_exit_2(capsys):
    """An ImportError raised on purpose (numba-cuda on NumPy 2.5) reaches the user as its own message."""
    from types import SimpleNamespace

    from cdfts_dask.cli import run_command

    def func(_args):
        raise ImportError("numba-cuda 0.30.4 cannot compile CUDA kernels with NumPy 2.5.2 (...)")

    code = run_command(SimpleNamespace(func=func, command="transform"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["cdfts transform: error: numba-cuda 0.30.4 cannot compile CUDA kernels with "
                                 "NumPy 2.5.2 (...)"]  # fmt: skip


@pytest.mark.parametrize(
    "command,flags,message",
    [(command, flags, message) for command in ("transform", "apply") for flags, message in [
        (["--label", "-1", "--no-label"], "argument --no-label: not allowed with argument --label"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"],
         "argument --workers: not allowed with argument --scheduler")]],
)  # fmt: skip
def test_contradicting_options_are_refused(tmp_path, capsys, command, flags, message):
    """Regression: `apply --label -1 --no-label` passed the label through, and --workers beside
    --scheduler was dropped without a word (transform, apply)."""
    from cdfts_dask.cli import main

    paths = [str(DATA / "3L.csv"), str(tmp_path / "out.csv")]
    with pytest.raises(SystemExit) as exit_:
        main([command, *([str(tmp_path / "run.zarr")] if command == "apply" else []), *paths, *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and message in err[0]
    assert list(tmp_path.iterdir()) == []


def test_a_label_like_column_is_refused_unless_named(tmp_path, capsys):
    """`cdfts transform 4C.csv out.csv` would transform the `label` column as a feature: refused, naming
    the option that passes it through; --no-label transforms it on purpose."""
    from cdfts_dask.cli import main

    out = tmp_path / "out.csv"
    assert main(["transform", str(DATA / "4C.csv"), str(out)]) == 2 and not out.exists()
    assert capsys.readouterr().err.strip() == (
        "cdfts transform: error: input column 'label' looks like a label, not a feature: pass --label label "
        "to pass it through untouched, or --no-label to transform it as a feature"
    )
    for name in ["Class", "target", "y", "outlier"]:
        src, out = tmp_path / f"{name}.csv", tmp_path / f"{name}-out.csv"
        src.write_text(f"a,{name},b\n" + "".join(f"{i % 7},{i % 2},{i % 5}\n" for i in range(40)))
        assert main(["transform", str(src), str(out), "--quiet"]) == 2 and not out.exists()
        assert main(["transform", str(src), str(out), "--quiet", "--label", name]) == 0
        assert out.read_text().splitlines()[0] == f"a,b,{name}"
        assert main(["transform", str(src), str(out), "--quiet", "--no-label"]) == 0
        assert np.loadtxt(out, delimiter=",", skiprows=1).shape == (40, 3)  # all three columns transformed



def test_a_large_csv_with_a_label_like_column_is_refused_unless_named(tmp_path, capsys, monkeypatch, client):
    """The same rule for a CSV the workers read block by block: refused without --label / --no-label,
    every column transformed with --no-label, the label passed through with --label (found by the
    second mutation audit of the command line, 2026-12-07)."""
    from cdfts_dask import csv_blocks
    from cdfts_dask.cli import main

    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)  # every CSV read as a large one
    src, out = tmp_path / "c.csv", tmp_path / "c-out.csv"
    src.write_text("a,label,b\n" + "".join(f"{i % 7},{i % 2},{i % 5}\n" for i in range(40)))
    run = ["transform", str(src), str(out), "--quiet", "--max-iter", "1",
           "--scheduler", client.scheduler.address]  # fmt: skip
    assert main(run) == 2 and not out.exists()
    assert "input column 'label' looks like a label" in capsys.readouterr().err
    assert main([*run, "--no-label"]) == 0
    assert np.loadtxt(out, delimiter=",", skiprows=1).shape == (40, 3)  # all three columns transformed
    assert main([*run, "--label", "label"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "a,b,label"
    assert [line.rsplit(",", 1)[1] for line in lines[1:]] == [str(i % 2) for i in range(40)]

@pytest.mark.slow
def test_help_states_each_default_once():
    for command in ["transform", "plot", "evaluate", "bench"]:
        text = cdfts(command, "--help").stdout
        assert "(default: None)" not in text and "(default: False)" not in text
        for option in text.split("\n  -")[1:]:
            assert option.count("default") <= 1, option


@pytest.mark.parametrize(
    "argv,message",
    [
        (["transform", "IN", "OUT", "--wokers", "2"], "transform: error: unrecognized arguments: --wokers 2 "
         "(did you mean --workers?)"),
        (["transform", "IN", "OUT", "--chekpoint=a.zarr"], "--chekpoint=a.zarr (did you mean --checkpoint?)"),
        (["transform", "IN", "OUT", "extra", "--lamda", "0.2"], "extra --lamda 0.2 (did you mean --lambda?)"),
        (["transform", "IN", "OUT", "--zzz"], "cdfts transform: error: unrecognized arguments: --zzz (see"),
        (["transform", "IN", "OUT", "--version"], "(--version is an option of cdfts itself: cdfts --version"),
        # an option of the sub-command where it is not read: not "did you mean" the same option
        (["--quiet", "transform", "IN", "OUT"], "(--quiet is an option of cdfts transform: give it after "
         "'transform')"),
        (["--lam", "0.2", "transform", "IN", "OUT"], "arguments: --lam 0.2 (--lam is an option of cdfts "
         "transform: give it after 'transform')"),  # argparse took 0.2 for the sub-command
        (["-k5", "transform", "IN", "OUT"], "-k5 (-k is an option of cdfts transform: give it after"),
        # a mutation audit (2026-12-07): a two-character option was skipped ("name comes first")
        (["-k", "5", "transform", "IN", "OUT"], "-k 5 (-k is an option of cdfts transform: give it after "
         "'transform')"),
        (["--lamda=0.2", "transform", "IN", "OUT"], "(did you mean --lambda, after 'transform'?)"),
        # a word before the sub-command's name (stop 33 left it as "unrecognized arguments: IN" alone)
        (["IN", "transform", "OUT"], ".csv (the sub-command's name comes first: cdfts transform "),
        (["transform", "IN", "--", "OUT", "--lam", "0.2"], "--lam 0.2 (--lam came after '--', where every "
         "word is an argument: give it before '--')"),
        (["transform", "--quiet", "IN", "OUT", "--", "--quiet"], "--quiet (--quiet came after '--'"),
    ],
)  # fmt: skip
def test_an_unknown_option_is_named_by_its_sub_command_with_the_likely_one(tmp_path, capsys, argv, message):
    """Regression (a first-hour review): an unknown option was refused by the top-level parser, ``cdfts:
    error: unrecognized arguments`` and ``see cdfts --help``, which lists no option of the sub-command."""
    from cdfts_dask.cli import main

    paths = {"IN": str(DATA / "3L.csv"), "OUT": str(tmp_path / "out.csv")}
    with pytest.raises(SystemExit) as exit_:
        main([paths.get(a, a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and message in err[0], err
    assert err[0].endswith("(see cdfts transform --help)") and list(tmp_path.iterdir()) == []


def test_a_file_given_as_the_model_is_named_as_not_a_store(tmp_path, capsys):
    """``cdfts apply fit.csv new.csv out.csv`` (the CSV the model was fitted on, not its store)."""
    from cdfts_dask.cli import main

    out = tmp_path / "out.csv"
    assert main(["apply", str(DATA / "3L.csv"), str(DATA / "3L.csv"), str(out), "--label", "label"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cdfts apply: error: model: ") and not out.exists(), err
    assert err[0].endswith("is not a cdfts-dask run store: it is a file (a store is the .zarr folder that a "
                           "completed run was given as --checkpoint / checkpoint=)")  # fmt: skip


def test_long_lists_of_column_names_are_cut_short_in_messages(tmp_path, capsys):
    """A misread file can hold thousands of "columns": a message naming them is one readable line (the
    label column not found, the model's columns not the input's)."""
    from cdfts_dask.cli import main

    def table(path, prefix, ncols, nrows=20):
        rows = [",".join(f"{(i * 7 + j) % 11}.5" for j in range(ncols)) for i in range(nrows)]
        path.write_text(",".join(f"{prefix}{j}" for j in range(ncols)) + "\n" + "\n".join(rows) + "\n")
        return str(path)

    wide = table(tmp_path / "wide.csv", "feature_", 500, 2)
    assert main(["transform", wide, str(tmp_path / "o.csv"), "--label", "lbl"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("cdfts transform: error: label column 'lbl' not found in input (columns: ['feature_0', "
                   + "".join(f"'feature_{j}', " for j in range(1, 12)) + "...] (500 in all))"), err
    store = str(tmp_path / "m.zarr")
    fit, new = table(tmp_path / "fit.csv", "a", 30), table(tmp_path / "new.csv", "b", 30)
    assert main(["transform", fit, str(tmp_path / "f.csv"), "--checkpoint", store, "--max-iter", "1"]) == 0
    capsys.readouterr()
    assert main(["apply", store, new, str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cdfts apply: error: input has the columns ['b0', 'b1', ") and len(err) < 400, err
    assert "'b11', ...] (30 in all), but the model was fitted on ['a0', " in err
    assert err.endswith("'a11', ...] (30 in all) (same names in the same order; name 1 is 'b0', fitted "
                        "'a0')"), err
    # lists that differ past the names shown look alike: the first difference is named
    last = table(tmp_path / "last.csv", "a", 30)
    (tmp_path / "last.csv").write_text((tmp_path / "last.csv").read_text().replace("a29", "zz", 1))
    assert main(["apply", store, last, str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("(same names in the same order; name 30 is 'zz', fitted 'a29')"), err


def test_the_help_shows_list_defaults_as_they_are_typed_and_an_example(capsys):
    from cdfts_dask.cli import main

    for command in ("bench", "transform"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())  # the help's line breaks undone
        if command == "bench":
            assert "(default: 1000,7200)" in text and "worker counts, e.g. 1,2 (default: 2)" in text
        else:  # the example is the README's quick start, which the README's own tests keep true
            example = text.split("example: ")[1]
            assert example in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", ["cls", "my label", "-x"])
def test_the_label_hint_of_a_text_column_is_an_option_that_works(tmp_path, capsys, name):
    """Regression (a review of the hint): it printed the name raw, ``--label my label`` (two words) and
    ``--label -x`` (refused by argparse as a missing value); now ``--label=NAME``, shell-quoted."""
    import re
    import shlex

    from cdfts_dask.cli import main

    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(f"a,{name}\n" + "".join(f"{i}.5,{'pq'[i % 2]}\n" for i in range(20)))
    assert main(["transform", str(src), str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    hint = re.search(r"set it aside, with (--label=.*) on the command line\)$", err)
    assert hint, err
    assert main(["transform", str(src), str(out), "--quiet", *shlex.split(hint.group(1))]) == 0
    assert out.read_text().splitlines()[0] == f"a,{name}"  # the label passed through, last


@pytest.mark.parametrize(
    "header,flags",
    [("a,2", []), ("a,b,b", []), ("lab,a,b", ["--label", "lab"]), ("name", []), ('a,"my\nname"', [])],
    ids=["a-number-is-an-index", "a-repeated-name", "a-label-already-set-aside", "the-only-column",
         "a-name-of-two-lines"],
)  # fmt: skip
def test_no_label_hint_where_one_option_would_not_set_the_column_aside(tmp_path, capsys, header, flags):
    """Regression (a review of the hint): ``--label=name`` for a one-column file (leaving zero columns),
    and a name holding a line break made the one-line error two lines."""
    from cdfts_dask.cli import main

    src = tmp_path / "in.csv"
    ncols = header.replace('"my\nname"', "n").count(",") + 1
    src.write_text(header + "\n" + "".join(",".join(["1.5"] * (ncols - 1) + ["x"]) + "\n" for _ in range(5)))
    assert main(["transform", str(src), str(tmp_path / "out.csv"), "--quiet", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert f"non-numeric value 'x' at row 1, column {ncols} of " in err and "set it aside" not in err, err
    assert len(err.splitlines()) == 1


def test_a_semicolon_in_a_label_cell_of_a_comma_separated_file_is_no_separator(tmp_path, capsys):
    """Regression (a review of the hint): "setosa; wild" under ``species`` was said to mean a file of
    other separators; the ``;`` note is for a file whose header holds one too."""
    from cdfts_dask.cli import main

    src = tmp_path / "in.csv"
    src.write_text("species,a,b\n" + "".join(f"setosa; wild,{i}.5,{i}.25\n" for i in range(10)))
    assert main(["transform", str(src), str(tmp_path / "o.csv"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().endswith("(if 'species' is a label, not a feature: set it aside, "
                                                    "with --label=species on the command line)")  # fmt: skip
    assert main(["transform", str(src), str(tmp_path / "o.csv"), "--quiet", "--label=species"]) == 0


def test_a_folder_input_and_a_file_as_plot_folder_say_what_they_are(tmp_path, capsys):
    """Regression (a new-user audit, 2026-11-29): a folder named ``dir.csv`` given as the input was
    "cannot open ... as Zarr: No group found ..." with no word of why a CSV name was read as Zarr; ``cdfts
    plot --out FILE`` was ``[Errno 17] File exists: 'FILE'``."""
    from cdfts_dask.cli import main

    (tmp_path / "dir.csv").mkdir()
    assert main(["transform", str(tmp_path / "dir.csv"), str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dir.csv' as Zarr (a folder is read as a Zarr array): " in err[0], err
    (tmp_path / "figures").write_text("not a folder")
    assert main(["plot", str(DATA / "3L.csv"), "--out", str(tmp_path / "figures")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    said = f"--out {str(tmp_path / 'figures')!r} is a file: it names the folder the figures go to"
    assert err == [f"cdfts plot: error: {said}"]
    assert (tmp_path / "figures").read_text() == "not a folder"


def test_a_csv_output_ends_its_lines_as_the_shell_does_unless_a_cell_holds_a_carriage_return(tmp_path):
    """Regression (found by a storage audit, 2026-11-29): CSV outputs ended every line with ``\\r\\n``
    (the csv module's default) on Linux, so ``cut -d, -f3`` gave ``1\\r``.  Lines now end with ``\\n``,
    as NumPy and pandas write; a label holding a carriage return (quoted in the input) keeps ``\\r\\n``,
    which makes the csv module quote it, and reads back intact."""
    import csv

    from cdfts_dask.cli import main

    rows = "".join(f"{i}.5,{i % 3}.25,{label}\n" for i, label in enumerate(["a", '"b\rc"', "d"] * 4))
    for name, labels in (("plain", "a,e,d"), ("cr", 'a,"b\rc",d')):
        src = tmp_path / f"{name}.csv"
        src.write_text("x,y,cls\n" + rows.replace('"b\rc"', "e" if name == "plain" else '"b\rc"'),
                       newline="")  # fmt: skip
        out = tmp_path / f"{name}_out.csv"
        assert main(["transform", str(src), str(out), "--label", "cls", "--quiet", "--max-iter", "1"]) == 0
        text = out.read_bytes().decode()
        with open(out, newline="") as fh:
            read = [row[-1] for row in csv.reader(fh)][1:]
        assert read == labels.replace('"', "").split(",") * 4
        if name == "plain":
            assert "\r" not in text and text.count("\n") == 13
        else:
            assert text.count("\r\n") == 13 and text.startswith("x,y,cls\r\n")


def test_a_zarr_folder_named_npy_is_read_as_zarr_by_every_method_and_a_zarr_array_is_no_model(tmp_path,
                                                                                              capsys):
    """Regression (found by a storage audit, 2026-11-29): a Zarr array folder named ``zdir.npy`` was read
    by the workers (``--method auto`` / tiled: a folder is a Zarr array) but refused by ``--method dense``
    (``cannot read ... as .npy: [Errno 21] Is a directory``); a Zarr array given as MODEL said Zarr's
    ``An array already exists in store file://v3.zarr at path .``."""
    from cdfts_dask.cli import main

    X = np.random.default_rng(0).random((100, 2))
    for name in ("zdir.npy", "v3.zarr"):
        zarr.create_array(str(tmp_path / name), shape=X.shape, dtype="f8", chunks=(50, 2))[...] = X
    expected = cdf_ts_dense(X, 0.1, 0.015, max_iter=1).X
    for method in ("dense", "auto"):
        out = tmp_path / f"{method}.npy"
        argv = ["transform", str(tmp_path / "zdir.npy"), str(out), "--method", method, "--max-iter", "1"]
        assert main([*argv, "--quiet"]) == 0, capsys.readouterr().err
        assert np.abs(np.load(out) - expected).max() <= 1e-12
    assert main(["apply", *(str(tmp_path / name) for name in ("v3.zarr", "dense.npy", "o.npy"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cdfts apply: error: model: {str(tmp_path / 'v3.zarr')!r} is not a cdfts-dask run store: "
                   "it is a Zarr array (points?); a store is the folder a completed run was given as "
                   "--checkpoint / checkpoint="]  # fmt: skip


QUIET_SCRIPT = """
import logging
from cdfts_dask.cli.options import dask_quiet
with dask_quiet():
    import distributed  # as a run imports it: inside the block
    logging.getLogger("distributed.client").error("client inside")
    logging.getLogger("distributed.core").error("core inside")
logging.getLogger("distributed.client").error("client after")
"""


def test_dask_quiet_drops_dasks_records_also_of_loggers_with_their_own_level():
    """Regression: a run whose scheduler was killed printed ``distributed.client - ERROR - Failed to
    reconnect to scheduler after 30.00 seconds`` before the CLI's one-line error: Dask's logging
    configuration gives ``distributed.client`` a level and handler of its own, which the level set on
    ``distributed`` does not reach (and Dask sets it when imported, so inside the block too).  Dask's
    records return after the block."""
    res = subprocess.run([sys.executable, "-c", QUIET_SCRIPT], capture_output=True, text=True, env=cli_env())
    assert res.returncode == 0, res.stderr
    assert "inside" not in res.stderr and "client after" in res.stderr, res.stderr


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
@pytest.mark.parametrize("label", [0, 1, -1, "-3"])
def test_the_label_column_of_an_array_file_is_the_one_named_and_only_it_is_set_aside(tmp_path, suffix, label):
    """Found by a mutation audit (2026-12-06): a .npy / Zarr input's label column, given by index
    (negative from the end), is taken out of the points, and the other columns are kept in order."""
    from cdfts_dask.inputs import read_table

    table = np.arange(15.0).reshape(5, 3) + 0.5
    path = tmp_path / f"in{suffix}"
    if suffix == ".npy":
        np.save(path, table)
    else:
        zarr.create_array(str(path), shape=table.shape, dtype=table.dtype)[...] = table
    X, labels, header = read_table(path, label_column=label)
    col = int(label) % 3
    np.testing.assert_array_equal(labels, table[:, col])
    np.testing.assert_array_equal(X, table[:, [j for j in range(3) if j != col]])
    assert header is None


def test_transform_runs_with_the_lam_delta_and_max_iter_given(tmp_path):
    """The run's options reach the run: the output is the oracle's with the same parameters (mutation
    audit: ``--max-iter`` dropped on its way to ``cdf_ts`` went unnoticed)."""
    from cdfts_dask.cli import main

    X = np.random.default_rng(5).random((40, 2))
    np.save(tmp_path / "in.npy", X)
    assert main(["transform", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--lam", "0.2",
                 "--delta", "1e-9", "--max-iter", "2", "--quiet"]) == 0  # fmt: skip
    ref = cdf_ts_dense(X, lam=0.2, delta=1e-9, max_iter=2)
    assert len(ref.deltas) == 2  # stopped by --max-iter, not by --delta
    assert np.abs(np.load(tmp_path / "out.npy") - ref.X).max() <= 1e-12


def test_transform_runs_the_engine_with_the_dtype_and_tile_size_given(tmp_path, client):
    """``--dtype float32`` gives float32 positions within ~1e-5 of the oracle's, and a smaller
    ``--tile-size`` more panel tasks (mutation audit: both dropped on their way to ``cdf_ts``)."""
    from distributed import get_task_stream

    from cdfts_dask.cli import main

    X = np.random.default_rng(6).random((60, 2))
    np.save(tmp_path / "in.npy", X)
    ref = cdf_ts_dense(X, max_iter=2).X
    address, tasks = client.scheduler.address, {}
    for tile in ("8", "60"):
        out = tmp_path / f"out{tile}.npy"
        with get_task_stream(client) as stream:
            argv = ["transform", str(tmp_path / "in.npy"), str(out), "--scheduler", address,
                    "--tile-size", tile, "--dtype", "float32", "--max-iter", "2", "--quiet"]  # fmt: skip
            assert main(argv) == 0
        tasks[tile] = len(stream.data)
        Y = np.load(out)
        assert Y.dtype == np.float32 and np.abs(Y - ref).max() <= 1e-5
    assert tasks["8"] > tasks["60"]
    # a CSV output holds the float32 positions exactly, as float64 reads them (found by a mutation audit
    # of the outputs: written as NumPy's shortest float32 text, 0.1 for 0.10000000149011612, they read back
    # half a float32 unit off)
    argv = ["transform", str(tmp_path / "in.npy"), str(tmp_path / "out.csv"), "--scheduler", address,
            "--tile-size", "60", "--dtype", "float32", "--max-iter", "2", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    written = np.loadtxt(tmp_path / "out.csv", delimiter=",", skiprows=1)
    assert np.array_equal(written, np.load(tmp_path / "out60.npy").astype(np.float64))


def test_transform_starts_as_many_workers_as_asked(tmp_path, capsys):
    """``--workers 1``: the embedded cluster has one worker, as the start line says."""
    import re

    from cdfts_dask.cli import main

    np.save(tmp_path / "in.npy", np.random.default_rng(7).random((30, 2)))
    assert main(["transform", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--workers", "1",
                 "--max-iter", "1"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert re.search(r"tiled engine, cpu float64, 1 worker\b(?!s)", err), err


def test_every_option_an_error_is_renamed_to_is_the_option_of_that_argument():
    """``--max-iter must be >= 1``: each name of ``OPTION_OF`` is an option (or argument) of ``cdfts
    transform`` that sets the ``cdf_ts`` argument it stands for (the error tests build their expected
    text from ``OPTION_OF`` itself, so a misspelt entry passed them)."""
    from cdfts_dask.cli import build_parser
    from cdfts_dask.cli.transform import OPTION_OF

    parser = build_parser()
    commands = next(a for a in parser._actions if a.choices and "transform" in a.choices)
    transform = commands.choices["transform"]
    dest_of = {name: a.dest for a in transform._actions for name in (a.option_strings or [a.dest])}
    renamed = {"n_references": "references", "X": "input"}  # the command line's own words
    for argument, option in OPTION_OF.items():
        assert dest_of.get(option) == renamed.get(argument, argument), (argument, option)


def test_transform_draws_a_bar_of_the_engines_tasks_on_a_terminal_only(tmp_path, capsys, monkeypatch, client):
    """On a terminal (and not ``--quiet``) the tiled engine's tasks are shown as a progress bar per
    iteration, as ``cdf_ts(progress=True)`` draws it; not when stderr is a file (mutation audit: the
    command line's ``progress`` dropped went unnoticed)."""
    from cdfts_dask.cli import main

    np.save(tmp_path / "in.npy", np.random.default_rng(8).random((40, 2)))
    argv = ["transform", str(tmp_path / "in.npy"), str(tmp_path / "out.npy"), "--scheduler",
            client.scheduler.address, "--max-iter", "1"]  # fmt: skip
    assert main(argv) == 0
    assert "task" not in capsys.readouterr().err  # stderr is no terminal here
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert main(argv) == 0
    assert "task" in capsys.readouterr().err  # tqdm's bar of the iteration's tasks


def test_apply_starts_as_many_workers_as_asked(tmp_path, capsys):
    """``cdfts apply --workers 1`` on a Zarr input: the model is replayed on an embedded cluster of one
    worker, as its start line says (mutation audit: ``--workers`` dropped went unnoticed)."""
    import re

    from cdfts_dask.cli import main

    X = np.random.default_rng(9).random((40, 2))
    np.save(tmp_path / "fit.npy", X)
    zarr.create_array(str(tmp_path / "in.zarr"), shape=X.shape, dtype=X.dtype)[...] = X
    assert main(["transform", str(tmp_path / "fit.npy"), str(tmp_path / "fit_out.npy"), "--checkpoint",
                 str(tmp_path / "m.zarr"), "--max-iter", "1", "--quiet"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["apply", str(tmp_path / "m.zarr"), str(tmp_path / "in.zarr"), str(tmp_path / "out.npy"),
                 "--workers", "1"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert re.search(r"model transform of 40 points: cpu, 1 worker\b(?!s)", err), err
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), np.load(tmp_path / "fit_out.npy"), rtol=0,
                               atol=1e-12)  # fmt: skip
