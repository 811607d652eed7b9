"""Reading points from the things users hand us: arrays, dask arrays, Zarr, files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._validation import check_points


def is_path(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def _check_readable(path: Path, name: str) -> None:
    if not path.exists():
        raise ValueError(f"{name}: file not found: {str(path)!r}")
    if path.is_file() and not os.access(path, os.R_OK):
        raise ValueError(f"{name}: file not readable: {str(path)!r}")


def read_table(path, label_column: str | int | None = None, name: str = "input"):
    """Read a CSV, .npy or Zarr file into ``(X, labels, header)``.

    CSV files may have a header row (detected when the first row is not
    numeric).  ``label_column`` (a header name or an index; negative counts
    from the end) is split off and returned untouched as strings.
    """
    path = Path(path)
    _check_readable(path, name)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            data = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise ValueError(f"{name}: cannot read {str(path)!r} as .npy: {exc}") from None
        header = None
    elif suffix == ".zarr" or path.is_dir():
        data = read_zarr_array(path, name)
        header = None
    else:
        data, header = _read_csv(path, name)
    labels = None
    if label_column is not None:
        if data.ndim != 2:
            raise ValueError(f"{name}: need a 2-D table to take a label column from, got shape {data.shape}")
        col = _column_index(label_column, header, data.shape[1], name)
        labels = data[:, col]
        data = np.delete(data, col, axis=1)
        if header is not None:
            header = [h for i, h in enumerate(header) if i != col]
    return _to_numeric(data, name), labels, header


def _column_index(label_column, header, ncols: int, name: str) -> int:
    if isinstance(label_column, str) and not label_column.lstrip("-").isdigit():
        if header is None or label_column not in header:
            raise ValueError(f"label column {label_column!r} not found in {name} (columns: {header})")
        return header.index(label_column)
    idx = int(label_column)
    if not -ncols <= idx < ncols:
        raise ValueError(f"label column index {idx} out of range for {name} with {ncols} columns")
    return idx % ncols


def _read_csv(path: Path, name: str):
    import csv

    try:
        with open(path, newline="") as fh:
            rows = [row for row in csv.reader(fh) if row and any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}: cannot read {str(path)!r}: {exc}") from None
    if not rows:
        raise ValueError(f"{name}: {str(path)!r} is empty")
    header = None
    if not all(_is_number(c) for c in rows[0]):
        header = [c.strip() for c in rows[0]]
        rows = rows[1:]
    width = len(header) if header else len(rows[0]) if rows else 0
    for i, row in enumerate(rows):
        if len(row) != width:
            line = i + (2 if header else 1)
            raise ValueError(f"{name}: {str(path)!r} line {line} has {len(row)} fields, expected {width}")
    return np.array(rows, dtype=object).reshape(len(rows), width), header


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _to_numeric(data: np.ndarray, name: str) -> np.ndarray:
    if data.dtype != object:
        return data
    out = np.empty(data.shape, dtype=np.float64)
    for idx, cell in np.ndenumerate(data):
        try:
            out[idx] = float(cell)
        except ValueError:
            raise TypeError(
                f"{name}: non-numeric value {cell!r} at row {idx[0] + 1}, column {idx[1] + 1}"
            ) from None
    return out


def open_zarr_array(path, name: str = "input"):
    """Open ``path`` read-only as a ``zarr.Array`` (not reading its data), or raise naming the problem."""
    import zarr

    _check_readable(Path(path), name)
    try:
        node = zarr.open(str(path), mode="r")
    except Exception as exc:
        raise ValueError(f"{name}: cannot open {str(path)!r} as Zarr: {exc}") from None
    if not isinstance(node, zarr.Array):
        raise ValueError(f"{name}: {str(path)!r} is a Zarr group, not an array")
    return node


def read_zarr_array(path, name: str = "input") -> np.ndarray:
    return open_zarr_array(path, name)[...]


def load_points(X, name: str = "X") -> np.ndarray:
    """Materialise any supported input as a validated float64 NumPy array."""
    if is_path(X):
        X = read_table(X, name=name)[0]
    elif hasattr(X, "dask") and hasattr(X, "compute"):
        X = X.compute()
    elif type(X).__module__.startswith("zarr"):
        X = X[...]
    return check_points(X, name)
