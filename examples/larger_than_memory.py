"""Data larger than one machine: fit CDF-TS on a sample, transform the rest from Zarr to Zarr on a cluster.

Run from the repository root:  python examples/larger_than_memory.py [WORKDIR]

Each step touches one chunk of rows at a time: the Zarr input is written chunk
by chunk, the sampled fit reads only the drawn rows, and the transform maps
every row chunk on a worker with the fitted model ((T + 1) x s x d values) shared
once.  Replace the LocalCluster with ``Client("tcp://scheduler:8786")`` and
the paths with a filesystem the workers share to run the same on a cluster.
"""

import sys
import tempfile
from pathlib import Path

import dask.array as da
import numpy as np
import zarr
from distributed import Client, LocalCluster
from sklearn.cluster import DBSCAN
from sklearn.pipeline import make_pipeline

from cdfts_dask import CDFTS, cdf_ts
from cdfts_dask.model import load


def write_blobs(path: Path, n: int, d: int, rows_per_chunk: int) -> None:
    """Two blobs of different density, generated and written chunk by chunk (never all in memory)."""
    out = zarr.create_array(str(path), shape=(n, d), dtype="f8", chunks=(rows_per_chunk, d))
    for start in range(0, n, rows_per_chunk):
        rows = min(rows_per_chunk, n - start)
        rng = np.random.default_rng(start)
        dense = rng.random(rows) < 0.5
        out[start : start + rows] = np.where(dense[:, None], rng.normal(0, 0.2, (rows, d)),
                                             rng.normal(3, 1.0, (rows, d)))  # fmt: skip


def main(workdir: Path) -> None:
    src, out, run = workdir / "points.zarr", workdir / "points-cdfts.zarr", workdir / "run.zarr"
    write_blobs(src, n=100_000, d=4, rows_per_chunk=20_000)

    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        # 1. the function: fit on 1000 drawn rows, then transform all rows, Zarr to Zarr on the workers
        Y, info = cdf_ts(str(src), lam=0.1, delta=0.01, n_references=1000, random_state=0, client=client,
                         checkpoint=run, output=out, return_info=True)  # fmt: skip
        print("zarr out:", Y.shape, "chunks", Y.chunks, "iterations", info.n_iter)

        # 2. the estimator: the same fit, then a lazy dask transform of new data
        est = CDFTS(lam=0.1, delta=0.01, n_references=1000, random_state=0).fit(da.from_zarr(str(src)))
        new = da.random.default_rng(1).normal(1.5, 1.0, size=(50_000, 4), chunks=(10_000, 4))
        lazy = est.transform(new)
        print("lazy dask out:", type(lazy).__name__, lazy.shape, "in", lazy.numblocks[0], "row chunks")
        same = np.abs(est.transform(src)[:5000].compute() - Y[:5000]).max() <= 1e-9
        print("estimator equals function:", bool(same))

    # 3. the completed checkpoint store is the model (`cdfts apply run.zarr IN OUT` does the same)
    model = load(run)
    print("model from store:", model.n_iter, "iterations on", model.n_references, "references")

    # 4. in a scikit-learn pipeline: fit on one part, cluster another
    X = zarr.open_array(str(src), mode="r")[:4000]
    pipe = make_pipeline(CDFTS(lam=0.1, delta=0.01), DBSCAN(eps=0.15, min_samples=10))
    labels = pipe.fit_predict(X)
    print("pipeline clusters:", len(set(labels) - {-1}))


if __name__ == "__main__":  # worker processes re-import this file
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
