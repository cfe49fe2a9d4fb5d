"""Flatten a finished pipeline state into a :class:`~routerlab.agents.trace.Trace` for scoring."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from routerlab.agents.routing import classifying_decision
from routerlab.agents.state import PipelineState, ToolCallRecord
from routerlab.agents.trace import Trace, Usage

__all__ = ["build_trace", "message_dict"]


def message_dict(m: BaseMessage) -> dict[str, Any]:
    """A JSON-able view of a message (role, content, tool calls, ids, status)."""
    d: dict[str, Any] = {"role": "user", "content": m.content}
    if isinstance(m, AIMessage):
        d = {"role": "assistant", "content": m.content, "tool_calls": list(m.tool_calls)}
        if m.invalid_tool_calls:
            d["invalid_tool_calls"] = list(m.invalid_tool_calls)
    elif isinstance(m, ToolMessage):
        d = {
            "role": "tool",
            "content": m.content,
            "tool_call_id": m.tool_call_id,
            "name": m.name,
            "status": m.status,
        }
    elif not isinstance(m, HumanMessage):
        d["role"] = m.type
    return d


def _usage(rows: list[dict[str, Any]]) -> Usage:
    total = Usage()
    for r in rows:
        total = total.add(Usage.from_row(r))
    return total


def _emitted_calls(messages: list[BaseMessage], records: list[ToolCallRecord]) -> tuple[list, list]:
    """Calls the router emitted that the pipeline never recorded, and its unparseable calls.

    The pipeline records a call only when it is about to run it, so a call to a tool it does not
    have (an unknown name, a distractor) ends the turn without a record; it is kept here as a
    ``rejected`` call so that the chain shows what the router asked for. Invalid calls
    (LangGraph's ``invalid_tool_calls``: unparseable or failed validation) are kept apart, each
    with the number of recorded calls that preceded it (``step``).
    """
    known = {r.get("id") for r in records}
    rejected: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    before = 0  # recorded calls emitted so far
    for m in messages:
        if not isinstance(m, AIMessage):
            continue
        for c in m.tool_calls:
            cid = c.get("id") or ""
            if cid in known or cid in seen_ids:
                continue
            seen_ids.add(cid)
            rejected.append(
                {
                    "id": cid,
                    "name": c.get("name", ""),
                    "args": dict(c.get("args") or {}),
                    "parent": None,
                    "status": "rejected",
                    "step": len(records) + len(rejected),
                }
            )
        before += sum(1 for c in m.tool_calls if c.get("id") in known)
        for bad in m.invalid_tool_calls:
            invalid.append(
                {
                    "id": bad.get("id"),
                    "name": bad.get("name"),
                    "args": bad.get("args"),
                    "error": bad.get("error"),
                    "step": before,
                }
            )
    return rejected, invalid


def build_trace(example_id: str, state: PipelineState, total_latency_s: float) -> Trace:
    """Build the trace of one example from its final state.

    Args:
        example_id: Id of the replayed example.
        state: Final state (``Pipeline.final_state``).
        total_latency_s: Wall time of the example, all turns.
    """
    records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
    decisions = state.get("router_usage", [])
    rejected, invalid = _emitted_calls(list(state.get("messages", [])), records)
    classified = classifying_decision(decisions)
    intent = classified.get("intent") if classified else None
    if intent is None and state.get("route"):
        intent = state["route"].get("intent")
    return Trace(
        example_id=example_id,
        answer=state.get("answer"),
        sql=state.get("sql"),
        columns=list(state.get("columns") or []),
        rows=[list(r) for r in state.get("rows") or []],
        executed=bool(state.get("executed")),
        ask_human=state.get("ask_human"),
        intent=intent,
        route_decisions=list(decisions),
        tool_calls=[dict(r) for r in records] + rejected,
        invalid_tool_calls=invalid,
        messages=[message_dict(m) for m in state.get("messages", [])],
        events=list(state.get("events", [])),
        path=list(state.get("path", [])),
        node_latency_s=dict(state.get("node_latency", {})),
        total_latency_s=total_latency_s,
        router_usage=_usage(decisions),
        subagent_usage=_usage(state.get("subagent_usage", [])),
        error=state.get("error"),
        error_class=state.get("error_class"),
        turns=int(state.get("turns", 1) or 1),
        steps=len(decisions),
        run_config=dict(state.get("run_config") or {}),
    )
