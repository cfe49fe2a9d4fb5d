"""The call record of a tool call and what it tells the router, the user and the turn."""

from __future__ import annotations

import json
import time
from typing import Any

from langchain_core.messages import ToolMessage

from routerlab.agents.events import make_event, tool_event_fields
from routerlab.agents.nodes.call_outcome import CallOutcome
from routerlab.agents.state import ToolCallRecord
from routerlab.agents.tools import Tool

__all__ = ["call_event", "call_record", "state_effects", "tool_message"]


def call_record(outcome: CallOutcome, requested: ToolCallRecord, started: float) -> ToolCallRecord:
    """The call's :class:`~routerlab.agents.state.ToolCallRecord`: the request plus its outcome.

    Args:
        outcome: What the call came to.
        requested: The record dispatch wrote when the router asked for the call.
        started: ``time.time()`` when the call started.
    """
    record: ToolCallRecord = {
        **requested,
        "output": outcome.output,
        "status": outcome.status,
        "error_class": outcome.error_class,
        "started": started,
        "ended": time.time(),
    }
    if outcome.replayed:
        record["replayed"] = True
    if outcome.error_detail:
        record["error_detail"] = outcome.error_detail
    if outcome.structured is not None:
        record["structured_response"] = outcome.structured
    return record


def _content(output: Any, rows_shown: int) -> str:
    """Compact JSON of a tool output for the router's context (result rows trimmed)."""
    if isinstance(output, dict) and "rows" in output:
        output = {**output, "rows": output["rows"][:rows_shown]}
    return json.dumps(output, default=str, ensure_ascii=False)


def tool_message(outcome: CallOutcome, call_id: str, tool: Tool, rows_shown: int) -> ToolMessage:
    """What the router sees of the call: its output (``rows_shown`` rows at most) or its error."""
    error = f"ERROR [{outcome.error_class}]: {outcome.output}"
    return ToolMessage(
        content=_content(outcome.output, rows_shown) if outcome.ok else error,
        tool_call_id=call_id,
        name=tool.name,
        status=outcome.status,
    )


def call_event(outcome: CallOutcome, tool: Tool, conversation_id: str) -> dict[str, Any]:
    """The progress event of the call (with the SQL it produced, seed 002)."""
    detail = f"{tool.name}: {outcome.status}" + (f" ({outcome.error_class})" if outcome.error_class else "")
    fields = tool_event_fields(tool.name, outcome.status, outcome.output, executes_sql=tool.executes_sql)
    return make_event("progress", "tools", detail, conversation_id, **fields)


def state_effects(outcome: CallOutcome, tool: Tool) -> dict[str, Any]:
    """The turn's state keys the call sets: its structured response, SQL, result and ``executed``.

    A tool that executes SQL (``Tool.executes_sql``) marks the turn executed even when it
    failed, and the SQL in its output is the statement it ran, not a new current SQL.
    """
    update: dict[str, Any] = {}
    if outcome.structured is not None:
        update["structured_response"] = outcome.structured
    output = outcome.output
    if outcome.ok and isinstance(output, dict):
        if output.get("sql") and not tool.executes_sql:
            update["sql"] = output["sql"]
        if "rows" in output:
            update |= {"rows": output["rows"], "columns": output["columns"], "executed": True}
            update |= {"row_count": output.get("row_count", len(output["rows"]))}
            update |= {"summary": output.get("summary")}
    if not outcome.ok and tool.executes_sql:
        update["executed"] = True
    return update
