"""Out-of-core input for the tiled engine: the workers read and validate, the client sees only metadata.

For a Zarr path (or a ``dask.array.Array``) :func:`lazy_input` reads just the
shape and dtype on the client; for a CSV file of at least
:data:`~cdfts_dask.csv_blocks.CSV_ON_WORKERS_BYTES`, its first row and the
line count of each block (:mod:`cdfts_dask.csv_blocks`: the workers parse the
blocks).  :meth:`LazyInput.to_worker` then builds a
chunk-wise Dask computation (one task per stored chunk) that checks every
block for NaN / inf, casts it to float64, and concatenates the blocks *on a
worker*; the client keeps only a future.  The client's memory therefore
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
        """Read everything into this process (used by the dense path only)."""
        from ._validation import check_points

        checked = self.array.map_blocks(_check_block, self.name, dtype=np.float64)  # each block's shape
        return check_points(checked.compute(), self.name)

    def to_worker(self, client):
        """Future of the validated float64 array, assembled on a worker; raises the worker's error here.

        A failed read is released before its error is raised: the client keeps the error in the future's
        state, and raising it adds this frame (which holds the future) to its traceback, a loop through
        the client's future table that kept the future, the scheduler's tasks and the input until the
        client closed (10 failed runs on one client: +130 MiB, 70 tasks)."""
        # a fresh graph name per run: equal inputs must not share keys with a run still being released
        name = f"cdfts-input-{uuid.uuid4().hex}"
        checked = self.array.map_blocks(_check_block, self.name, dtype=np.float64, name=name)
        future = client.compute(checked)
        error = future.exception()  # waits through the future's own client (which need not be the default)
        if error is None:
            client.replicate([future])  # worker to worker, like the broadcast scatter of in-memory input
            return future
        future.release()  # the client and the scheduler forget the failed graph
        del future, checked
        raise error


def _check_block(block: np.ndarray, name: str, block_info=None) -> np.ndarray:
    """Cast one block to float64 and reject NaN / inf, naming the global row and column; and a block
    whose shape is not the one its dask array declares (a ``from_delayed`` whose ``shape`` was wrong:
    the kernels would index past the data)."""
    out = np.asarray(block, dtype=np.float64)
    (r0, r1), (c0, c1) = block_info[0]["array-location"] if block_info else ((0, None), (0, None))
    known = block_info and not any(math.isnan(v) for v in (r0, r1, c0, c1))  # not for unknown chunk sizes
    if known and out.shape != (r1 - r0, c1 - c0):
        raise ValueError(
            f"{name}: the block at rows {r0}:{r1}, columns {c0}:{c1} holds an array of shape {out.shape}, "
            f"not the ({r1 - r0}, {c1 - c0}) its dask array declares (check the shape and chunks given to "
            "da.from_delayed / da.from_array)"
        )
    bad = ~np.isfinite(out)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} contains NaN or inf (first at row {r0 + i}, column {c0 + j}: {out[i, j]})"
        )
    return out


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
