"""Out-of-core input for the tiled engine: the workers read and validate, the client sees only metadata.

For a Zarr path (or a ``dask.array.Array``) :func:`lazy_input` reads just the
shape and dtype on the client; for a CSV file of at least
:data:`~cdfts_dask.csv_blocks.CSV_ON_WORKERS_BYTES`, its first row and the
line count of each block (:mod:`cdfts_dask.csv_blocks`: the workers parse the
blocks).  :meth:`LazyInput.to_worker` then builds a
chunk-wise Dask computation (one task per stored chunk) that casts every
block to float64 and concatenates the blocks *on a worker*, and beside it a
small task per block that finds its first NaN / inf, of which the client names
the first row; the client keeps only a future.  The client's memory therefore
does not grow with n * d (see ``tests/test_out_of_core.py``).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._validation import check_numeric_dtype, check_shape
from .csv_blocks import csv_blocks, is_large_csv
from .csv_input import csv_layout, warn_label_like_columns
from .inputs import is_path, open_zarr_array, read_zarr_block
from .paths import absolute


@dataclass
class LazyInput:
    """A point array that has not been read: a chunked dask array plus a name for messages."""

    array: object  # dask.array.Array
    name: str
    is_dask: bool = False  # the caller passed a dask array (not a Zarr path): give one back

    def like_input(self, result, dtype: str = "float64"):
        """The result (n x d, a NumPy array, or a future of one of ``dtype`` on the workers) as a dask
        array chunked like the input; a future stays where it is until the caller computes."""
        import dask
        import dask.array as da

        if isinstance(result, np.ndarray):
            return da.from_array(result, chunks=self.array.chunks)
        whole = da.from_delayed(dask.delayed(result), shape=self.shape, dtype=np.dtype(dtype))
        return whole.rechunk(self.array.chunks)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(int(s) for s in self.array.shape)

    def load(self) -> np.ndarray:
        """Read everything into this process (used by the dense path only); NaN / inf is named at its
        first row by :func:`check_points`, on the whole array."""
        from ._validation import check_points

        values = self.array.map_blocks(_float64_block, self.name, dtype=np.float64)  # each block's shape
        return check_points(values.compute(), self.name)

    def to_worker(self, client):
        """Future of the validated float64 array, assembled on a worker; raises the worker's error here.

        NaN / inf is named at its first row (:func:`_nonfinite_error`), not in the block that happened to
        fail first.  The futures of a failed read are released as the error leaves the tiled run
        (:func:`cdfts_dask.api._forget_the_runs_futures` clears this frame)."""
        # a fresh graph name per run: equal inputs must not share keys with a run still being released
        name = f"cdfts-input-{uuid.uuid4().hex}"
        values = self.array.map_blocks(_float64_block, self.name, dtype=np.float64, name=name)
        future, found = client.compute([values, _first_nonfinite_per_block(values)])  # reads shared
        # each waits through the future's own client (which need not be the default)
        error = found.exception() or future.exception() or _nonfinite_error(found.result(), self.name)
        if error is not None:
            raise error
        client.replicate([future])  # worker to worker, like the broadcast scatter of in-memory input
        return future


def _check_block(block: np.ndarray, name: str, block_info=None) -> np.ndarray:
    """:func:`_float64_block`, and NaN / inf rejected, naming the global row and column of the block's
    first (a transform's row chunk)."""
    out = _float64_block(block, name, block_info)
    first = _first_nonfinite(out, block_info)
    error = _nonfinite_error(first, name)
    if error is not None:
        raise error
    return out


def _float64_block(block: np.ndarray, name: str, block_info=None) -> np.ndarray:
    """Cast one block to float64; and reject a block whose shape is not the one its dask array declares
    (a ``from_delayed`` whose ``shape`` was wrong: the kernels would index past the data)."""
    out = np.asarray(block, dtype=np.float64)
    (r0, r1), (c0, c1) = _location(block_info)
    known = block_info and not any(math.isnan(v) for v in (r0, r1, c0, c1))  # not for unknown chunk sizes
    if known and out.shape != (r1 - r0, c1 - c0):
        raise ValueError(
            f"{name}: the block at rows {r0}:{r1}, columns {c0}:{c1} holds an array of shape {out.shape}, "
            f"not the ({r1 - r0}, {c1 - c0}) its dask array declares (check the shape and chunks given to "
            "da.from_delayed / da.from_array)"
        )
    return out


def _location(block_info) -> tuple[tuple, tuple]:
    """``((r0, r1), (c0, c1))``: where a block lies in its array (from 0 without ``block_info``)."""
    return block_info[0]["array-location"] if block_info else ((0, None), (0, None))


def _first_nonfinite(block: np.ndarray, block_info=None) -> np.ndarray:
    """A (1, 3) float64 array: the global row and column of the block's first NaN / inf in row-major
    order and its value, or row -1 when it has none (found without an index array per bad entry)."""
    bad = ~np.isfinite(block)
    if not bad.any():
        return np.array([[-1.0, -1.0, 0.0]])
    i, j = np.unravel_index(int(np.argmax(bad)), bad.shape)  # argmax: the first True, row-major
    (r0, _), (c0, _) = _location(block_info)
    return np.array([[r0 + i, c0 + j, block[i, j]]], dtype=np.float64)


def _first_nonfinite_per_block(values):
    """A small dask array of :func:`_first_nonfinite` for each block of ``values`` (one row of 3 per block,
    in the blocks' layout), computed from the same tasks as ``values``."""
    rows, cols = (len(c) for c in values.chunks)
    return values.map_blocks(_first_nonfinite, chunks=((1,) * rows, (3,) * cols), dtype=np.float64)


def _nonfinite_error(found: np.ndarray, name: str) -> ValueError | None:
    """The error naming the first NaN / inf (lowest row, then column) among :func:`_first_nonfinite`
    results laid out as blocks (any (rows, 3 * cols) array), or None when there is none."""
    entries = np.asarray(found, dtype=np.float64).reshape(-1, 3)
    entries = entries[entries[:, 0] >= 0]
    if not len(entries):
        return None
    row, col, value = entries[np.lexsort((entries[:, 1], entries[:, 0]))[0]]
    return ValueError(f"{name} contains NaN or inf (first at row {int(row)}, column {int(col)}: {value})")


def _read_zarr_chunk(path: str, name: str, block_info=None) -> np.ndarray:
    """One stored chunk of a Zarr array, read on a worker; a damaged chunk is named in the error."""
    import zarr

    selection = tuple(slice(a, b) for a, b in block_info[None]["array-location"])
    return read_zarr_block(zarr.open_array(path, mode="r"), path, selection, name)


def is_zarr_path(X) -> bool:
    if not is_path(X):
        return False
    path = Path(X)
    return path.suffix.lower() == ".zarr" or path.is_dir()


def lazy_input(X, name: str = "X", min_rows: int = 2) -> LazyInput | None:
    """A :class:`LazyInput` for a Zarr path, a large CSV file (every column a feature) or a dask array
    (metadata checked here), else None."""
    import dask.array as da

    if is_zarr_path(X):
        path = Path(absolute(X))  # the workers open it: a path relative to their directory would differ
        node = open_zarr_array(path, name)
        check_numeric_dtype(node.dtype, name)
        check_shape(tuple(node.shape), name, min_rows)
        blocks = da.map_blocks(
            _read_zarr_chunk, str(path), name, chunks=da.core.normalize_chunks(node.chunks, node.shape),
            dtype=node.dtype, name=f"cdfts-read-{uuid.uuid4().hex}",
        )  # fmt: skip
        return LazyInput(blocks, name)
    if is_large_csv(X):
        layout = csv_layout(X, None, name)
        warn_label_like_columns(layout.feature_header(), X, name)
        blocks = csv_blocks(X, layout, name)
        check_shape(tuple(blocks.shape), name, min_rows)
        return LazyInput(blocks, name)
    if isinstance(X, da.Array):
        check_numeric_dtype(X.dtype, name)
        if any(math.isnan(size) for size in X.shape):
            raise ValueError(
                f"{name} is a dask array of unknown chunk sizes (shape {X.shape}, e.g. after boolean "
                "indexing); call its compute_chunk_sizes() first"
            )
        check_shape(tuple(X.shape), name, min_rows)
        return LazyInput(X, name, is_dask=True)
    return None
