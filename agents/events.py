"""Progress events : what a running pipeline reports, node by node."""

from __future__ import annotations

import time
from typing import Any, Literal

__all__ = ["DISPLAY_NAMES", "EventType", "make_event", "tool_event_fields"]

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


def tool_event_fields(tool: str, status: str, output: Any, *, executes_sql: bool) -> dict[str, Any]:
    """The payload of a tool's progress event: the tool, its status, and the SQL it produced.

    A successful call whose output carries a ``sql`` (generate_sql, fix_sql) puts it on the
    event, so a client shows the query while the run goes on (seed 002's
    ``agent_sql_generation`` event); the SQL of a tool that executes SQL
    (``Tool.executes_sql``) is the one it was given, not new.

    Args:
        tool: The tool's name.
        status: The call's status.
        output: The call's output.
        executes_sql: The tool runs SQL it was given (``Tool.executes_sql``).
    """
    fields: dict[str, Any] = {"tool": tool, "status": status}
    if status == "success" and isinstance(output, dict) and output.get("sql") and not executes_sql:
        fields["sql"] = output["sql"]
    return fields
