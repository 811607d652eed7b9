"""Under numba's CUDA simulator, one lock around ``cuda.shared.array`` (test support, not the package).

Imported by ``conftest.py`` in the test process, and preloaded into every Dask worker that process or
its subprocesses start (``distributed.worker.preload``, set by ``conftest.py``): the session clusters,
the clusters a run starts of its own (``client=None``) and those of CLI subprocesses."""

from __future__ import annotations

import os
import sys

import numpy as np


def serialise_simulated_shared_arrays() -> None:
    """Under numba's CUDA simulator, one lock around ``cuda.shared.array``.

    The simulator (numba-cuda 0.30) runs a block's threads as Python threads and finds a block's shared
    array by the line that asks for it, in a dict it reads and then fills without a lock: two threads
    switched in between get two arrays, and one thread's tile loads are then unseen by the others (a
    2026-11-28 audit made it happen by forcing thread switches there: NaN positions, counts intact).
    Same lookup, under a lock; the kernels are not changed.  Called at import: in the test process and,
    as a preload, in every worker the tests start."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        return
    import threading
    import traceback

    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "serialised", False):
        return
    unlocked, lock = shared.array, threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory, or the simulator's refusal
            return unlocked(self, shape, dtype, alignment)
        caller = tuple(traceback.extract_stack(sys._getframe(1), limit=1)[0])[0:2]  # the kernel's line
        with lock:
            found = self._allocations.get(caller)
            if found is None:
                if isinstance(dtype, kernelapi.types.Type):
                    dtype = kernelapi.numpy_support.as_dtype(dtype)
                found = self._allocations[caller] = np.empty(shape, dtype)
        return found

    array.serialised = True
    shared.array = array


serialise_simulated_shared_arrays()
