"""A ``distributed.Client``: the one given, one for a scheduler address, or an embedded cluster."""

from __future__ import annotations

import contextlib
import os


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


@contextlib.contextmanager
def get_client(client=None, n_workers: int | None = None, gpu: bool = False):
    """Yield a client, closing whatever this function started.

    * a ``distributed.Client``: used as is;
    * a string: the address of a running scheduler (``tcp://host:8786``);
    * ``None``: an embedded cluster, ``LocalCluster`` with ``n_workers``
      single-threaded worker processes, or ``dask_cuda.LocalCUDACluster``
      (one worker per GPU) when ``gpu``.
    """
    from distributed import Client

    if isinstance(client, Client):
        yield client
        return
    if isinstance(client, str):
        try:
            c = Client(client, timeout="10s")
        except OSError as exc:
            raise ValueError(f"client: cannot reach the Dask scheduler at {client!r}: {exc}") from None
        with c:
            yield c
        return
    if client is not None:
        raise TypeError(f"client must be a distributed.Client, a scheduler address or None, got {client!r}")
    if gpu:
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(n_workers=n_workers)
    else:
        from distributed import LocalCluster

        cluster = LocalCluster(
            n_workers=n_workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=40,
        )
    with cluster, Client(cluster) as c:
        yield c
