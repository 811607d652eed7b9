"""A large CSV file as a chunked dask array whose blocks are parsed by the workers.

The file is cut into blocks of :data:`CSV_BLOCK_BYTES` to twice that, which end
on a line break (:func:`_block_tasks`: one task per block reads it from the path as
given, ``fsspec.utils.read_block``, so a name holding ``::``, ``*``, ``?`` or
``[`` is that file, never a URL chain or a glob); each block becomes one task
that parses it with pandas' C parser under the file's one layout
(:func:`cdfts_dask.csv_input.csv_layout`: header rule with the label column set
aside, BOM stripped, the same keyword arguments as the eager reader; the header
line is in the first block only) and keeps the feature columns.  The lines of
every block are scanned first (:func:`cdfts_dask.csv_input.scan_lines`: the
non-blank ones, as pandas skips blank ones, and each one's field count), so a
line with more or fewer fields than the first row is refused before any
parsing with the eager reader's error (its file line), the array's shape is
known, and a parsed block whose row count differs is an error, never a
shifted row.  A block that fails to parse raises the eager reader's error for
the file (:func:`cdfts_dask.csv_input.csv_error`: the row and column of the
first bad cell).

The label column, when there is one, is read on the client alone
(:func:`csv_labels`: one text column; the caller writes it to the output).

Used for CSV input of at least :data:`CSV_ON_WORKERS_BYTES` (smaller files are
read whole by :func:`cdfts_dask.csv_input.read_csv_table`).  Limitation, as
for ``dask.dataframe.read_csv``: a quoted field must not contain a line break.
"""

from __future__ import annotations

import codecs
import io
import os
import uuid
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np

from .csv_input import (
    CsvLayout,
    LineScan,
    csv_error,
    lone_cr_error,
    parsed_exactly,
    ragged_error,
    scan_lines,
    strip_bom,
)
from .paths import absolute

#: CSV files at least this large are parsed block-wise by the workers
CSV_ON_WORKERS_BYTES = 64 * 2**20
#: bytes of CSV text per block (one parse task each)
CSV_BLOCK_BYTES = 32 * 2**20


def is_large_csv(X) -> bool:
    """A path to an existing CSV file (:func:`~cdfts_dask.inputs.is_csv_path`) of at least
    :data:`CSV_ON_WORKERS_BYTES` bytes."""
    from .inputs import is_csv_path

    if not is_csv_path(X) or not Path(X).is_file():
        return False
    return Path(X).stat().st_size >= CSV_ON_WORKERS_BYTES


def _read_csv_bytes(path: str, offset: int, length: int) -> bytes:
    """The lines of a file after the first line break at or after ``offset`` (from the start for 0) through
    the first at or after ``offset + length`` (on a worker): consecutive blocks hold every line once, and
    a block inside one long line is empty.  ``path`` is a local file, opened as it is."""
    from fsspec.utils import read_block

    with open(path, "rb") as fh:
        return read_block(fh, offset, length, delimiter=b"\n")


