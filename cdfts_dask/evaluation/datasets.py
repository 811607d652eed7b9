"""Labelled datasets: the paper's collection in ``../shared/datasets`` and any user table.

A dataset is a table of numeric feature columns plus a label column
(``label`` by default; CSV, .npy or Zarr via :func:`cdfts_dask.inputs.read_table`).
Clustering labels are class ids; anomaly labels are 1 = anomaly, 0 = normal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..csv_input import is_missing
from ..inputs import is_csv_path, read_table

#: the folders of a datasets directory (laid out like ../shared/datasets) that its datasets are read from
DATASET_FOLDERS = ("clustering", "anomaly", "synthetic")
CLUSTERING_SYNTHETIC = ("3L", "4C")
ANOMALY_SYNTHETIC = {"syn1_anomaly": "syn1", "syn2_anomaly": "syn2"}


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    task: str  # "clustering" or "anomaly"
    path: str
    label: str | int = "label"

    @property
    def key(self) -> str:
        return f"{self.task}/{self.name}"


def load_labelled(
    path, label: str | int = "label", anomaly: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Points (float64) and integer labels 0..K-1 (by sorted label value) of a labelled table.

    ``label`` is a header name or a column index (-1 = last, the only choice for
    header-less CSV, .npy and Zarr inputs).  ``anomaly``: the labels must be 0
    (normal) and 1 (anomaly), refused otherwise (numbered in sorted order, 1 = anomaly
    beside 2 = normal would score every detector upside down), and are returned as they are
    (labels all 1 stay 1; numbered, they would read as all normal).
    """
    X, labels, _ = read_table(path, label_column=label, name=str(path))
    if labels is None:
        raise ValueError(f"{path}: no label column {label!r}")
    _refuse_missing_labels(path, label, labels)
    values = np.asarray(labels)
    try:
        values = values.astype(np.float64)
    except (TypeError, ValueError):
        values = values.astype(str)
    classes, y = np.unique(values, return_inverse=True)
    if anomaly:
        if not (classes.dtype.kind == "f" and set(classes.tolist()) <= {0.0, 1.0}):
            shown = sorted(map(str, set(np.asarray(labels).tolist())))[:5]
            raise ValueError(
                f"--task anomaly: the labels of {str(path)!r} must be 0 (normal) and 1 (anomaly), got {shown}"
            )
        y = values  # 0 and 1 as they are
    return np.asarray(X, dtype=np.float64), y.astype(np.int64)


def _number_or_none(cell) -> float | None:
    """A label cell as a number (text, an int or a float), None where it is none."""
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None


def _refuse_missing_labels(path, label, labels) -> None:
    """Refuse a label column with a missing value: an empty cell; in a column of numbers (every other cell
    a number), also a cell that means "no value" (``NA``, ``nan``, ``null``: :func:`csv_input.is_missing`)
    and NaN.  Numbered, a missing label was a class of its own, and every F-measure was averaged over
    one class more.  In a column of class names, a name is a class whatever it says (``none``, ``NA``)."""
    cells = np.asarray(labels).tolist()
    texts = [c.strip() if isinstance(c, str) else c for c in cells]
    pairs = [(_number_or_none(c), c) for c in texts]
    numeric = all(x is not None or isinstance(c, str) and is_missing(c) for x, c in pairs)
    missing = [c == "" or numeric and (x is None or np.isnan(x)) for x, c in pairs]
    if any(missing):
        i = missing.index(True)
        row = f"data row {i + 1}" if is_csv_path(Path(path)) else f"row {i}"  # as each reader counts rows
        raise ValueError(
            f"{path}: missing label {cells[i]!r} at {row} (label column {label!r}; {sum(missing)} missing in "
            "all): every point of a labelled dataset needs its class; drop those rows or fill in their labels"
        )


def shared_specs(root) -> list[DatasetSpec]:
    """Every dataset of the shared collection (see its SOURCES.md), clustering first."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"datasets directory not found: {str(root)!r}")
    clustering, anomaly, synthetic = (root / folder for folder in DATASET_FOLDERS)
    specs = [DatasetSpec(p.stem, "clustering", str(p)) for p in sorted(clustering.glob("*.csv"))]
    specs += [
        DatasetSpec(n, "clustering", str(synthetic / f"{n}.csv"))
        for n in CLUSTERING_SYNTHETIC
        if (synthetic / f"{n}.csv").exists()
    ]
    specs += [DatasetSpec(p.stem, "anomaly", str(p)) for p in sorted(anomaly.glob("*.csv"))]
    specs += [
        DatasetSpec(short, "anomaly", str(synthetic / f"{f}.csv"))
        for f, short in ANOMALY_SYNTHETIC.items()
        if (synthetic / f"{f}.csv").exists()
    ]
    return specs


def subsample(
    X: np.ndarray, y: np.ndarray, max_n: int | None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A stratified random subset of ``max_n`` points (all points when n <= max_n or max_n is None)."""
    if max_n is None or len(y) <= max_n:
        return X, y
    from sklearn.model_selection import train_test_split

    Xs, _, ys, _ = train_test_split(X, y, train_size=max_n, stratify=y, random_state=seed)
    return Xs, ys


def halves(y: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays of a stratified split into two halves of equal size (train, test), each in the
    data's row order."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    counts = np.bincount(y)
    strat = y if counts[counts > 0].min() >= 2 else None
    train, test = train_test_split(idx, test_size=0.5, stratify=strat, random_state=seed)
    return np.sort(train), np.sort(test)
