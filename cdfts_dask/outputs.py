"""Writing transformed points as CSV, .npy or Zarr, never leaving a half-written file."""

from __future__ import annotations

import csv
import os
import stat
import warnings
from pathlib import Path

import numpy as np

from .paths import absolute, check_folder, replaced_atomically
from .store import write_output_zarr

FORMATS = (".csv", ".npy", ".zarr")


def output_format(path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"output: unsupported file type {suffix!r} for {str(path)!r}; use one of {FORMATS}")
    return suffix


def check_writable(path) -> None:
    """Fail early (before any computation) if ``path``'s directory cannot be written, or ``path`` is an
    existing file or folder (a Zarr array) that its user may not write: replacing a folder means
    emptying it, which a read-only one refuses half-way (its files were left behind as a ``.partial``)."""
    parent = Path(path).resolve().parent
    check_folder("output", parent)
    if not os.access(parent, os.W_OK):
        raise ValueError(f"output: directory is not writable: {str(parent)!r}")
    if Path(path).exists() and not os.access(path, os.W_OK):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        raise ValueError(f"output: {str(path)!r} exists and is write-protected (mode {mode:04o}); "
                         "make it writable to replace it, or choose another output path")  # fmt: skip


def checked_output(output) -> str | None:
    """``output`` made absolute here, on the client (workers in another directory write where the user
    meant), after checking its suffix and that its directory can be written: before any work.  The
    clash with the input and the store is :func:`cdfts_dask.paths.check_run_paths`'s to refuse."""
    if output is None:
        return None
    output = absolute(output, "output")
    output_format(output)
    check_writable(output)
    return output


def write_table(
    path, X: np.ndarray, labels=None, header: list[str] | None = None, label_name="label",
    attrs: dict | None = None,
) -> None:  # fmt: skip
    """Write X (and an untouched label column, appended last) to ``path`` atomically; a ``.zarr`` output
    keeps ``attrs`` (the other formats have no place for them)."""
    path = Path(path)
    fmt = output_format(path)
    if labels is not None and fmt != ".csv":
        warnings.warn(
            f"output: a {fmt} output holds the transformed points only; the label column is not written "
            f"to {str(path)!r} (a .csv output keeps it as its last column)",
            UserWarning,
            stacklevel=2,
        )
    if fmt == ".zarr":
        write_output_zarr(path, X, attrs)
        return
    with replaced_atomically(path, "output", file=True) as tmp:  # a failed write names the output
        if fmt == ".npy":
            with open(tmp, "wb") as fh:
                np.save(fh, X)
        else:
            names = list(header or [f"x{j}" for j in range(X.shape[1])])
            names += [] if labels is None else [label_name]
            with open(tmp, "w", newline="", encoding="utf-8") as fh:  # as every input is read
                writer = csv.writer(fh, lineterminator=_line_end(names, labels))
                writer.writerow(names)
                for i, row in enumerate(X):
                    cells = [repr(float(x)) for x in row]
                    writer.writerow(cells + ([labels[i]] if labels is not None else []))


def _line_end(names, labels) -> str:
    r"""``"\n"``, as NumPy, pandas and the shell's tools write and read a CSV here; ``"\r\n"`` (RFC 4180)
    when a text cell holds a carriage return, which the csv module quotes only when it is part of the
    line end (written unquoted, a lone ``\r`` would read as a line break)."""
    cells = [*names, *([] if labels is None else labels)]
    return "\r\n" if any("\r" in cell for cell in cells if isinstance(cell, str)) else "\n"


def label_name(input_path, label) -> str:
    """Header of the passed-through label column: its name in the input CSV's header row, whether
    ``--label`` gave the name or the index; "label" when the input has no header row."""
    from .csv_input import csv_layout
    from .inputs import is_csv_path

    if label is None or not is_csv_path(input_path):
        return "label"
    layout = csv_layout(input_path, label, "input", warn=False)  # its first row; warned about at the read
    return "label" if layout.header is None or layout.label is None else layout.header[layout.label]
