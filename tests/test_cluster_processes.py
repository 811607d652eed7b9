"""A real cluster: ``dask scheduler`` + two ``dask worker`` processes, driven by ``cdfts transform``."""

from __future__ import annotations

import numpy as np
import pytest
from faultkit import SYN, dask_processes, run_cli

import cdfts_dask


@pytest.mark.slow
def test_cli_on_a_real_scheduler_equals_embedded_run(tmp_path):
    X = np.loadtxt(SYN, delimiter=",", skiprows=1)[:, :-1]
    expected = cdfts_dask.cdf_ts(X, lam=0.1, delta=0.01, max_iter=3, method="dense")
    out = tmp_path / "out.npy"
    with dask_processes(2) as (address, procs):
        from distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
            pids = set(c.run(lambda: __import__("os").getpid()).values())
        assert len(pids) == 2  # two distinct worker processes
        res = run_cli(
            "transform",
            SYN,
            out,
            "--label",
            "label",
            "--lam",
            "0.1",
            "--delta",
            "0.01",
            "--max-iter",
            "3",
            "--scheduler",
            address,
            "--tile-size",
            "400",
            "--quiet",
        )
        assert all(p.poll() is None for p in procs), "a cluster process died during the run"
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(np.load(out), expected, rtol=0, atol=1e-9)
