"""Out-of-core input: a Zarr path (or dask array) is read chunk-wise by the workers, never by the client."""

from __future__ import annotations

import gc
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import zarr

import cdfts_dask
from cdfts_dask.lazy import lazy_input


def make_zarr(path, X: np.ndarray, rows_per_chunk: int):
    arr = zarr.create_array(str(path), shape=X.shape, dtype=X.dtype, chunks=(rows_per_chunk, X.shape[1]))
    arr[...] = X
    return str(path)


def test_zarr_input_tiled_equals_dense(tmp_path, client):
    X = np.random.default_rng(1).random((300, 3))
    path = make_zarr(tmp_path / "in.zarr", X, 64)  # 5 chunks, read by 5 worker tasks
    ref = cdfts_dask.cdf_ts(X, max_iter=3, method="dense")
    out = cdfts_dask.cdf_ts(
        path, max_iter=3, method="tiled", client=client, tile_size=100, output=tmp_path / "out.zarr"
    )
    assert isinstance(out, zarr.Array)
    np.testing.assert_allclose(out[...], ref, rtol=0, atol=1e-9)


def test_dask_array_input_stays_on_workers(client):
    """Lazy in, lazy out: with the caller's client the result is a dask array whose data is still on
    the workers (chunked like the input) until the caller computes it."""
    import dask.array as da
    X = np.random.default_rng(2).random((200, 2))
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    out = cdfts_dask.cdf_ts(da.from_array(X, chunks=(50, 2)), max_iter=2, method="tiled", client=client)
    assert isinstance(out, da.Array) and out.chunks == ((50, 50, 50, 50), (2,))
    assert any(type(v).__name__ == "Future" for v in dict(out.dask).values())  # not fetched to the client
    np.testing.assert_allclose(client.compute(out).result(), ref, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_dask_array_out_outlives_an_embedded_cluster():
    """Without a client the run's cluster closes at the end: the dask array returned holds the data."""
    import dask.array as da
    X = np.random.default_rng(4).random((150, 2))
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    dense = cdfts_dask.cdf_ts(da.from_array(X, chunks=(40, 2)), max_iter=2, method="dense")
    tiled = cdfts_dask.cdf_ts(da.from_array(X, chunks=(40, 2)), max_iter=2, method="tiled", n_workers=1)
    for out in (dense, tiled):
        assert isinstance(out, da.Array) and out.chunks == ((40, 40, 40, 30), (2,))
        np.testing.assert_allclose(out.compute(scheduler="sync"), ref, rtol=0, atol=1e-9)


def test_nan_in_a_zarr_chunk_is_reported_by_the_worker(tmp_path, client):
    X = np.random.default_rng(3).random((100, 2))
    X[77, 1] = np.nan
    path = make_zarr(tmp_path / "bad.zarr", X, 25)
    with pytest.raises(ValueError, match=r"contains NaN or inf \(first at row 77, column 1"):
        cdfts_dask.cdf_ts(path, method="tiled", client=client)


def _held_keys(client) -> tuple[set, set]:
    """The keys of the client's futures and of the scheduler's tasks."""
    tasks = client.run_on_scheduler(lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks])
    return {str(k) for k in client.futures}, set(tasks)


def _kept_after(client, before: tuple[set, set]) -> tuple[set, set]:
    """The keys held now that were not held ``before``, once the client's releases (sent from its event
    loop) have reached the scheduler, or after 20 s of asking."""
    for _ in range(200):
        gc.collect()
        now = _held_keys(client)
        kept = (now[0] - before[0], now[1] - before[1])
        if kept == (set(), set()):
            break
        time.sleep(0.1)
    return kept


def test_a_failed_read_of_a_dask_input_leaves_nothing_on_the_client_or_the_scheduler(client):
    """The worker's error is raised once the failed read is released: re-raising the error the client
    stored put the raising frame, which held the future, in its traceback, and the client's future
    table then kept the future, its 7 scheduler tasks and the input until the client closed."""
    import dask.array as da

    X = np.random.default_rng(5).random((90, 2))
    X[50, 0] = np.nan
    before = _held_keys(client)
    with pytest.raises(ValueError, match=r"contains NaN or inf \(first at row 50, column 0"):
        cdfts_dask.cdf_ts(da.from_array(X, chunks=(30, 2)), method="tiled", client=client)
    assert _kept_after(client, before) == (set(), set())


def _failing_summary(*args, **kwargs):
    raise ArithmeticError("a task of the iteration failed")


