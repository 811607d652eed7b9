"""Check a scheduler address before ``distributed.Client`` is given it: one clear line instead of a hang.

``distributed.Client(address)`` waits forever on a listener that accepts a
connection and never answers, and reports a listener that sends non-Dask
bytes as ``Unable to allocate 3.07 EiB``.  :func:`check_scheduler` parses the
address, then opens one comm and asks the scheduler for its identity, all
bounded by Dask's connect timeout, and says which of these went wrong.
"""

from __future__ import annotations

import logging

from .log import logger

#: seconds a scheduler's handshake may take before the wait for the rest of the connect timeout is said
WAIT_NOTICE_S = 2.0


def connect_timeout() -> float:
    """Dask's ``distributed.comm.timeouts.connect`` in seconds (set it, e.g. with
    ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s``, to wait longer or shorter)."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s"))


def check_scheduler(address: str, security=None) -> None:
    """Refuse in one line, naming ``address``: a malformed or unsupported address, a scheduler that
    cannot be reached, or a listener that does not answer a Dask handshake within Dask's connect
    timeout (:func:`connect_timeout`); ``distributed.Client`` alone would wait forever on a silent one.
    A handshake not answered within :data:`WAIT_NOTICE_S` is said in an INFO line (what a plain TCP
    connection meets there, and how long the wait may last) before the rest of the wait."""
    import asyncio
    import concurrent.futures

    from distributed.comm import connect
    from distributed.comm.addressing import parse_address, parse_host_port

    timeout = connect_timeout()
    try:
        scheme, location = parse_address(address)  # as Client reads it: no scheme is Dask's default, tcp
        from distributed.comm.registry import backends

        if scheme not in backends:
            raise ValueError(f"unknown scheme {scheme!r}; known: {sorted(set(backends) - {'inproc'})}")
        if scheme == "inproc":
            raise ValueError("inproc:// names a scheduler inside this very process, not one to connect to")
        host_port = parse_host_port(location) if scheme in ("tcp", "tls") else None
        if host_port is not None and not host_port[0]:  # Dask connects to no host there: a timeout
            raise ValueError("no host before the port (e.g. tcp://127.0.0.1:8786)")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"client: not a usable Dask scheduler address {address!r}: {exc}") from None
    from distributed.security import Security

    no_security = security is None
    security = Security() if no_security else security  # None: Dask's TLS configuration, if any
    connection_args = security.get_connection_args("client")

    async def handshake():
        # connect's own limit lies beyond ours: the one timeout that ends a wait is wait_for's below
        comm = await connect(address, timeout=2 * timeout, **connection_args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    async def bounded():
        return await asyncio.wait_for(handshake(), timeout)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # own event loop, even inside a running one
        try:
            answer = pool.submit(asyncio.run, bounded())
            shown = timeout > WAIT_NOTICE_S and logger.isEnabledFor(logging.INFO)  # no probe for no line
            if shown and not concurrent.futures.wait([answer], WAIT_NOTICE_S).done:
                logger.info(
                    "no answer yet from the Dask scheduler at %s%s; waiting up to %g s in all (Dask's "
                    "connect timeout, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT), as a scheduler may "
                    "still be starting", address, _why_unreachable(host_port), timeout,
                )  # fmt: skip
            reply = answer.result()
        except TimeoutError:
            raise ValueError(  # probed again: what the address meets now, not at the notice
                f"client: the scheduler at {address!r} did not answer within {timeout:g} s"
                f"{_why_unreachable(host_port)} (set DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT to "
                "wait longer)"
            ) from None
        except MemoryError:  # the reply's first bytes, read as Dask's frame lengths, asked for exabytes
            raise ValueError(
                f"client: {address!r} answered with bytes that are not Dask's protocol (another service "
                "listens there?)"
            ) from None
        except Exception as exc:  # refused, unknown scheme, TLS failure
            hint = scheme == "tls" and no_security
            tls = " (a tls:// scheduler needs its certificates: pass security=)" if hint else ""
            raise ValueError(
                f"client: cannot reach a Dask scheduler at {address!r}: "
                f"{type(exc).__name__}: {str(exc)[:200]}{tls}"
            ) from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise ValueError(f"client: {address!r} answered, but not as a Dask scheduler: {str(reply)[:200]}")


def _why_unreachable(host_port: tuple[str, int] | None) -> str:
    """What one plain TCP connection to ``(host, port)`` meets (Dask retries a refused or unresolved
    address until its timeout, as a scheduler may still be starting): ``" (connection refused: ...)"``,
    ``" (host not found: ...)"``, or ``""`` when it connects or the address is not TCP (None)."""
    import socket

    if host_port is None:
        return ""
    host, port = host_port
    try:
        socket.create_connection((host, port), timeout=2).close()
    except socket.gaierror as exc:
        return f" (host not found: {exc.strerror})"
    except ConnectionRefusedError:
        return " (connection refused: is a scheduler listening on that host and port?)"
    except OSError as exc:
        return f" ({exc.strerror or type(exc).__name__})"
    return ""
