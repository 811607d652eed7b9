"""cdfts-dask: CDF Transform-and-Shift (Zhu et al., Pattern Recognition 2021) on Dask.

The public names are imported on first use (PEP 562), so ``import cdfts_dask`` and every Dask
worker that unpickles an engine task body start without loading scikit-learn, Zarr or
``dask.array`` until something needs them (the ``cdfts`` command loads Zarr with its sub-commands).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    "CDFTS": ".estimator",
    "IterationReport": ".runner",
    "WorkersLost": ".dask_client",
    "cdf_ts": ".api",
    "dscale": ".api",
    "rescale": ".api",
}
__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