def test_a_task_failing_mid_run_leaves_nothing_on_the_client_or_the_scheduler(monkeypatch):
    """Found beside the failed read (same audit): a task failing in the middle of an iteration (here the
    end-of-iteration summary, on in-process workers) left the run's futures (the points, the iteration's
    parts) on a given client until it closed: the error the client keeps for the failed task held, in its
    traceback, the frames that held them (12 futures and 12 tasks per failed run).  The tiled run now
    clears those frames' variables as the error leaves (``api._forget_the_runs_futures``), and the error
    is the task's."""
    from distributed import Client, LocalCluster

    import cdfts_dask.engine.graph as graph

    monkeypatch.setattr(graph, "_summary", _failing_summary)
    X = np.random.default_rng(6).random((300, 2))
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as c,
    ):
        before = _held_keys(c)
        for _ in range(2):
            with pytest.raises(ArithmeticError, match="a task of the iteration failed"):
                cdfts_dask.cdf_ts(X, method="tiled", client=c, tile_size=64)
        assert _kept_after(c, before) == (set(), set())


def test_a_progress_callback_that_raises_keeps_its_variables_for_a_debugger(client):
    """The frames cleared as an error leaves a tiled run are the package's and Dask's only: a caller's
    ``progress`` callback that raised keeps its local variables (``pdb.pm()``, ``--showlocals``), while
    the runner's frames (which held the run's futures) are cleared."""
    import traceback

    def progress(report):
        important = f"the caller's state at iteration {report.iteration}"  # noqa: F841
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here") as info:
        cdfts_dask.cdf_ts(np.random.default_rng(8).random((80, 2)), method="tiled", client=client,
                          tile_size=32, progress=progress)  # fmt: skip
    frames = [frame for frame, _ in traceback.walk_tb(info.value.__traceback__)]
    assert frames[-1].f_code.co_name == "progress"
    assert frames[-1].f_locals["important"] == "the caller's state at iteration 1"
    runner_frames = [f for f in frames if f.f_globals["__name__"] == "cdfts_dask.runner"]
    assert runner_frames and all(f.f_locals == {} for f in runner_frames)


#: for _held_back_block: the in-process scheduler, and the points (NaN in both row chunks)
_HELD_BACK: dict = {}


def _held_back_block(block_info=None) -> np.ndarray:
    """A 30-row block of ``_HELD_BACK["X"]``; block 0 is held back until every task of block 1 has
    finished (in memory, or erred), so that the later block is checked first."""
    (r0, r1), _ = block_info[None]["array-location"]
    tasks = _HELD_BACK["scheduler"].tasks
    for _ in range(600 if r0 == 0 else 0):  # at most a minute: never a hang
        later = [ts for key, ts in tasks.items() if isinstance(key, tuple) and key[1:] == (1, 0)]
        if later and all(ts.state in ("memory", "erred") for ts in later):
            break
        time.sleep(0.1)
    return _HELD_BACK["X"][r0:r1]


def test_nan_in_several_blocks_is_named_at_its_first_row():
    """Regression (a storage audit: a Zarr array with NaN from row 140 on was "first at row 280" on the
    tiled path, 140 on the dense one): each block named its own first NaN and the block that failed
    first won.  Here the later block is made to be checked first (the earlier one waits for it, on a
    worker of two threads): the first row is still named, as the dense path names it."""
    import dask.array as da
    from distributed import Client, LocalCluster

    X = np.random.default_rng(13).random((60, 2))
    X[10, 1] = X[45, 0] = np.nan
    held = da.map_blocks(_held_back_block, chunks=((30, 30), (2,)), dtype=np.float64, name="held-back")
    message = r"contains NaN or inf \(first at row 10, column 1: nan\)"
    with (
        LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as c,
    ):
        _HELD_BACK.update(scheduler=cluster.scheduler, X=X)
        try:
            with pytest.raises(ValueError, match=message):
                cdfts_dask.cdf_ts(held, method="tiled", client=c)
        finally:
            _HELD_BACK.clear()
    with pytest.raises(ValueError, match=message):
        cdfts_dask.cdf_ts(X, method="dense")


def test_only_metadata_is_read_on_the_client(tmp_path, monkeypatch):
    X = np.random.default_rng(4).random((40, 3))
    path = make_zarr(tmp_path / "in.zarr", X, 10)

    def boom(*args, **kwargs):  # any client-side read of the values fails the test
        raise AssertionError("client read the array values")

    monkeypatch.setattr(zarr.Array, "__getitem__", boom)
    lazy = lazy_input(path)
    assert lazy.shape == (40, 3)