def _block_tasks(path: str) -> list:
    """Delayed :func:`_read_csv_bytes` of the file, in file order: ``size // CSV_BLOCK_BYTES`` equal parts
    (at least one), so a block holds :data:`CSV_BLOCK_BYTES` to twice that (as ``dask.bytes.read_bytes``)."""
    import dask

    size = os.stat(path).st_size
    count = max(1, size // CSV_BLOCK_BYTES)
    offsets = [size * i // count for i in range(count + 1)]
    # not pure: the file is read when the task runs, so equal arguments need not mean equal bytes
    read = dask.delayed(_read_csv_bytes, pure=False)
    return [read(path, start, end - start) for start, end in pairwise(offsets)]


def _scan(block: bytes, first: bool, ncols: int, newline_file: bool) -> LineScan:
    """:func:`~cdfts_dask.csv_input.scan_lines` of one block (the first holds the file's BOM, if any)."""
    return scan_lines(strip_bom(block) if first else block, ncols, newline_file)


def _check_fields(scans: Sequence[LineScan], path: str, ncols: int, name: str) -> None:
    """The eager reader's error for the first line (of the file) whose field count is not ``ncols``, or
    that is a blank line ended by a lone ``\\r`` in a file with ``\\n`` line breaks."""
    line0 = 0
    for scan in scans:
        blank = scan.lone_cr_blank
        if blank is not None and (scan.ragged is None or blank <= scan.ragged[0]):
            raise lone_cr_error(name, path, line0 + blank + 1)
        if scan.ragged is not None:
            line, fields = scan.ragged
            raise ragged_error(name, path, line0 + line + 1, fields, ncols)
        line0 += scan.lines


def _parse(block: bytes, path: str, layout: CsvLayout, first: bool, scan: LineScan, rows: int, name: str
           ) -> np.ndarray:  # fmt: skip
    """The float64 feature columns of one block (on a worker), or the eager reader's error for the file;
    ``scan`` is the block's :func:`_scan`."""
    import pandas as pd

    if not first and block.startswith(codecs.BOM_UTF8):  # pandas would skip it: text in a cell, as read whole
        raise csv_error(Path(path), layout, name)

    def parse(text_features: bool):
        kwargs = layout.read_kwargs(text_features)
        if not first:
            kwargs["header"] = None  # the header line is in the first block only
        return layout.split(pd.read_csv(io.BytesIO(block), **kwargs))

    try:
        X = parsed_exactly(parse, scan)[0]
        bad = bool(np.isnan(X).any())
    except (ValueError, TypeError):  # pandas' ParserError is a ValueError
        bad = True
    if bad:
        raise csv_error(Path(path), layout, name)
    if X.shape[0] != rows:
        raise ValueError(f"{name}: {path!r}: a block parsed to {X.shape[0]} rows, its lines say {rows}")
    return X


def csv_blocks(path, layout: CsvLayout, name: str = "X"):
    """The feature columns of a CSV file of this ``layout`` (:func:`~cdfts_dask.csv_input.csv_layout`)
    as a float64 dask array of row blocks in file order, parsed when computed (one task per block)."""
    import dask
    import dask.array as da

    path = absolute(path)  # the workers read it: a relative path would be relative to their directory
    blocks = _block_tasks(path)
    newline_file = layout.lineterminator is None  # a lone \r ends a blank line only among \n ones
    scans = dask.compute(
        *[dask.delayed(_scan)(b, i == 0, layout.ncols, newline_file) for i, b in enumerate(blocks)]
    )
    _check_fields(scans, path, layout.ncols, name)
    header = int(layout.header is not None)  # the header line is in the first block
    counts = [scan.rows - (header if i == 0 else 0) for i, scan in enumerate(scans)]
    token = uuid.uuid4().hex  # a fresh graph name per read, as for Zarr input
    parts = [
        da.from_delayed(
            dask.delayed(_parse, name=f"cdfts-csv-{token}-{i}")(b, path, layout, i == 0, scan, rows, name),
            shape=(rows, len(layout.features)), dtype=np.float64,
        )
        for i, (b, scan, rows) in enumerate(zip(blocks, scans, counts, strict=True))
        if rows > 0
    ]  # fmt: skip
    if not parts:
        raise ValueError(f"{name}: {path!r} has no data rows")
    return da.concatenate(parts)


def csv_labels(path, layout: CsvLayout, n: int, name: str = "input") -> np.ndarray:
    """The label column of a CSV file (text, untouched), read here alone; ``n`` rows expected (the
    file's lines already checked by :func:`csv_blocks`: with ``usecols`` pandas checks no field count)."""
    import pandas as pd

    kwargs = {**layout.read_kwargs(), "usecols": [layout.label]}
    labels = pd.read_csv(path, **kwargs)[layout.label].to_numpy(dtype=object)
    if len(labels) != n:
        raise ValueError(f"{name}: {str(path)!r}: {len(labels)} labels read for {n} rows of features")
    return labels
