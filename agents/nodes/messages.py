"""A route decision as the AI message the graph's history holds."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from routerlab.agents.routing import RouteDecision

__all__ = ["ai_message"]


def ai_message(decision: RouteDecision) -> AIMessage:
    """The decision's answer and tool calls (valid and invalid) as an :class:`AIMessage`."""
    return AIMessage(
        content=decision.answer or "",
        tool_calls=[
            {"id": c["id"], "name": c["name"], "args": c["args"], "type": "tool_call"} for c in decision.tool_calls
        ],
        invalid_tool_calls=[
            {
                "id": c.get("id"),
                "name": c.get("name"),
                "args": c.get("args"),
                "error": c.get("error"),
                "type": "invalid_tool_call",
            }
            for c in decision.invalid_tool_calls
        ],
    )
