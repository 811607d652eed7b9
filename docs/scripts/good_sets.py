"""The datasets of the DScale-DBSCAN side studies (``dscale_dbscan_*_check.py``), read one way.

Command line of every study: ``python docs/scripts/<study>.py [DATASETS_DIR [NAME ...]]``; the
directory defaults to ``../shared/datasets`` and the names to :data:`GOOD`, the clustering datasets
whose original-data DBSCAN and DP are within 0.03 of the paper (the data version is known good).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import numpy as np

from cdfts_dask.evaluation.datasets import DatasetSpec, load_labelled, shared_specs, subsample

GOOD = ("3L", "4C", "biodeg", "dermatology", "ilpd", "libras", "musk", "seeds", "segment", "wilt", "wine")
ROOT = sys.argv[1] if len(sys.argv) > 1 else "../shared/datasets"
ONLY = set(sys.argv[2:]) or set(GOOD)


def clustering_sets(max_n: int = 2500) -> Iterator[tuple[DatasetSpec, np.ndarray, np.ndarray]]:
    """``(spec, X, y)`` of each clustering dataset named in :data:`ONLY`, in the collection's order,
    stratified-subsampled to ``max_n`` rows (seed 0, as ``cdfts evaluate``)."""
    for spec in shared_specs(ROOT):
        if spec.task == "clustering" and spec.name in ONLY:
            X, y = load_labelled(spec.path, spec.label)
            X, y = subsample(X, y, max_n)
            yield spec, X, y


def table_header(*columns: str) -> None:
    """Print a Markdown table's header row and its rule (the studies print their tables row by row)."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
