"""The scikit-learn transformer :class:`CDFTS`: fit a CDF-TS run, keep it as a model, transform new points."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from . import api, model
from ._validation import DTYPES, check_flag, check_numeric_input
from .csv_blocks import is_large_csv
from .csv_input import check_unique_names, warn_label_like_columns
from .inputs import csv_header, is_path, read_table
from .lazy import is_zarr_path
from .log import verbosity


def _reachable_address(client) -> str | None:
    """The address of ``client``'s scheduler when another process can connect to it, else None (a
    closed client has no scheduler; an in-process cluster's ``inproc://`` address is this process's)."""
    scheduler = client.scheduler
    if scheduler is None or scheduler.address.startswith("inproc://"):
        return None
    return scheduler.address


class CDFTS(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """CDF Transform-and-Shift as a scikit-learn transformer.

    Parameters are those of :func:`cdfts_dask.cdf_ts` (validated in
    :meth:`fit`).  ``fit`` runs CDF-TS on X (or, with ``n_references=s < n``,
    on s rows drawn with ``random_state``) and keeps the run as a model;
    ``transform`` replays the run's iterations on any points (a row equal to
    a fit point takes that point's output), so ``transform(X_fit)`` equals
    ``fit_transform(X_fit)`` exactly and the estimator works in pipelines and
    cross-validation.  Each output column corresponds
    to its input column (``get_feature_names_out`` returns the input names).
    Points outside the fit data's range may map outside [0, 1].

    Input: array-likes are validated the scikit-learn way (float64, 2-D,
    finite, at least 2 rows).  Dask arrays, Zarr arrays, Zarr paths and CSV
    files of 64 MiB or more (:mod:`cdfts_dask.csv_blocks`) are never loaded
    whole: ``fit`` reads them chunk-wise (only the drawn rows with
    ``n_references``), ``transform`` returns a lazy dask array (or writes a Zarr
    store chunk by chunk when ``output`` is given).

    Attributes
    ----------
    model_ : :class:`cdfts_dask.model.CDFTSModel`, the fitted run (T iterations of
        references and statistics, and the fit points' outputs; about ``(T + 1) x n_f x d`` values)
    embedding_ : the fit points' output (n x d; with ``n_references < n``, the drawn rows'): a NumPy array,
        or, for a dask array, Zarr array or large CSV fitted exactly, a dask array chunked like it that
        holds a copy of the model's outputs (on the client: it outlives the client and pickles)
    sample_indices_ : rows drawn as references (``n_references < n``), else None
    n_iter_ : iterations run; ``deltas_`` (NumPy array): Delta after each iteration
    converged_ : whether Delta fell to ``delta`` before ``max_iter``
    n_features_in_, feature_names_in_ (when X has string column names)
    """

    def __init__(
        self,
        lam: float = 0.1,
        delta: float = 0.015,
        max_iter: int = 100,
        estimator: str = "epsilon",
        k: int | None = None,
        method: str = "auto",
        client=None,
        tile_size: int | None = None,
        checkpoint=None,
        resume: bool = False,
        n_workers: int | None = None,
        dtype: str = "float64",
        backend: str = "cpu",
        verbose: bool = False,
        progress=None,
        n_references: int | None = None,
        random_state=None,
        security=None,
    ):
        self.lam = lam
        self.delta = delta
        self.max_iter = max_iter
        self.estimator = estimator
        self.k = k
        self.method = method
        self.client = client
        self.tile_size = tile_size
        self.checkpoint = checkpoint
        self.resume = resume
        self.n_workers = n_workers
        self.dtype = dtype
        self.backend = backend
        self.verbose = verbose
        self.progress = progress
        self.n_references = n_references
        self.random_state = random_state
        self.security = security

    def _validated(self, X, reset: bool):
        """Array-likes: scikit-learn validation (float64, 2-D, finite, n >= 2, feature checks).
        Dask / Zarr input: shape and dtype only (the workers check the values chunk by chunk)."""
        chunked = is_zarr_path(X) or is_large_csv(X)  # read chunk-wise by the workers
        if is_path(X) and not chunked:  # a CSV / .npy file: read, then validated as an array
            path = X
            X, _, header = read_table(path, name="X")
            check_unique_names(header, path, "X")
            warn_label_like_columns(header, path, "X")
            if header is not None:  # its column names, checked like a DataFrame's at transform
                X = pd.DataFrame(X, columns=header)
        if not (chunked or isinstance(X, da.Array) or type(X).__module__.startswith("zarr")):
            # dates and masked entries refused as by cdf_ts (scikit-learn reads them as numbers); complex and
            # object arrays are left to scikit-learn's own rules (its estimator checks ask for them)
            check_numeric_input(X, "X", kinds="biufcO")
            try:
                min_rows = 2 if reset else 1
                return validate_data(self, X, reset=reset, dtype=np.float64, ensure_min_samples=min_rows)
            except OverflowError as exc:  # a Python int beyond float64's range
                raise TypeError(f"X must be a numeric array: {exc}") from None
        header = csv_header(X) if is_large_csv(X) else None
        check_unique_names(header, X, "X")
        X = model.as_dask(X)  # a Zarr array or path is opened as a dask array: read chunk by chunk
        if reset:
            self.n_features_in_ = int(X.shape[1])
            if header is not None:  # a large CSV's column names, as a small one's (a DataFrame's)
                self.feature_names_in_ = np.asarray(header, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            model.check_features(self.model_, X.shape, "X")
            model.check_feature_names(self.model_, header, "X")
            self._warn_if_names_differ(header is not None)
        return X

    def _warn_if_names_differ(self, named: bool) -> None:
        """scikit-learn's warning when X has column names and the fit had none, or the other way round,
        for the inputs it never sees (dask, Zarr, a large CSV); as it says it for NumPy and DataFrames."""
        fitted = hasattr(self, "feature_names_in_")
        if named and not fitted:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without feature names",
                          UserWarning, stacklevel=3)  # fmt: skip
        elif fitted and not named:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was fitted with "
                          "feature names", UserWarning, stacklevel=3)  # fmt: skip

    #: what a fit sets: a fit that raises removes them all, so that the estimator is unfitted then, never
    #: left with one fit's ``model_`` and another input's ``feature_names_in_`` / ``n_features_in_``
    _FITTED = ("model_", "embedding_", "sample_indices_", "deltas_", "n_iter_", "converged_",
               "n_features_in_", "feature_names_in_")  # fmt: skip

    def fit(self, X, y=None) -> CDFTS:
        """Fit CDF-TS on X (y is ignored) and keep the run as ``model_``.  A fit that raises (a refused
        parameter or input, a failed run) leaves the estimator unfitted."""
        try:
            return self._fit(X)
        except BaseException:
            for name in self._FITTED:
                self.__dict__.pop(name, None)
            raise

    def _fit(self, X) -> CDFTS:
        params = self.get_params()
        verbose = check_flag(params.pop("verbose"), "verbose")
        # the checkpoint made absolute and checked against the input path, before X is read (as cdf_ts)
        params["checkpoint"], _ = api.checked_run_paths(X, params["checkpoint"], resume=params["resume"])
        X = self._validated(X, reset=True)
        with verbosity(verbose):
            spec = api.FitSpec.check(X, **params, feature_names=getattr(self, "feature_names_in_", None))
            result = api.fit_sample(spec) if spec.sampled else api.fit_exact(spec, keep_model=True)[1]
        self.model_ = result.model
        self.embedding_ = result.X
        self.sample_indices_ = result.sample_indices
        self.deltas_ = np.asarray(result.deltas, dtype=np.float64)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        return self

    def transform(self, X, output=None):
        """Replay the fitted run on X (rows independent; O(rows n_f d T) work, no n x n_f matrix),
        on the device the fit used (``backend``).

        NumPy / array-like in: NumPy out.  Dask array, Zarr array, Zarr path
        or large CSV file in: a lazy dask array (one task per row chunk, the model shared).
        ``output``, as in :func:`cdfts_dask.cdf_ts` (:func:`cdfts_dask.model.apply`): a ``.zarr``
        path is returned opened read-only (for a chunked X written chunk by chunk on ``client``, else
        here, atomically); a ``.npy`` / ``.csv`` path is written atomically here and the result
        returned as without it.
        Checked before any work: it may be neither the input nor the fit's ``checkpoint`` store
        (the model), nor a folder of other files.
        """
        check_is_fitted(self, "model_")
        _, output = api.checked_run_paths(X, None, output, model=self.checkpoint)
        X = self._validated(X, reset=False)
        return model.apply(
            self.model_, X, output, backend=self.backend, client=self.client, n_workers=self.n_workers,
            security=self.security, lazy=True,
        )

    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)``; an exact fit already holds the result (a copy of ``embedding_``)."""
        self.fit(X, y)
        return self.embedding_.copy() if self.sample_indices_ is None else self.transform(X)

    def __sklearn_clone__(self):
        """An unfitted copy with the same parameters, ``client``, ``security`` and ``progress`` shared
        (a ``distributed.Client`` cannot be deep-copied: scikit-learn's default clone, used by
        ``GridSearchCV`` and ``cross_val_score``, failed on one); the others cloned as scikit-learn does."""
        shared = ("client", "security", "progress")
        params = self.get_params(deep=False)
        return type(self)(**{k: v if k in shared else clone(v, safe=False) for k, v in params.items()})

    def __getstate__(self) -> dict:
        """The state that ``pickle`` and ``copy.deepcopy`` copy: all of it, with a ``distributed.Client``
        given as ``client`` (a live connection, which cannot be copied) replaced by its scheduler's
        address, so that the copy connects to the same cluster when it needs one: a joblib worker of
        ``cross_val_score(..., n_jobs=2)`` fits there (with ``client=None`` it tried to start an embedded
        cluster inside the worker, which cannot).  A client that other processes cannot reach becomes None,
        as before: a closed one, or one of an in-process cluster (``inproc://``).  An address string is
        kept as it is."""
        state = super().__getstate__()
        client = state.get("client")
        if client is not None and not isinstance(client, str):
            state = {**state, "client": _reachable_address(client)}
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # the output is in the run's dtype: float32 in, float32 out for dtype="float32"
        tags.transformer_tags.preserves_dtype = [self.dtype if self.dtype in DTYPES else "float64"]
        return tags
