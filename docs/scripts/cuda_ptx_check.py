"""Compile the CUDA device's kernels to PTX without a GPU and count the FMA instructions.

    pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12   # NVVM and NVRTC, no driver needed
    NUMBA_ENABLE_CUDASIM=0 python docs/scripts/cuda_ptx_check.py

numba-cuda asks the current device for its compute capability when it
compiles a device function; with no GPU this script answers sm_90 (H100).
The float64 ``sq`` sums (membership, diameter, k-th radii) must show
``mul.rn.f64`` and no ``fma.rn.f64``; the shift kernel's FMAs are its
``B += rho z`` accumulation (d of them), which may contract.
"""

from __future__ import annotations

import os
import types

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"

import numba.cuda.dispatcher as dispatcher  # noqa: E402
from numba import cuda, float32, float64, int64  # noqa: E402

dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))

from cdfts_dask.engine import cuda_kernels  # noqa: E402

D = 4
for dtype, wt in (("float64", float64), ("float32", float32)):
    X = wt[:, ::1]
    signatures = {
        "max_sq": (X, int64, int64, float64[::1]),
        "count_upper": (X, int64, int64, float64, wt, wt, int64[::1]),
        "sq_rows": (X, int64, int64, float64[:, ::1]),
        "shift_sums": (X, X, float64[::1], *[wt[::1]] * 5, float64[::1], float64[:, ::1]),
    }
    for kernel, (name, sig) in zip(cuda_kernels.kernels(D, dtype, 128), signatures.items(), strict=True):
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        counts = {op: ptx.count(op) for op in ("mul.rn.f64", "fma.rn.f64", "fma.rn.f32", "sqrt.rn", "div.rn")}
        print(f"{dtype:8s} {name:12s} d={D}: {counts}")
