"""Starting a real MCP server process on a loopback port for the tests (streamable HTTP)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["free_port", "http_server"]


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(argv: Sequence[str], port: int, *, timeout_s: float = 60.0) -> Iterator[str]:
    """Run ``argv`` (a server listening on ``127.0.0.1:port``) until the block ends; yields its ``/mcp`` URL.

    Raises:
        RuntimeError: When the process exits or does not listen within ``timeout_s``, with its output.
    """
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the MCP server exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the MCP server did not listen on port {port} within {timeout_s:g}s")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
