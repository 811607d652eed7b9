"""The bundled example script runs and prints what the README promises."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT, cli_env


@pytest.mark.slow
def test_api_quickstart_example():
    script = "examples/api_quickstart.py"
    res = subprocess.run([sys.executable, script], cwd=ROOT, env=cli_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "dense: (1250, 2) range 0.0 1.0" in res.stdout
    assert "iterations: 5" in res.stdout
    assert "tiled equals dense: True" in res.stdout


@pytest.mark.slow
def test_larger_than_memory_example(tmp_path):
    script = "examples/larger_than_memory.py"
    res = subprocess.run(
        [sys.executable, script, str(tmp_path)], cwd=ROOT, env=cli_env(), capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    for line in ["zarr out: (100000, 4) chunks (20000, 4)", "lazy dask out: Array (50000, 4) in 5 row chunks",
                 "estimator equals function: True", "on 1000 references", "pipeline clusters: 2"]:
        assert line in res.stdout  # fmt: skip
