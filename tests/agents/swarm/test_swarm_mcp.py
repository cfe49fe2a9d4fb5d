"""Seed 003's MCP tools: a real MCP server process (the official SDK), over stdio and streamable HTTP.

The server (``mcp_weather_server.py``) runs as a child process; ``MCPServer`` lists its tools
through ``mcp.ClientSession``, an agent built with ``mcp_server=[...]`` calls them under
``await controller.run(...)``, and the trace has ``MCP_TOOL_CALL`` then ``TOOL_RESULT``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.swarm import Agent, Controller, MCPServer, SwarmEvent, SwarmEventType
from tests.seeds import lms


def _calls(tool: str) -> Any:
    def reply(request: Any) -> Any:
        if request.tools and not any(m.role == "tool" for m in request.messages):
            return {"name": tool, "args": {"city": "南京"}}
        results = [m for m in request.messages if m.role == "tool"]
        return f"read {len(results)} result(s)"

    return scripted_lm(reply)


async def _run(server: MCPServer, tool: str = "get_weather") -> tuple[Any, list[SwarmEvent]]:
    events: list[SwarmEvent] = []
    agent = Agent(llm=_calls(tool), mcp_server=[server])
    resp = await Controller(trace_callback=events.append).run(agent, "帮我查询南京今天的天气")
    return resp, events


def _assert_weather_called(resp: Any, events: list[SwarmEvent], server_name: str) -> None:
    kinds = [e.type for e in events]
    assert kinds == [
        SwarmEventType.USER_MESSAGE,
        SwarmEventType.MCP_TOOL_CALL,
        SwarmEventType.TOOL_RESULT,
        SwarmEventType.AGENT_MESSAGE,
    ]
    call, result = events[1], events[2]
    assert call.data["name"] == "get_weather" and call.data["args"] == {"city": "南京"}
    assert call.data["server"] == server_name and not call.data["host"]
    assert json.loads(result.data["value"]) == {"city": "南京", "weather": "sunny", "temperature_high": 20}
    assert result.data["status"] == "success" and resp.message == "read 1 result(s)"


def test_tools_are_listed_and_called_over_stdio(mcp_stdio_params) -> None:
    async def main() -> tuple[Any, ...]:
        async with MCPServer(mcp_stdio_params, name="weather") as server:
            assert server.connected and server.transport == "stdio"
            assert [t.name for t in server.tools] == ["get_weather", "broken"]
            schema = server.tools[0].openai_schema()["function"]
            assert schema["parameters"]["required"] == ["city"] and "weather" in schema["description"]
            direct = await server.acall_tool("get_weather", {"city": "西安"})
            called = await _run(server)
            failed = await _run(server, tool="broken")
        assert not server.connected and server.tools == ()
        return direct, called, failed

    direct, (resp, events), (failed, failed_events) = asyncio.run(main())
    assert json.loads(direct) == {"city": "西安", "weather": "sunny", "temperature_high": 20}
    _assert_weather_called(resp, events, "weather")
    # a failing MCP tool is an error result the model reads
    result = next(e for e in failed_events if e.type is SwarmEventType.TOOL_RESULT)
    assert result.data["status"] == "error" and "mcp_tool_error" in result.data["value"]
    assert "no station in 南京" in result.data["value"] and failed.message == "read 1 result(s)"


@pytest.mark.server
def test_tools_are_listed_and_called_over_streamable_http(mcp_http_url) -> None:
    async def main() -> tuple[Any, list[SwarmEvent]]:
        async with MCPServer({"url": mcp_http_url}) as server:
            assert server.transport == "streamable_http" and server.tools[0].name == "get_weather"
            return await _run(server)

    resp, events = asyncio.run(main())
    _assert_weather_called(resp, events, mcp_http_url)


def test_a_local_tool_of_the_same_name_wins_and_run_sync_is_refused(mcp_stdio_params) -> None:
    def get_weather(city: str) -> str:
        """Local weather.

        Args:
            city: The city.
        """
        return f"local {city}"

    async def main() -> Any:
        async with MCPServer(mcp_stdio_params) as server:
            agent = Agent(llm=lms.Qwen(), functions=[get_weather], mcp_server=[server])
            assert [t.name for t in agent.tools] == ["get_weather", "broken"]
            assert agent.get_tool("get_weather").mcp_server is None
            remote = Agent(llm=_calls("get_weather"), mcp_server=[server])
            # run_sync inside the async with would block the loop the session needs
            with pytest.raises(ContractError, match=r"await controller\.run") as info:
                Controller().run_sync(remote, "天气")
            assert info.value.fix
            return await Controller().run(agent, "天气")

    resp = asyncio.run(main())
    results = [e.data["value"] for e in resp.swarm.events if e.type is SwarmEventType.TOOL_RESULT]
    assert results == [f"local {lms.ARGUMENT_VALUE}"]


def test_bad_params_and_unreachable_or_unconnected_servers_are_clear_errors(mcp_stdio_params) -> None:
    with pytest.raises(ContractError, match="how to reach the server"):
        MCPServer({"command": "python", "url": "http://127.0.0.1:1/mcp"})
    with pytest.raises(ContractError, match="unknown MCPServer keys"):
        MCPServer({"command": "python", "argv": []})
    with pytest.raises(ContractError, match="not connected"):
        Agent(llm=lms.Qwen(), mcp_server=[MCPServer(mcp_stdio_params)])

    async def unreachable() -> None:
        async with MCPServer({"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}, timeout_s=20):
            pass

    with pytest.raises(ContractError, match="cannot reach the MCP server") as info:
        asyncio.run(unreachable())
    assert info.value.fix
