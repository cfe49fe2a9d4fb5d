"""The JSON envelope every API response and SSE event is wrapped in, and the error codes."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

__all__ = ["ErrorCode", "ProgressSummary", "dump_json", "envelope", "error_envelope", "event_envelope"]


class ErrorCode(IntEnum):
    """Stable ``code`` values of the envelope (0 means success).

    The first three digits are the HTTP status the code is usually sent with.
    """

    OK = 0
    INVALID_REQUEST = 40000
    UNKNOWN_COMPONENT = 40001
    BAD_COMPONENT = 40002
    NOT_FOUND = 40400
    CONVERSATION_BUSY = 40900
    RUN_FAILED = 42200
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
        code: 0 for success, else an :class:`ErrorCode`.
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
        execution_path: Nodes that reported so far, in order.
        tools: Sub-agents run so far, in order.
        tool_errors: How many of them failed.
        intent: The router's latest intent.
        confidence: The router's latest confidence.
    """

    execution_path: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tool_errors: int = 0
    intent: str | None = None
    confidence: float | None = None

    def add(self, event: dict[str, Any]) -> dict[str, Any]:
        """Fold ``event`` in and return the summary as it stands after it."""
        self.execution_path.append(event["node"])
        if event.get("tool"):
            self.tools.append(event["tool"])
            self.tool_errors += event.get("status") == "error"
        route = event.get("route")
        if isinstance(route, dict) and route.get("intent") is not None:
            self.intent = route["intent"]
            self.confidence = route.get("confidence")
        return {
            "execution_path": list(self.execution_path),
            "tools": list(self.tools),
            "tool_errors": self.tool_errors,
            "intent": self.intent,
            "confidence": self.confidence,
            "steps": len(self.execution_path),
        }


def event_envelope(event: dict[str, Any], state: dict[str, Any], code: ErrorCode | None = None) -> dict[str, Any]:
    """Wrap one pipeline event (from ``routerlab.agents.events.make_event``) and the run summary.

    The event's own fields (``type``, ``node``, ``display_name``, ``details``, ``conversation_id``,
    ``timestamp`` and its payload such as ``answer``/``sql``/``rows``) become ``data``; the summary
    goes under ``data.state``.

    Args:
        event: The event as ``Pipeline.stream`` yielded it.
        state: The summary returned by :meth:`ProgressSummary.add` for this event.
        code: Error code of an error event (default: the turn failed, :attr:`ErrorCode.RUN_FAILED`).
    """
    data = {**event, "state": state}
    if event["type"] == "error":
        return envelope(code or ErrorCode.RUN_FAILED, str(event.get("details", "")), data)
    if event["type"] == "completed":
        return envelope(ErrorCode.OK, "completed", data)
    return envelope(ErrorCode.OK, f"{event.get('display_name', event['node'])}: {event.get('details', '')}", data)
