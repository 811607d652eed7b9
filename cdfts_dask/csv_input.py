"""Reading points from CSV with pandas' C parser: one header rule, one missing-value error for every row.

The layout of a file is decided once, from its first non-blank row
(:func:`csv_layout`):

* a UTF-8 byte-order mark is stripped (``encoding="utf-8-sig"``);
* the label column (a header name or an index, negative from the end) is set
  aside *before* the header is decided;
* the first row is a header exactly when one of its feature cells is text
  that is neither a number nor a missing value (:func:`is_header_row`).  A
  row of numbers and empty / NA cells is therefore data, and its empty
  cell is reported as for any other row, never dropped as a "header".

:meth:`CsvLayout.read_kwargs` are the keyword arguments for
``pandas.read_csv`` (and, block-wise, ``dask.dataframe.read_csv``): feature
columns parse straight to float64 (exactly, round-trip), the label column
stays the untouched text, nothing is turned into NaN silently
(``na_filter=False``: an empty or ``NA`` cell fails to parse).
:meth:`CsvLayout.split` turns a parsed frame (the whole file, or one block)
into the float64 points and the labels.  Only when parsing fails is the file
read again, as text, to name the first bad cell (:func:`first_bad_cell`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: header names that usually hold a label, not a feature (compared case-insensitively)
LABEL_LIKE_NAMES = ("label", "class", "target", "y", "outlier")


def label_like_columns(header: list[str] | None) -> list[str]:
    """The header's names that look like a label column (:data:`LABEL_LIKE_NAMES`)."""
    return [name for name in header or [] if name.strip().lower() in LABEL_LIKE_NAMES]


def warn_label_like_columns(header: list[str] | None, path, name: str) -> None:
    """The API transforms every column of a CSV path: say so when one is named like a label (the
    command line refuses such a file unless told ``--label`` or ``--no-label``)."""
    for column in label_like_columns(header):
        warnings.warn(
            f"{name}: column {column!r} of {str(path)!r} is named like a label and is transformed as a "
            "feature; drop it first if it is a label",
            UserWarning,
            stacklevel=5,
        )


#: cell texts (lower case, stripped) that mean "no value" in common CSV exports
MISSING_TOKENS = frozenset(
    {"", "na", "n/a", "nan", "-nan", "+nan", "null", "none", "#n/a", "<na>", "nil", "?"}
)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def is_missing(cell: str) -> bool:
    """An empty cell, a missing-value token (``NA``, ``null``, ...) or a literal NaN."""
    text = cell.strip()
    return text.lower() in MISSING_TOKENS or (_is_number(text) and np.isnan(float(text)))


def is_header_row(cells: list[str], label: int | None = None) -> bool:
    """Whether a first row is a header: a feature cell (label excluded) is text, not a number or missing."""
    return any(not is_missing(c) and not _is_number(c) for j, c in enumerate(cells) if j != label)


@dataclass(frozen=True)
class CsvLayout:
    """Column count, header (names, or None) and label column (index, or None) of a CSV file."""

    ncols: int
    header: list[str] | None
    label: int | None

    @property
    def features(self) -> list[int]:
        return [j for j in range(self.ncols) if j != self.label]

    def read_kwargs(self) -> dict:
        """Keyword arguments for ``pandas.read_csv`` / ``dask.dataframe.read_csv`` of this file."""
        import pandas as pd

        kwargs = dict(
            header=0 if self.header is not None else None,
            names=list(range(self.ncols)),
            dtype={j: (str if j == self.label else np.float64) for j in range(self.ncols)},
            na_filter=False,
            encoding="utf-8-sig",
            skip_blank_lines=True,
            engine="c",
        )
        if int(pd.__version__.split(".")[0]) < 3:  # pandas 3 parses floats round-trip by default
            kwargs["float_precision"] = "round_trip"
        return kwargs

    def split(self, frame) -> tuple[np.ndarray, np.ndarray | None]:
        """(points as float64, labels as text or None) of a frame parsed with :meth:`read_kwargs`."""
        X = np.ascontiguousarray(frame[self.features].to_numpy(dtype=np.float64))
        labels = None if self.label is None else frame[self.label].to_numpy(dtype=object)
        return X, labels

    def feature_header(self) -> list[str] | None:
        return None if self.header is None else [h for j, h in enumerate(self.header) if j != self.label]


