"""The project's metadata agrees with itself: one Python floor in pyproject, ruff, README and CI."""

from __future__ import annotations

import re
import sys
import tomllib

from conftest import ROOT


def _floor() -> tuple[int, int]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)", meta["project"]["requires-python"])
    assert match, meta["project"]["requires-python"]
    return int(match[1]), int(match[2])


def test_python_floor_agrees_everywhere():
    major, minor = _floor()
    assert (major, minor) >= (3, 11)  # Zarr 3 needs Python 3.11
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["tool"]["ruff"]["target-version"] == f"py{major}{minor}"
    assert f"Python >= {major}.{minor}" in (ROOT / "README.md").read_text()
    assert f"sys.version_info < ({major}, {minor})" in (ROOT / ".ci" / "run").read_text()
    assert sys.version_info[:2] >= (major, minor)