def _client_peak(path, client, tile: int, out) -> int:
    """tracemalloc peak (bytes) of this process while cdf_ts runs on ``path`` and writes ``out``."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        cdfts_dask.cdf_ts(path, max_iter=1, method="tiled", client=client, tile_size=tile, output=out)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_client_memory_does_not_grow_with_input(tmp_path, client):
    """Quadruple n at fixed d (same number of chunks, panels and tasks): the client's peak stays flat.

    Loading on the client (the in-memory path) grows the peak by ~3x the
    extra input bytes (read + float64 copy + scatter); here it may grow by
    at most a quarter of them.
    """
    d = 128
    sizes = {}
    for n in (96, 384, 1536):
        X = np.random.default_rng(n).random((n, d))
        sizes[n] = (make_zarr(tmp_path / f"in{n}.zarr", X, n // 4), X.nbytes)
    _client_peak(sizes[96][0], client, 24, tmp_path / "warm.zarr")  # imports, first-use caches
    small = _client_peak(sizes[384][0], client, 96, tmp_path / "out_small.zarr")
    large = _client_peak(sizes[1536][0], client, 384, tmp_path / "out_large.zarr")
    grown_input = sizes[1536][1] - sizes[384][1]  # 1.18 MB
    assert large - small < grown_input / 4, (small, large, grown_input)
    assert large < sizes[1536][1] + small, (small, large)  # never a full copy of the input


def _write_csv(path, X: np.ndarray, header: str | None, labels=None) -> None:
    with open(path, "w", encoding="utf-8-sig") as fh:  # a byte-order mark, as spreadsheets write
        if header:
            fh.write(header + "\n")
        for i, row in enumerate(X):
            fh.write(",".join([repr(float(v)) for v in row] + ([] if labels is None else [labels[i]])) + "\n")
            if i % 97 == 0:
                fh.write("\n" if i % 2 else "  \n")  # blank lines are skipped, as by the eager reader


@pytest.fixture
def small_csv_threshold(monkeypatch):
    """Treat every CSV file as large and cut it into blocks of ~3 kB (several blocks per file)."""
    from cdfts_dask import csv_blocks

    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)
    monkeypatch.setattr(csv_blocks, "CSV_BLOCK_BYTES", 3000)


@pytest.mark.parametrize("header", ["a,b,c", None])
def test_large_csv_is_parsed_block_wise_by_the_workers(tmp_path, client, small_csv_threshold, header):
    from cdfts_dask.inputs import read_table

    X = np.random.default_rng(8).random((500, 3))
    path = tmp_path / "big.csv"
    _write_csv(path, X, header)
    lazy = lazy_input(str(path))
    assert lazy.shape == (500, 3) and lazy.array.numblocks[0] >= 5  # several parse tasks
    np.testing.assert_array_equal(lazy.load(), read_table(path)[0])  # the eager reader's values, exactly
    np.testing.assert_array_equal(lazy.load(), X)  # rows in file order
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    out = cdfts_dask.cdf_ts(str(path), max_iter=2, method="tiled", client=client, tile_size=128)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-9)


def test_a_block_inside_one_long_line_holds_no_row_and_is_skipped(tmp_path, small_csv_threshold):
    """A block that lies inside one line (here a header of 7000 bytes, blocks of 3000 bytes) holds no line
    (no test had one before a mutation audit, 2026-12-07); it gets no parse task, and every row is read,
    in order, as the eager reader reads them."""
    from cdfts_dask import csv_blocks
    from cdfts_dask.inputs import read_table

    X = np.random.default_rng(9).random((400, 2))
    path = tmp_path / "long_header.csv"
    _write_csv(path, X, "x" * 7000 + ",b")
    import dask

    sizes = [len(b) for b in dask.compute(*csv_blocks._block_tasks(str(path)))]
    assert sizes[1] == 0  # block 0 ends where the header line does: block 1 lies inside that line
    lazy = lazy_input(str(path))
    assert lazy.array.numblocks[0] == len(sizes) - 2  # no parse task for block 0 (the header) nor block 1
    np.testing.assert_array_equal(lazy.load(), X)
    np.testing.assert_array_equal(lazy.load(), read_table(path)[0])


def test_a_large_txt_file_is_read_block_wise_as_its_csv_twin(tmp_path, small_csv_threshold):
    """``.txt`` is read as comma-separated text (:data:`~cdfts_dask.csv_input.CSV_SUFFIXES`) by the eager
    reader, so a large one is read by the workers as a large ``.csv`` is (it was read here, whole)."""
    from cdfts_dask.inputs import read_table

    X = np.random.default_rng(9).random((500, 3))
    _write_csv(tmp_path / "big.csv", X, "a,b,c")
    (tmp_path / "big.txt").write_bytes((tmp_path / "big.csv").read_bytes())
    lazy = lazy_input(str(tmp_path / "big.txt"))
    assert lazy is not None and lazy.array.numblocks[0] >= 5
    np.testing.assert_array_equal(lazy.load(), read_table(tmp_path / "big.csv")[0])


def test_large_csv_with_label_column_equals_the_eager_read(tmp_path, small_csv_threshold):
    from cdfts_dask.csv_blocks import csv_blocks, csv_labels
    from cdfts_dask.csv_input import csv_layout
    from cdfts_dask.inputs import read_table

    X = np.random.default_rng(10).random((400, 2))
    names = [f"c{i % 3}" for i in range(400)]
    path = tmp_path / "big.csv"
    _write_csv(path, np.column_stack([X[:, 0], X[:, 1]]), "x,y,label", names)
    layout = csv_layout(path, "label", "input")
    features = csv_blocks(path, layout, "input")
    eager_X, eager_labels, eager_header = read_table(path, "label", "input")
    assert features.numblocks[0] >= 5
    np.testing.assert_array_equal(features.compute(), eager_X)
    assert list(csv_labels(path, layout, features.shape[0])) == list(eager_labels) == names
    assert layout.feature_header() == eager_header == ["x", "y"]


def _eager_error(path):
    from cdfts_dask.inputs import read_table

    with pytest.raises((ValueError, TypeError)) as eager:
        read_table(path, name="X")
    return eager


@pytest.mark.parametrize(
    "bad_line, kind, message",
    [
        ("3,oops", TypeError, r"^X: non-numeric value 'oops' at row 1001, column 2 of '.*bad.csv' \(if 'b' "
         r"is a label, not a feature: set it aside, with --label=b on the command line\)$"),
        ("3,", ValueError, r"^X: missing value \(empty cell\) at row 1001, column 2 of '.*bad.csv'$"),
    ],
)
def test_large_csv_bad_cell_in_a_late_block_is_the_eager_error(tmp_path, client, small_csv_threshold,
                                                                bad_line, kind, message):  # fmt: skip
    lines = ["a,b"] + [f"{i}.{i % 7},{i % 5}.5" for i in range(1200)]  # 13 kB: 4 blocks
    lines[1001] = bad_line  # data row 1001, file line 1002: in the last block
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    assert lazy_input(str(path)).array.numblocks[0] == 4
    eager = _eager_error(path)
    with pytest.raises(kind, match=message) as blocks:
        cdfts_dask.cdf_ts(str(path), method="tiled", client=client)
    assert str(blocks.value) == str(eager.value) and "\n" not in str(blocks.value)


def _numbered(n: int, ncols: int = 2, label: bool = False) -> list[str]:
    """Data lines ``i.5,i.6[,...][,c0|c1]``: 13 kB for n = 1200 (4 blocks of ~3 kB)."""
    tail = [f"c{i % 2}" for i in range(n)] if label else [None] * n
    return [",".join([f"{i}.{j + 5}" for j in range(ncols)] + ([t] if t else [])) for i, t in enumerate(tail)]


def _replaced(lines: list[str], index: int, line: str) -> list[str]:
    return lines[:index] + [line] + lines[index + 1 :]


#: name -> (file lines, --label, the error's end): a line of another field count than the first row
RAGGED_LARGE = {
    "long-row-in-a-late-block": (
        _replaced(["a,b"] + _numbered(1200), 1001, "3,4,5"),
        None,
        "line 1002 has 3 fields, expected 2",
    ),
    "short-row-in-a-late-block": (
        _replaced(["a,b"] + _numbered(1200), 1001, "3"),
        None,
        "line 1002 has 1 fields, expected 2",
    ),
    "comment-first-line": (
        ["# exported by sim.py"] + _numbered(400, 3),
        None,
        "line 2 has 3 fields, expected 1",
    ),
    "header-shorter-than-rows": (["a,b"] + _numbered(400, 3), None, "line 2 has 3 fields, expected 2"),
    "label-missing-in-a-late-block": (
        _replaced(["x,y,label"] + _numbered(1200, label=True), 1001, "3.5,4.5"),
        "label",
        "line 1002 has 2 fields, expected 3",
    ),
    "header-missing-a-name-with-label": (
        ["x,label"] + _numbered(400, label=True),
        "label",
        "line 2 has 3 fields, expected 2",
    ),
    # 60 blank lines in the first block: a later block's lines are counted from the file's lines, blank
    # ones too, as the eager reader counts them (found by a mutation audit, 2026-12-07: counting the
    # earlier blocks' data rows named line 1002 here)
    "long-row-after-blank-lines": (
        _replaced(["a,b"] + _numbered(100) + [""] * 60 + _numbered(1200)[100:], 1061, "3,4,5"),
        None,
        "line 1062 has 3 fields, expected 2",
    ),
}


@pytest.mark.parametrize("case", sorted(RAGGED_LARGE))
def test_large_csv_ragged_line_is_the_eager_error_before_any_parsing(tmp_path, small_csv_threshold,
                                                                      monkeypatch, case):  # fmt: skip
    """Before: the first line's field count set the columns and pandas made extra leading fields an index
    (a comment line or a short header: the leading columns silently dropped), a missing label read as
    '', a ragged row in a late block was found only by the worker parsing it.  Now the client refuses
    the file from the blocks' line scan, with the eager reader's error, before any block is parsed."""
    from cdfts_dask import csv_blocks
    from cdfts_dask.csv_input import csv_layout
    from cdfts_dask.inputs import read_table

    lines, label, message = RAGGED_LARGE[case]
    path = tmp_path / "ragged.csv"
    path.write_text("\n".join(lines) + "\n")

    def no_parsing(*args):
        raise AssertionError("a block was parsed")

    monkeypatch.setattr(csv_blocks, "_parse", no_parsing)
    with pytest.raises(ValueError, match=f"^X: '.*ragged.csv' {message}$") as eager:
        read_table(path, label, name="X")
    with pytest.raises(ValueError) as blocks:
        csv_blocks.csv_blocks(path, csv_layout(path, label, "X"), "X").compute()
    assert str(blocks.value) == str(eager.value)


@pytest.mark.parametrize("name, decoy", [("run::v2.csv", "run"), ("sweep*.csv", "sweep1.csv"),
                                         ("v*[1]?.csv", "v11.csv")])  # fmt: skip
def test_large_csv_name_is_read_literally(tmp_path, small_csv_threshold, name, decoy):
    """Before: the blocks came from ``dask.bytes.read_bytes``, which reads ``run::v2.csv`` as the chained
    URL of the file ``run`` and a name holding ``*`` as a glob (``v*[1]?.csv`` matches only ``v11.csv``):
    the decoy's values with exit 0, or an unpacking error for two matches.  Now the named file is
    opened as it is."""
    from cdfts_dask.inputs import read_table

    X = np.random.default_rng(13).random((300, 2))
    _write_csv(tmp_path / name, X, "a,b")
    _write_csv(tmp_path / decoy, X * 5 + 1, "a,b")
    lazy = lazy_input(str(tmp_path / name))
    assert lazy.array.numblocks[0] >= 3
    np.testing.assert_array_equal(lazy.load(), X)
    np.testing.assert_array_equal(lazy.load(), read_table(tmp_path / name)[0])


def test_large_csv_bom_only_first_line_equals_the_eager_read(tmp_path, small_csv_threshold):
    """Before: the blocks' line count took a first line holding only a byte-order mark for a row
    ('a block parsed to 157 rows, its lines say 158'); the eager reader skips it as blank."""
    from cdfts_dask.inputs import read_table

    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf\na,b\n" + b"".join(f"{i}.5,{i % 3}.25\n".encode() for i in range(1200)))
    lazy = lazy_input(str(path))
    assert lazy.shape == (1200, 2) and lazy.array.numblocks[0] >= 3
    np.testing.assert_array_equal(lazy.load(), read_table(path)[0])


def test_large_csv_row_count_is_checked(tmp_path, small_csv_threshold):
    """A quoted line break (a documented limitation) shifts no row: the block's row count says so."""
    from cdfts_dask.csv_blocks import csv_blocks
    from cdfts_dask.csv_input import csv_layout

    path = tmp_path / "quoted.csv"
    path.write_text("a,b,label\n" + "".join(f"{i},{i % 3},x\n" for i in range(50)) + '1,2,"two\nlines"\n')
    features = csv_blocks(path, csv_layout(path, "label", "X"), "X")
    assert features.shape == (52, 2)  # the lines' count: one too many
    with pytest.raises(ValueError, match=r"quoted.csv': a block parsed to 51 rows, its lines say 52$"):
        features.compute()


