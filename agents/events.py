"""Progress events : what a running pipeline reports, node by node."""

from __future__ import annotations

import time
from typing import Any, Literal

__all__ = ["DISPLAY_NAMES", "EventType", "make_event"]

EventType = Literal["progress", "completed", "error"]

#: human names of the graph nodes, shown in progress output
DISPLAY_NAMES: dict[str, str] = {
    "intent_route": "Reading the request",
    "direct": "Calling the requested agent",
    "route": "Choosing the next step",
    "dispatch": "Dispatching",
    "tools": "Running a sub-agent",
    "ask_human": "Asking the user",
    "respond": "Writing the answer",
}


def make_event(
    type_: EventType,
    node: str,
    details: str,
    conversation_id: str,
    **data: Any,
) -> dict[str, Any]:
    """One event: ``type``, ``node``, ``display_name``, ``details``, ids and a timestamp.

    Args:
        type_: progress, completed or error.
        node: Graph node that emitted it.
        details: One human-readable line.
        conversation_id: The LangGraph thread id of the turn.
        **data: Extra payload (answer, sql, rows, error type...).
    """
    return {
        "type": type_,
        "node": node,
        "display_name": DISPLAY_NAMES.get(node, node),
        "details": details,
        "conversation_id": conversation_id,
        "timestamp": time.time(),
        **data,
    }
