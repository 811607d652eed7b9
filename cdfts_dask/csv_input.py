"""Reading points from CSV with pandas' C parser: one header rule, one missing-value error for every row.

The layout of a file is decided once, from its first non-blank row
(:func:`csv_layout`):

* a UTF-8 byte-order mark is stripped (``encoding="utf-8-sig"``);
* the label column (a header name or an index, negative from the end) is set
  aside *before* the header is decided;
* the first row is a header exactly when one of its feature cells is text
  that is neither a number nor a missing value, or when it is the header
  ``pd.DataFrame(X).to_csv(path)`` writes, ``,0,1,...`` (an empty first
  feature cell, then the column numbers; :func:`is_header_row`).  Any other
  row of numbers and empty / NA cells is data, and its empty cell is
  reported as for any other row, never dropped as a "header";
* line breaks are pandas' (``\n``, ``\r\n``, a lone ``\r``), with one exception: its C
  tokenizer misreads the line after a blank line that ends in a lone ``\r`` (a leading
  empty field is dropped and the row shifted left, or the line vanishes).  A file whose
  line breaks are all lone ``\r`` (classic Mac OS) is therefore parsed with
  ``lineterminator="\r"`` (:attr:`CsvLayout.lineterminator`), and in a file that also has
  ``\n`` such a blank line is refused, naming it (:func:`check_fields`, :func:`scan_lines`);
* every non-blank line has as many fields as the first row, checked before
  parsing (:func:`check_fields`, :func:`scan_lines`): a line with more or
  fewer is an error naming it (pandas would make extra leading fields an
  index, or drop them, and fill a short row with empty cells, so a missing
  label would read as ``''``).

:meth:`CsvLayout.read_kwargs` are the keyword arguments for
``pandas.read_csv`` (and, block-wise, ``dask.dataframe.read_csv``): feature
columns parse straight to float64 (exactly, round-trip), the label column
stays the untouched text, nothing is turned into NaN silently
(``na_filter=False``: an empty or ``NA`` cell fails to parse), and no column
becomes an index (``index_col=False``).
:meth:`CsvLayout.split` turns a parsed frame (the whole file, or one block)
into the float64 points and the labels.  Only when parsing fails is the file
read again, as text, to name the first bad cell (:func:`first_bad_cell`).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
import shlex
import threading
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._validation import shown_names

#: the file names read as comma-separated text (compared case-insensitively)
CSV_SUFFIXES = (".csv", ".txt")

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


def check_unique_names(header: list[str] | None, path, name: str) -> None:
    """A CSV read by the estimator: its header names become ``feature_names_in_``, which scikit-learn
    needs unique (its own check raised narwhals' ``DuplicateError`` about a DataFrame the user never
    made); refused naming the repeated names and the file."""
    repeated = {n: k for n, k in Counter(header or []).items() if k > 1}
    if repeated:
        listed = ", ".join(f"{n!r} {k} times" for n, k in repeated.items())
        raise ValueError(
            f"{name}: the header of {str(path)!r} repeats column names ({listed}); the estimator keeps "
            "the names as feature_names_in_, which must be unique: rename the columns"
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


def are_column_numbers(cells: list[str]) -> bool:
    """Whether ``cells`` are ``0,1,...``, two or more: the names pandas writes for unnamed columns."""
    return len(cells) >= 2 and [c.strip() for c in cells] == [str(k) for k in range(len(cells))]


def is_header_row(cells: list[str], label: int | None = None) -> bool:
    """Whether a first row is a header: a feature cell (label excluded) is text, not a number or missing;
    or the row is the header ``pd.DataFrame(X).to_csv(path)`` writes (pandas' defaults), an empty cell
    (the index's name) then the column numbers ``0,1,...``, its empty cell a feature cell (no data row
    holds an empty feature cell; an empty label cell is valid data).  ``label``: 0..ncols-1 or None."""
    if label != 0 and cells[0].strip() == "" and are_column_numbers(cells[1:]):
        return True
    return any(not is_missing(c) and not _is_number(c) for j, c in enumerate(cells) if j != label)


@dataclass(frozen=True)
class CsvLayout:
    """Column count, header (names, or None) and label column (index, or None) of a CSV file."""

    ncols: int
    header: list[str] | None
    label: int | None
    #: ``"\r"`` for a file whose line breaks are all lone carriage returns, else None (pandas' own rule)
    lineterminator: str | None = None

    @property
    def features(self) -> list[int]:
        return [j for j in range(self.ncols) if j != self.label]

    def read_kwargs(self, text_features: bool = False) -> dict:
        """Keyword arguments for ``pandas.read_csv`` / ``dask.dataframe.read_csv`` of this file; with
        ``text_features`` the feature columns are read as text, for :meth:`split` to convert
        (:func:`has_leading_plus`, :func:`may_hold_boolean_words`)."""
        import pandas as pd

        feature_dtype = str if text_features else np.float64
        kwargs = dict(
            header=0 if self.header is not None else None,
            names=list(range(self.ncols)),
            index_col=False,  # extra fields never become an index (they are refused first: check_fields)
            dtype={j: (str if j == self.label else feature_dtype) for j in range(self.ncols)},
            na_filter=False,
            encoding="utf-8-sig",
            skip_blank_lines=True,
            engine="c",
        )
        if self.lineterminator is not None:
            kwargs["lineterminator"] = self.lineterminator
        if int(pd.__version__.split(".")[0]) < 3:  # pandas 3 parses floats round-trip by default
            kwargs["float_precision"] = "round_trip"
        return kwargs

    def split(self, frame) -> tuple[np.ndarray, np.ndarray | None]:
        """(points as float64, labels as text or None) of a frame parsed with :meth:`read_kwargs`; feature
        columns read as text are converted by :func:`exact_floats`."""
        features = frame[self.features]
        if all(dtype.kind == "f" for dtype in features.dtypes):
            X = np.ascontiguousarray(features.to_numpy(dtype=np.float64))
        else:
            X = exact_floats(features.to_numpy(dtype=object))
        labels = None if self.label is None else frame[self.label].to_numpy(dtype=object)
        return X, labels

    def feature_header(self) -> list[str] | None:
        return None if self.header is None else [h for j, h in enumerate(self.header) if j != self.label]


#: a sign ``+`` that starts a field (after a line break, a comma, a space or a quote; not an exponent's)
_LEADING_PLUS = re.compile(rb'(?:\A|[,\s"])\+')
#: a decimal number as text (ASCII digits only; ``inf`` / ``nan`` too, to fail later as in any file)
_DECIMAL = r"(?i)[ \t]*[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)[ \t]*"


def has_leading_plus(text: bytes) -> bool:
    """Whether CSV text holds a field that starts with ``+``.  pandas' C parser rounds a number written
    with a ``+`` sign and a space or tab in its cell (``+0.9504636963259353 ``, `` +1.5``) to a
    neighbouring float in about one cell of ten (pandas 3.1), so the features of such text are read as
    text and converted by :func:`exact_floats`."""
    return b"+" in text and _LEADING_PLUS.search(text) is not None


def has_boolean_word(text: bytes) -> bool:
    """Whether CSV text holds ``true`` or ``false`` in any case: pandas' C parser reads a float column
    whose cells are all such words (``True``, ``FALSE``, ``tRue``, ...) as 1.0 and 0.0 (pandas 3.1), where
    the header rule and every other reader take them as text (:func:`may_hold_boolean_words`).  Checked
    only when the text holds a ``u`` or an ``l`` (no number's text does), on what is left once digits,
    signs, points, commas and white space are deleted (a word's letters stay together), lower-cased:
    about 1 ms per MiB."""
    if not any(c in text for c in (b"u", b"U", b"l", b"L")):
        return False
    letters = text.translate(None, _NUMBER_BYTES).lower()
    return b"true" in letters or b"false" in letters


#: the bytes :func:`has_boolean_word` deletes before it looks for the words
_NUMBER_BYTES = b"0123456789+-.,; \t\r\n"


def may_hold_boolean_words(X: np.ndarray) -> bool:
    """Whether pandas' float parser may have read ``true`` / ``false`` words as numbers in the feature
    columns X: a column of nothing but 0.0 and 1.0."""
    return X.shape[0] > 0 and bool(((X == 0) | (X == 1)).all(axis=0).any())


def parsed_exactly(parse, scan: LineScan):
    """``parse(text_features)`` (``(X, labels)`` of CSV text, by :meth:`CsvLayout.read_kwargs`) as every
    reader parses: features as text where a field starts with ``+`` (:func:`has_leading_plus`); else by
    pandas' float parser, and parsed again with features as text when the text holds a boolean word
    (:func:`has_boolean_word`; a label ``True`` alone costs nothing) and a feature column came out all 0s
    and 1s (:func:`may_hold_boolean_words`): there a word is a non-numeric value (:func:`exact_floats`),
    named as any other."""
    out = parse(scan.leading_plus)
    if scan.boolean_words and not scan.leading_plus and may_hold_boolean_words(out[0]):
        out = parse(True)
    return out


def exact_floats(cells: np.ndarray) -> np.ndarray:
    """float64 of an array of text cells, each the float nearest to its decimal (Python's ``float``);
    a cell that is not a decimal number (empty, ``NA``, other text) becomes NaN, which the reader
    reports as a bad cell."""
    import pandas as pd

    flat = pd.Series(cells.ravel(), dtype=object)
    number = flat.str.fullmatch(_DECIMAL).fillna(False).to_numpy(dtype=bool)
    out = np.full(flat.shape, np.nan)
    out[number] = flat.to_numpy()[number].astype(np.float64)  # float() of each: correctly rounded
    return out.reshape(cells.shape)


def is_index_text(label_column) -> bool:
    """Whether a ``--label`` text is an index: ASCII digits with an optional minus (``"²"`` is a name)."""
    return isinstance(label_column, str) and re.fullmatch(r"[ \t]*-?[0-9]+[ \t]*", label_column) is not None


def label_index(label_column, header: list[str] | None, ncols: int, name: str) -> int:
    """Column index of ``label_column``: a header name (surrounding spaces ignored, as in the header's
    names), or an integer (or its text; negative from the end).

    Refused when it could mean two columns: a name the header holds twice, or a text such as
    ``"3"`` that is both an index and the name of another column (an int is always an index).
    """
    if isinstance(label_column, str):
        label_column = label_column.strip()
    named = header is not None and isinstance(label_column, str) and label_column in header
    if named and header.count(label_column) > 1:
        places = [j for j, h in enumerate(header) if h == label_column]
        raise ValueError(
            f"label column {label_column!r} names {len(places)} columns of {name} (indices {places}): "
            "rename one, or give the index"
        )
    if isinstance(label_column, str) and not is_index_text(label_column):
        if not named:
            columns = (f"columns: {shown_names(header)}" if header is not None
                       else "it has no column names: give an index")  # fmt: skip
            raise ValueError(f"label column {label_column!r} not found in {name} ({columns})")
        return header.index(label_column)
    idx = int(label_column)
    if not -ncols <= idx < ncols:
        raise ValueError(f"label column index {idx} out of range for {name} with {ncols} columns")
    if named and header.index(label_column) != idx % ncols:
        where = header.index(label_column)
        raise ValueError(
            f"label column {label_column!r} is ambiguous in {name}: the column named {label_column!r} is "
            f"index {where}, and index {idx} is {header[idx % ncols]!r}: rename that column"
        )
    return idx % ncols


def ragged_error(name: str, path, line: int, fields: int, ncols: int) -> ValueError:
    """The error for a file line (1-based) whose field count is not the first row's."""
    return ValueError(f"{name}: {str(path)!r} line {line} has {fields} fields, expected {ncols}")


def _read_error(name: str, path: Path, exc: Exception) -> ValueError:
    text = str(exc).strip()
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if fields:
        want, line, got = fields.groups()
        return ragged_error(name, path, int(line), int(got), int(want))
    if "No columns to parse" in text:
        return ValueError(f"{name}: {str(path)!r} is empty")
    reason = text.splitlines()[0] if text else type(exc).__name__
    return ValueError(f"{name}: cannot read {str(path)!r}: {reason}")


#: pandas' ParserError / EmptyDataError are ValueErrors
_READ_ERRORS = (OSError, UnicodeDecodeError, ValueError)


def csv_layout(path, label_column=None, name: str = "input", warn: bool = True) -> CsvLayout:
    """Decide the layout of a CSV file from its first non-blank row (see the module docstring); with
    ``warn``, say when that row looks like pandas' default index or column numbers (once per read:
    a second look at the same file's layout passes ``warn=False``)."""
    import pandas as pd

    path = Path(path)
    try:
        lineterminator = "\r" if _line_breaks_are_lone_cr(path) else None
        first = pd.read_csv(
            path, header=None, nrows=1, dtype=str, na_filter=False, encoding="utf-8-sig", engine="c",
            **({} if lineterminator is None else {"lineterminator": lineterminator}),
        )  # fmt: skip
    except _READ_ERRORS as exc:
        raise _read_error(name, path, exc) from None
    cells = ["" if c is None else str(c) for c in first.iloc[0].tolist()] if len(first) else []
    if not cells:
        raise ValueError(f"{name}: {str(path)!r} is empty")
    _check_comma_separated(cells, path, name)
    names = [c.strip() for c in cells]
    named_label = isinstance(label_column, str) and not is_index_text(label_column)
    if label_column is None:
        label = None
    else:
        label = label_index(label_column, names if named_label else None, len(cells), name)
    header = names if named_label or is_header_row(cells, label) else None
    if header is not None and label is not None and not named_label:
        label_index(label_column, header, len(cells), name)  # an index that is also another column's name
    if warn:
        _warn_doubtful_first_row(names, header, label, path, name)
    return CsvLayout(len(cells), header, label, lineterminator)


#: separators a file may use instead of commas: (separator, its name, pandas' ``sep`` for it); None
#: splits at runs of blanks, as ``np.savetxt`` writes by default
OTHER_SEPARATORS = (("\t", "tabs", "'\\t'"), (";", "semicolons", "';'"), (None, "spaces", "r'\\s+'"))

#: the first lines of a one-column file looked at for another separator (``#`` comment lines skipped)
SEPARATOR_LINES = 5


def _check_comma_separated(cells: list[str], path, name: str) -> None:
    """A file read as one column whose first :data:`SEPARATOR_LINES` non-blank, non-comment lines
    another separator (:data:`OTHER_SEPARATORS`) splits alike, into two or more fields each (trailing
    empty fields dropped: ``0.1<TAB>`` is one), is a file of that separator: refused, naming it and how
    to convert it exactly (it would fail later as one non-numeric column).  A quoted field is one field,
    and a one-column file whose header alone holds a ``;`` is read."""
    if len(cells) != 1:
        return
    lines, comments = _first_lines(Path(path), SEPARATOR_LINES)
    for separator, called, sep in OTHER_SEPARATORS:
        counts = {len(_fields(line, separator)) for line in lines}
        if separator is None and len(counts) == 2 and _leads_with_an_unnamed_index(lines):
            counts, sep = {len(_fields(lines[1], None))}, "' '"  # its header's empty first name is a field
        if len(counts) == 1 and min(counts) >= 2:
            comment = "comment='#', " if comments else ""  # np.savetxt's header line
            raise ValueError(
                f"{name}: {str(path)!r} separates its fields by {called}: only comma-separated files are "
                f"read (convert it, every cell as it is: pandas.read_csv(path, sep={sep}, header=None, "
                f"{comment}dtype=str, keep_default_na=False).to_csv(new_path, header=False, index=False))"
            )


def _leads_with_an_unnamed_index(lines: list[str]) -> bool:
    """Whether the first of ``lines`` is the header ``to_csv(sep=' ')`` writes with pandas' index (its name
    empty: one leading space), over lines of single-space-separated fields, as many as the header has."""
    first, rest = lines[0], lines[1:]
    if not rest or not first.startswith(" ") or first.startswith("  "):
        return False
    single_spaced = all(line.split() == line.split(" ") for line in rest)
    return single_spaced and {len(line.split(" ")) for line in rest} == {len(first.split(" "))}


def _first_lines(path: Path, count: int, limit: int = 1 << 20) -> tuple[list[str], bool]:
    """The first ``count`` non-blank lines of a text file that are not ``#`` comments, as the reader
    sees them (a BOM dropped, undecodable bytes replaced; fewer where a line is longer than ``limit``
    characters: the lines before it), and whether a comment line was passed over."""
    lines: list[str] = []
    comments = False
    with open(path, encoding="utf-8-sig", errors="replace", newline=None) as fh:
        while len(lines) < count:
            line = fh.readline(limit)
            if not line:
                break
            if len(line) == limit and not line.endswith("\n"):  # a longer line: not looked at
                break
            if line.lstrip().startswith("#"):
                comments = True
            elif line.strip():
                lines.append(line.rstrip("\r\n"))
    return lines, comments


def _fields(line: str, separator: str | None) -> list[str]:
    """``line``'s fields split by ``separator`` (quotes respected; trailing empty fields dropped), or by
    runs of blanks."""
    if separator is None:
        return line.split()
    with _any_field_size():
        fields = next(csv.reader([line], delimiter=separator), [])
    while fields and not fields[-1].strip():
        fields.pop()
    return fields


def _line_breaks_are_lone_cr(path: Path) -> bool:
    """Whether a file holds a ``\\r`` and no ``\\n`` (read up to its first ``\\n``: one read of a file
    that has none)."""
    saw_cr = False
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 16):
            if b"\n" in chunk:
                return False
            saw_cr = saw_cr or b"\r" in chunk
    return saw_cr


def _warn_doubtful_first_row(names: list[str], header: list[str] | None, label: int | None, path, name: str):
    """Say when the header rule's answer is likely not what the file means: a first row of column numbers
    (``0,1,...``: the header pandas writes for unnamed columns, read here as a data row) or of numbers
    with a label cell named like a label column (``2019,2020,label`` with ``--label -1``), or a header
    with an unnamed column (the index pandas writes by default, read here as a feature)."""
    features = [c for j, c in enumerate(names) if j != label]
    if header is None and are_column_numbers(features):
        warnings.warn(
            f"{name}: the first row of {str(path)!r} ({','.join(names)}) looks like column numbers (the "
            "header pandas writes for unnamed columns) but is numeric, so it is read as a data row; delete "
            "it if it is a header",
            UserWarning,
            stacklevel=4,
        )
    if header is None and label is not None and names[label].strip().lower() in LABEL_LIKE_NAMES:
        warnings.warn(
            f"{name}: the first row of {str(path)!r} ({','.join(names)}) has numbers in every feature "
            f"column, so it is read as a data row, but its label cell {names[label]!r} is named like a "
            "label column; delete it if it is a header",
            UserWarning,
            stacklevel=4,
        )
    for j, column in enumerate(header or []):
        if column == "" and j != label:
            warnings.warn(
                f"{name}: column {j + 1} of {str(path)!r} has no name in the header (the row index pandas "
                "writes by default?) and is transformed as a feature; drop it first if it is an index",
                UserWarning,
                stacklevel=4,
            )


class LineScan(NamedTuple):
    """What :func:`scan_lines` found in a piece of CSV text made of whole lines."""

    lines: int  #: physical lines (a blank line and a header line count)
    rows: int  #: non-blank lines (pandas skips blank ones)
    #: (0-based line, field count) of the first non-blank line of another width than the first row
    ragged: tuple[int, int] | None
    #: 0-based line of the first blank line ended by a lone ``\\r`` (in a file with ``\\n`` line breaks)
    lone_cr_blank: int | None = None
    #: whether a field starts with ``+`` (:func:`has_leading_plus`: the features are read as text)
    leading_plus: bool = False
    #: whether the text holds ``true`` or ``false`` (:func:`has_boolean_word`)
    boolean_words: bool = False


def strip_bom(text: bytes) -> bytes:
    """``text`` without a leading UTF-8 byte-order mark (pandas' ``utf-8-sig`` drops it too)."""
    return text.removeprefix(codecs.BOM_UTF8)


#: a quoted field within one line: a quote at the start of a field (the lookbehind: not after a
#: character other than a comma or a line break) up to the next lone quote, ``""`` an escaped quote.
#: Written to start with the quote, which lets ``re`` skip to the quotes (25x faster).
_QUOTED_FIELD = re.compile(rb'"(?<![^,\r\n]")[^"\r\n]*(?:""[^"\r\n]*)*"')


def _unquoted(text: bytes) -> bytes:
    """``text`` with each quoted field within one line replaced by ``q``: its commas split nothing.
    Where a quote is left (a quoted line break, a quote inside a field) the ``csv`` module reads
    ``text`` itself."""
    return _QUOTED_FIELD.sub(b"q", text) if b'"' in text else text


def _is_blank(line: bytes) -> bool:
    """A line pandas skips: spaces and tabs only (``\\x0c`` alone is a row, as is ``""``)."""
    return not line.strip(b" \t")


def _ragged_plain(lines: list[bytes], ncols: int) -> tuple[int, int] | None:
    """The first non-blank line without ``ncols`` fields, in text holding no quote (fields = commas + 1)."""
    for i, line in enumerate(lines):
        if line.count(b",") != ncols - 1 and not _is_blank(line):
            return i, line.count(b",") + 1
    return None


#: held while the csv module's field size limit is raised (a process-wide setting)
_FIELD_LIMIT_LOCK = threading.Lock()


@contextmanager
def _any_field_size() -> Iterator[None]:
    """The ``csv`` module without its 128 KiB field limit (pandas has none), restored afterwards."""
    with _FIELD_LIMIT_LOCK:
        old = csv.field_size_limit(2**31 - 1)
        try:
            yield
        finally:
            csv.field_size_limit(old)


def _ragged_quoted(lines: Iterator[str], ncols: int) -> tuple[int, int] | None:
    """The first non-blank record without ``ncols`` fields (by its first line), under the ``csv`` module's
    quoting rules, which are pandas' (a quoted comma or line break does not end a field)."""
    with _any_field_size():
        reader = csv.reader(lines)
        start = 0
        for row in reader:
            blank = not row or (len(row) == 1 and row[0] != "" and not row[0].strip(" \t"))
            if len(row) != ncols and not blank:
                return start, len(row)
            start = reader.line_num
    return None


def scan_lines(text: bytes, ncols: int, newline_file: bool = True) -> LineScan:
    """Lines, non-blank lines and the first ragged line of CSV text made of whole lines (BOM stripped).

    Line breaks are pandas' (``\\n``, ``\\r\\n``, ``\\r``).  Fields are counted by
    commas once the quoted fields are taken out (:func:`_unquoted`), or with
    the ``csv`` module where a quote is left.  ``newline_file``: the file has ``\\n`` line breaks
    (its layout has no ``lineterminator``), so a blank line ended by a lone ``\\r`` is looked for;
    and whether a field starts with ``+``."""
    plain = _unquoted(text)
    lines = plain.splitlines()  # the same lines as text's
    rows = sum(1 for line in lines if not _is_blank(line))
    if b'"' in plain:
        ragged = _ragged_quoted(io.StringIO(text.decode("utf-8", "replace"), newline=""), ncols)
    else:
        ragged = _ragged_plain(lines, ncols)
    blank = lone_cr_blank_line(plain) if newline_file else None
    return LineScan(len(lines), rows, ragged, blank, has_leading_plus(text), has_boolean_word(text))


#: a blank line (spaces and tabs only) that ends in a lone carriage return
_LONE_CR_BLANK = re.compile(rb"(?:\A|[\r\n])[ \t]*\r(?!\n)")


def lone_cr_blank_line(text: bytes) -> int | None:
    """0-based line of the first blank line ended by a lone ``\\r`` in text of a file with ``\\n`` line
    breaks (whose next line pandas' C tokenizer may misread: see the module docstring), else None."""
    if b"\r" not in text:
        return None
    found = _LONE_CR_BLANK.search(text)
    if found is None:
        return None
    return len(text[: found.end()].splitlines()) - 1


def lone_cr_error(name: str, path, line: int) -> ValueError:
    """The error for a blank line (1-based file line) ended by a lone ``\\r`` in a file with ``\\n`` too."""
    return ValueError(
        f"{name}: {str(path)!r} line {line} is a blank line ended by a lone carriage return (\\r) in a file "
        "whose other lines end in \\n; pandas misreads the line after it: give the file one kind of line "
        "break (\\n or \\r\\n) or delete the blank line"
    )


def _pieces(path: Path, size: int = 1 << 24) -> Iterator[bytes]:
    """A file's bytes in pieces of whole lines (ending on ``\\n``, about ``size`` bytes), BOM stripped."""
    rest, first = b"", True
    with open(path, "rb") as fh:
        while chunk := fh.read(size):
            text = rest + chunk
            cut = text.rfind(b"\n") + 1
            rest = text[cut:]
            if cut:
                yield strip_bom(text[:cut]) if first else text[:cut]
                first = False
    if rest:
        yield strip_bom(rest) if first else rest


def _scan_file(path: Path, ncols: int, newline_file: bool) -> LineScan:
    """:func:`scan_lines` of a whole file in one pass, in pieces of 16 MiB (``lines`` and ``rows`` not
    counted: 0), with 1-based file lines; a file with a quoted line break (or a quote inside a field)
    has its field counts read again with the ``csv`` module as one stream."""
    line0, ragged, blank, plus, words, quoted = 0, None, None, False, False, False
    for piece in _pieces(path):
        plus = plus or has_leading_plus(piece)
        words = words or has_boolean_word(piece)
        text = _unquoted(piece)
        lines = text.splitlines()
        if newline_file and blank is None:
            found = lone_cr_blank_line(text)
            blank = None if found is None else line0 + found + 1
        if ragged is None and not quoted:
            quoted = b'"' in text
            found = None if quoted else _ragged_plain(lines, ncols)
            ragged = None if found is None else (line0 + found[0] + 1, found[1])
        line0 += len(lines)
    if quoted:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
            found = _ragged_quoted(fh, ncols)
        ragged = None if found is None else (found[0] + 1, found[1])
    return LineScan(0, 0, ragged, blank, plus, words)


def check_fields(path, layout: CsvLayout, name: str) -> LineScan:
    """Refuse a file with a non-blank line of more or fewer fields than its first row, or a blank line
    ended by a lone ``\\r`` in a file that also has ``\\n`` (naming the line); return the file's scan
    (:func:`_scan_file`: whether a field starts with ``+``, whether it holds a boolean word)."""
    try:
        scan = _scan_file(Path(path), layout.ncols, layout.lineterminator is None)
    except OSError as exc:
        raise _read_error(name, Path(path), exc) from None
    blank, found = scan.lone_cr_blank, scan.ragged
    if blank is not None and (found is None or blank <= found[0]):
        raise lone_cr_error(name, path, blank)
    if found is not None:
        raise ragged_error(name, path, found[0], found[1], layout.ncols)
    return scan


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

    Raises ``ValueError`` naming the line of a row with more or fewer fields
    than the first, the row and column of an empty / missing value, and
    ``TypeError`` for other text in a feature column.
    """
    import pandas as pd

    path = Path(path)
    layout = csv_layout(path, label_column, name)
    scan = check_fields(path, layout, name)
    try:
        def parse(text_features: bool):
            return layout.split(pd.read_csv(path, **layout.read_kwargs(text_features)))

        X, labels = parsed_exactly(parse, scan)
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
    shown = repr(text) if len(text) <= 80 else f"{text[:40] + '...' + text[-20:]!r} ({len(text)} characters)"
    return TypeError(f"{name}: non-numeric value {shown} {where}{_text_cell_hint(text, layout, col)}")


def _text_cell_hint(text: str, layout: CsvLayout, col: int) -> str:
    """What a text cell in file column ``col`` (1-based) most likely means, for its error: where both it
    and a header name hold a ``;`` or a tab, a file of other separators; under a header, often a label,
    set aside by ``--label=NAME`` (shell-quoted), said only where that one option does it: a file of two
    or more columns, no label set aside yet, and a printable name that ``--label`` reads as that column
    (not a number, which it reads as an index, nor a name the header repeats)."""
    header = layout.header or []
    for separator in (";", "\t"):
        if separator in text and any(separator in h for h in header):
            return f" (a {separator!r} in this cell and in the header: only comma-separated files are read)"
    if not header or layout.label is not None or layout.ncols < 2:
        return ""
    column = header[col - 1]
    if not column.isprintable() or _is_number(column) or header.count(column) > 1:
        return ""
    return (f" (if {column!r} is a label, not a feature: set it aside, with --label={shlex.quote(column)} "
            "on the command line)")  # fmt: skip
