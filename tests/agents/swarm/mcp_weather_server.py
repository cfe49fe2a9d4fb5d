"""A small MCP server (the official SDK's FastMCP) that the MCP tests start as a real process.

``python mcp_weather_server.py`` serves over stdio; ``python mcp_weather_server.py http PORT``
serves streamable HTTP on ``127.0.0.1:PORT`` (endpoint ``/mcp``).
"""

from __future__ import annotations

import json
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("weather-test")


@server.tool()
def get_weather(city: str) -> str:
    """Today's weather of a city.

    Args:
        city: The city.
    """
    return json.dumps({"city": city, "weather": "sunny", "temperature_high": 20}, ensure_ascii=False)


@server.tool()
def broken(city: str) -> str:
    """A tool that always fails.

    Args:
        city: The city.
    """
    raise ValueError(f"no station in {city}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[2])
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")
