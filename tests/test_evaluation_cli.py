"""``cdfts evaluate`` and ``cdfts plot`` end to end."""

import hashlib
import json
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
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
    out.mkdir()
    # Regression: tables of an earlier run into the same --out stayed beside the new ones (here: an
    # anomaly table and a train/test table this run does not write), describing other records
    for stale in ("anomaly.md", "clustering_traintest.md"):
        (out / stale).write_text("| an earlier run's table |\n")
    args = ["evaluate", "--data", DATA / "3L.csv", "--max-n", "50", "--eps-step", "0.1",
            "--scheduler", client.scheduler.address, "--out", out]  # fmt: skip
    assert _main(capsys, *args, "--quiet") == (0, "")
    written = {"clustering.md", "results.csv", "parameters.json", "targets.md", "records.json",
               "records.jsonl", "runtime.txt", "settings.json"}  # fmt: skip
    assert {p.name for p in out.iterdir()} == written
    full = (out / "results.csv").read_text()
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 16 * 4  # 16 tasks (original + 3 views x 5 lambdas) x 4 algorithms
    (out / "records.jsonl").write_text("\n".join(lines[:-6]) + "\n")  # the last task and half of another
    code, err = _main(capsys, *args, "--resume")
    assert code == 0 and "2 tasks (14 resumed)" in err
    assert (out / "results.csv").read_text() == full
    # Regression: a run killed while appending leaves its last line cut short, and --resume refused the
    # whole file ("line 64 is not JSON; cannot resume"); that task is now run again
    (out / "records.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    code, err = _main(capsys, *args, "--resume")
    assert code == 0 and "line 64 was cut short (a killed run)" in err and "1 tasks (15 resumed)" in err, err
    assert (out / "results.csv").read_text() == full
    assert {p.name for p in out.iterdir()} == written
    assert json.loads((out / "settings.json").read_text())["max_n"] == 50
    # Regression: a resume with other options kept the first run's records beside new ones (n = 302 and
    # n = 100 in one table, exit 0); refused, by settings.json (the eps steps, --train-test) and record by
    # record (n, so --max-n), also without settings.json
    code, err = _main(capsys, *args, "--eps-step", "0.2", "--resume", "--quiet")
    assert code == 2 and "--resume: the records in" in err and "eps_step 0.1 there, 0.2 now" in err, err
    code, err = _main(capsys, *args, "--max-n", "60", "--resume", "--quiet")
    assert code == 2 and "made on n = 50 without --train-test, this run asks for n = 60" in err, err
    (out / "settings.json").unlink()  # an output written before settings.json existed
    code, err = _main(capsys, *args, "--max-n", "60", "--resume", "--quiet")
    assert code == 2 and "made on n = 50 without --train-test, this run asks for n = 60" in err, err
    code, err = _main(capsys, *args, "--max-n", "100", "--train-test", "--resume", "--quiet")
    assert code == 2 and "this run asks for n = 100 with --train-test" in err, err
    # the same n: a record's test score tells whether it was made with --train-test (the evaluation's
    # second mutation audit, 2026-12-07)
    tt_lines = [json.dumps({**json.loads(line), "test_score": 0.5}) for line in lines]
    (out / "records.jsonl").write_text("\n".join(tt_lines) + "\n")
    code, err = _main(capsys, *args, "--resume", "--quiet")
    assert code == 2 and "made on n = 50 with --train-test, this run asks for n = 50 without" in err, err
    (out / "records.jsonl").write_text("\n".join(lines) + "\n")
    assert (out / "results.csv").read_text() == full
    for text in (lines[0] + "\n{not json\n", "{not json\n" + lines[0]):  # a bad line that is not a torn end
        (out / "records.jsonl").write_text(text)
        code, err = _main(capsys, *args, "--resume")
        err_lines = err.strip().splitlines()
        assert code == 2 and len(err_lines) == 1 and "is not JSON" in err_lines[0], err


def _small_table(path, rows: int = 55) -> list:
    """``rows`` points of 3L spread over its three classes (every 10th; 3L lists them class by class),
    with two label columns, ``label`` and ``other``; ``--data path``."""
    lines = (DATA / "3L.csv").read_text().splitlines()
    body = [f"{line},{i % 3}" for i, line in enumerate(lines[1::10][:rows])]
    path.write_text("\n".join([lines[0] + ",other", *body]) + "\n")
    return ["--data", path]


def test_evaluate_resume_refuses_records_of_another_label_or_file(tmp_path, client, capsys):
    """Regression: ``--resume`` kept the records of a dataset made from another ``--label`` column or
    another file of the same name (a table mixing the two, exit 0); and refused a resume whose records
    would not change: ``--max-n 70`` where every dataset has fewer rows (``max_n 60 there, 70 now``),
    ``--dbscan-eps-step`` equal to ``--eps-step``.  ``settings.json`` now holds each dataset's label and
    SHA-256; the run-wide check compares the effective DBSCAN step, and n is checked record by record."""
    out = tmp_path / "res"
    x = _small_table(tmp_path / "x.csv")
    args = ["evaluate", *x, "--max-n", "60", "--eps-step", "0.25", "--scheduler", client.scheduler.address,
            "--out", out]  # fmt: skip
    assert _main(capsys, *args, "--quiet") == (0, "")
    settings = json.loads((out / "settings.json").read_text())
    digest = hashlib.sha256((tmp_path / "x.csv").read_bytes()).hexdigest()
    assert settings["datasets"] == {"clustering/x": {"label": "label", "sha256": digest}}
    full = (out / "results.csv").read_text()
    for same in (["--max-n", "70"], ["--dbscan-eps-step", "0.25"]):  # nothing a record depends on differs
        code, err = _main(capsys, *args, *same, "--resume")
        assert code == 0 and "0 tasks (16 resumed)" in err, err
    assert (out / "results.csv").read_text() == full
    code, err = _main(capsys, *args, "--label", "other", "--resume", "--quiet")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "--resume: the records of dataset 'clustering/x' in" in lines[0]
    assert "made from other data (--label 'label' there, 'other' now)" in lines[0]
    kept = (tmp_path / "x.csv").read_bytes()
    (tmp_path / "x.csv").write_bytes(kept.replace(b"0.2", b"0.3", 1))  # another file of the same name
    code, err = _main(capsys, *args, "--resume", "--quiet")
    assert code == 2 and f"(file SHA-256 {digest[:12]}... there, " in err, err
    assert (out / "results.csv").read_text() == full
    # a dataset new to the run is fine; an older settings.json (no per-dataset entries, as the published
    # docs/results/settings.json had before 2026-11-29) is accepted as before
    (tmp_path / "x.csv").write_bytes(kept)
    y = _small_table(tmp_path / "y.csv", rows=52)
    code, err = _main(capsys, *args, *y, "--resume")
    assert code == 0 and "16 tasks (16 resumed)" in err, err
    entries = json.loads((out / "settings.json").read_text())["datasets"]
    assert set(entries) == {"clustering/x", "clustering/y"}
    published = json.loads((ROOT / "docs" / "results" / "settings.json").read_text())
    older = {key: value for key, value in published.items() if key != "datasets"}
    (out / "settings.json").write_text(json.dumps({**older, "eps_step": 0.25}))
    code, err = _main(capsys, *args, *y, "--resume")
    assert code == 0 and "0 tasks (32 resumed)" in err, err
    # every dataset's records are checked, not the first's only (the evaluation's second mutation audit)
    for name in ("y.csv", "x.csv"):
        kept = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(kept[:-2] + b"2\n")  # the last row's other label
        code, err = _main(capsys, *args, *y, "--resume", "--quiet")
        assert code == 2 and f"the records of dataset 'clustering/{name[0]}'" in err, err
        (tmp_path / name).write_bytes(kept)


def test_a_directory_datasets_digest_covers_each_file_and_its_name(tmp_path):
    """A ``.zarr`` input (a directory) is hashed file by file in sorted order, names included: equal stores
    have equal digests wherever they lie; a changed chunk or a renamed file changes it."""
    from cdfts_dask.cli.evaluate import file_sha256

    for root in (tmp_path / "a.zarr", tmp_path / "b" / "a.zarr"):
        (root / "0").mkdir(parents=True)
        (root / "zarr.json").write_text('{"shape": [2, 2]}')
        (root / "0" / "0").write_bytes(b"\x00\x01")
    first = file_sha256(tmp_path / "a.zarr")
    assert first == file_sha256(tmp_path / "b" / "a.zarr") and len(first) == 64
    (tmp_path / "b" / "a.zarr" / "0" / "0").write_bytes(b"\x00\x02")
    assert file_sha256(tmp_path / "b" / "a.zarr") != first
    (tmp_path / "a.zarr" / "0" / "0").rename(tmp_path / "a.zarr" / "0" / "1")
    assert file_sha256(tmp_path / "a.zarr") != first


def test_evaluate_resume_with_only_keeps_the_other_datasets_records(tmp_path, client, capsys):
    """Regression: ``--resume --only x`` rewrote records.jsonl with x's records alone: the other dataset's
    finished records were deleted.  They now stay, byte for byte (out of this run's tables); only x's
    incomplete task runs again, and a later resume of both runs nothing."""
    out = tmp_path / "res"
    data = [*_small_table(tmp_path / "x.csv"), *_small_table(tmp_path / "y.csv", rows=52)]
    args = ["evaluate", *data, "--eps-step", "0.25", "--scheduler", client.scheduler.address, "--out", out]
    assert _main(capsys, *args, "--quiet") == (0, "")
    full = (out / "results.csv").read_text()
    lines = (out / "records.jsonl").read_text().splitlines(keepends=True)
    y_lines = [line for line in lines if '"dataset": "y"' in line]
    assert len(lines) == 2 * 16 * 4 and len(y_lines) == 16 * 4
    x_lines = [line for line in lines if line not in y_lines]
    (out / "records.jsonl").write_text("".join(x_lines[:-2] + y_lines))  # half of an x task lost
    code, err = _main(capsys, *args, "--only", "x", "--resume")
    assert code == 0 and "1 tasks (15 resumed)" in err, err
    after = (out / "records.jsonl").read_text().splitlines(keepends=True)
    assert [line for line in after if '"dataset": "y"' in line] == y_lines
    assert len(after) == len(lines)
    assert {r["dataset"] for r in json.loads((out / "records.json").read_text())} == {"x"}
    # y's entry stays too: a later resume checks y's kept records against its label and file
    entries = json.loads((out / "settings.json").read_text())["datasets"]
    assert set(entries) == {"clustering/x", "clustering/y"}
    code, err = _main(capsys, *args, "--resume")
    assert code == 0 and "0 tasks (32 resumed)" in err, err
    assert (out / "results.csv").read_text() == full


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


def test_evaluate_refuses_inputs_it_would_merge_misread_or_overwrite(tmp_path, capsys):
    """Regressions, each exit 0 before: two --data files of one name were merged into one row (each cell the
    better of the two); --data OUT/results.csv was overwritten by the results; --task anomaly with the
    labels 1 = anomaly, 2 = normal scored every detector upside down (LOF 0.31 for 0.75); --only with a
    typo dropped the name silently, and an empty one selected every dataset; an --out that is a file.
    All one line, before any work."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(DATA / "3L.csv", tmp_path / "a" / "x.csv")
    shutil.copy(DATA / "4C.csv", tmp_path / "b" / "x.csv")
    out = tmp_path / "res"
    out.mkdir()
    shutil.copy(DATA / "3L.csv", out / "results.csv")
    before = (out / "results.csv").read_bytes()
    rows = ["f1,f2,label"] + [f"{i % 7},{i % 5},{1 + (i % 9 == 0)}" for i in range(60)]
    (tmp_path / "one_two.csv").write_text("\n".join(rows) + "\n")
    cases = [
        (["--data", tmp_path / "a" / "x.csv", "--data", tmp_path / "b" / "x.csv"],
         "two clustering datasets are named 'x'"),
        (["--data", out / "results.csv"], "would be overwritten by the results written to --out"),
        (["--data", tmp_path / "one_two.csv", "--task", "anomaly"],
         "--task anomaly: the labels of .* must be 0 \\(normal\\) and 1 \\(anomaly\\), got \\['1', '2'\\]"),
        (["--data", tmp_path / "a" / "x.csv", "--only", "x,typo"], "--only: no dataset named 'typo'"),
        (["--data", tmp_path / "a" / "x.csv", "--only", ""],  # ran every dataset (an audit, 2026-12-06)
         "--only: give one or more dataset names \\(comma-separated\\), got ''"),
        (["--data", tmp_path / "a" / "x.csv", "--max-n", "0"], "--max-n must be at least 2, got 0"),
        # Regression: a grid of 1/step values was built first (1e-9: 8 GB, then 10^9 eps per search)
        (["--data", tmp_path / "a" / "x.csv", "--eps-step", "1e-9"],
         r"--eps-step must be in \[1e-05, 0.5\] \(a grid of at most 100000 values\), got 1e-09"),
        (["--data", tmp_path / "a" / "x.csv", "--dbscan-eps-step", "0"], r"--dbscan-eps-step must be in \["),
        (["--data", tmp_path / "a" / "x.csv", "--eps-step", "0.75"], r"--eps-step must be in \[1e-05, 0.5\]"),
        (["--data", tmp_path / "a" / "x.csv", "--workers", "0"], r"--workers must be >= 1, got 0"),
    ]  # fmt: skip
    for flags, message in cases:
        code, err = _main(capsys, "evaluate", *flags, "--out", out, "--quiet")
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), lines
    assert (out / "results.csv").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["results.csv"]
    # an --out that is a file: a bare "[Errno 17] File exists" once the cluster was up (the same audit)
    code, err = _main(capsys, "evaluate", "--data", tmp_path / "a" / "x.csv", "--out", out / "results.csv")
    assert code == 2 and f"--out: {str(out / 'results.csv')!r} is a file; give a folder" in err, err
    assert (out / "results.csv").read_bytes() == before
    # an --out that is a folder --datasets reads: its results.csv was a dataset of the next run there
    root = tmp_path / "collection"
    (root / "clustering").mkdir(parents=True)
    (root / "clustering" / "x.csv").write_bytes((tmp_path / "a" / "x.csv").read_bytes())
    for sub in ("clustering", "anomaly", "synthetic"):
        code, err = _main(capsys, "evaluate", "--datasets", root, "--out", root / sub / ".", "--quiet")
        said = f"--out: {str(root / sub)!r} is a folder --datasets {str(root)!r} reads its datasets from"
        assert code == 2 and err.strip().splitlines() == [err.strip()] and said in err, err
    assert sorted(p.name for p in root.rglob("*")) == ["clustering", "x.csv"]


def test_evaluate_refuses_an_anomaly_sample_of_one_class_before_any_work(tmp_path, capsys):
    """Regression: anomaly labels all 0, a stratified --max-n-anomaly sample without an anomaly, and a
    --train-test half without one each wrote a table of nan (AUC of one class), exit 0.  Now one line
    naming the dataset, the counts and the option, before any work (the sample is the tasks' own)."""

    def table(name, anomalous):
        rows = ["f1,f2,label"] + [f"{i % 7},{(i * 3) % 11},{int(i in anomalous)}" for i in range(60)]
        (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
        return ["--data", tmp_path / f"{name}.csv"]

    none, four, one = table("none", ()), table("four", (3, 17, 31, 45)), table("one", (3,))
    every = table("every", range(60))
    cases = [
        (none, [], "anomaly dataset 'none': AUC needs normal points and anomalies, and its labels "
         "(--label 'label') mark 60 normal and 0 anomalous points"),
        (every, [], "anomaly dataset 'every': AUC needs normal points and anomalies, and its labels "
         "(--label 'label') mark 0 normal and 60 anomalous points"),  # labels 1 stay anomalies
        (four, ["--max-n-anomaly", "3"], "anomaly dataset 'four': AUC needs normal points and anomalies, and "
         "the 3 points --max-n-anomaly 3 keeps of its 60 (56 normal and 4 anomalous) are 3 normal and 0 "
         "anomalous: raise --max-n-anomaly"),
        (four, ["--max-n-anomaly", "20", "--train-test"], "under --train-test the train half of the 20 "
         "points --max-n-anomaly 20 keeps of its 60 holds 10 normal and 0 anomalous points: run without "
         "--train-test or raise --max-n-anomaly"),
        (one, ["--max-n-anomaly", "30"], "a stratified sample of the 30 points --max-n-anomaly 30 keeps of "
         "its 60 (59 normal and 1 anomalous) needs 2 points of each; raise --max-n-anomaly to 60"),
        (one, ["--train-test"], "the test half of its 60 points holds 30 normal and 0 anomalous points: run "
         "without --train-test"),
    ]  # fmt: skip
    out = tmp_path / "res"
    for data, flags, message in cases:
        code, err = _main(capsys, "evaluate", *data, "--task", "anomaly", *flags, "--out", out, "--quiet")
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and message in lines[0], lines
    assert not out.exists()
    from cdfts_dask.cli import build_parser
    from cdfts_dask.cli.evaluate import build_tasks

    # one anomaly is enough when no sample or half has to hold it twice
    args = build_parser().parse_args(["evaluate", *map(str, one), "--task", "anomaly", "--out", str(out)])
    assert {t.spec.name for t in build_tasks(args)} == {"one"}


def test_evaluate_refuses_clustering_labels_that_are_missing_or_all_one_class(tmp_path, capsys):
    """Found by an evaluation audit (2026-12-06): a missing label (an empty cell; NA or nan among numbers;
    a NaN) was numbered as a class of its own (wine with one label blanked: DP 0.92 -> 0.79, LGD 0.96 ->
    0.71, exit 0), and labels all of one class gave 1.00 in every cell.  Both refused before any work, in
    one line; ``cdfts plot`` refuses the missing label too (it reads labels the same way)."""
    rows = [f"{i % 7},{(i * 3) % 11},{i % 2}" for i in range(60)]
    for name, cell in (("empty", ""), ("na", "NA"), ("nan", "nan")):
        bad = rows[:4] + [rows[4].rsplit(",", 1)[0] + f",{cell}"] + rows[5:]
        (tmp_path / f"{name}.csv").write_text("\n".join(["f1,f2,label", *bad]) + "\n")
    (tmp_path / "one.csv").write_text("\n".join(["f1,f2,label", *(r[:-1] + "3" for r in rows)]) + "\n")
    cases = {
        "empty": "empty.csv: missing label '' at data row 5 (label column 'label'; 1 missing in all): every "
                 "point of a labelled dataset needs its class",
        "na": "na.csv: missing label 'NA' at data row 5",
        "nan": "nan.csv: missing label 'nan' at data row 5",
        "one": "clustering dataset 'one': its labels (--label 'label') are all one class; the best F-measure "
               "needs two or more",
    }  # fmt: skip
    out = tmp_path / "res"
    for name, message in cases.items():
        code, err = _main(capsys, "evaluate", "--data", tmp_path / f"{name}.csv", "--out", out, "--quiet")
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and message in lines[0], lines
    assert not out.exists()
    code, err = _main(capsys, "plot", tmp_path / "na.csv", "--out", tmp_path / "p")
    assert code == 2 and "na.csv: missing label 'NA' at data row 5" in err, err
    np.save(tmp_path / "t.npy", np.array([[0.0, 0.0], [1.0, np.nan], [2.0, 1.0]]))
    from cdfts_dask.evaluation.datasets import load_labelled

    with pytest.raises(ValueError, match=r"t\.npy: missing label nan at row 1 \(label column -1; 1 missing"):
        load_labelled(tmp_path / "t.npy", -1)
    # class names are classes whatever they say (a review: 'none' of contact-lenses was refused)
    names = ["none", "soft", "hard", "NA", "?", "null"]
    (tmp_path / "names.csv").write_text("".join(["f,label\n", *(f"{i},{names[i % 6]}\n" for i in range(60))]))
    numbered = [3, 5, 2, 1, 0, 4]  # by sorted name: ?, NA, hard, none, null, soft
    assert np.array_equal(load_labelled(tmp_path / "names.csv")[1], [numbered[i % 6] for i in range(60)])


def test_evaluate_reads_a_relative_data_path_from_the_callers_cwd(tmp_path, client, capsys, monkeypatch):
    """Regression: a relative --data path was opened again by each worker in its own working directory,
    so a worker started elsewhere read another file of that name (or none); the path is now absolute."""
    shutil.copy(DATA / "3L.csv", tmp_path / "x.csv")
    monkeypatch.chdir(tmp_path)  # the session's workers stay in the directory they started in
    out = tmp_path / "res"
    args = ["evaluate", "--data", "x.csv", "--max-n", "50", "--eps-step", "0.25", "--only", "x",
            "--scheduler", client.scheduler.address, "--out", out, "--quiet"]  # fmt: skip
    assert _main(capsys, *args) == (0, "")
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 16 * 4 and {(r["dataset"], r["n"]) for r in records} == {("x", 50)}


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--eps", "0"], "--eps must be a positive radius, got 0.0"),
        (["--eps", "nan"], "--eps must be a positive"),
        (["--eps", "-0.1"], "--eps must be a positive"),
        (["--max-n", "0"], "--max-n must be at least 2, got 0"),
        (["--eps", "inf"], "--eps must be a positive radius, got inf"),
        (["--max-n", "1"], "--max-n must be at least 2, got 1"),
    ],
)
def test_plot_refuses_a_radius_or_sample_size_that_would_print_nonsense(tmp_path, capsys, flags, message):
    """Regression: ``plot --eps 0`` / ``nan`` printed density std "nan, nan, ..." and ``--eps -0.1`` "0.00"
    and wrote the figures, exit 0; ``--max-n 0`` failed after reading the data, naming no option.  A
    mutation audit (2026-12-08) found no test of ``--eps inf`` (every point a neighbour of every other: a
    std of 0.00) or ``--max-n 1`` (one point: no distance)."""
    code, err = _main(capsys, "plot", DATA / "3L.csv", "--out", tmp_path / "fig", *flags)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "fig").exists()