def label_index(label_column, header: list[str] | None, ncols: int, name: str) -> int:
    """Column index of ``label_column``: a header name, or an integer (or its text; negative from the end)."""
    if isinstance(label_column, str) and not label_column.lstrip("-").isdigit():
        if header is None or label_column not in header:
            raise ValueError(f"label column {label_column!r} not found in {name} (columns: {header})")
        return header.index(label_column)
    idx = int(label_column)
    if not -ncols <= idx < ncols:
        raise ValueError(f"label column index {idx} out of range for {name} with {ncols} columns")
    return idx % ncols


def _read_error(name: str, path: Path, exc: Exception) -> ValueError:
    text = str(exc).strip()
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if fields:
        want, line, got = fields.groups()
        return ValueError(f"{name}: {str(path)!r} line {line} has {got} fields, expected {want}")
    if "No columns to parse" in text:
        return ValueError(f"{name}: {str(path)!r} is empty")
    reason = text.splitlines()[0] if text else type(exc).__name__
    return ValueError(f"{name}: cannot read {str(path)!r}: {reason}")


#: pandas' ParserError / EmptyDataError are ValueErrors
_READ_ERRORS = (OSError, UnicodeDecodeError, ValueError)


def csv_layout(path, label_column=None, name: str = "input") -> CsvLayout:
    """Decide the layout of a CSV file from its first non-blank row (see the module docstring)."""
    import pandas as pd

    path = Path(path)
    try:
        first = pd.read_csv(
            path, header=None, nrows=1, dtype=str, na_filter=False, encoding="utf-8-sig", engine="c"
        )
    except _READ_ERRORS as exc:
        raise _read_error(name, path, exc) from None
    cells = ["" if c is None else str(c) for c in first.iloc[0].tolist()] if len(first) else []
    if not cells:
        raise ValueError(f"{name}: {str(path)!r} is empty")
    names = [c.strip() for c in cells]
    named_label = isinstance(label_column, str) and not label_column.lstrip("-").isdigit()
    if label_column is None:
        label = None
    else:
        label = label_index(label_column, names if named_label else None, len(cells), name)
    header = names if named_label or is_header_row(cells, label) else None
    return CsvLayout(len(cells), header, label)


def first_bad_cell(path, layout: CsvLayout, chunk_rows: int = 1 << 16) -> tuple[int, int, str] | None:
    """(1-based data row, 1-based file column, text) of the first feature cell that is not a number."""
    import pandas as pd

    kwargs = {**layout.read_kwargs(), "dtype": str}
    kwargs.pop("float_precision", None)
    row0 = 0
    with pd.read_csv(path, chunksize=chunk_rows, **kwargs) as blocks:
        for block in blocks:
            text = block[layout.features]
            numbers = text.apply(pd.to_numeric, errors="coerce")
            bad = numbers.isna().to_numpy()
            if bad.any():
                i, j = np.argwhere(bad)[0]
                return row0 + int(i) + 1, layout.features[j] + 1, str(text.iat[i, j])
            row0 += len(block)
    return None


def read_csv_table(path, label_column=None, name: str = "input"):
    """Read a CSV file into ``(X float64, labels or None, feature header or None)``; see the module docstring.

    Raises ``ValueError`` naming the row and column of an empty / missing
    value and ``TypeError`` for other text in a feature column.
    """
    import pandas as pd

    path = Path(path)
    layout = csv_layout(path, label_column, name)
    try:
        frame = pd.read_csv(path, **layout.read_kwargs())
        X, labels = layout.split(frame)
        failed = bool(np.isnan(X).any())
    except (ValueError, TypeError) as exc:
        if "could not convert" not in str(exc) and "cannot safely convert" not in str(exc):
            raise _read_error(name, path, exc) from None
        failed = True
    except _READ_ERRORS as exc:
        raise _read_error(name, path, exc) from None
    if failed:
        raise csv_error(path, layout, name)
    return X, labels, layout.feature_header()


def csv_error(path: Path, layout: CsvLayout, name: str) -> Exception:
    """The error for a file that failed to parse as numbers: the first bad cell's row and column (empty,
    missing or non-numeric), or the file line of a ragged row; found by reading the file again as text."""
    try:
        found = first_bad_cell(path, layout)
    except _READ_ERRORS as exc:
        return _read_error(name, path, exc)
    if found is None:
        return ValueError(f"{name}: cannot parse {str(path)!r} as numbers")
    row, col, text = found
    where = f"at row {row}, column {col} of {str(path)!r}"
    if not text.strip():
        return ValueError(f"{name}: missing value (empty cell) {where}")
    if is_missing(text):
        return ValueError(f"{name}: missing value {text!r} {where}")
    return TypeError(f"{name}: non-numeric value {text!r} {where}")
