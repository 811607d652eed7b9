"""The tiled engine: one graph builder (:mod:`.graph`), device-neutral maths (:mod:`.plan`), and
one module of task bodies per device (:mod:`.cpu`, :mod:`.cuda`), picked by name from :data:`DEVICES`."""

from __future__ import annotations

from .devices import DEVICES, device_module
from .graph import TiledEngine
from .step import Step

__all__ = ["DEVICES", "Step", "TiledEngine", "device_module"]