def test_plot_never_leaves_a_half_written_png(tmp_path, capsys, monkeypatch):
    """Regression: figures were saved straight to their names, so a write that failed part way (a full
    disk) left a truncated PNG in place of the earlier figure.  Now the earlier figure stays whole and no
    temporary is left; a successful write replaces it."""
    from matplotlib.figure import Figure

    real_savefig = Figure.savefig
    earlier = b"\x89PNG an earlier, complete figure"
    (tmp_path / "3L_convergence.png").write_bytes(earlier)

    def disk_fills_up(fig, fname, **kwargs):
        with open(fname, "wb") as fh:
            fh.write(b"\x89PNG\r\n\x1a\n half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", disk_fills_up)
    plot = ["plot", DATA / "3L.csv", "--out", tmp_path, "--iterations", "2", "--max-n", "80"]
    code, err = _main(capsys, *plot)
    assert code == 2 and "No space left on device" in err, err
    assert (tmp_path / "3L_convergence.png").read_bytes() == earlier
    assert sorted(p.name for p in tmp_path.iterdir()) == ["3L_convergence.png"]
    monkeypatch.setattr(Figure, "savefig", real_savefig)
    code, err = _main(capsys, *plot)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["3L_convergence.png", "3L_iterations.png"]
    assert (tmp_path / "3L_convergence.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "3L_convergence.png").stat().st_size > 1000


def test_evaluate_builds_the_published_tasks_of_the_shared_collection(shared_datasets, tmp_path):
    """Regression: the duplicate-name check keyed datasets by file name alone, so ``--datasets
    ../shared/datasets`` (dermatology is a clustering and an anomaly dataset) was refused before any work,
    the documented command included.  Its tasks are those whose records ``docs/results`` holds."""
    from cdfts_dask.cli import build_parser
    from cdfts_dask.cli.evaluate import _record_label, build_tasks

    args = build_parser().parse_args(["evaluate", "--datasets", str(shared_datasets), "--out", str(tmp_path)])
    labels = {t.label for t in build_tasks(args)}
    published = (ROOT / "docs" / "results" / "records.jsonl").read_text().splitlines()
    assert labels == {_record_label(json.loads(line)) for line in published}
    assert {"clustering/dermatology original", "anomaly/dermatology original"} <= labels
    args = build_parser().parse_args(
        ["evaluate", "--datasets", str(shared_datasets), "--only", "dermatology", "--out", str(tmp_path)]
    )
    assert {t.spec.key for t in build_tasks(args)} == {"clustering/dermatology", "anomaly/dermatology"}
    # --train-test runs the train/test protocol unless --no-train-test (the default) is given too (the
    # evaluation's second mutation audit, 2026-12-07)
    for flags, expected in (
        (["--train-test"], True),
        (["--train-test", "--no-train-test"], False),
        ([], False),
    ):
        args = build_parser().parse_args(
            ["evaluate", "--data", str(DATA / "3L.csv"), *flags, "--out", str(tmp_path)]
        )
        assert {t.train_test for t in build_tasks(args)} == {expected}, flags


def test_evaluate_resume_refuses_records_whose_values_are_wrong(tmp_path):
    """Regression: ``--resume`` checked only that a record had its fields: a score edited to 5.0 went into
    clustering.md and the averages ("5.00 (0.88)"), exit 0; a null score was a bare ``TypeError`` naming
    no file.  Every record is now checked (scores finite numbers in their ranges, n a positive integer,
    params a mapping, names texts) and refused naming the file, the line and the value; each published
    record passes."""
    from cdfts_dask.cli.evaluate import load_done

    published = (ROOT / "docs" / "results" / "records.jsonl").read_text().splitlines()
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(published) + "\n")
    assert len(load_done(path, [])[2]) == len(published) > 1000  # none refused
    first = json.loads(published[0])
    edits = {
        "score 5.0 is not a number in [0, 1]": {"score": 5.0},
        "score None is not a number in [0, 1]": {"score": None},
        "score nan is not a number in [0, 1]": {"score": float("nan")},
        "score True is not a number in [0, 1]": {"score": True},
        "test_score -0.5 is not a number in [0, 1]": {"test_score": -0.5},
        "ami '0.4' is not a number in [-1, 1]": {"ami": "0.4"},
        "n 0 is not a positive integer": {"n": 0},
        "params [] is not a mapping": {"params": []},
        "algorithm 3 is not a text": {"algorithm": 3},
        "tparam '60' is neither null nor a number": {"tparam": "60"},  # was: '<' not supported ... (an audit)
    }
    for said, edit in edits.items():
        path.write_text("\n".join([published[0], json.dumps({**first, **edit}), published[2]]) + "\n")
        said = re.escape(f"records.jsonl: line 2 is not a task record ({said})")
        with pytest.raises(ValueError, match=said):
            load_done(path, [])
    # a second record of one task's algorithm replaced the first, silently (found by an audit, 2026-12-06)
    path.write_text("\n".join([published[0], published[1], json.dumps({**first, "score": 0.999})]) + "\n")
    label = f"{first['task']}/{first['dataset']} {first['transform']}"
    label += "" if first["tparam"] is None else f" {first['tparam']}"
    said = f"records.jsonl: line 3 repeats the record of task {label!r}, algorithm {first['algorithm']!r} "
    with pytest.raises(ValueError, match=re.escape(said + "(first at line 1)")):
        load_done(path, [])


