"""CDF-TS from Python: the function, the estimator, and a Dask cluster.

Run from the repository root:  python examples/api_quickstart.py
"""

import numpy as np
from distributed import Client, LocalCluster

from cdfts_dask import CDFTS, cdf_ts


def main() -> None:
    table = np.loadtxt("examples/data/4C.csv", delimiter=",", skiprows=1)
    X = table[:, :-1]

    # 1. Small data: the dense NumPy path, in this process.
    Y = cdf_ts(X, lam=0.1, delta=0.01)
    print("dense:", Y.shape, "range", Y.min(), Y.max())

    # 2. The scikit-learn style estimator, with the Delta history.
    est = CDFTS(lam=0.1, delta=0.01).fit(X)
    print("iterations:", est.n_iter_, "Deltas:", np.round(est.deltas_, 5))

    # 3. The tiled Dask engine on a cluster you manage (a local one here; Client("tcp://host:8786") for yours)
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        Z = cdf_ts(X, lam=0.1, delta=0.01, method="tiled", client=client, tile_size=512)
        print("tiled equals dense:", bool(np.abs(Z - Y).max() < 1e-9))


if __name__ == "__main__":  # worker processes re-import this file
    main()
