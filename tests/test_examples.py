"""The bundled example script runs and prints what the README promises."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, cli_env


def test_api_quickstart_example():
    script = "examples/api_quickstart.py"
    res = subprocess.run([sys.executable, script], cwd=ROOT, env=cli_env(), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "dense: (1250, 2) range 0.0 1.0" in res.stdout
    assert "iterations: 5" in res.stdout
    assert "tiled equals dense: True" in res.stdout
