"""Malformed input and out-of-range parameters: a one-line error naming the problem, via the API and the CLI.

Every case is checked through the API (exception type and message) and the
CLI (exit status 2, exactly one stderr line, no traceback, no output file).
Property-based tests check that valid input never yields NaN / inf and
always lands in [0, 1]^d, on the dense and tiled paths with both estimators.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
import zarr
from faultkit import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cdfts_dask
from cdfts_dask.cli import main as cli_main
from cdfts_dask.inputs import read_table


def _csv(text: str):
    def make(path):
        path = path / "in.csv"
        path.write_text(text)
        return path

    return make


def _npy(values):
    def make(path):
        path = path / "in.npy"
        np.save(path, values)
        return path

    return make


def _raw(name: str, data: bytes):
    def make(path):
        path = path / name
        path.write_bytes(data)
        return path

    return make


def _zarr_group(path):
    group = zarr.open_group(str(path / "in.zarr"), mode="w")
    group.create_array("x", shape=(3, 2), dtype="f8")
    return path / "in.zarr"


def _zarr_nan(path):
    arr = zarr.create_array(str(path / "in.zarr"), shape=(4, 2), dtype="f8", chunks=(2, 2))
    arr[...] = np.array([[0, 1], [2, 3], [np.nan, 1], [1, 1.0]])
    return path / "in.zarr"


def _dir_not_zarr(path):
    (path / "in.zarr").mkdir()
    return path / "in.zarr"


#: name -> (make input file under tmp_path, exception type via the API, regex naming the problem)
BAD_FILES = {
    "nan": (_csv("a,b\n1,2\nnan,3\n4,5\n"), ValueError, r"missing value 'nan' at row 2, column 1"),
    "empty-cell-first-row": (_csv(",0.2\n0.3,0.4\n0.5,0.9\n"), ValueError, r"\(empty cell\) at row 1"),
    "na-first-row": (_csv("NA,0.2\n0.3,0.4\n0.5,0.9\n"), ValueError, r"missing value 'NA' at row 1, col"),
    "na-second-row": (_csv("0.3,0.4\nNA,0.2\n0.5,0.9\n"), ValueError, r"missing value 'NA' at row 2, col"),
    # a "?" (a missing value in some exports, e.g. the UCI repository's) named as missing, not as text
    "question-mark": (_csv("a,b\n1,2\n?,3\n4,5\n"), ValueError, r"missing value '\?' at row 2, column 1"),
    # lines pandas reads as rows of one field, not blank lines (found by a mutation audit, 2026-12-08)
    "form-feed-line": (_raw("in.csv", b"a,b\n1,2\n\x0c\n3,4\n"), ValueError, r"line 3 has 1 fields, expe"),
    "quoted-empty-line": (  # after a quoted line break: the fields counted by the csv module
        _csv('a,b\n"1\n",2\n""\n3,4\n'), ValueError, r"line 4 has 1 fields, expected 2"
    ),
    "ragged-last-line-unended": (_csv("a,b\n1,2\n3"), ValueError, r"line 3 has 1 fields, expected 2"),
    "blank-cell": (_csv("a,b\n1,2\n  ,3\n"), ValueError, r"missing value \(empty cell\) at row 2, column 1"),
    "text-cell-shown-whole": (  # up to 80 characters
        _csv("a,b\n1,2\n3,not a number at all\n"), TypeError, r"value 'not a number at all' at row 2, colum"
    ),
    "inf": (_csv("1,2\n3,inf\n4,5\n"), ValueError, r"NaN or inf .*inf"),
    "minus-inf": (_csv("1,2\n3,-inf\n4,5\n"), ValueError, r"NaN or inf .*-inf"),
    "string-in-numeric-column": (
        _csv("a,b\n1,2\n3,x\n4,5\n"),
        TypeError,
        r"non-numeric value 'x' at row 2, column 2 of .* \(if 'b' is a label, not a feature: set it aside, "
        r"with --label=b on the command line\)$",
    ),
    "text-column-without-header": (
        _csv("1,2\n3,x\n4,5\n"), TypeError, r"value 'x' at row 2, column 2 of [^(]*$"  # no name to give
    ),
    # a file of other separators read as one column of text: named as such, not as a non-numeric value
    "tab-separated": (_csv("a\tb\n1\t2\n3\t4\n"), ValueError, r"in.csv' separates its fields by tabs"),
    "semicolon-separated": (_csv("1;2\n3;4\n5;6\n"), ValueError, r"by semicolons: only comma-separated"),
    "space-separated-txt": (  # np.savetxt's default: its first row was taken for a header of one name
        _raw("in.txt", b"1.5e-01 9.5e-01\n2.5e-01 3.5e-01\n4.5e-01 5.5e-01\n"), ValueError,
        r"in.txt' separates its fields by spaces: only comma-separated files are read \(convert it, every",
    ),
    "savetxt-with-a-header": (  # its '# a b' line is a comment: the lines under it split alike
        _raw("in.txt", b"# a b\n1.5 2.5\n3.5 4.5\n5.5 6.5\n"), ValueError, r"separates its fields by spaces"
    ),
    "pandas-index-tab-separated": (  # to_csv(sep="\t") writes an unnamed index: its header has an empty field
        _csv("\ta\tb\n0\t1.5\t2.5\n1\t3.5\t4.5\n"), ValueError, r"separates its fields by tabs"
    ),
    "semicolons-and-decimal-commas": (  # split by the commas into cells holding ';'
        _csv("0,5;1,2\n0,7;0,1\n0,2;0,3\n"), TypeError,
        r"value '7;0' at row 1, column 2 of .* \(a ';' in this cell and in the header: only comma-separated",
    ),
    # a file that is not text, an array or a store was read as CSV (a misleading message, or none)
    "json-file": (_raw("in.json", b"[[1, 2], [3, 4]]"), ValueError, r"unsupported file type '\.json'"),
    "no-suffix": (_raw("points", b"1,2\n3,4\n5,6\n"), ValueError, r"unsupported file type '\(no suffix\)'"),
    "ragged-rows": (_csv("1,2\n3\n4,5\n"), ValueError, r"in.csv' line 2 has 1 fields, expected 2$"),
    "too-many-fields": (_csv("1,2\n3,4,5\n4,5\n"), ValueError, r"line 2 has 3 fields, expected 2"),
    # a first line with fewer fields than the rows: pandas made the extra leading fields an index
    "comment-first-line": (
        _csv("# exported by sim.py\n0.1,0.2,0.3\n0.4,0.5,0.6\n0.7,0.8,0.9\n"),
        ValueError,
        r"in.csv' line 2 has 3 fields, expected 1$",
    ),
    "header-shorter-than-rows": (
        _csv("a,b\n0.1,0.2,0.3\n0.4,0.5,0.6\n0.7,0.8,0.9\n"),
        ValueError,
        r"in.csv' line 2 has 3 fields, expected 2$",
    ),
    "empty-extra-field-under-header": (  # pandas dropped one empty extra field without a word
        _csv("a,b\n0.1,0.2,\n0.4,0.5,\n0.7,0.8,\n"),
        ValueError,
        r"in.csv' line 2 has 3 fields, expected 2$",
    ),
    "short-row-after-blank-lines": (
        _csv("a,b,c\n0.1,0.2,0.3\n\n  \n0.4,0.5\n0.7,0.8,0.9\n"),
        ValueError,
        r"in.csv' line 5 has 2 fields, expected 3$",
    ),
    "empty-file": (_csv(""), ValueError, r"is empty"),
    "blank-lines-only": (_csv("\n\n  \n"), ValueError, r"is empty"),
    "header-only": (_csv("a,b\n"), ValueError, r"0 row\(s\).*n >= 2"),
    "one-row": (_csv("1,2\n"), ValueError, r"1 row\(s\).*n >= 2"),
    "zero-columns": (_npy(np.zeros((5, 0))), ValueError, r"zero columns"),
    "rank-1": (_npy(np.arange(5.0)), ValueError, r"2-dimensional.*\(5,\)"),
    "rank-3": (_npy(np.zeros((3, 2, 2))), ValueError, r"2-dimensional.*\(3, 2, 2\)"),
    "string-dtype-npy": (
        _npy(np.array([["a", "b"], ["c", "d"]])),
        TypeError,
        r"must be numeric, got dtype <U1",
    ),
    "complex-npy": (_npy(np.ones((3, 2), complex)), TypeError, r"must be numeric, got dtype complex128"),
    "corrupt-npy": (_raw("in.npy", b"\x93NUMPY garbage"), ValueError, r"cannot read .* as \.npy"),
    "binary-csv": (_raw("in.csv", b"\xff\xfe\x00\x81\x00"), ValueError, r"cannot read"),
    "zarr-group-not-array": (_zarr_group, ValueError, r"is a Zarr group, not an array"),
    "zarr-with-nan": (_zarr_nan, ValueError, r"NaN or inf .*row 2, column 0"),
    "directory-not-zarr": (_dir_not_zarr, ValueError, r"cannot open .* as Zarr"),
    "missing-file": (lambda p: p / "missing.csv", ValueError, r"file not found"),
}


def assert_one_line_error(code: int, err: str, pattern: str) -> None:
    import re

    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("cdfts transform: error: ") and "Traceback" not in err
    assert re.search(pattern, lines[0]), lines[0]


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_api(tmp_path, case):
    make, exc_type, pattern = BAD_FILES[case]
    with pytest.raises(exc_type, match=pattern):
        cdfts_dask.cdf_ts(make(tmp_path), max_iter=1)


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_cli(tmp_path, capsys, case):
    make, _, pattern = BAD_FILES[case]
    out = tmp_path / "out.csv"
    code = cli_main(["transform", str(make(tmp_path)), str(out), "--quiet"])
    assert_one_line_error(code, capsys.readouterr().err, pattern)
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("case", ["nan", "ragged-rows", "zarr-group-not-array"])
def test_bad_file_cli_subprocess_has_no_traceback(tmp_path, case):
    make, _, pattern = BAD_FILES[case]
    res = run_cli("transform", make(tmp_path), tmp_path / "out.npy", "--quiet")
    assert_one_line_error(res.returncode, res.stderr, pattern)
    assert not (tmp_path / "out.npy").exists()


FIVE = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])

BAD_ARRAYS = {
    "nan": (np.array([[0.0, 1.0], [np.nan, 2.0]]), ValueError, r"NaN or inf"),
    "list-of-strings": ([["1", "2"], ["a", "b"]], TypeError, r"numeric"),
    # numeric strings: read as numbers, though an array of the same strings was refused (a fuzz audit)
    "list-of-numeric-strings": ([["1", "2"], ["3", "4"]], TypeError, r"^X must be numeric, got dtype <U1"),
    "list-of-bytes": ([[b"1", b"2"], [b"3", b"4"]], TypeError, r"^X must be numeric, got dtype \|S1"),
    "ragged-list": ([[1.0, 2.0], [3.0]], TypeError, r"numeric array"),
    "object-array": (np.array([[1, None], [2, 3]], dtype=object), TypeError, r"numeric, got dtype object"),
    "scalar": (np.float64(3.0), ValueError, r"2-dimensional"),
    "empty": (np.empty((0, 3)), ValueError, r"0 row\(s\)"),
    "dates": (np.array([[1, 2], [3, 4]], dtype="datetime64[D]"), TypeError, r"numeric, got dtype datetime"),
    "masked-values": (
        np.ma.masked_array(FIVE, mask=FIVE > 0.9), ValueError, r"masked array with 4 masked value"
    ),
    "sparse": (scipy.sparse.csr_matrix(FIVE), TypeError, r"X is a sparse csr_matrix; .*pass X\.toarray\(\)"),
    "dataframe-date-column": (
        pd.DataFrame({"a": FIVE[:, 0], "t": pd.date_range("2026-01-01", periods=5)}),
        TypeError,
        r"X column 't' must be numeric, got dtype datetime",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ARRAYS))
def test_bad_array_api(case):
    X, exc_type, pattern = BAD_ARRAYS[case]
    with pytest.raises(exc_type, match=pattern):
        cdfts_dask.cdf_ts(X, max_iter=1)


@pytest.mark.parametrize(
    "case", ["dates", "masked-values", "dataframe-date-column", "list-of-numeric-strings", "list-of-bytes"]
)
def test_bad_array_estimator(case):
    """Regression: ``CDFTS`` read dates as numbers (scikit-learn's conversion) where ``cdf_ts`` refused
    them, and both read the values under a masked array's mask as points, and nested lists of numeric
    strings as numbers (an array of them was refused)."""
    X, exc_type, pattern = BAD_ARRAYS[case]
    with pytest.raises(exc_type, match=pattern):
        cdfts_dask.CDFTS(max_iter=1).fit(X)
    fitted = cdfts_dask.CDFTS(max_iter=1).fit(FIVE)
    with pytest.raises(exc_type, match=pattern):
        fitted.transform(X)


#: bad parameters: (API keyword arguments, CLI flags, exception type, regex)
BAD_PARAMS = {
    "lam-zero": ({"lam": 0.0}, ["--lam", "0"], ValueError, r"lam must lie in the open interval \(0, 1\)"),
    "lam-one": ({"lam": 1.0}, ["--lam", "1"], ValueError, r"lam must lie"),
    "lam-negative": ({"lam": -0.1}, ["--lam", "-0.1"], ValueError, r"lam must lie"),
    "lam-nan": ({"lam": float("nan")}, ["--lam", "nan"], ValueError, r"lam must lie.*nan"),
    "delta-zero": ({"delta": 0.0}, ["--delta", "0"], ValueError, r"delta must be a positive finite"),
    "delta-negative": ({"delta": -1.0}, ["--delta", "-1"], ValueError, r"delta must be"),
    "delta-inf": ({"delta": float("inf")}, ["--delta", "inf"], ValueError, r"delta must be.*inf"),
    "delta-nan": ({"delta": float("nan")}, ["--delta", "nan"], ValueError, r"delta must be"),
    "max-iter-zero": ({"max_iter": 0}, ["--max-iter", "0"], ValueError, r"max_iter must be >= 1"),
    "max-iter-negative": ({"max_iter": -3}, ["--max-iter", "-3"], ValueError, r"max_iter must be >= 1"),
    "k-zero": ({"estimator": "knn", "k": 0}, ["--estimator", "knn", "-k", "0"], ValueError, r"k must lie in"),
    "k-equals-n": ({"estimator": "knn", "k": 5}, ["--estimator", "knn", "-k", "5"], ValueError, r"\[1, 4\]"),
    "k-missing": ({"estimator": "knn"}, ["--estimator", "knn"], ValueError, r"k is required"),
    "k-with-epsilon": ({"k": 3}, ["-k", "3"], ValueError, r"k is only used with estimator='knn'"),
    "tile-size-zero": ({"tile_size": 0}, ["--tile-size", "0"], ValueError, r"tile_size must be >= 1"),
    "tile-size-negative": ({"tile_size": -8}, ["--tile-size", "-8"], ValueError, r"tile_size must be >= 1"),
    "workers-zero": ({"n_workers": 0}, ["--workers", "0"], ValueError, r"n_workers must be >= 1"),
    "workers-negative": ({"n_workers": -2}, ["--workers", "-2"], ValueError, r"n_workers must be >= 1"),
    "resume-without-checkpoint": ({"resume": True}, ["--resume"], ValueError, r"needs a checkpoint"),
}

#: API-only type errors (argparse already rejects these types on the command line)
BAD_TYPES = {
    "lam-string": {"lam": "0.1"},
    "lam-bool": {"lam": True},
    "delta-string": {"delta": "small"},
    "max-iter-float": {"max_iter": 2.5},
    "k-float": {"estimator": "knn", "k": 2.0},
    # True is an int to Python, not an integer to CDF-TS (the second mutation audit of the checks, 2026-12-07)
    "max-iter-bool": {"max_iter": True},
    "k-bool": {"estimator": "knn", "k": True},
    "tile-size-float": {"tile_size": 10.5},
    "resume-string": {"resume": "yes"},
    "return_info-string": {"return_info": "yes"},  # returned a tuple (found by a fuzz audit)
    "verbose-int": {"verbose": 1},
    "client-int": {"client": 42, "method": "tiled"},
    "checkpoint-int": {"checkpoint": 123},  # it made a store named '123' in the working directory
    "security-string": {"security": "tls"},  # refused only once a cluster had started, by distributed
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMS))
def test_bad_parameter_api(case):
    kwargs, _, exc_type, pattern = BAD_PARAMS[case]
    with pytest.raises(exc_type, match=pattern):
        cdfts_dask.cdf_ts(FIVE, **kwargs)


@pytest.mark.parametrize("case", sorted(BAD_PARAMS))
def test_bad_parameter_cli(tmp_path, capsys, case):
    """The API's message, naming the option (``--max-iter must be >= 1``, not ``max_iter``)."""
    from cdfts_dask.cli.transform import OPTION_OF

    _, flags, _, pattern = BAD_PARAMS[case]
    src, out = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(src, FIVE)
    code = cli_main(["transform", str(src), str(out), "--quiet", *flags])
    as_option = re.sub(r"^\w+", lambda name: OPTION_OF.get(name[0], name[0]), pattern)
    assert_one_line_error(code, capsys.readouterr().err, as_option.replace("n_workers", "--workers"))
    assert not out.exists()


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--lam", "5"], "--lam must lie in the open interval (0, 1), got 5.0"),
        (["--estimator", "knn"], "-k is required with estimator='knn'"),
        (["--method", "dense", "--tile-size", "-3"], "--tile-size must be >= 1, got -3"),
        (["--references", "1"], "--references must be an integer >= 2"),
        (["--references", "5", "--random-state", "-5"], "--random-state must be None, an integer in"),
    ],
)
def test_bad_run_options_are_refused_before_the_input_is_read(tmp_path, capsys, flags, message):
    """Regression (a new-user audit, 2026-11-29): the command line read the whole input before it checked
    the run's options (a 240 MB CSV: 2 s, then ``lam must lie ...``), and ``--tile-size -3`` beside
    ``--method dense`` was dropped with the dense warning, never checked.  An input that does not exist
    shows it: the option is named first."""
    paths = [str(tmp_path / "missing.csv"), str(tmp_path / "out.csv")]
    code = cli_main(["transform", *paths, "--quiet", *flags])
    assert_one_line_error(code, capsys.readouterr().err, re.escape(f"cdfts transform: error: {message}"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", sorted(BAD_TYPES))
def test_bad_parameter_type_api(case):
    with pytest.raises(
        TypeError, match=case.split("-")[0].replace("max", "max_iter").replace("tile", "tile_size")
    ):
        cdfts_dask.cdf_ts(FIVE, **BAD_TYPES[case])


@pytest.mark.parametrize(
    "kwargs", [{"estimator": "gaussian"}, {"method": "gpu"}], ids=["estimator", "method"]
)
def test_bad_choice_api(kwargs):
    with pytest.raises(ValueError, match=f"{next(iter(kwargs))} must be one of"):
        cdfts_dask.cdf_ts(FIVE, **kwargs)


def test_unsupported_output_suffix_cli(tmp_path, capsys):
    src = tmp_path / "in.npy"
    np.save(src, FIVE)
    code = cli_main(["transform", str(src), str(tmp_path / "out.txt"), "--quiet"])
    assert_one_line_error(code, capsys.readouterr().err, r"unsupported file type '\.txt'")


# -- CSV: no data row is ever taken for a header (issue 10, item 3) --------------------------------------

THREE = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.9]]
LONG = "z" * 200_000  # longer than the csv module's 131072-character field limit
#: name -> (file bytes, --label, expected points, expected labels); every row is data
CSV_ALL_ROWS_DATA = {
    "utf8-bom-numeric-first-row": (b"\xef\xbb\xbf0.1,0.2\n0.3,0.4\n0.5,0.9\n", None, THREE, None),
    "string-label-first-row": (b"0.1,0.2,a\n0.3,0.4,b\n0.5,0.9,c\n", "-1", THREE, ["a", "b", "c"]),
    "bom-and-header": (b"\xef\xbb\xbfx,y,label\n1,2,NA\n3,4,\n", "label", [[1, 2], [3, 4]], ["NA", ""]),
    "quoted-long-field-label": (b'1,2,"' + LONG.encode() + b'"\n3,4,b\n', "2", [[1, 2], [3, 4]], [LONG, "b"]),
    "empty-label-last-column": (b"a,b,cls\n1,2,x\n5.5,2.25,\n3,4,y\n", "cls", [[1, 2], [5.5, 2.25], [3, 4]],
                                ["x", "", "y"]),  # a complete row whose label is empty
    "quoted-header-and-labels": (b'"a","b","cls"\n1,2,"x,1"\n3,4,"y"\n', "cls", [[1, 2], [3, 4]],
                                 ["x,1", "y"]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CSV_ALL_ROWS_DATA))