def test_cli_large_csv_with_label_read_by_the_workers(tmp_path, client, small_csv_threshold, monkeypatch):
    from cdfts_dask.cli import apply, main, transform

    X = np.random.default_rng(9).random((300, 2))
    labels = [str(i % 2) for i in range(300)]
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _write_csv(src, X, "x0,x1,label", labels)
    monkeypatch.setattr(transform, "read_table", None)  # the client does not read the table
    monkeypatch.setattr(apply, "read_table", None)
    cli = ["transform", str(src), str(out), "--scheduler", client.scheduler.address, "--quiet"]
    assert main(cli) == 2 and not out.exists()  # a column named like a label is refused before any work
    store = tmp_path / "run.zarr"
    assert main([*cli, "--max-iter", "2", "--label", "label", "--checkpoint", str(store)]) == 0
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    again = tmp_path / "again.csv"  # cdfts apply reads a large CSV the same way
    assert main(["apply", str(store), str(src), str(again), "--label", "label", "--quiet",
                 "--scheduler", client.scheduler.address]) == 0  # fmt: skip
    for path in (out, again):
        written = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8")
        assert written.dtype.names == ("x0", "x1", "label")
        np.testing.assert_allclose(np.column_stack([written["x0"], written["x1"]]), ref, rtol=0, atol=1e-9)
        assert [str(v) for v in written["label"]] == labels