def test_evaluate_train_test_table_shows_the_test_scores(tmp_path, client, capsys):
    """``clustering_traintest.md`` holds each view's test-half score (of the view parameter chosen on
    the train half, as ``results.csv``'s test_score), not the best-over-grid score of ``clustering.md``."""
    import csv

    out = tmp_path / "res"
    args = ["evaluate", "--data", DATA / "3L.csv", "--max-n", "100", "--eps-step", "0.25", "--train-test",
            "--scheduler", client.scheduler.address, "--out", out, "--quiet"]  # fmt: skip
    assert _main(capsys, *args) == (0, "")
    rows = list(csv.DictReader((out / "results.csv").open()))
    md = (out / "clustering_traintest.md").read_text().splitlines()
    head = [c.strip() for c in md[0].strip("|").split("|")]
    cells = [c.strip() for c in next(line for line in md if line.startswith("| 3L")).strip("|").split("|")]
    short = {"original": "Orig", "rescale": "ReS", "dscale": "DS", "cdfts": "CDF-TS"}
    assert len(rows) == 16
    for r in rows:
        cell = cells[head.index(f"{r['algorithm']} {short[r['transform']]}")]
        assert cell == f"{float(r['test_score']):.2f}", (r["algorithm"], r["transform"], cell)
    assert any(f"{float(r['test_score']):.2f}" != f"{float(r['score']):.2f}" for r in rows)


