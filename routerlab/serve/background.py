"""Run an app with uvicorn in a background thread on a loopback port (tests, notebooks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from routerlab.agents.errors import RunError
from routerlab.serve.header_timeout import HEADER_TIMEOUT_S, header_timeout_protocol

__all__ = ["serve_in_background"]


@contextmanager
def serve_in_background(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout_s: float = 20.0,
    header_timeout_s: float = HEADER_TIMEOUT_S,
) -> Iterator[str]:
    """Serve ``app`` from a daemon thread and yield its base URL; stop it on exit.

    Args:
        app: An ASGI app (e.g. from :func:`routerlab.serve.create_app`).
        host: Interface to bind.
        port: TCP port; 0 lets the OS pick a free one (no race with other processes).
        timeout_s: How long to wait for the server to start or stop.
        header_timeout_s: How long a client may take to send a request's headers.

    Yields:
        ``http://host:port`` of the running server.

    Raises:
        RunError: The server did not start in time.
    """
    import uvicorn

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=2,
        http=header_timeout_protocol(header_timeout_s),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="routerlab-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RunError(
                "the HTTP server did not start",
                expected=f"uvicorn listening on {host} within {timeout_s:g} s",
                found="the server thread ended" if not thread.is_alive() else "still starting",
                fix="check that the port is free and the app builds",
            )
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)
