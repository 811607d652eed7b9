"""Reading points from the things users hand us: arrays, dask arrays, Zarr, files."""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np

from ._validation import check_points
from .csv_input import CSV_SUFFIXES, csv_layout, label_index, read_csv_table, warn_label_like_columns
from .paths import refuse_url


def is_path(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def _check_readable(path, name: str) -> None:
    """A regular file or a folder that exists and can be read (a device or FIFO would block or never end);
    not a URL (:func:`~cdfts_dask.paths.refuse_url`: as a path it would be missing)."""
    refuse_url(path, name)
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{name}: file not found: {str(path)!r}")
    if not path.is_file() and not path.is_dir():
        raise ValueError(f"{name}: {str(path)!r} is not a regular file (a device, FIFO or socket)")
    if path.is_file() and not os.access(path, os.R_OK):
        raise ValueError(f"{name}: file not readable: {str(path)!r}")


#: the file types read: comma-separated text, a NumPy array, a Zarr store (a folder)
INPUT_SUFFIXES = (*CSV_SUFFIXES, ".npy", ".zarr")


def _check_input_type(path: Path, name: str) -> None:
    """A file must be named as one of :data:`INPUT_SUFFIXES` (a JSON, Parquet or zipped file read as
    CSV text fails with a misleading message, or not at all)."""
    if path.is_file() and path.suffix.lower() not in INPUT_SUFFIXES:
        raise ValueError(
            f"{name}: unsupported file type {path.suffix or '(no suffix)'!r} of {str(path)!r}: give "
            "comma-separated text (.csv or .txt), a .npy array or a .zarr store"
        )


def check_input_file(path, name: str = "input") -> None:
    """What can be said of an input path before reading it: it exists, can be read, and is named as a
    type that is read (:data:`INPUT_SUFFIXES`, or a folder)."""
    _check_readable(path, name)
    _check_input_type(Path(path), name)


def is_csv_path(X) -> bool:
    """Whether X is a path :func:`read_table` reads as CSV text (not a folder, named as
    :data:`CSV_SUFFIXES`)."""
    return is_path(X) and Path(X).suffix.lower() in CSV_SUFFIXES and not Path(X).is_dir()


def csv_header(X, name: str = "X") -> list[str] | None:
    """The column names of a CSV file's header row when X is a path read as CSV (every column a
    feature: no label column), else None; reads the first row only."""
    if not is_csv_path(X):
        return None
    return csv_layout(X, None, name).feature_header()


def read_table(path, label_column: str | int | None = None, name: str = "input"):
    """Read a CSV, .npy or Zarr file into ``(X, labels, header)``.

    CSV files are read by :func:`cdfts_dask.csv_input.read_csv_table` (header
    row detected with the label column set aside; labels returned untouched
    as text).  A folder is a Zarr array, whatever its name (as the workers read it).  For .npy and
    Zarr ``label_column`` is an index (negative counts from the end) and the labels are that
    column's values.
    """
    path = Path(path)
    check_input_file(path, name)
    if is_csv_path(path):
        X, labels, header = read_csv_table(path, label_column, name)
        return X, labels, header
    if path.suffix.lower() == ".npy" and not path.is_dir():  # a folder is read as a Zarr array (lazy)
        try:
            data = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise ValueError(f"{name}: cannot read {str(path)!r} as .npy: {exc}") from None
        if not isinstance(data, np.ndarray):  # np.load opens a zip (.npz) whatever the file is named
            data.close()
            raise ValueError(f"{name}: {str(path)!r} is a .npz archive (zip), not a .npy array")
    else:
        data = read_zarr_array(path, name)
    labels = None
    if label_column is not None:
        if data.ndim != 2:
            raise ValueError(f"{name}: need a 2-D table to take a label column from, got shape {data.shape}")
        col = label_index(label_column, None, data.shape[1], name)
        labels = data[:, col]
        data = np.delete(data, col, axis=1)
    return data, labels, None


def open_zarr_array(path, name: str = "input"):
    """Open ``path`` read-only as a ``zarr.Array`` (not reading its data), or raise naming the problem."""
    import zarr

    _check_readable(path, name)
    try:
        node = zarr.open(str(path), mode="r")
    except Exception as exc:
        folder = "" if Path(path).suffix.lower() == ".zarr" else " (a folder is read as a Zarr array)"
        raise ValueError(f"{name}: cannot open {str(path)!r} as Zarr{folder}: {exc}") from None
    if not isinstance(node, zarr.Array):
        raise ValueError(f"{name}: {str(path)!r} is a Zarr group, not an array")
    check_zarr_chunks(node, str(path), name)
    return node


#: the most chunks (shards, for a sharded array) a Zarr input may have: one task each, and counting the
#: stored ones lists them all (a few bytes of metadata declaring 1e10 chunks would exhaust memory)
MAX_ZARR_CHUNKS = 10**6


def check_zarr_chunks(node, where: str | None = None, name: str = "input") -> None:
    """Refuse a Zarr array of more than :data:`MAX_ZARR_CHUNKS` chunks, and warn when some of its chunks
    (shards, for a sharded array) are not in its store (``where``: the path it was opened by, else its
    store's).

    Zarr reads a chunk that is not stored as the array's fill value.  That is
    how it saves space (by default a chunk holding nothing but the fill value
    is never written), but a chunk deleted or lost in a copy reads the same
    way: the points would silently become ``fill_value``.  No reader can tell
    the two apart, so the count is said, not refused.  Counts one listing of
    the store (no chunk is read).
    """
    pieces = node.chunks if node.shards is None else node.shards
    expected = math.prod(math.ceil(n / c) for n, c in zip(node.shape, pieces, strict=True))
    where = str(node.store_path) if where is None else where
    unit = "chunks" if node.shards is None else "shards"
    if expected > MAX_ZARR_CHUNKS:
        raise ValueError(
            f"{name}: the Zarr array {where!r} has {expected} {unit} (shape {tuple(node.shape)} in {unit} of "
            f"{tuple(pieces)}), more than {MAX_ZARR_CHUNKS}: rechunk it to larger {unit} (each is a task)"
        )
    per_piece = math.prod(s // c for s, c in zip(pieces, node.chunks, strict=True))
    stored = node.nchunks_initialized // per_piece
    if stored < expected:
        warnings.warn(
            f"{name}: {expected - stored} of {expected} {unit} of the Zarr array {where!r} are not stored, "
            f"so they read as its fill value {node.fill_value} (Zarr does not write a chunk that holds "
            "only the fill value, but a deleted or lost chunk reads the same way)",
            UserWarning,
            stacklevel=3,
        )


def read_zarr_block(node, path, selection: tuple[slice, ...], name: str = "input") -> np.ndarray:
    """``node[selection]``; a chunk that cannot be read (truncated, garbled) is named in a ``ValueError``."""
    try:
        return node[selection]
    except Exception as exc:
        where = ", ".join(f"{s.start}:{s.stop}" for s in selection)
        raise ValueError(
            f"{name}: cannot read the Zarr chunk at [{where}] of {str(path)!r} "
            f"({type(exc).__name__}: {str(exc)[:200]})"
        ) from None


def zarr_blocks(node) -> list[tuple[slice, ...]]:
    """The selections of a Zarr array's stored chunks, in C order."""
    import itertools

    shape, chunks = [int(n) for n in node.shape], [int(c) for c in node.chunks]
    return [
        tuple(slice(s, min(s + c, n)) for s, c, n in zip(starts, chunks, shape, strict=True))
        for starts in itertools.product(*(range(0, n, c) for n, c in zip(shape, chunks, strict=True)))
    ]


def read_zarr_array(path, name: str = "input") -> np.ndarray:
    """The whole array; if that fails, the chunks are read one by one to name the damaged one."""
    node = open_zarr_array(path, name)
    try:
        return node[...]
    except Exception as exc:
        for selection in zarr_blocks(node):
            read_zarr_block(node, path, selection, name)
        raise ValueError(f"{name}: cannot read {str(path)!r}: {type(exc).__name__}: {exc}") from None


def load_points(X, name: str = "X") -> np.ndarray:
    """Materialise any supported input as a validated float64 NumPy array."""
    if is_path(X):
        path = X
        X, _, header = read_table(path, name=name)
        warn_label_like_columns(header, path, name)
    elif hasattr(X, "dask") and hasattr(X, "compute"):
        X = X.compute()
    elif type(X).__module__.startswith("zarr"):
        check_zarr_chunks(X, name=name)
        X = X[...]
    return check_points(X, name)
