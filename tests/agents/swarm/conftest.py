"""Fixtures of the swarm tests: a real MCP server process (stdio command, or a loopback HTTP URL)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.swarm.mcp_process import free_port, http_server

SERVER = Path(__file__).with_name("mcp_weather_server.py")


@pytest.fixture
def mcp_stdio_params() -> dict[str, object]:
    """How to start the test MCP server as a child process speaking stdio."""
    return {"command": sys.executable, "args": [str(SERVER)]}


@pytest.fixture
def mcp_http_url() -> Iterator[str]:
    """The ``/mcp`` URL of the test MCP server, running as a process on a loopback port."""
    port = free_port()
    with http_server([sys.executable, str(SERVER), "http", str(port)], port) as url:
        yield url