def test_csv_keeps_every_data_row(tmp_path, case):
    from cdfts_dask.inputs import read_table

    data, label, points, labels = CSV_ALL_ROWS_DATA[case]
    src = tmp_path / "in.csv"
    src.write_bytes(data)
    X, got_labels, _ = read_table(src, label_column=label)
    np.testing.assert_array_equal(X, np.array(points, dtype=float))
    assert (None if got_labels is None else list(got_labels)) == labels


def test_csv_bom_first_row_survives_the_cli(tmp_path, capsys):
    src, out = tmp_path / "in.csv", tmp_path / "out.npy"
    src.write_bytes(b"\xef\xbb\xbf0.1,0.2\n0.3,0.4\n0.5,0.9\n")
    assert cli_main(["transform", str(src), str(out), "--quiet", "--max-iter", "1"]) == 0
    assert np.load(out).shape == (3, 2)


#: name -> (file text, --label, the error's end): a row with another field count than the first row
CSV_RAGGED_WITH_LABEL = {
    # the label field missing: pandas filled it in as '' (exit 0, the row written with an empty label)
    "short-row-missing-its-label": (
        "a,b,cls\n" + "".join(f"{i}.5,{i}.25,c{i % 2}\n" if i != 5 else "5.5,2.25\n" for i in range(20)),
        "cls",
        r"in.csv' line 7 has 2 fields, expected 3$",
    ),
    "quoted-short-row-missing-its-label": (
        '"a","b","cls"\n1,2,"x"\n3,4\n5,6,"y"\n',
        "cls",
        r"in.csv' line 3 has 2 fields, expected 3$",
    ),
    # a header missing a column name: pandas made the first feature an index, the second the "label"
    "header-missing-a-name": (
        "a,label\n" + "".join(f"{i}.5,{i}.25,c{i % 2}\n" for i in range(20)),
        "label",
        r"in.csv' line 2 has 3 fields, expected 2$",
    ),
}