def test_estimator_reads_a_large_csv_chunk_wise(tmp_path, client, small_csv_threshold):
    import dask.array as da
    X = np.random.default_rng(11).random((300, 2))
    path = tmp_path / "big.csv"
    _write_csv(path, X, "a,b")
    est = cdfts_dask.CDFTS(max_iter=2, method="tiled", client=client)
    out = est.fit_transform(str(path))
    assert isinstance(out, da.Array)  # like a Zarr path: lazy in, lazy out, on the caller's client
    ref = cdfts_dask.cdf_ts(X, max_iter=2, method="dense")
    np.testing.assert_allclose(client.compute(out).result(), ref, rtol=0, atol=1e-9)
    again = client.compute(est.transform(str(path))).result()
    np.testing.assert_allclose(again, ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("large", [False, True])  # read here / block-wise by the workers
def test_api_warns_when_a_csv_column_is_named_like_a_label(tmp_path, request, large):
    """The command line refuses such a file unless told --label or --no-label; the API (no label
    parameter) transforms every column, and now says so (regression: it did silently)."""
    if large:
        request.getfixturevalue("small_csv_threshold")
    X = np.random.default_rng(12).random((60, 3))
    path = tmp_path / "labelled.csv"
    _write_csv(path, X, "a,b,Class")
    message = r"X: column 'Class' of '.*labelled.csv' is named like a label and is transformed as a feature"
    with pytest.warns(UserWarning, match=message) as record:
        out = cdfts_dask.cdf_ts(str(path), max_iter=1, method="dense")
    assert len(record) == 1 and out.shape == (60, 3)
    _write_csv(path, X, "a,b,c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cdfts_dask.cdf_ts(str(path), max_iter=1, method="dense")


@pytest.mark.parametrize("reader", ["eager", "block-wise"])
def test_lone_carriage_return_line_breaks_read_as_newlines(tmp_path, monkeypatch, reader):
    """Regression: pandas' C tokenizer misreads the line after a blank line ended by a lone ``\\r`` when
    it starts with a comma.  In a classic-Mac-OS file (every line break a lone ``\\r``) a row with an
    empty first label was read shifted left (features 3, 1 instead of 1, 2 after the label ''), exit 0,
    a row of empty features vanished, and an empty feature was reported in the wrong column.  Now such a
    file reads as the same text with ``\\n`` line breaks, and a file that mixes both is refused at that
    blank line."""
    from cdfts_dask import csv_blocks
    from cdfts_dask.csv_input import csv_layout
    from cdfts_dask.inputs import read_table

    if reader == "block-wise":
        monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)
        monkeypatch.setattr(csv_blocks, "CSV_BLOCK_BYTES", 8)

    def read(text: str, label=None):
        path = tmp_path / "in.csv"
        path.write_bytes(text.encode())
        if reader == "eager":
            return read_table(path, label_column=label, name="X")[:2]
        layout = csv_layout(path, label, "X")
        features = csv_blocks.csv_blocks(path, layout, "X").compute(scheduler="sync")
        labels = None if label is None else list(csv_blocks.csv_labels(path, layout, features.shape[0]))
        return features, labels

    labelled = "cls,x,y\n0,1,2\n\n,3,4\n1,5,6\n \n,7,8\n"
    want_X, want_labels = read(labelled, "cls")
    np.testing.assert_array_equal(want_X, [[1, 2], [3, 4], [5, 6], [7, 8]])
    assert list(want_labels) == ["0", "", "1", ""]
    got_X, got_labels = read(labelled.replace("\n", "\r"), "cls")
    np.testing.assert_array_equal(got_X, want_X)
    assert list(got_labels) == list(want_labels)
    for text, column in (("a,b\r1,2\r\r,5\r3,4\r", 1), ("a,b\r1,2\r\r,\r3,4\r", 1), ("a,b\r1,2\r\r3,\r", 2)):
        with pytest.raises(ValueError, match=rf"missing value \(empty cell\) at row 2, column {column} of"):
            read(text)
    for mixed in ("a,b\n1,2\n3,4\r\r,5\n6,7\n", "a,b\n1,2\n3,4\r\r,5\r6,7"):  # the second: after the last \n
        with pytest.raises(ValueError, match=r"line 4 is a blank line ended by a lone carriage return"):
            read(mixed)


@pytest.mark.parametrize("signs", ["after commas", "after blanks and line breaks"])
@pytest.mark.parametrize("reader", ["eager", "block-wise"])
def test_numbers_with_a_plus_sign_and_spaces_read_exactly(tmp_path, monkeypatch, reader, signs):
    """Regression: pandas' C parser read a number with a ``+`` sign and a space or tab in its cell
    (``%+g``-style, or ``"%r, %+r"``) one ulp off in about one cell of ten: 0.9504636963259352 for
    ``+0.9504636963259353 ``.  Both readers now give every cell's correctly rounded float, as for any
    other file, and still name a bad cell; also where no ``+`` follows a comma (a mutation audit: a
    sign after a blank or a line break alone went unseen, and the test had commas before signs)."""
    from cdfts_dask import csv_blocks
    from cdfts_dask.inputs import read_table
    from cdfts_dask.lazy import lazy_input as lazy

    if reader == "block-wise":
        monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)
        monkeypatch.setattr(csv_blocks, "CSV_BLOCK_BYTES", 2000)
    rng = np.random.default_rng(5)
    X = rng.random((300, 2)) * 10.0 ** rng.integers(-3, 4, (300, 2))
    path = tmp_path / "signed.csv"
    if signs == "after commas":
        lines = [f"{x!r}, +{y!r}" if i % 2 else f" +{x!r}\t,+{y!r} " for i, (x, y) in enumerate(X.tolist())]
    else:
        lines = [f"{x!r}, +{y!r}" if i % 2 else f"+{x!r} ,\t+{y!r}" for i, (x, y) in enumerate(X.tolist())]
    path.write_text("a,b\n" + "\n".join(lines) + "\n")

    def read():
        if reader == "eager":
            return read_table(path, name="X")[0]
        source = lazy(str(path), "X")
        assert source.array.numblocks[0] >= 3
        return source.array.compute(scheduler="sync")

    np.testing.assert_array_equal(read(), X)
    path.write_text("a,b\n" + "\n".join(lines[:200] + [" +1.5, +x "] + lines[200:]) + "\n")
    with pytest.raises(TypeError, match=r"non-numeric value ' \+x ' at row 201, column 2 of"):
        read()


