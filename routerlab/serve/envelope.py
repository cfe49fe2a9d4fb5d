"""The JSON envelope every API response and SSE event is wrapped in, and the error codes."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from routerlab.serve.contract import present, seed_node

__all__ = ["ErrorCode", "ProgressSummary", "dump_json", "envelope", "error_envelope", "event_envelope"]


class ErrorCode(IntEnum):
    """Stable ``code`` values of the envelope (200 means success, as in seed 002).

    The first three digits are the HTTP status the code is usually sent with. A run that ended in
    error is seed 002's 500 (a refused write included), sent with HTTP 500 by ``ask_agent``.
    """

    OK = 200
    INVALID_REQUEST = 40000
    UNKNOWN_COMPONENT = 40001
    BAD_COMPONENT = 40002
    FORBIDDEN = 40300
    NOT_FOUND = 40400
    CONVERSATION_BUSY = 40900
    RUN_FAILED = 500
    RUN_ERROR = 50000
    INTERNAL_ERROR = 50001


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (invalid in JSON, and in browsers' JSON.parse) by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dump_json(value: Any) -> str:
    """Serialise a payload the one way both endpoints use (dates, decimals... become strings).

    Args:
        value: A JSON-like value; unknown objects are converted with ``str``.

    Returns:
        Compact single-line JSON (safe as one SSE ``data:`` line).
    """
    return json.dumps(_finite(value), default=str, ensure_ascii=False, allow_nan=False)


def envelope(code: int, message: str, data: dict[str, Any]) -> dict[str, Any]:
    """``{"code", "success", "message", "data"}``.

    Args:
        code: 200 for success, else an :class:`ErrorCode`.
        message: One human-readable line.
        data: The payload.
    """
    return {"code": int(code), "success": code == ErrorCode.OK, "message": message, "data": data}


def error_envelope(
    code: ErrorCode,
    message: str,
    *,
    field: str = "",
    expected: str = "",
    found: str = "",
    fix: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """An envelope for a refused request (what field, what was expected, what was found).

    Args:
        code: The error code.
        message: One line naming what went wrong.
        field: The request field at fault, if any.
        expected: What the server expected.
        found: What it got instead.
        fix: What the client should do about it.
        **extra: More payload (``errors``, ``error_type``, ``details``...).
    """
    data = {"type": "error", "field": field, "expected": expected, "found": found, "fix": fix, **extra}
    return envelope(code, message, data)


@dataclass
class ProgressSummary:
    """A small running summary of one run, folded from its events (no second source of truth).

    Attributes:
        routing_mode: The routing mode the run uses (seed 002's ``rule``/``llm``/``hybrid``,
            another router's name, or ``direct``).
        execution_path: Seed 002's nodes of the events so far, in order (``start`` first).
        tools: Sub-agents run so far, in order.
        tool_errors: How many of them failed.
        intent: The router's latest intent.
        confidence: The router's latest confidence.
        sql: The latest SQL a sub-agent produced (seed 002 shows it while the run goes on).
    """

    routing_mode: str = ""
    execution_path: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tool_errors: int = 0
    intent: str | None = None
    confidence: float | None = None
    sql: str | None = None

    def repeats_classification(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` is a second ``classify_question`` of the turn (seed 002 sends one per turn).

        Later router decisions of the turn are folded into the summary (:meth:`note`) and not
        sent on their own; the completed event and the trace keep every decision.
        """
        return (
            event["type"] == "progress"
            and "classify_question" in self.execution_path
            and seed_node(event, self.execution_path[-1] if self.execution_path else None) == "classify_question"
        )

    def note(self, event: dict[str, Any]) -> None:
        """Fold an event that is not sent (its intent and confidence) without a step of its own."""
        route = event.get("route")
        if isinstance(route, dict) and route.get("intent") is not None:
            self.intent = route["intent"]
            self.confidence = route.get("confidence")

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        """Fold ``event`` in and return the summary as it stands after it.

        The returned ``node`` is the event's seed node (:func:`routerlab.serve.contract.seed_node`);
        :func:`routerlab.serve.contract.present` moves it to the event's ``node``.
        """
        node = seed_node(event, self.execution_path[-1] if self.execution_path else None)
        self.execution_path.append(node)
        if event.get("tool"):
            self.tools.append(event["tool"])
            self.tool_errors += event.get("status") == "error"
        self.note(event)
        if event.get("sql") and event["type"] == "progress":
            self.sql = str(event["sql"])
        return {
            "node": node,
            "current_step": event.get("tool") or event["node"],
            "routing_mode": self.routing_mode,
            "execution_path": list(self.execution_path),
            "tools": list(self.tools),
            "tool_errors": self.tool_errors,
            "intent": self.intent,
            "confidence": self.confidence,
            "steps": len(self.execution_path),
            "sql": self.sql,
        }


def event_envelope(
    event: dict[str, Any],
    state: dict[str, Any],
    code: ErrorCode | None = None,
    echo: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Wrap one pipeline event (from ``routerlab.agents.events.make_event``) and the run summary.

    ``data`` is the event as seed 002 writes it (:func:`routerlab.serve.contract.present`): its
    own fields plus icon, status, sub-status and ``state_summary``.

    Args:
        event: The event as ``Pipeline.stream`` yielded it.
        state: The summary returned by :meth:`ProgressSummary.add` for this event.
        code: Error code of an error event (default: seed 002's :attr:`ErrorCode.RUN_FAILED`;
            ``has_internal_error`` in the data says whether it was an internal error).
        echo: Request fields every event repeats (user id, context type, ignored fields).
    """
    data = present(event, state, echo or {})
    if event["type"] == "error":
        return envelope(code or ErrorCode.RUN_FAILED, str(event.get("details", "")), data)
    if event["type"] == "completed":
        return envelope(ErrorCode.OK, "completed", data)
    return envelope(ErrorCode.OK, f"running: {data['display_name']}", data)
