"""Trace events of a swarm run, and their mapping onto the pipeline's progress events."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from routerlab.agents.events import make_event

__all__ = ["PROGRESS_NODE", "SwarmEvent", "SwarmEventType", "call_event", "to_progress_event"]


class SwarmEventType(StrEnum):
    """What happened in a swarm run."""

    USER_MESSAGE = "user_message"
    AGENT_MESSAGE = "agent_message"
    AGENT_SWITCH = "agent_switch"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    CONTEXT_UPDATE = "context_update"
    MCP_TOOL_CALL = "mcp_tool_call"


#: the pipeline node whose display name describes each swarm event best (see routerlab.agents.events)
PROGRESS_NODE: dict[SwarmEventType, str] = {
    SwarmEventType.USER_MESSAGE: "intent_route",
    SwarmEventType.AGENT_MESSAGE: "route",
    SwarmEventType.AGENT_SWITCH: "route",
    SwarmEventType.TOOL_CALL: "dispatch",
    SwarmEventType.TOOL_RESULT: "tools",
    SwarmEventType.CONTEXT_UPDATE: "tools",
    SwarmEventType.MCP_TOOL_CALL: "dispatch",
}


def call_event(mcp_server: str | None) -> tuple[SwarmEventType, dict[str, Any]]:
    """The trace event of a tool call and its extra data.

    ``MCP_TOOL_CALL`` with the ``server`` for an MCP server's tool (seed 003), else ``TOOL_CALL``.
    """
    if mcp_server is not None:
        return SwarmEventType.MCP_TOOL_CALL, {"server": mcp_server}
    return SwarmEventType.TOOL_CALL, {}


@dataclass(frozen=True)
class SwarmEvent:
    """One trace event.

    Attributes:
        type: What happened.
        agent: The agent active when it happened (for a switch: the one handing off).
        data: Details: ``text`` for messages; ``to`` and ``carry_history`` for switches;
            ``id``, ``name``, ``args`` and ``host`` for calls (and ``server`` for an MCP tool's
            call); ``id``, ``name``, ``value`` and ``status`` for results; ``updates`` for
            context updates.
        timestamp: ``time.time()`` when it happened.
    """

    type: SwarmEventType
    agent: str
    data: Mapping[str, Any] = field(default_factory=dict)
    timestamp: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (non-JSON values are shown as strings)."""
        data = json.loads(json.dumps(dict(self.data), default=str, ensure_ascii=False))
        return {"event": str(self.type), "agent": self.agent, "timestamp": self.timestamp, **data}

    def describe(self) -> str:
        """One human-readable line."""
        d = self.data
        t = self.type
        if t is SwarmEventType.USER_MESSAGE:
            return f"user: {_clip(d.get('text', ''))}"
        if t is SwarmEventType.AGENT_MESSAGE:
            return f"{self.agent}: {_clip(d.get('text', ''))}"
        if t is SwarmEventType.AGENT_SWITCH:
            return f"{self.agent} hands off to {d.get('to')}"
        if t in (SwarmEventType.TOOL_CALL, SwarmEventType.MCP_TOOL_CALL):
            args = json.dumps(d.get("args", {}), default=str, ensure_ascii=False)
            via = f" on MCP server {d.get('server')}" if t is SwarmEventType.MCP_TOOL_CALL else ""
            return f"{self.agent} calls {d.get('name')}({_clip(args)}){via}"
        if t is SwarmEventType.TOOL_RESULT:
            return f"{d.get('name')} -> {d.get('status', 'success')}: {_clip(str(d.get('value', '')))}"
        return f"context: {', '.join(f'{k}={v!r}' for k, v in dict(d.get('updates', {})).items())}"


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def to_progress_event(event: SwarmEvent, conversation_id: str) -> dict[str, Any]:
    """The pipeline progress event (``routerlab.agents.events.make_event``) for a swarm event.

    The swarm event itself rides along under ``swarm`` so nothing is lost in the mapping.

    Args:
        event: The swarm event.
        conversation_id: Thread id of the turn.
    """
    out = make_event("progress", PROGRESS_NODE[event.type], event.describe(), conversation_id, swarm=event.to_dict())
    out["timestamp"] = event.timestamp
    return out