@pytest.mark.parametrize("reader", ["eager", "block-wise"])
def test_boolean_words_are_refused_as_text_by_both_readers(tmp_path, monkeypatch, reader):
    """Regression: pandas' C parser read a float column whose cells were all ``True`` / ``False`` (any
    case) as 1.0 / 0.0, while the header rule took them as text: a file without a header whose first row
    began ``True,...`` lost that row as a header and transformed the others with True = 1, exit 0; the
    block-wise reader read a block of such cells that the eager reader refused.  Both now refuse the
    word, naming its row and column; numbers in a file that also holds the words elsewhere (a label)
    read exactly, through pandas' float parser unless a feature column is all 0s and 1s."""
    from cdfts_dask import csv_blocks, csv_input
    from cdfts_dask.csv_input import csv_layout
    from cdfts_dask.inputs import read_table

    monkeypatch.setattr(csv_blocks, "CSV_BLOCK_BYTES", 200)

    def read(text, label=None):
        path = tmp_path / "words.csv"
        path.write_text(text)
        if reader == "eager":
            return read_table(path, label, name="X")[:2]
        layout = csv_layout(path, label, "X")
        blocks = csv_blocks.csv_blocks(str(path), layout, "X")
        assert blocks.numblocks[0] >= min(3, len(text) // 200)
        X = blocks.compute(scheduler="sync")
        return X, None if label is None else csv_blocks.csv_labels(str(path), layout, len(X), "X")

    rng = np.random.default_rng(2)
    X = rng.random((60, 2))
    rows = [f"{x!r},{y!r}" for x, y in X.tolist()]
    words = ["True", "FALSE", "tRue", "false"]
    with pytest.raises(TypeError, match=r"non-numeric value 'False' at row 1, column 1 of"):
        read("True,0.1\nFalse,0.5\nTrue,0.9\nFalse,0.3\n")  # no header: the first row a header
    block = [f"{words[i % 4]},{y!r}" for i, (_, y) in enumerate(X.tolist()[:30])]
    with pytest.raises(TypeError, match=r"non-numeric value 'True' at row 1, column 1 of"):
        read("a,b\n" + "\n".join(block + rows[30:]) + "\n")  # a column's first blocks all words
    only_false = [f"{('false', 'FALSE')[i % 2]},{y!r}" for i, (_, y) in enumerate(X.tolist())]
    with pytest.raises(TypeError, match=r"non-numeric value 'false' at row 1, column 1 of"):
        read("a,b\n" + "\n".join(only_false) + "\n")  # no "true" anywhere (a mutation audit)
    only_upper_true = [f"TRUE,{y!r}" for y in X[:, 1].tolist()]
    with pytest.raises(TypeError, match=r"non-numeric value 'TRUE' at row 1, column 1 of"):
        read("a,b\n" + "\n".join(only_upper_true) + "\n")  # no lower-case u, no l (a second mutation audit)
    onehot = (X[:, 0] > 0.5).astype(int)  # a feature of 0s and 1s beside the words: parsed again as text
    lines = [f"{r},{onehot[i]},{words[i % 4]}" for i, r in enumerate(rows)]
    got, labels = read("a,b,c,flag\n" + "\n".join(lines) + "\n", "flag")
    np.testing.assert_array_equal(np.asarray(got), np.column_stack([X, onehot]))
    assert list(labels) == [words[i % 4] for i in range(60)]
    # words in a label beside features that are not all 0 and 1: pandas' float parser, never the text path
    monkeypatch.setattr(csv_input, "exact_floats", None)
    labelled = "a,b,flag\n" + "\n".join(f"{r},{words[i % 4]}" for i, r in enumerate(rows)) + "\n"
    got, labels = read(labelled, "flag")
    np.testing.assert_array_equal(np.asarray(got), X)


def test_a_byte_order_mark_inside_a_file_is_refused_by_both_readers(tmp_path, monkeypatch):
    """Regression: two CSV files joined with ``cat`` (each with a byte-order mark) were refused when read
    whole (``non-numeric value '\\ufeff5'``) but read block-wise when a block began at the second mark."""
    from cdfts_dask import csv_blocks

    path = tmp_path / "joined.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n3,4\n" + b"\xef\xbb\xbf5,6\n7,8\n")
    message = r"non-numeric value '\\ufeff5' at row 3, column 1 of"  # the mark, written as its escape
    with pytest.raises(TypeError, match=message):
        cdfts_dask.cdf_ts(str(path), max_iter=1)
    monkeypatch.setattr(csv_blocks, "CSV_ON_WORKERS_BYTES", 1)
    monkeypatch.setattr(csv_blocks, "CSV_BLOCK_BYTES", 13)  # 26 bytes: 2 blocks, the second at the mark
    source = lazy_input(str(path), "X")
    assert source.array.numblocks[0] == 2
    with pytest.raises(TypeError, match=message):
        source.array.compute(scheduler="sync")


