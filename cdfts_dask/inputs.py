"""Reading points from the things users hand us: arrays, dask arrays, Zarr, files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._validation import check_points
from .csv_input import label_index, read_csv_table


def is_path(obj) -> bool:
    return isinstance(obj, (str, os.PathLike))


def _check_readable(path: Path, name: str) -> None:
    if not path.exists():
        raise ValueError(f"{name}: file not found: {str(path)!r}")
    if path.is_file() and not os.access(path, os.R_OK):
        raise ValueError(f"{name}: file not readable: {str(path)!r}")


def read_table(path, label_column: str | int | None = None, name: str = "input"):
    """Read a CSV, .npy or Zarr file into ``(X, labels, header)``.

    CSV files are read by :func:`cdfts_dask.csv_input.read_csv_table` (header
    row detected with the label column set aside; labels returned untouched
    as text).  For .npy and Zarr ``label_column`` is an index (negative
    counts from the end) and the labels are that column's values.
    """
    path = Path(path)
    _check_readable(path, name)
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".zarr") and not path.is_dir():
        X, labels, header = read_csv_table(path, label_column, name)
        return X, labels, header
    if suffix == ".npy":
        try:
            data = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise ValueError(f"{name}: cannot read {str(path)!r} as .npy: {exc}") from None
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
