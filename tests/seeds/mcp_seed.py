"""Seed 003's MCP server example as a file a real process runs (read from the seed at test time).

Seed 003 shows an MCP server (``FastMCP('weather')`` with a ``get_weather`` tool, run over
stdio) and starts it with ``uv --directory examples/agent run mcp_server.py``. The tests write
that example's text, unchanged, to a temporary ``mcp_server.py`` and start it with this
environment's Python instead of ``uv`` (the one substitution of seed 003's example 16).
"""

from __future__ import annotations

import functools
import sys
import tempfile
from pathlib import Path

from tests.seeds.harness import examples

__all__ = ["SERVER_EXAMPLE", "http_argv", "seed_server_file"]

#: the position of the MCP server among seed 003's Python examples
SERVER_EXAMPLE = 15


@functools.cache
def seed_server_file() -> str:
    """The path of a temporary ``mcp_server.py`` holding seed 003's server example, unchanged."""
    folder = Path(tempfile.mkdtemp(prefix="seed003-mcp-"))
    path = folder / "mcp_server.py"
    path.write_text(examples("003")[SERVER_EXAMPLE].code, encoding="utf-8")
    return str(path)


def http_argv(port: int) -> list[str]:
    """A process serving the seed's server over streamable HTTP on ``127.0.0.1:port``.

    The seed's file runs stdio under ``__main__``; this loads it under another name (so that
    does not run) and serves its ``mcp`` object over streamable HTTP instead.
    """
    code = (
        "import runpy, sys\n"
        "server = runpy.run_path(sys.argv[1], run_name='seed_mcp_server')['mcp']\n"
        "server.settings.host = '127.0.0.1'\n"
        "server.settings.port = int(sys.argv[2])\n"
        "server.run(transport='streamable-http')\n"
    )
    return [sys.executable, "-c", code, seed_server_file(), str(port)]
