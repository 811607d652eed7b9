"""cdfts-dask: CDF Transform-and-Shift (Zhu et al., Pattern Recognition 2021) on Dask."""

from .api import CDFTS, WorkersLost, cdf_ts, dscale, rescale
from .runner import IterationReport

__version__ = "0.1.0"
__all__ = ["CDFTS", "IterationReport", "WorkersLost", "cdf_ts", "dscale", "rescale", "__version__"]
