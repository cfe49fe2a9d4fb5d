"""The ``dispatch`` node: where the turn goes after a decision or a tool call."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

from routerlab.agents.nodes.decider import pick_decider
from routerlab.agents.nodes.env import NodeEnv
from routerlab.agents.state import PipelineState, ToolCallRecord

__all__ = ["CONFIRMATION_KEY", "confirmation", "dispatch_node", "record_calls"]

#: the key of a tool output that asks the user to confirm before going on (seed 000)
CONFIRMATION_KEY = "needs_confirmation"


def dispatch_node(env: NodeEnv, state: PipelineState) -> Command:
    """``tools``, ``ask_human``, ``respond`` or back to the decider (``route`` or ``direct``).

    Reads ``error``, ``has_internal_error``, ``deadline``, ``messages`` (the last one) and
    ``tool_calls``; writes a :class:`~routerlab.agents.nodes.updates.DispatchUpdate` with its goto.
    After a decision it records the requested calls; after a call it ends the turn on an error no
    router may repair, a confirmation question or a terminal tool, and else returns to the decider.
    """
    if state.get("has_internal_error") or state.get("error"):
        return Command(goto="respond")
    last = state["messages"][-1]
    if time.time() > state.get("deadline", float("inf")):
        return Command(goto="respond", update={"error": "deadline reached", "error_class": "timeout"})
    if isinstance(last, AIMessage):
        if not last.tool_calls:
            return Command(goto="respond", update={"answer": str(last.content)})
        return record_calls(env, state, last)
    if isinstance(last, ToolMessage):
        return _after_call(env, state, state["tool_calls"].get(last.tool_call_id, {}))
    return Command(goto="respond")


def _after_call(env: NodeEnv, state: PipelineState, record: ToolCallRecord) -> Command:
    """Where the turn goes after the call of ``record``."""
    tool = env.tools.get(record.get("name", ""))
    if record.get("status") == "error":
        if record.get("error_class") in env.config.recoverable_errors:
            return Command(goto=pick_decider(env.tools, state))
        # seed 000: a tool error no router may repair ends the turn as an internal error
        return Command(
            goto="respond",
            update={
                "error": str(record.get("output")),
                "error_class": record.get("error_class"),
                "error_detail": dict(record.get("error_detail") or {}),
                "has_internal_error": True,
                "internal_error_message": f"{record.get('name')} failed: {record.get('output')}",
            },
        )
    confirm = confirmation(record.get("output"))
    if confirm:
        # seed 000: a tool that asks the user to confirm ends the turn with its question
        return Command(goto="respond", update={"confirmation": confirm, "answer": confirm})
    if tool is not None and tool.terminal:
        return Command(goto="respond")
    return Command(goto=pick_decider(env.tools, state))


def record_calls(env: NodeEnv, state: PipelineState, msg: AIMessage) -> Command:
    """The pending records of the calls ``msg`` requests; to ``tools``, or ``ask_human`` first.

    A call of an unknown tool ends the turn (``unknown_tool``).
    """
    records: dict[str, Any] = {}
    step = len(state.get("tool_calls", {}))
    for call in msg.tool_calls:
        tool = env.tools.get(call["name"])
        if tool is None:
            return Command(
                goto="respond",
                update={
                    "error": f"the router called an unknown tool {call['name']!r}",
                    "error_class": "unknown_tool",
                },
            )
        parent = next((call["args"].get(p) for p in tool.refs if call["args"].get(p)), None)
        cid = str(call["id"])  # the route node gives every call its id (a PlannedCall's)
        records[cid] = {
            "id": cid,
            "name": call["name"],
            "args": dict(call["args"]),
            "parent": parent,
            "status": "pending",
            "step": step,
        }
        step += 1
    first = msg.tool_calls[0]
    if env.tools[first["name"]].interrupts:
        question = str(first["args"].get("question", ""))
        return Command(goto="ask_human", update={"tool_calls": records, "ask_human": question})
    return Command(goto="tools", update={"tool_calls": records})


def confirmation(output: Any) -> str | None:
    """The question of a tool output that asks for the user's confirmation, else None."""
    if isinstance(output, dict) and output.get(CONFIRMATION_KEY):
        return str(output[CONFIRMATION_KEY])
    return None
