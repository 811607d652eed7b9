"""Boundary checks shared by the API and the CLI.

Every check raises ``ValueError`` or ``TypeError`` whose message names the
argument and the offending value, so that the CLI can print it as one line.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

ESTIMATORS = ("epsilon", "knn")
METHODS = ("auto", "dense", "tiled")
DTYPES = ("float64", "float32")


#: names shown in a message about a list of columns; a longer list is cut short (a misread file can
#: hold thousands of "columns", and an error is one readable line)
SHOWN_NAMES = 12


def _cut(name, width: int) -> str:
    name = str(name)
    return name if len(name) <= width else name[: width - 3] + "..."


def shown_names(names) -> str:
    """``names`` as a message shows them: the list, or its first :data:`SHOWN_NAMES` (each cut to 40
    characters) and how many there are in all."""
    names = [_cut(n, 40) for n in names]
    if len(names) <= SHOWN_NAMES:
        return str(names)
    return f"{str(names[:SHOWN_NAMES])[:-1]}, ...] ({len(names)} in all)"


def first_difference(names, fitted) -> str:
    """Where a list of column names first differs from the fit's, for a message that shows both lists
    cut short (:func:`shown_names`), which may then look alike: ``name 20 is 'zz', fitted 'c19'`` (counted
    from 1 over the names listed; ``none`` past the end of the shorter list; names cut to 200
    characters)."""
    names, fitted = list(names), list(fitted)
    j = 0
    while j < min(len(names), len(fitted)) and names[j] == fitted[j]:
        j += 1

    def at(where: list) -> str:
        return repr(_cut(where[j], 200)) if j < len(where) else "none"

    return f"name {j + 1} is {at(names)}, fitted {at(fitted)}"


def is_integer(value) -> bool:
    """An integer of any integral type (numpy's included), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_numeric_dtype(dtype, name: str = "X", kinds: str = "biuf") -> None:
    """Reject non-numeric dtypes (strings, objects, dates; NumPy's or pandas') before reading any values:
    those whose kind (NumPy's one-letter code) is not in ``kinds``."""
    kind = dtype.kind if hasattr(dtype, "kind") else np.dtype(dtype).kind
    if kind not in kinds or str(dtype) == "category":  # pandas' categories: labels, whatever they hold
        raise TypeError(f"{name} must be numeric, got dtype {dtype}")


def check_numeric_input(X, name: str = "X", kinds: str = "biuf") -> None:
    """Refuse, before its values are read as numbers, an input whose dtype is not numeric (an array's, or
    any column's of a DataFrame: strings, objects, dates, categories; kinds outside ``kinds``; nested
    lists by the dtype NumPy reads them as, objects allowed: strings and bytes refused) and a
    NumPy masked array with masked entries (converting it would read the values under the mask as points),
    and a SciPy sparse matrix or array (NumPy makes it a 0-d object array, not points)."""
    if type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name} is a sparse {type(X).__name__}; CDF-TS needs the points dense: pass "
                        f"{name}.toarray()")  # fmt: skip
    if hasattr(X, "dtype"):
        check_numeric_dtype(X.dtype, name, kinds)
    elif hasattr(X, "dtypes") and hasattr(X.dtypes, "items"):  # a DataFrame: each column's dtype
        for column, dtype in X.dtypes.items():
            check_numeric_dtype(dtype, f"{name} column {column!r}", kinds)
    elif isinstance(X, (list, tuple)):  # nested lists: refused for strings as the array of them is
        try:
            natural = np.asarray(X).dtype  # numbers, strings, or objects (Decimals, ints beyond int64)
        except ValueError:  # ragged: its shape is refused when it is read
            natural = None
        if natural is not None:
            check_numeric_dtype(natural, name, kinds + "O")
    masked = np.ma.count_masked(X) if isinstance(X, np.ma.MaskedArray) else 0
    if masked:
        raise ValueError(
            f"{name} is a masked array with {masked} masked value(s): fill them or drop their rows first "
            f"(e.g. {name}.filled(value)); the values under the mask are not points"
        )


