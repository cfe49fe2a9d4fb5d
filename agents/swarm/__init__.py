"""Swarm-style agents that pass control to each other .

An :class:`Agent` has an instruction and tools. Tools are plain typed functions whose schemas
come from the pipeline's own :func:`routerlab.agents.tools.schema.function_schema`; a tool returning an
``Agent`` hands control to it, returning :class:`ContextVariables` updates the shared context,
and a :class:`Result` combines both (optionally without carrying the message history).
:class:`Swarm` runs agents under composable :class:`Terminator` conditions and reports
:class:`SwarmEvent` trace events, which :func:`to_progress_event` maps onto the pipeline's
progress events. :class:`RoundTeam` (``a | b``) runs agents in turns on one shared conversation
instead. :class:`MCPServer` gives agents the tools of an MCP server (stdio or streamable
HTTP). The ``handoff`` router (``routerlab.routers.handoff``) and the ``team`` router
(``routerlab.routers.team``) build their agents from these parts.
"""

from routerlab.agents.swarm.agent import Agent
from routerlab.agents.swarm.context import Context, ContextVariables, is_context_hint
from routerlab.agents.swarm.controller import Controller, ControllerResponse
from routerlab.agents.swarm.events import PROGRESS_NODE, SwarmEvent, SwarmEventType, to_progress_event
from routerlab.agents.swarm.mcp import MCPServer
from routerlab.agents.swarm.member import DEFAULT_AGENT_NAME, Instruction, Member
from routerlab.agents.swarm.result import Result, as_result
from routerlab.agents.swarm.runner import DEFAULT_TERMINATOR, Activation, Swarm, SwarmResponse
from routerlab.agents.swarm.team import DEFAULT_ROUNDS, RoundTeam
from routerlab.agents.swarm.terminators import (
    AllOf,
    AnyOf,
    MaxActivations,
    MaxActiveTerminator,
    MaxTurns,
    MaxTurnsTerminator,
    RunStatus,
    Terminator,
    TextMatch,
    TextTerminator,
    Timeout,
    TimeOutTerminator,
)
from routerlab.agents.swarm.tools import FunctionTool, ToolSpec, function_tool, spec_tool

__all__ = [
    "DEFAULT_AGENT_NAME",
    "DEFAULT_ROUNDS",
    "DEFAULT_TERMINATOR",
    "PROGRESS_NODE",
    "Activation",
    "Agent",
    "AllOf",
    "AnyOf",
    "Context",
    "ContextVariables",
    "Controller",
    "ControllerResponse",
    "FunctionTool",
    "Instruction",
    "MCPServer",
    "MaxActivations",
    "MaxActiveTerminator",
    "MaxTurns",
    "MaxTurnsTerminator",
    "Member",
    "Result",
    "RoundTeam",
    "RunStatus",
    "Swarm",
    "SwarmEvent",
    "SwarmEventType",
    "SwarmResponse",
    "Terminator",
    "TextMatch",
    "TextTerminator",
    "TimeOutTerminator",
    "Timeout",
    "ToolSpec",
    "as_result",
    "function_tool",
    "is_context_hint",
    "spec_tool",
    "to_progress_event",
]
