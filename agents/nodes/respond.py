"""The ``respond`` node: the turn's answer and its last event (completed or error)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage

from routerlab.agents.events import make_event
from routerlab.agents.nodes.env import conversation_of
from routerlab.agents.nodes.updates import RespondUpdate
from routerlab.agents.routing import classifying_decision
from routerlab.agents.state import PipelineState

__all__ = ["classification", "respond_node"]


def respond_node(state: PipelineState) -> RespondUpdate:
    """The answer: an error's apology, a confirmation question, or what the turn found.

    Reads the error keys, ``confirmation``, ``answer``, ``messages`` (the last one),
    ``tool_calls``, the result keys (``sql``, ``rows``, ``columns``, ``row_count``, ``summary``),
    ``path``, ``route`` and ``router_usage``.
    """
    if state.get("error") or state.get("has_internal_error"):
        return _error(state)
    conv = conversation_of(state)
    if state.get("confirmation"):
        question = str(state["confirmation"])
        event = make_event(
            "completed",
            "respond",
            "waiting for the user's confirmation",
            conv,
            answer=question,
            ask_human=question,
            confirmation=True,
            execution_path=[*state.get("path", []), "respond"],
            route=state.get("route"),
            classification=classification(state),
        )
        return {"answer": question, "events": [event]}
    answer = state.get("answer")
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        record = state["tool_calls"].get(last.tool_call_id, {})
        out = record.get("output")
        if isinstance(out, dict):
            answer = out.get("answer") or out.get("explanation") or out.get("summary") or answer
    event = make_event(
        "completed",
        "respond",
        "done",
        conv,
        answer=answer,
        sql=state.get("sql"),
        rows=(state.get("rows") or [])[:20],
        columns=state.get("columns") or [],
        row_count=state.get("row_count", len(state.get("rows") or [])),
        summary=state.get("summary"),
        execution_path=[*state.get("path", []), "respond"],
        route=state.get("route"),
        classification=classification(state),
    )
    return {"answer": answer, "events": [event]}


def _error(state: PipelineState) -> RespondUpdate:
    """The apology of a turn that ended with an error, and its error event."""
    error = state.get("error") or state.get("internal_error_message") or "internal error"
    detail = state.get("error_detail") or {}
    event = make_event(
        "error",
        "respond",
        error,
        conversation_of(state),
        error_type=state.get("error_class") or "internal_error",
        sql=detail.get("sql") or state.get("sql"),
        rule=detail.get("rule"),
        has_internal_error=bool(state.get("has_internal_error")),
        internal_error_message=state.get("internal_error_message"),
        execution_path=[*state.get("path", []), "respond"],
        route=state.get("route"),
    )
    return {"answer": f"Sorry, I could not complete this request: {error}", "events": [event]}


def classification(state: PipelineState) -> dict[str, Any] | None:
    """The decision that classified the turn (:func:`~routerlab.agents.routing.classifying_decision`)."""
    first = classifying_decision(state.get("router_usage", []))
    return dict(first) if first else (state.get("route") or None)