@pytest.mark.parametrize("case", sorted(CSV_RAGGED_WITH_LABEL))
def test_csv_ragged_row_with_a_label_column_api(tmp_path, case):
    from cdfts_dask.inputs import read_table

    text, label, pattern = CSV_RAGGED_WITH_LABEL[case]
    src = tmp_path / "in.csv"
    src.write_text(text)
    with pytest.raises(ValueError, match=r"^input: '.*" + pattern):
        read_table(src, label_column=label)


@pytest.mark.parametrize("case", sorted(CSV_RAGGED_WITH_LABEL))
def test_csv_ragged_row_with_a_label_column_cli(tmp_path, capsys, case):
    text, label, pattern = CSV_RAGGED_WITH_LABEL[case]
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(text)
    code = cli_main(["transform", str(src), str(out), "--label", label, "--quiet", "--max-iter", "1"])
    assert_one_line_error(code, capsys.readouterr().err, pattern)
    assert not out.exists()


#: a --label that could mean two columns: (file text, --label, the one-line error's end)
CSV_AMBIGUOUS_LABEL = {
    # "3" was always index 3 ('c': numbers, transformed as the label) while the column named "3" is index 1
    "index-that-is-another-columns-name": (
        "a,3,b,c\n" + "".join(f"{i}.5,g{i % 2},{i}.25,{i}\n" for i in range(20)),
        "3",
        r"label column '3' is ambiguous in input: the column named '3' is index 1, and index 3 is 'c': "
        r"rename that column$",
    ),
    # a name the header holds twice: the first was taken, the second transformed as a feature
    "name-held-twice": (
        "x,cls,y,cls\n" + "".join(f"{i}.5,a{i % 2},{i}.25,b{i % 3}\n" for i in range(20)),
        "cls",
        r"label column 'cls' names 2 columns of input \(indices \[1, 3\]\): rename one, or give the index$",
    ),
}


@pytest.mark.parametrize("case", sorted(CSV_AMBIGUOUS_LABEL))
def test_a_label_that_could_mean_two_columns_is_refused(tmp_path, capsys, case):
    """Regression: ``--label 3`` was index 3 even where a header names another column "3", and a
    header name held twice was its first column: a guess, with exit 0."""
    text, label, pattern = CSV_AMBIGUOUS_LABEL[case]
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text(text)
    with pytest.raises(ValueError, match=pattern):
        read_table(src, label_column=label)
    code = cli_main(["transform", str(src), str(out), "--label", label, "--quiet", "--max-iter", "1"])
    assert_one_line_error(code, capsys.readouterr().err, pattern)
    assert not out.exists()


@pytest.mark.parametrize("label", ["3", "-4", 3, "17"], ids=["3", "-4", "int-3", "17"])
def test_a_label_index_beyond_the_columns_is_refused(tmp_path, capsys, label):
    """A ``--label`` index one past the last column (or one before the first, from the end) is refused, not
    wrapped round to column 0 (a mutation audit: ``idx <= ncols`` passed every test; no test gave an
    index out of range)."""
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    src.write_text("".join(f"{i}.5,{i}.25,{i % 2}\n" for i in range(20)))
    pattern = rf"label column index {int(label)} out of range for input with 3 columns$"
    with pytest.raises(ValueError, match=pattern):
        read_table(src, label_column=label)
    assert read_table(src, label_column=-3)[1].tolist() == [f"{i}.5" for i in range(20)]  # from the end
    code = cli_main(["transform", str(src), str(out), "--label", str(label), "--quiet", "--max-iter", "1"])
    assert_one_line_error(code, capsys.readouterr().err, pattern)
    assert not out.exists()


