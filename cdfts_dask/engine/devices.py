"""The registry of devices: name -> module of task bodies, imported on first use with importlib."""

from __future__ import annotations

import importlib
from types import ModuleType

#: device name -> module of task bodies (as opt_einsum loads its backends: by name, when first asked for)
DEVICES = {"cpu": "cdfts_dask.engine.cpu", "cuda": "cdfts_dask.engine.cuda"}


def device_module(device: str) -> ModuleType:
    """The task-body module of ``device`` (``"cpu"`` or ``"cuda"``); every one offers the same functions
    (listed in :mod:`cdfts_dask.engine.cpu`)."""
    try:
        name = DEVICES[device]
    except KeyError:
        raise ValueError(f"device must be one of {sorted(DEVICES)}, got {device!r}") from None
    return importlib.import_module(name)