@pytest.mark.parametrize(
    ("row", "col", "value"),
    [(0, 0, np.nan), (0, 1, np.inf), (63, 0, -np.inf)],
    ids=["nan-row-0", "inf-row-0", "-inf"],
)
def test_nan_or_inf_anywhere_in_a_zarr_input_is_refused(tmp_path, client, row, col, value):
    """Found by a mutation audit (2026-12-06): a non-finite value in the first row of a lazy input, and an
    infinity anywhere, are refused and named as the NaN at row 77 is."""
    X = np.random.default_rng(5).random((100, 2))
    X[row, col] = value
    path = make_zarr(tmp_path / "bad.zarr", X, 25)
    message = rf"contains NaN or inf \(first at row {row}, column {col}: {value}\)"
    with pytest.raises(ValueError, match=message):
        cdfts_dask.cdf_ts(path, method="tiled", client=client)


def test_nan_in_blocks_of_columns_is_named_at_its_first_row_and_its_global_column(client):
    """Found by a mutation audit (2026-12-07): no test chunked an input's columns.  Blocks of 30 rows by
    2 columns, NaN at row 40, column 3 (the second column block) and at row 50, column 0: the first is
    row 40 (not the first by column, nor column 1 of its block), on the tiled and the dense path."""
    import dask.array as da

    X = np.random.default_rng(17).random((90, 4))
    X[40, 3] = X[50, 0] = np.nan
    message = r"contains NaN or inf \(first at row 40, column 3: nan\)"
    for engine in (dict(method="tiled", client=client), dict(method="dense")):
        with pytest.raises(ValueError, match=message):
            cdfts_dask.cdf_ts(da.from_array(X, chunks=(30, 2)), **engine)


def test_a_dask_output_is_written_whole_zarr_chunks_per_task(tmp_path, client, monkeypatch):
    """Found by a mutation audit (2026-12-06): the tasks that write a dask array output write with no lock,
    so each must write whole Zarr chunks (two tasks writing parts of one chunk at once lose one's rows).
    Irregular row blocks are rechunked first: every written block starts on a Zarr chunk boundary."""
    import dask.array as da

    from cdfts_dask import store as store_module

    written = []
    real_store = da.store

    def recording_store(sources, targets, **kwargs):
        written.append((sources.chunks[0], targets.chunks[0]))
        return real_store(sources, targets, **kwargs)

    monkeypatch.setattr(da, "store", recording_store)
    X = np.random.default_rng(9).random((47, 3))
    lazy = da.from_array(X, chunks=((7, 10, 10, 12, 8), (3,)))
    out = tmp_path / "out.zarr"
    store_module.write_dask_zarr(out, lazy, client)
    ((blocks, rows),) = written
    starts = np.cumsum((0, *blocks))[:-1]
    assert all(start % rows == 0 for start in starts), (blocks, rows)
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], X)
