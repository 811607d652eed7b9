"""The parameters of a CDF-TS run: validated once, resolved the same way for ``cdf_ts``, ``CDFTS`` and
``cdfts transform``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import _validation as v
from .engine import DEVICES

#: below this many points ``method="auto"`` uses the dense oracle (n^2 doubles = 32 MB)
DENSE_MAX_N = 2000


@dataclass(frozen=True)
class RunParams:
    """What to compute and where; every field is checked when the object is made (``ValueError`` /
    ``TypeError`` naming the argument; ``k`` given with ``"knn"`` only, an integer).  Its range and
    ``method="auto"`` are settled by :meth:`for_points`, once n is known."""

    lam: float = 0.1
    delta: float = 0.015
    max_iter: int = 100
    estimator: str = "epsilon"
    k: int | None = None
    method: str = "auto"
    tile_size: int | None = None
    n_workers: int | None = None
    dtype: str = "float64"
    backend: str = "cpu"

    def __post_init__(self) -> None:
        checked = {
            "lam": v.check_lam(self.lam),
            "delta": v.check_delta(self.delta),
            "max_iter": v.check_max_iter(self.max_iter),
            "estimator": v.check_choice(self.estimator, "estimator", v.ESTIMATORS),
            "method": v.check_choice(self.method, "method", v.METHODS),
            "tile_size": v.check_positive_int(self.tile_size, "tile_size"),
            "n_workers": v.check_positive_int(self.n_workers, "n_workers"),
            "dtype": v.check_choice(self.dtype, "dtype", v.DTYPES),
            "backend": v.check_choice(self.backend, "backend", tuple(DEVICES)),
        }
        # k's pairing with the estimator before any input is read (1 <= k <= n - 1: for_points)
        checked["estimator"], checked["k"] = v.check_estimator(checked["estimator"], self.k, None)
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def for_points(self, n: int, client=None) -> RunParams:
        """These parameters for n points: ``k`` checked (1 <= k <= n - 1), ``method`` decided.

        ``"auto"`` is the tiled engine when a client, a worker count or a tile
        size is given, for float32 or the CUDA device (which only the engine
        has), or above :data:`DENSE_MAX_N` points; the dense oracle otherwise.
        """
        estimator, k = v.check_estimator(self.estimator, self.k, n)
        method = self.method
        engine_only = self.dtype != "float64" or self.backend != "cpu"
        if method == "auto":
            asked = client is not None or self.tile_size is not None or self.n_workers is not None
            method = "tiled" if (asked or engine_only or n > DENSE_MAX_N) else "dense"
        if method == "dense" and engine_only:
            raise ValueError(
                f"method='dense' is float64 CPU only, got dtype={self.dtype!r}, backend={self.backend!r}"
            )
        return replace(self, estimator=estimator, k=k, method=method)