def test_plot_draws_each_figure_with_the_options_asked_and_prints_its_figures(tmp_path, capsys, monkeypatch):
    """Found by a mutation audit (2026-12-07): ``cdfts plot`` drawing the scatter plots, the convergence
    plot or the MDS views at lambda 0.1, the convergence at 10 iterations or eps 0.1, subsampling to 1500
    points, whatever was asked, naming the files by the input's stem despite ``--name``, or printing the
    Deltas as the density stds, all passed (the tests checked only that the PNGs exist)."""
    from cdfts_dask.evaluation import plots

    seen = []

    def scatter(X, y, path, lam, eps, title):
        seen.append(("scatter", X.shape, len(y), lam, eps, title, path.name))
        return [0.5, 0.25, 0.125, 0.0625]

    def convergence(X, path, lam, iterations, eps, title):
        seen.append(("convergence", X.shape, lam, iterations, eps, title, path.name))
        return [0.1, 0.01], [0.75, 0.5]

    def mds(X, y, path, lam, title):
        seen.append(("mds", X.shape, len(y), lam, title, path.name))

    monkeypatch.setattr(plots, "scatter_iterations", scatter)
    monkeypatch.setattr(plots, "convergence", convergence)
    monkeypatch.setattr(plots, "mds_views", mds)
    options = ["--lam", "0.2", "--eps", "0.15", "--iterations", "2", "--max-n", "80"]
    code, err = _main(capsys, "plot", DATA / "3L.csv", "--out", tmp_path, "--name", "fig", *options)
    assert code == 0, err
    assert seen == [("scatter", (80, 2), 80, 0.2, 0.15, "fig", "fig_iterations.png"),
                    ("convergence", (80, 2), 0.2, 2, 0.15, "fig", "fig_convergence.png")]  # fmt: skip
    assert err.splitlines() == [
        f"{tmp_path / 'fig_iterations.png'}: density std before / after 1, 3, 5 iterations: "
        "0.50, 0.25, 0.12, 0.06",
        f"{tmp_path / 'fig_convergence.png'}: Delta 0.10000 0.01000",
        f"{tmp_path / 'fig_convergence.png'}: density std 0.75 0.50",
    ]
    seen.clear()
    hd = tmp_path / "hd.csv"
    hd.write_text("a,b,c,label\n" + "".join(f"{i % 7},{(i * 3) % 11},{i % 5},{i % 2}\n" for i in range(40)))
    assert _main(capsys, "plot", hd, "--out", tmp_path, "--lam", "0.3", "--max-n", "39")[0] == 0
    assert seen == [("convergence", (39, 3), 0.3, 10, 0.1, "hd", "hd_convergence.png"),
                    ("mds", (39, 3), 39, 0.3, "hd", "hd_mds.png")]  # fmt: skip
    seen.clear()  # one point more than --max-n is subsampled (above, 40 for 39); 1-D data: no scatter, no MDS
    line = tmp_path / "line.csv"
    line.write_text("a,label\n" + "".join(f"{i % 7},{i % 2}\n" for i in range(20)))
    assert _main(capsys, "plot", line, "--out", tmp_path, "--iterations", "2")[0] == 0
    assert seen == [("convergence", (20, 1), 0.1, 2, 0.1, "line", "line_convergence.png")]


@pytest.mark.parametrize(
    "flags, message",
    [(["--lam", "1"], "--lam must be in (0, 1), got 1.0"),
     (["--iterations", "0"], "--iterations must be >= 1")],
)  # fmt: skip
def test_plot_refuses_a_lambda_of_1_and_no_iterations_before_any_work(tmp_path, capsys, flags, message):
    """Found by a mutation audit (2026-12-07): ``plot --lam 1`` and ``--iterations 0`` accepted passed."""
    code, err = _main(capsys, "plot", DATA / "3L.csv", "--out", tmp_path / "fig", *flags)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "fig").exists()