def test_a_label_index_that_is_also_its_own_columns_name_is_taken(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b,2\n" + "".join(f"{i}.5,{i}.25,g{i % 2}\n" for i in range(20)))
    X, labels, header = read_table(src, label_column="2")
    assert header == ["a", "b"] and X.shape == (20, 2) and labels[1] == "g1"


@pytest.mark.parametrize("label, column", [("²", "²"), (" cls ", " cls "), ("cls", " cls ")])
def test_a_label_name_that_python_would_take_for_digits_or_with_spaces_is_found(tmp_path, label, column):
    """Regression (found by an attack on the command line, 2026-11-25): `--label ²` failed with
    `invalid literal for int()` (``str.isdigit`` accepts superscripts); `--label " cls "` was not found
    (the header's names lose their surrounding spaces, the argument kept them)."""
    src = tmp_path / "in.csv"
    src.write_text(f"a,b,{column}\n" + "".join(f"{i}.5,{i}.25,g{i % 2}\n" for i in range(20)))
    X, labels, header = read_table(src, label_column=label)
    assert header == ["a", "b"] and X.shape == (20, 2) and labels[1] == "g1"


@pytest.mark.parametrize(
    "text",
    ["x;y\n0.1\n0.5\n0.9\n", '"ratio; %"\n0.1\n0.5\n0.9\n', "0.1\t\n0.5\n0.9\n", "x\t\n0.1\n0.5\n0.9\n",
     "0.1\t\n0.5\t\n0.9\t\n", "x" * 200_000 + "\n0.1\n0.5\n0.9\n",
     "x\ty" + "z" * 200_000 + "\n0.1\n0.5\n0.9\n"],
    ids=["semicolon-in-header", "quoted-semicolon", "trailing-tab", "header-trailing-tab",
         "every-line-a-trailing-tab", "a-header-over-the-csv-field-limit", "a-tab-in-a-long-header"],
)  # fmt: skip
def test_a_one_column_file_whose_first_row_holds_a_separator_is_read(tmp_path, text):
    """Regression (a review of the separator check): a one-column file was refused as separated by
    semicolons or tabs when its first row alone held one; only lines that all split alike are."""
    (tmp_path / "in.csv").write_text(text)
    X, _, header = read_table(tmp_path / "in.csv")
    np.testing.assert_array_equal(X[-3:, 0], [0.1, 0.5, 0.9])
    assert (header is None) == text.startswith("0.1")


def _run_the_conversion(refusal: Exception, path, new_path) -> None:
    """Run, as written, the pandas line a separator refusal gives to convert ``path`` into ``new_path``."""
    line = re.search(r"every cell as it is: (pandas\.read_csv\(.*\))\)$", str(refusal)).group(1)
    eval(line, {"pandas": pd, "path": path, "new_path": new_path})


@pytest.mark.parametrize("header", ["", "a b"], ids=["no-header", "a-header-comment"])
def test_the_conversion_a_refused_separator_names_reads_every_cell_as_it_was(tmp_path, header):
    """The refusal's pandas line, run as written, gives the comma-separated file of the same cells:
    np.savetxt's spaces with two equal values in the first row (pandas' default header would rename the
    second, and the row would then be taken for a header and dropped: one row fewer, exit 0), and its
    ``# a b`` header line (a comment)."""
    X = np.random.default_rng(5).random((30, 2))
    X[0] = [0.5, 0.5]
    path = tmp_path / "in.txt"
    np.savetxt(path, X, header=header)
    with pytest.raises(ValueError, match="separates its fields by spaces") as refused:
        read_table(path)
    new_path = tmp_path / "converted.csv"
    _run_the_conversion(refused.value, path, new_path)
    np.testing.assert_array_equal(read_table(new_path)[0], X)


def test_a_txt_file_is_read_as_comma_separated_text_and_other_suffixes_are_refused_everywhere(tmp_path):
    """``.txt`` (``np.savetxt(..., delimiter=",")``) is read as the same text named ``.csv``; another
    suffix is refused, naming it, by every entry point that takes a path (the estimator's column-name
    read came first and read a JSON file as CSV)."""
    text = "a,b\n" + "".join(f"{i % 7}.5,{i % 3}.25\n" for i in range(30))
    (tmp_path / "in.csv").write_text(text)
    (tmp_path / "in.txt").write_text(text)
    (tmp_path / "in.json").write_text(text)
    expected = cdfts_dask.cdf_ts(tmp_path / "in.csv", max_iter=2)
    np.testing.assert_array_equal(cdfts_dask.cdf_ts(tmp_path / "in.txt", max_iter=2), expected)
    assert read_table(tmp_path / "in.txt")[2] == ["a", "b"]
    for call in (lambda p: cdfts_dask.cdf_ts(p, max_iter=1), lambda p: cdfts_dask.CDFTS(max_iter=1).fit(p)):
        with pytest.raises(ValueError, match=r"^X: unsupported file type '\.json' of '.*in.json': give"):
            call(str(tmp_path / "in.json"))


def test_a_label_name_for_an_input_without_column_names_says_so(tmp_path):
    np.save(tmp_path / "in.npy", np.random.default_rng(0).random((20, 3)))
    with pytest.raises(ValueError, match=r"'label' not found in input \(it has no column names: give"):
        read_table(tmp_path / "in.npy", label_column="label")


def test_the_first_bad_cell_is_named_at_its_row_past_the_first_block_and_an_unnamed_label_is_no_feature(
    tmp_path,
):
    """The row of a bad cell read block by block counts the blocks before it; a header's unnamed column set
    aside as the label is not warned of as an unnamed feature (found by a second mutation audit of the CSV
    reader: blocks of 65536 rows had hidden the row count, and the warning ignored the label)."""
    from cdfts_dask.csv_input import csv_layout, first_bad_cell

    path = tmp_path / "in.csv"
    rows = [f"{i}.5,{i},lab{i}" for i in range(10)]
    rows[7] = "7.5,x,lab7"
    path.write_text("a,b,\n" + "\n".join(rows) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layout = csv_layout(path, 2)
    assert layout.header == ["a", "b", ""] and layout.label == 2
    assert first_bad_cell(path, layout, chunk_rows=3) == (8, 2, "x")
    with pytest.warns(UserWarning, match=r"column 3 of .* has no name in the header"):
        csv_layout(path, None)


def test_csv_missing_value_error_is_the_same_in_every_row(tmp_path):
    messages = []
    for row in range(3):
        lines = ["0.1,0.2", "0.3,0.4", "0.5,0.9"]
        lines[row] = "NA,0.2"
        src = tmp_path / f"in{row}.csv"
        src.write_text("\n".join(lines) + "\n")
        with pytest.raises(ValueError, match=f"missing value 'NA' at row {row + 1}, column 1") as exc:
            cdfts_dask.cdf_ts(src, max_iter=1)
        messages.append(str(exc.value).replace(str(src), "F").replace(f"row {row + 1}", "row R"))
    assert len(set(messages)) == 1, messages


def test_csv_first_rows_that_pandas_writes_by_default_are_named(tmp_path, capsys):
    """``pd.DataFrame(X).to_csv(path, index=False)`` writes the header ``0,1``; the header rule reads it
    as a data row (it is numeric), which added a point silently (101 rows for 100).  The default
    ``to_csv(path)`` writes an unnamed index column, transformed as a feature.  Both are now named in
    a warning (one ``cdfts: warning:`` line on the command line); the rows read are unchanged."""
    import pandas as pd

    X = np.random.default_rng(3).random((20, 2))
    numbered, indexed = tmp_path / "numbered.csv", tmp_path / "indexed.csv"
    pd.DataFrame(X).to_csv(numbered, index=False)
    pd.DataFrame(X, columns=["a", "b"]).to_csv(indexed)
    with pytest.warns(UserWarning, match=r"first row of .*\(0,1\) looks like column numbers"):
        points, _, header = read_table(numbered)
    assert points.shape == (21, 2) and header is None
    with pytest.warns(UserWarning, match=r"column 1 of .* has no name in the header"):
        points, _, header = read_table(indexed)
    assert points.shape == (20, 3) and header == ["", "a", "b"]
    assert cli_main(["transform", str(numbered), str(tmp_path / "o.csv"), "--max-iter", "1", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("cdfts: warning: input: the first row of") and err.count("\n") == 1
    plain = tmp_path / "plain.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(plain, index=False)
    np.savetxt(tmp_path / "values.csv", np.array([[0.5, 1.0], [2.0, 3.0]]), delimiter=",")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a named header, a numeric first row: no warning
        assert read_table(plain)[0].shape == (20, 2)
        assert read_table(tmp_path / "values.csv")[0].shape == (2, 2)
        # one column whose first value is 0: a data row, not pandas' column numbers (found by a
        # mutation audit, 2026-12-08: the rule taking one number for a row of column numbers passed)
        (tmp_path / "one.csv").write_text("0\n0.5\n1\n")
        assert read_table(tmp_path / "one.csv")[0].tolist() == [[0.0], [0.5], [1.0]]


def test_the_header_pandas_writes_by_default_is_read_as_a_header(tmp_path, capsys):
    """Regression (a review of the docs): ``pd.DataFrame(X).to_csv(path)``, pandas' defaults, writes the
    header ``,0,1``: the index's empty name, then column numbers.  The header rule took that numeric row
    for data and refused its empty cell ("missing value at row 1, column 1"), where the docs promised
    the unnamed-index warning.  It is a header now (no data row holds an empty cell); a first row with
    an empty cell and other numbers is still refused."""
    X = np.random.default_rng(4).random((20, 2))
    default = tmp_path / "default.csv"
    pd.DataFrame(X).to_csv(default)
    with pytest.warns(UserWarning, match=r"column 1 of .* has no name in the header \(the row index pandas"):
        points, _, header = read_table(default)
    assert header == ["", "0", "1"]
    np.testing.assert_array_equal(points, np.c_[np.arange(20), X])
    assert cli_main(["transform", str(default), str(tmp_path / "o.csv"), "--max-iter", "1", "--quiet"]) == 0
    assert capsys.readouterr().err.startswith("cdfts: warning: input: column 1 of")
    assert (tmp_path / "o.csv").read_text().startswith(",0,1\n")
    for first in (",0.5,1.5", ",1,2", ",0,2"):  # not pandas' header of these columns
        (tmp_path / "gap.csv").write_text(first + "\n" + "1,2,3\n" * 3)
        with pytest.raises(ValueError, match=r"missing value \(empty cell\) at row 1, column 1"):
            read_table(tmp_path / "gap.csv")
    # an empty label cell is valid data: ',0,1' under a first-column label is a data row (a review)
    (tmp_path / "label0.csv").write_text(",0,1\na,0.5,0.25\n,0.75,1\n")
    for label in ("0", "-3"):
        with pytest.warns(UserWarning, match=r"first row of .*\(,0,1\) looks like column numbers"):
            points, labels, header = read_table(tmp_path / "label0.csv", label_column=label)
        assert header is None and labels.tolist() == ["", "a", ""]
        np.testing.assert_array_equal(points, [[0, 1], [0.5, 0.25], [0.75, 1]])


def test_a_space_separated_file_with_pandas_index_is_refused_with_a_conversion_that_works(tmp_path):
    """Regression (same review): ``to_csv(path, sep=' ')`` writes the header `` 0 1`` (the index's empty
    name, then the column numbers) over rows of one more field split by blanks: not seen as a file of
    spaces, it was "non-numeric value '0 0.63... 0.27...'" with no word of its separator.  Now refused as
    space-separated, with a conversion (``sep=' '``: ``r'\\s+'`` drops the header's empty field and fails)
    that gives the comma-separated file pandas writes by default, cell for cell."""
    X = np.random.default_rng(6).random((30, 2))
    spaces, commas = tmp_path / "spaces.txt", tmp_path / "commas.csv"
    pd.DataFrame(X).to_csv(spaces, sep=" ")
    pd.DataFrame(X).to_csv(commas)
    with pytest.raises(ValueError, match=r"separates its fields by spaces.*sep=' '") as refused:
        read_table(spaces)
    converted = tmp_path / "converted.csv"
    _run_the_conversion(refused.value, spaces, converted)
    assert converted.read_text() == commas.read_text()


def test_a_numeric_first_row_with_a_label_named_cell_is_named(tmp_path):
    """Regression (found by an attack on the command line, 2026-11-25): `2019,2020,label` over `x,y,cN`
    rows, read with `--label -1`, added the point (2019, 2020) silently (11 rows for 10, every other row
    moved by up to 0.33).  The header rule is unchanged (the row is numeric in its features), but a label
    cell named like a label column is now said; a label cell such as `c0` says nothing."""
    rows = "".join(f"0.{i},0.{9 - i},c{i % 2}\n" for i in range(10))
    src, plain = tmp_path / "years.csv", tmp_path / "plain.csv"
    src.write_text("2019,2020,label\n" + rows)
    plain.write_text(rows)
    with pytest.warns(UserWarning, match=r"first row of .*\(2019,2020,label\) has numbers in every feature"):
        points, labels, header = read_table(src, label_column="-1")
    assert points.shape == (11, 2) and labels[0] == "label" and header is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_table(plain, label_column="-1")[0].shape == (10, 2)
        assert read_table(src, label_column="label")[0].shape == (10, 2)  # by name: the header
    # the label cell's name compared as a header name is, in any case (found by a mutation audit, 2026-12-08)
    src.write_text("2019,2020, Class\n" + rows)
    with pytest.warns(UserWarning, match=r"its label cell 'Class' is named like a label column"):
        assert read_table(src, label_column="-1")[0].shape == (11, 2)


def test_csv_reads_exactly_what_numpy_reads(tmp_path):
    """The pandas reader parses every float exactly (round-trip), like np.loadtxt."""
    from cdfts_dask.inputs import read_table

    rng = np.random.default_rng(3)
    X = rng.standard_normal((2000, 5)) * 10.0 ** rng.integers(-300, 300, (2000, 5))
    src = tmp_path / "in.csv"
    np.savetxt(src, X, delimiter=",", fmt="%.17g", header="a,b,c,d,e", comments="")
    np.testing.assert_array_equal(read_table(src)[0], X)
    np.testing.assert_array_equal(read_table(src)[0], np.loadtxt(src, delimiter=",", skiprows=1))


# -- degenerate but valid input: finite results in [0, 1] ----------------------------------------------


@pytest.mark.parametrize("method", ["dense", "tiled"])
def test_values_near_float_overflow(method, client):
    X = np.array([[1e308, -1e308], [-1e308, 1e308], [0.0, 5.0], [1.7e308, -1.7e308], [-3e307, 2e307]])
    Y = cdfts_dask.cdf_ts(X, max_iter=3, method=method, client=client if method == "tiled" else None)
    assert np.isfinite(Y).all() and Y.min() >= 0.0 and Y.max() <= 1.0
    assert Y.max(axis=0).tolist() == [1.0, 1.0]  # spread preserved, not collapsed to 0 or NaN


def test_a_column_beside_one_whose_range_overflows_is_normalised_as_alone():
    """Only the columns whose range overflows float64 are normalised in halved units: a column of
    subnormal values beside one (halving them is not exact) keeps the plain formula's positions, 0, 0.5
    and 1 (a mutation audit: halving every column passed the tests, giving 0, 0 and 1 here)."""
    from cdfts_dask.normalise import minmax_normalise

    X = np.array([[1e308, 0.0], [-1e308, 5e-324], [0.0, 1e-323]])
    Z, lo, hi = minmax_normalise(X)
    assert Z[:, 1].tolist() == [0.0, 0.5, 1.0] and Z[:, 0].tolist() == [1.0, 0.0, 0.5]
    np.testing.assert_array_equal(Z[:, 1], minmax_normalise(X[:, 1:])[0][:, 0])


@pytest.mark.parametrize("method", ["dense", "tiled"])
@pytest.mark.parametrize("estimator", ["epsilon", "knn"])
def test_all_points_identical_give_zeros(method, estimator, client):
    X = np.full((6, 3), 42.0)
    kw = {"k": 2} if estimator == "knn" else {}
    Y = cdfts_dask.cdf_ts(
        X, estimator=estimator, method=method, client=client if method == "tiled" else None, **kw
    )
    np.testing.assert_array_equal(Y, np.zeros((6, 3)))


def test_overflow_cli(tmp_path):
    src, out = tmp_path / "huge.csv", tmp_path / "out.csv"
    src.write_text("1e308,-1e308\n-1e308,1e308\n0,5\n")
    assert cli_main(["transform", str(src), str(out), "--quiet"]) == 0
    Y = np.loadtxt(out, delimiter=",", skiprows=1)
    assert np.isfinite(Y).all() and ((Y >= 0) & (Y <= 1)).all()


# -- property-based: random valid input never yields NaN / inf and stays in [0, 1]^d -----------------


@st.composite
def valid_problems(draw, max_n: int = 24):
    n = draw(st.integers(2, max_n))
    d = draw(st.integers(1, 4))
    scale = draw(st.sampled_from([1e-300, 1e-6, 1.0, 1e6, 1e300]))
    X = draw(
        hnp.arrays(np.float64, (n, d), elements=st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False))
    )
    estimator = draw(st.sampled_from(["epsilon", "knn"]))
    k = draw(st.integers(1, n - 1)) if estimator == "knn" else None
    lam = draw(st.floats(0.01, 0.95))
    return X * scale, {"lam": lam, "estimator": estimator, "k": k}


def _assert_unit_cube(Y, shape) -> None:
    Y = np.asarray(Y)
    assert Y.shape == shape
    assert np.isfinite(Y).all()
    assert Y.min() >= 0.0 and Y.max() <= 1.0


@settings(max_examples=50, deadline=None)
@given(valid_problems())
def test_property_dense_finite_in_unit_cube(problem):
    X, params = problem
    _assert_unit_cube(cdfts_dask.cdf_ts(X, max_iter=3, method="dense", **params), X.shape)


@pytest.mark.slow
# Hypothesis warns when the global ``random`` state changes while it draws an example.  Here that is
# dask, not the strategy: the client's event-loop thread sends the previous example's messages (releasing
# its futures) a few ms after the call returns, and dask.sizeof measures a message list of over 10 items
# with ``random.sample``.  The race made the warning intermittent.
@pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(problem=valid_problems(max_n=40), tile=st.integers(1, 16))
def test_property_tiled_finite_in_unit_cube(client, problem, tile):
    X, params = problem
    _assert_unit_cube(
        cdfts_dask.cdf_ts(X, max_iter=2, method="tiled", client=client, tile_size=tile, **params), X.shape
    )


# -- files that are not what their name says, or not files at all (issue 10, item 10) ---------------------


def test_npz_named_npy_is_one_line(tmp_path, capsys):
    """Regression: a .npz (zip) named .npy gave an AttributeError traceback."""
    src = tmp_path / "in.npy"
    with open(src, "wb") as fh:
        np.savez(fh, x=FIVE)
    with pytest.raises(ValueError, match=r"is a \.npz archive \(zip\), not a \.npy array"):
        cdfts_dask.cdf_ts(src, max_iter=1)
    code = cli_main(["transform", str(src), str(tmp_path / "out.npy"), "--quiet"])
    assert_one_line_error(code, capsys.readouterr().err, r"\.npz archive")


@pytest.mark.parametrize("kind", ["fifo", pytest.param("dev-zero", marks=pytest.mark.slow)])  # a process each
def test_non_regular_input_is_refused_not_read(tmp_path, kind):
    """Regression: reading from /dev/zero or a FIFO hung forever."""
    import os

    if kind == "fifo":
        src = tmp_path / "in.csv"
        os.mkfifo(src)
    else:
        src = tmp_path / "zero.npy"
        src.symlink_to("/dev/zero")
    res = run_cli("transform", src, tmp_path / "out.npy", "--quiet", timeout=60)
    assert_one_line_error(res.returncode, res.stderr, r"is not a regular file \(a device, FIFO or socket\)")


def _zarr_input_missing_chunk(path):
    """A 40 x 2 Zarr array of 4 row chunks whose third chunk (rows 20-29) has been deleted."""
    arr = zarr.create_array(str(path), shape=(40, 2), dtype="f8", chunks=(10, 2))
    arr[...] = np.random.default_rng(0).random((40, 2)) + 1.0
    (path / "c" / "2" / "0").unlink()
    return path


MISSING_CHUNK = r"1 of 4 chunks of the Zarr array .* are not stored, so they read as its fill value 0\.0"


@pytest.mark.parametrize("method", ["dense", "tiled"])
@pytest.mark.parametrize("as_object", [False, True], ids=["path", "zarr-array"])
def test_zarr_input_with_a_missing_chunk_is_said(tmp_path, method, as_object, client):
    """Regression: a deleted chunk of a Zarr input read as the fill value (rows 20-29 became 0.0) and the
    run went on without a word."""
    src = _zarr_input_missing_chunk(tmp_path / "in.zarr")
    X = zarr.open_array(str(src), mode="r") if as_object else str(src)
    kwargs = {"client": client} if method == "tiled" else {}
    with pytest.warns(UserWarning, match=MISSING_CHUNK):
        cdfts_dask.cdf_ts(X, method=method, max_iter=1, **kwargs)


@pytest.mark.parametrize("method", ["dense", "tiled"])
def test_zarr_input_with_a_missing_chunk_is_one_warning_line(tmp_path, capsys, method, client):
    """The warning names the data ``input``, as the command line does, also where the workers read the
    Zarr input (``cdf_ts``'s ``X`` there: found by a docs audit, 2026-12-06)."""
    src = _zarr_input_missing_chunk(tmp_path / "in.zarr")
    flags = ["--method", method] + (["--scheduler", client.scheduler.address] if method == "tiled" else [])
    code = cli_main(["transform", str(src), str(tmp_path / "out.npy"), "--quiet", *flags])
    err = capsys.readouterr().err.splitlines()
    assert code == 0 and len(err) == 1, err
    assert re.match(r"cdfts: warning: input: " + MISSING_CHUNK, err[0]), err




@pytest.mark.parametrize(
    "psi, error, message",
    [(0, ValueError, "psi must be >= 1, got 0"),
     (None, TypeError, "psi must be a positive integer, got None"),
     (2.5, TypeError, "psi must be a positive integer, got 2.5"),
     (True, TypeError, "psi must be a positive integer, got True")],
)  # fmt: skip
def test_rescale_refuses_a_bad_psi_by_name(psi, error, message):
    """ReScale's grid size has no default of None (found by the second mutation audit of the parameter
    checks, 2026-12-07: None passed the check and failed inside the oracle, naming nothing)."""
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        cdfts_dask.rescale(np.random.default_rng(0).random((10, 2)), psi=psi)

def test_a_type_error_names_the_input_and_warnings_are_left_as_they_were(tmp_path, capsys):
    """A ``TypeError`` of ``cdf_ts`` is renamed like a ``ValueError`` (a Zarr input of complex numbers is
    ``input``, not ``X``; found by the second mutation audit of the command line, 2026-12-07); a program
    calling ``main`` keeps its own ``warnings.showwarning``."""
    src = tmp_path / "c.zarr"
    zarr.create_array(str(src), shape=(20, 2), dtype="complex128", chunks=(10, 2))[...] = 1.0
    shown = warnings.showwarning
    assert cli_main(["transform", str(src), str(tmp_path / "out.npy"), "--quiet"]) == 2
    assert capsys.readouterr().err == "cdfts transform: error: input must be numeric, got dtype complex128\n"
    assert warnings.showwarning is shown and not (tmp_path / "out.npy").exists()

def test_estimator_transform_of_a_zarr_array_with_a_missing_chunk_is_said(tmp_path):
    fitted = cdfts_dask.CDFTS(max_iter=1).fit(np.random.default_rng(1).random((30, 2)))
    Y = zarr.open_array(str(_zarr_input_missing_chunk(tmp_path / "new.zarr")), mode="r")
    with pytest.warns(UserWarning, match=MISSING_CHUNK):
        fitted.transform(Y)


def test_a_sharded_zarr_input_with_a_missing_shard_is_said(tmp_path):
    """Found by a mutation audit (2026-12-07): no test had a sharded input.  Zarr counts a sharded array's
    stored chunks (two per shard here), so a deleted shard is 2 of 8 chunks gone, said as 1 of 4 shards;
    counted as shards without that division, 6 stored of 4 expected said nothing (rows 20-29 read as 0.0)."""
    path = tmp_path / "sharded.zarr"
    arr = zarr.create_array(str(path), shape=(40, 2), dtype="f8", chunks=(5, 2), shards=(10, 2))
    arr[...] = np.random.default_rng(0).random((40, 2)) + 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every shard there: nothing said
        cdfts_dask.cdf_ts(str(path), method="dense", max_iter=1)
    (path / "c" / "2" / "0").unlink()
    said = r"1 of 4 shards of the Zarr array .* are not stored, so they read as its fill value 0\.0"
    with pytest.warns(UserWarning, match=said):
        cdfts_dask.cdf_ts(str(path), method="dense", max_iter=1)


def test_an_input_is_read_whatever_the_case_of_its_suffix_and_a_folder_whatever_its_name(tmp_path):
    """Found by a mutation audit (2026-12-07): no test named an input ``.CSV`` or ``.NPY`` (the suffix check
    is case-blind: refusing them passed), nor gave a Zarr array in a folder named like a CSV file (a folder
    is a Zarr array whatever its name: reading it as CSV text passed)."""
    X = np.random.default_rng(6).random((30, 2))
    expected = cdfts_dask.cdf_ts(X, method="dense", max_iter=2)
    np.savetxt(tmp_path / "upper.CSV", X, delimiter=",")
    with open(tmp_path / "upper.NPY", "wb") as fh:  # np.save by name would add ".npy"
        np.save(fh, X)
    zarr.create_array(str(tmp_path / "folder.csv"), shape=X.shape, dtype="f8", chunks=(10, 2))[...] = X
    for name in ("upper.CSV", "upper.NPY", "folder.csv"):
        got = cdfts_dask.cdf_ts(str(tmp_path / name), method="dense", max_iter=2)
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_complete_zarr_input_and_our_own_zero_outputs_raise_no_chunk_warning(tmp_path):
    """Outputs store every chunk (Zarr leaves out chunks of nothing but the fill value by default), so an
    output of zeros read back as an input is complete, and so is any fully written array."""
    from cdfts_dask.inputs import open_zarr_array
    from cdfts_dask.store import write_output_zarr

    full = zarr.create_array(str(tmp_path / "full.zarr"), shape=(40, 2), dtype="f8", chunks=(10, 2))
    full[...] = 1.0
    write_output_zarr(tmp_path / "zeros.zarr", np.zeros((40, 2)))
    assert zarr.open_array(str(tmp_path / "zeros.zarr")).nchunks_initialized >= 1  # 0 with Zarr's default
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in ("full.zarr", "zeros.zarr"):
            open_zarr_array(tmp_path / path)


@pytest.mark.parametrize("method", ["dense", "tiled"])
def test_truncated_zarr_chunk_in_the_input_is_named(tmp_path, capsys, method, client):
    """Regression: a truncated chunk in a Zarr input gave a Zstd traceback.  Named ``input`` by both
    methods (the tiled run said ``X``, ``cdf_ts``'s name, until 2026-12-06)."""
    src = tmp_path / "in.zarr"
    arr = zarr.create_array(str(src), shape=(40, 2), dtype="f8", chunks=(10, 2))
    arr[...] = np.random.default_rng(0).random((40, 2))
    chunk = src / "c" / "2" / "0"
    chunk.write_bytes(chunk.read_bytes()[:7])
    flags = ["--method", method] + (["--scheduler", client.scheduler.address] if method == "tiled" else [])
    code = cli_main(["transform", str(src), str(tmp_path / "out.npy"), "--quiet", *flags])
    said = capsys.readouterr().err
    assert_one_line_error(code, said, r"error: input: cannot read the Zarr chunk at \[20:30, 0:2\]")


def test_a_long_bad_cell_in_a_file_with_a_plus_sign_is_named_at_once(tmp_path):
    """Regression (found by an attack on the readers, 2026-11-25): in a file where a field starts with `+`
    (read by ``csv_input.exact_floats``), a cell of 40,000 digits and an `x` took 47 s to be refused, and
    100,000 digits some minutes: the number pattern backtracked quadratically.  The message also carried
    the whole cell.  Now linear (about a second here, under the subprocess's 60 s limit) and shortened."""
    src = tmp_path / "long.csv"
    src.write_text("+0.5,0.1\n0.2,0.3\n0.4," + "1" * 100_000 + "x\n0.9,0.8\n")
    res = run_cli("transform", src, tmp_path / "o.npy", "--quiet", timeout=60)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    shortened = r"non-numeric value '1{40}\.\.\.1{19}x' \(100001 characters\) at row 3, column 2"
    assert re.search(shortened, res.stderr), res.stderr


def test_a_csv_output_is_utf_8_whatever_the_locale(tmp_path):
    """Regression: inputs are read as UTF-8 but the CSV output took the locale's encoding: under LC_ALL=C
    (Python's UTF-8 mode off) a label or column name outside ASCII failed after the whole computation,
    with a message that did not name the output."""
    import subprocess
    import sys

    from conftest import cli_env

    src = tmp_path / "in.csv"
    rows = "".join(f"{x:.3f},{(x * 7) % 1:.3f},ç{i % 2}\n" for i, x in enumerate(np.linspace(0, 1, 20)))
    src.write_text("é,b,clé\n" + rows, encoding="utf-8")
    env = {**cli_env(), "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    res = subprocess.run(
        [sys.executable, "-m", "cdfts_dask", "transform", str(src), str(tmp_path / "o.csv"), "--label", "-1",
         "--quiet", "--max-iter", "1"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = (tmp_path / "o.csv").read_text(encoding="utf-8").splitlines()
    assert out[0] == "é,b,clé" and out[1].endswith(",ç0") and len(out) == 21


def test_a_random_state_without_references_is_said_to_be_unused(tmp_path, capsys):
    """Regression (left alone since stop 30, 2026-11-25): `--random-state 3` without `--references` fitted
    all points, drew nothing, and said nothing; the result is the exact fit's either way."""
    X = np.random.default_rng(0).random((30, 2))
    np.save(tmp_path / "in.npy", X)
    base = ["transform", str(tmp_path / "in.npy"), "--quiet", "--max-iter", "1"]
    assert cli_main([*base[:2], str(tmp_path / "seeded.npy"), *base[2:], "--random-state", "3"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "cdfts: warning: --random-state not used: it seeds the draw of a sampled fit, and no --references "
        "is given (all points are fitted, nothing is drawn)"
    ], err
    assert cli_main([*base[:2], str(tmp_path / "plain.npy"), *base[2:]]) == 0
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(np.load(tmp_path / "seeded.npy"), np.load(tmp_path / "plain.npy"))
    seeded = [*base[:2], str(tmp_path / "drawn.npy"), *base[2:], "--random-state", "3", "--references", "20"]
    assert cli_main(seeded) == 0
    assert "random-state" not in capsys.readouterr().err


def test_engine_options_beside_method_dense_are_said_to_be_unused(tmp_path, capsys, monkeypatch, client):
    """Regression (found by an attack on the command line, 2026-11-25): `--method dense` with `--workers`,
    `--tile-size` (or `--scheduler`) ran the oracle and ignored them without a word; so did the API."""
    X = np.random.default_rng(0).random((30, 2))
    with pytest.warns(UserWarning, match=r"^tile_size, n_workers are not used: method='dense' runs the"):
        cdfts_dask.cdf_ts(X, method="dense", tile_size=5, n_workers=2, max_iter=1)
    from distributed.security import Security  # and, since a fuzz review (2026-11-27), these two

    with pytest.warns(UserWarning, match=r"^security, progress=True are not used: method='dense' runs the"):
        cdfts_dask.cdf_ts(X, method="dense", security=Security(), progress=True, max_iter=1)
    np.save(tmp_path / "in.npy", X)
    code = cli_main(["transform", str(tmp_path / "in.npy"), str(tmp_path / "o.npy"), "--method", "dense",
                     "--workers", "2", "--tile-size", "5", "--quiet", "--max-iter", "1"])  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 0 and err == [
        "cdfts: warning: --workers/--tile-size not used: --method dense runs the NumPy oracle in this process"
    ], err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cdfts_dask.cdf_ts(X, method="dense", max_iter=1)
        cdfts_dask.cdf_ts(X, method="dense", max_iter=1, progress=lambda report: None)  # called by the oracle
        # a sampled fit's transform runs on the given cluster (a review of the change above)
        cdfts_dask.cdf_ts(X, method="dense", max_iter=1, n_references=20, random_state=0, client=client)
    with pytest.warns(UserWarning, match=r"^tile_size is not used: method='dense'") as said:
        cdfts_dask.cdf_ts(X, method="dense", max_iter=1, n_references=20, random_state=0, tile_size=5)
    assert said[0].filename == __file__  # the caller's line
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)  # a terminal: a bar for the engine only
    assert cli_main(["transform", str(tmp_path / "in.npy"), str(tmp_path / "o.npy"), "--method", "dense",
                     "--max-iter", "1"]) == 0  # fmt: skip
    assert "warning" not in capsys.readouterr().err


# -- found by an attack on the array inputs (2026-11-25) ---------------------------------------------------


def _lying_dask_array(X: np.ndarray, rows: int):
    """A dask array that declares X's shape but computes only its first ``rows`` rows."""
    import dask
    import dask.array as da

    return da.from_delayed(dask.delayed(lambda: X[:rows])(), shape=X.shape, dtype=X.dtype)


@pytest.mark.parametrize("method", ["dense", "tiled"])
def test_a_dask_array_whose_block_is_not_its_declared_shape_is_refused(method, client):
    """Regression: `da.from_delayed(..., shape=(40, 3))` around 39 rows was fitted as 40 points: the tiled
    kernels read past the data (workers aborted with `double free or corruption` about one run in three,
    once a hang; with a given client a result declared (40, 3) computed (39, 3)), the dense path failed
    after the work, and `CDFTS.transform` returned 9 rows for 10.  Every block is now checked against
    the shape its dask array declares, before any work on it."""
    X = np.random.default_rng(0).random((40, 3))
    message = r"X: the block at rows 0:40, columns 0:3 holds an array of shape \(39, 3\), not the \(40, 3\)"
    engine = {"client": client, "tile_size": 16} if method == "tiled" else {}
    with pytest.raises(ValueError, match=message):
        cdfts_dask.cdf_ts(_lying_dask_array(X, 39), method=method, max_iter=1, **engine)
    est = cdfts_dask.CDFTS(max_iter=1).fit(X)
    with pytest.raises(ValueError, match=r"holds an array of shape \(9, 3\), not the \(10, 3\)"):
        est.transform(_lying_dask_array(X[:10], 9)).compute()


def test_a_fit_of_a_dask_array_of_unknown_chunk_sizes_is_refused_in_one_line(client):
    """Found by a mutation audit (2026-12-07): no test gave the fit a dask array of unknown chunk sizes
    (its n is NaN: the engine cannot tile it); refused before any work, saying what to call."""
    import dask.array as da

    X = da.from_array(np.random.default_rng(2).random((60, 2)), chunks=(15, 2))
    unknown = X[X[:, 0] > 0.3]
    message = r"^X is a dask array of unknown chunk sizes \(shape \(nan, 2\), .*call its compute_chunk_sizes"
    for engine in (dict(method="tiled", client=client), dict(method="dense")):
        with pytest.raises(ValueError, match=message):
            cdfts_dask.cdf_ts(unknown, **engine)


def test_nan_in_a_row_chunk_of_a_dask_transform_is_named_at_its_row_and_column():
    """Found by a mutation audit (2026-12-07): the check of each row chunk a model transforms (NaN / inf
    named at its global row and column) could be removed: no test gave a lazy transform a NaN."""
    import dask.array as da

    fitted = cdfts_dask.CDFTS(max_iter=2).fit(np.random.default_rng(2).random((60, 2)))
    Y = np.random.default_rng(3).random((50, 2))
    Y[37, 1] = np.nan
    with pytest.raises(ValueError, match=r"^X contains NaN or inf \(first at row 37, column 1: nan\)$"):
        fitted.transform(da.from_array(Y, chunks=(10, 2))).compute()


def test_model_transform_dask_of_unknown_chunk_sizes_still_runs():
    """Regression (found by a review of the block check, 2026-11-25): the shape check compared each block
    with its declared place, NaN for a dask array of unknown chunk sizes (after boolean indexing), and so
    refused every such array that ``model.transform_dask`` had transformed (rows are independent there)."""
    import dask.array as da

    from cdfts_dask import model

    P = np.random.default_rng(2).random((60, 2))
    fitted = cdfts_dask.CDFTS(max_iter=2).fit(P).model_
    X = da.from_array(P, chunks=(15, 2))
    unknown = X[X[:, 0] > 0.3]
    assert np.isnan(unknown.shape[0])
    expected = model.transform_numpy(fitted, P[P[:, 0] > 0.3])
    np.testing.assert_allclose(model.transform_dask(fitted, unknown).compute(), expected, rtol=0, atol=1e-12)


def test_the_model_functions_check_a_dataframes_column_names():
    """Regression: `CDFTS.transform` and `cdfts apply` refused columns in another order, but the public
    `model.transform_numpy` and `CDFTSModel.replay` replayed a DataFrame's columns in its own order:
    0.52 off, without a word."""
    from cdfts_dask import model

    X = np.random.default_rng(0).normal(size=(30, 3))
    fitted = cdfts_dask.CDFTS(max_iter=2).fit(pd.DataFrame(X, columns=list("abc"))).model_
    new = pd.DataFrame(X[:5] + 0.05, columns=list("abc"))
    expected = model.transform_numpy(fitted, new.to_numpy())
    assert np.array_equal(model.transform_numpy(fitted, new), expected)
    reordered, renamed = new[["c", "b", "a"]], new.set_axis(["x", "y", "z"], axis=1)
    for replay in (model.transform_numpy, lambda m, Y: m.replay(Y)):
        for other in (reordered, renamed):
            with pytest.raises(ValueError, match=r"has the columns \[.*\], but the model was fitted on \["):
                replay(fitted, other)


def test_model_transform_dask_refuses_what_is_not_a_numeric_dask_array():
    """Regression: an ndarray gave `'numpy.ndarray' object has no attribute 'rechunk'`; a dask array of
    numeric strings was parsed as numbers, one of other strings failed on a worker naming nothing."""
    import dask.array as da

    from cdfts_dask import model

    fitted = cdfts_dask.CDFTS(max_iter=1).fit(np.random.default_rng(0).random((20, 3))).model_
    with pytest.raises(TypeError, match=r"^X must be a dask array \(transform_numpy takes an in-memory"):
        model.transform_dask(fitted, np.ones((4, 3)))
    with pytest.raises(TypeError, match=r"^X must be numeric, got dtype <U1"):
        model.transform_dask(fitted, da.from_array(np.array([["1", "2", "3"]])))
    # not 2-D (found by the second mutation audit of the model, 2026-12-07: unchecked, a 1-D array was an
    # IndexError naming nothing, a 3-D one of 3 columns was replayed)
    for shape in ((6,), (2, 3, 3)):
        with pytest.raises(ValueError, match=r"^X must be 2-dimensional \(n points x d attributes\)"):
            model.transform_dask(fitted, da.ones(shape))


def test_an_int_beyond_float64_and_a_pandas_na_are_named():
    """Regression: `[[10**400, 1.0], ...]` raised a bare `OverflowError` (cdf_ts and CDFTS); `pd.NA` in a
    nullable column was `float() argument must be ... not 'NAType'`, naming neither row nor column."""
    huge = [[10**400, 1.0], [2.0, 3.0], [4.0, 5.0]]
    for fit in (cdfts_dask.cdf_ts, lambda X: cdfts_dask.CDFTS().fit(X)):
        with pytest.raises(TypeError, match=r"^X must be a numeric array: int too large to convert to float"):
            fit(huge)
    frame = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": [1.0, 2.0, 3.5]})
    with pytest.raises(ValueError, match=r"^X contains missing values \(first at row 1, column 0: <NA>\)"):
        cdfts_dask.cdf_ts(frame)


def test_the_estimator_refuses_a_categorical_column_as_cdf_ts_does():
    """Regression: `CDFTS` let a pandas categorical column through (its dtype's kind is 'O', which the
    estimator admits for scikit-learn's object arrays of numbers): labels "0", "1", "2" became points."""
    frame = pd.DataFrame({"a": np.arange(10.0), "b": pd.Categorical([str(i % 3) for i in range(10)])})
    for fit in (cdfts_dask.cdf_ts, lambda X: cdfts_dask.CDFTS().fit(X)):
        with pytest.raises(TypeError, match=r"^X column 'b' must be numeric, got dtype category"):
            fit(frame)


def _url_refused(argument: str, url: str) -> str:
    """The refusal of ``url`` given as ``argument``, as a pattern."""
    return (rf"{argument}: '{re.escape(url)}' is a URL; cdfts-dask takes paths on a file system this machine "
            "and the Dask workers share")  # fmt: skip


# found by a new-user audit, 2026-12-07: each was read as ./s3:/..., "file not found" or a missing folder
URL_API = {
    "input-zarr": (lambda X: cdfts_dask.cdf_ts("s3://b/x.zarr"), _url_refused("X", "s3://b/x.zarr")),
    "input-csv": (lambda X: cdfts_dask.cdf_ts("gs://b/x.csv", method="dense"), _url_refused("X", "gs://b/x.csv")),
    "output": (lambda X: cdfts_dask.cdf_ts(X, output="s3://b/o.zarr"), _url_refused("output", "s3://b/o.zarr")),
    "checkpoint": (
        lambda X: cdfts_dask.cdf_ts(X, checkpoint="s3://b/c.zarr"), _url_refused("checkpoint", "s3://b/c.zarr")
    ),
    "fit-input": (lambda X: cdfts_dask.CDFTS().fit("https://h/x.npy"), _url_refused("X", "https://h/x.npy")),
    "transform-output": (
        lambda X: cdfts_dask.CDFTS(method="dense", max_iter=1).fit(X).transform(X, output="s3://b/o.npy"),
        _url_refused("output", "s3://b/o.npy"),
    ),
    "model": (lambda X: cdfts_dask.model.load("s3://b/m.zarr"), _url_refused("model", "s3://b/m.zarr")),
    "file-url": (
        lambda X: cdfts_dask.cdf_ts(X, checkpoint="file:///tmp/a%20b/c.zarr"),
        r"checkpoint: 'file:///tmp/a%20b/c.zarr' is a file:// URL: give its path, '/tmp/a b/c.zarr'$",
    ),
}


@pytest.mark.parametrize("case", sorted(URL_API))
def test_a_url_is_refused_naming_the_argument_before_any_work(tmp_path, monkeypatch, case):
    """A URL where a path goes is refused as a URL (not as a missing ``./s3:/...``), naming the argument,
    before any work: nothing is written, no cluster starts (the embedded one would take seconds)."""
    monkeypatch.chdir(tmp_path)
    call, pattern = URL_API[case]
    with pytest.raises(ValueError, match=f"^{pattern}"):
        call(FIVE)
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["transform", "s3://b/x.csv", "o.csv"], "transform: error: " + _url_refused("input", "s3://b/x.csv")),
        (["transform", "IN", "s3://b/o.csv"], "transform: error: " + _url_refused("output", "s3://b/o.csv")),
        (["transform", "IN", "o.csv", "--checkpoint", "gs://b/c.zarr"],
         "transform: error: " + _url_refused("--checkpoint", "gs://b/c.zarr")),
        (["transform", "file:///x/in.csv", "o.csv"],
         r"transform: error: input: 'file:///x/in.csv' is a file:// URL: give its path, '/x/in.csv'$"),
        (["apply", "s3://b/m.zarr", "IN", "o.csv"], "apply: error: " + _url_refused("model", "s3://b/m.zarr")),
        (["apply", "m.zarr", "https://h/x.csv", "o.csv"],
         "apply: error: " + _url_refused("input", "https://h/x.csv")),
        (["plot", "IN", "--out", "s3://b/figs"], "plot: error: " + _url_refused("--out", "s3://b/figs")),
        (["evaluate", "--data", "s3://b/x.csv", "--out", "res"],
         "evaluate: error: " + _url_refused("--data", "s3://b/x.csv")),
    ],  # fmt: skip
    ids=["transform-input", "transform-output", "transform-checkpoint", "transform-file-url", "apply-model",
         "apply-input", "plot-out", "evaluate-data"],  # fmt: skip
)
def test_a_url_on_the_command_line_is_one_line_naming_the_option(tmp_path, monkeypatch, capsys, argv,
                                                                 pattern):
    """The command line's paths likewise: exit 2, one line, nothing made (``plot --out s3://b/figs`` made
    the folders ``./s3:/b/figs``)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.csv").write_text("a,b\n0,0\n1,0\n0,1\n1,1\n")
    argv = [str(tmp_path / "in.csv") if a == "IN" else a for a in argv]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(rf"cdfts {pattern}", err[0]), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_local_folder_named_like_a_scheme_is_a_path(tmp_path, monkeypatch):
    """``s3://b/x.npy`` where a folder ``s3:`` exists here is that folder's file, read as any path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s3:" / "b").mkdir(parents=True)
    np.save(tmp_path / "s3:" / "b" / "x.npy", FIVE)
    got = cdfts_dask.cdf_ts("s3://b/x.npy", method="dense", max_iter=2)
    np.testing.assert_array_equal(got, cdfts_dask.cdf_ts(FIVE, method="dense", max_iter=2))
