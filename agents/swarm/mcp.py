"""Seed 003's ``MCPServer``: the tools of a Model Context Protocol server, for swarm agents.

``async with MCPServer({"command": ..., "args": [...]}) as server:`` starts the server as a
child process and talks to it over stdio; ``MCPServer({"url": "http://127.0.0.1:8000/mcp"})``
connects to a running one over streamable HTTP. Both go through the official ``mcp`` Python
SDK (``ClientSession``): the server's tools are listed on entry and become function tools of
any ``Agent(mcp_server=[server])`` (a local tool of the same name wins, as the seed says). A call
emits ``MCP_TOOL_CALL`` and is sent to the server; its text content is the tool's result, a
result marked ``isError`` is a tool error the model reads. MCP tools get no context variables
and cannot hand off (the seed's "缺失了自动注入上下文变量和当前 Agent 的功能").

The session lives on the event loop that entered the ``async with``; a swarm run calls the
server from the worker thread ``await controller.run(...)`` runs it in, so the loop stays free
to carry the calls. ``controller.run_sync`` inside that loop would block it: it is refused with
that explanation (the seed: "Controller 必须使用异步的 run 方法").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

from routerlab.agents.errors import ContractError, ToolError, reject_unknown_keys
from routerlab.agents.swarm.tools import FunctionTool
from routerlab.agents.tools.base import Tool

__all__ = ["MCP_CALL_TIMEOUT_S", "MCPServer"]

#: seconds one tool call may take before it is a tool error
MCP_CALL_TIMEOUT_S = 60.0

_STDIO_KEYS = {"command", "args", "env", "cwd"}
_HTTP_KEYS = {"url", "headers"}


def _check_params(params: Any) -> dict[str, Any]:
    if not isinstance(params, Mapping) or not (("command" in params) ^ ("url" in params)):
        raise ContractError(
            "MCPServer needs how to reach the server",
            expected="{'command': ..., 'args': [...]} (stdio) or {'url': 'http://host:port/mcp'} (streamable HTTP)",
            found=repr(params)[:120],
            fix="give exactly one of command and url",
        )
    allowed = _STDIO_KEYS if "command" in params else _HTTP_KEYS
    reject_unknown_keys("MCPServer", params, allowed)
    return dict(params)


def _text(content: Any) -> str:
    """The text of an MCP tool result's content blocks (other blocks as their JSON)."""
    parts = []
    for block in content or ():
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else json.dumps(block.model_dump(mode="json"), ensure_ascii=False))
    return "\n".join(parts)


class MCPServer:
    """An MCP server's tools (seed 003's ``MCPServer``), through the official ``mcp`` SDK.

    Args:
        params: ``{"command", "args", "env", "cwd"}`` to start the server as a child process
            and speak stdio, or ``{"url", "headers"}`` for a streamable HTTP server.
        name: The server's name in trace events (default: the command, or the URL).
        timeout_s: Seconds one tool call may take.

    Attributes:
        tools: The server's tools as function tools (listed on entry; empty before).

    Raises:
        ContractError: For params of neither form.
    """

    def __init__(self, params: Mapping[str, Any], *, name: str | None = None, timeout_s: float = MCP_CALL_TIMEOUT_S):
        self.params = _check_params(params)
        self.transport = "stdio" if "command" in self.params else "streamable_http"
        self.name = name or str(self.params.get("command") or self.params.get("url"))
        self.timeout_s = timeout_s
        self.tools: tuple[FunctionTool, ...] = ()
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stack: AsyncExitStack | None = None

    async def __aenter__(self) -> Self:
        """Connect (starting the process for stdio), initialise the session and list the tools.

        Raises:
            ContractError: When the server cannot be started or reached, naming it.
        """
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        stack = AsyncExitStack()
        try:
            if self.transport == "stdio":
                server = StdioServerParameters(
                    command=str(self.params["command"]),
                    args=[str(a) for a in self.params.get("args") or ()],
                    env=self.params.get("env"),
                    cwd=self.params.get("cwd"),
                )
                read, write = await stack.enter_async_context(stdio_client(server))
            else:
                http = await stack.enter_async_context(create_mcp_http_client(headers=self.params.get("headers")))
                transport = streamable_http_client(str(self.params["url"]), http_client=http)
                read, write, _ = await stack.enter_async_context(transport)
            session = await stack.enter_async_context(ClientSession(read, write))
            await asyncio.wait_for(session.initialize(), self.timeout_s)
            listed = await asyncio.wait_for(session.list_tools(), self.timeout_s)
        except Exception as exc:
            await stack.aclose()
            raise ContractError(
                f"cannot reach the MCP server {self.name!r} ({self.transport})",
                expected="a server that answers MCP's initialize and tools/list",
                found=f"{type(exc).__name__}: {exc}",
                fix="check the command runs the server (or the URL is its /mcp endpoint)",
            ) from exc
        self._stack, self._session, self._loop = stack, session, asyncio.get_running_loop()
        self.tools = tuple(self._function_tool(t) for t in listed.tools)
        return self

    @property
    def connected(self) -> bool:
        """Whether the session is open (inside the ``async with``)."""
        return self._session is not None

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the session (and stop the child process of a stdio server)."""
        stack, self._stack, self._session, self.tools = self._stack, None, None, ()
        if stack is not None:
            await stack.aclose()

    def _function_tool(self, listed: Any) -> FunctionTool:
        name = str(listed.name)

        def call(**args: Any) -> str:
            return self.call_tool(name, args)

        schema = dict(listed.inputSchema or {"type": "object", "properties": {}})
        tool = Tool(
            name=name,
            description=str(listed.description or name),
            parameters=schema,
            fn=call,
            handle_errors=False,
        )
        return FunctionTool(tool=tool, mcp_server=self.name)

    async def acall_tool(self, name: str, args: Mapping[str, Any]) -> str:
        """Call the server's tool ``name``; its text content.

        Raises:
            ToolError: ``mcp_tool_error`` for a result the server marks as an error (the model
                reads it), ``mcp_timeout`` past ``timeout_s``.
            ContractError: Outside the ``async with`` block.
        """
        if self._session is None:
            raise ContractError(
                f"the MCP server {self.name!r} is not connected",
                expected="calls inside `async with MCPServer(...)`",
                found="a call outside the block",
                fix="build and run the agent inside the async with block",
            )
        try:
            result = await asyncio.wait_for(self._session.call_tool(name, dict(args)), self.timeout_s)
        except TimeoutError:
            raise ToolError(f"the MCP tool {name} took over {self.timeout_s:g}s", error_class="mcp_timeout") from None
        text = _text(result.content)
        if result.isError:
            raise ToolError(f"the MCP tool {name} failed: {text}", error_class="mcp_tool_error")
        return text

    def call_tool(self, name: str, args: Mapping[str, Any]) -> str:
        """:meth:`acall_tool` from a thread other than the session's loop (a swarm run's worker).

        Raises:
            ContractError: When called on the loop the session runs on (``run_sync`` inside
                ``async with``): it would wait on itself forever.
        """
        loop = self._loop
        if loop is None or self._session is None:
            return asyncio.run(self.acall_tool(name, args))  # raises the not-connected error
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise ContractError(
                f"the MCP tool {name} was called on the event loop its session runs on",
                expected="`await controller.run(agent, message)` with MCP servers",
                found="controller.run_sync (or a blocking call) inside the async with block",
                fix="use the async run: run_sync would block the loop the MCP session needs",
            )
        return asyncio.run_coroutine_threadsafe(self.acall_tool(name, args), loop).result()