def check_points(X, name: str = "X", min_rows: int = 2) -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 array of shape (n, d), n >= min_rows, d >= 1.

    Rejects non-numeric data, masked entries, NaN / inf, wrong rank, fewer than ``min_rows``
    rows (a fit needs two; a fitted model transforms one) and zero columns.
    """
    check_numeric_input(X, name)
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an int beyond float64's range
        missing = np.asarray(X.isna()) if hasattr(X, "isna") else np.zeros((0, 0), bool)  # pandas' NA
        if missing.ndim == 2 and missing.any():
            i, j = np.argwhere(missing)[0]
            raise ValueError(
                f"{name} contains missing values (first at row {i}, column {j}: {X.iloc[i, j]}): fill them "
                "or drop their rows first"
            ) from None
        raise TypeError(f"{name} must be a numeric array: {exc}") from None
    check_shape(arr.shape, name, min_rows)
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} contains NaN or inf (first at row {bad[0]}, column {bad[1]}: {arr[bad[0], bad[1]]})"
        )
    return np.ascontiguousarray(arr)


def check_shape(shape: tuple, name: str = "X", min_rows: int = 2) -> tuple[int, int]:
    """Validate the shape of a point array without reading its values."""
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-dimensional (n points x d attributes), got shape {shape}")
    n, d = shape
    if d == 0:
        raise ValueError(f"{name} has zero columns (shape {shape}); need d >= 1")
    if n < min_rows:
        need = "CDF-TS needs n >= 2 points" if min_rows == 2 else f"need at least {min_rows}"
        raise ValueError(f"{name} has {n} row(s) (shape {shape}); {need}")
    return int(n), int(d)


def check_flag(value, name: str) -> bool:
    """``value`` when it is True or False; a ``TypeError`` naming ``name`` otherwise (``"yes"``, 1)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_lam(lam) -> float:
    """lambda is relative to the largest pairwise distance: 0 < lam < 1."""
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real):
        raise TypeError(f"lam must be a real number, got {lam!r}")
    if not (0.0 < float(lam) < 1.0):
        raise ValueError(f"lam must lie in the open interval (0, 1), got {lam!r}")
    return float(lam)


def check_delta(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a real number, got {delta!r}")
    if not (float(delta) > 0.0) or not np.isfinite(delta):
        raise ValueError(f"delta must be a positive finite number, got {delta!r}")
    return float(delta)


def check_max_iter(max_iter) -> int:
    if not is_integer(max_iter):
        raise TypeError(f"max_iter must be an integer, got {max_iter!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    return int(max_iter)


def check_estimator(estimator: str, k, n: int | None) -> tuple[str, int | None]:
    """Check the density estimator and its k (only for ``"knn"``: an integer, 1 <= k <= n - 1; n None:
    not known yet, the range not checked)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    if estimator == "epsilon":
        if k is not None:
            raise ValueError(f"k is only used with estimator='knn', got k={k!r} with estimator='epsilon'")
        return estimator, None
    if k is None:
        raise ValueError("k is required with estimator='knn' (1 <= k <= n - 1), got k=None")
    if not is_integer(k):
        raise TypeError(f"k must be an integer, got {k!r}")
    if n is not None and not (1 <= k <= n - 1):
        raise ValueError(f"k must lie in [1, n - 1] = [1, {n - 1}], got k={k!r}")
    return estimator, int(k)


def check_choice(value, name: str, choices: tuple) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_positive_int(value, name: str, allow_none: bool = True) -> int | None:
    if value is None and allow_none:
        return None
    if not is_integer(value):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


def check_duration(value, name: str, example: str = "5 minutes") -> float:
    """Seconds of a positive, finite duration: a number of seconds or a string read by
    ``dask.utils.parse_timedelta`` (``"90"``, ``"5 minutes"``).  Zero, a negative or non-finite
    value, an unknown unit or anything unreadable is a ``ValueError`` naming ``name`` and the value
    (``parse_timedelta`` itself raises ``KeyError`` for ``"nan"`` or an unknown unit and
    ``OverflowError`` for ``"1e400"``)."""
    from dask.utils import parse_timedelta

    try:
        seconds = float(parse_timedelta(value, default="s"))
    except (ValueError, TypeError, KeyError, OverflowError):
        seconds = math.nan
    if isinstance(value, bool) or not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name} must be a positive duration such as {example!r}, got {value!r}")
    return seconds
