"""Error classification of a tool call: an exception a tool raised as a call outcome."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routerlab.agents.errors import ToolError
from routerlab.agents.lm.deadline import CallDeadlineExceeded
from routerlab.agents.nodes.call_outcome import CallOutcome
from routerlab.agents.nodes.transient import is_transient
from routerlab.agents.tools import Tool

__all__ = ["classify", "error_detail"]


def classify(exc: Exception, tool: Tool, args: Mapping[str, Any], known: Mapping[str, Any]) -> CallOutcome:
    """The failed outcome of a call of ``tool`` with ``args`` that raised ``exc``.

    A deadline cut and a :class:`ToolError` are failures the router may see (the error class
    says which); any other exception is a crash that ends the turn as an internal error.

    Raises:
        Exception: ``exc`` itself when it is transient (the node's retry policy takes it).
    """
    if isinstance(exc, CallDeadlineExceeded):
        return CallOutcome(str(exc), "error", exc.error_class)
    if isinstance(exc, ToolError):
        # what an error event shows: the offending statement and the guard rule
        detail = error_detail(exc, tool, args, known)
        return CallOutcome(str(exc), "error", exc.error_class, error_detail=detail)
    if is_transient(exc):
        raise exc
    output = f"{type(exc).__name__}: {exc}"
    # an LM or tool failure no router can repair (seed 000's internal error)
    crash = {
        "has_internal_error": True,
        "internal_error_message": f"{tool.name} failed: {output}",
        "error": f"{tool.name} failed: {output}",
        "error_class": "tool_crash",
    }
    return CallOutcome(output, "error", "tool_crash", turn_update=crash)


def error_detail(exc: ToolError, tool: Tool, args: Mapping[str, Any], known: Mapping[str, Any]) -> dict[str, Any]:
    """The statement a tool error is about and the guard rule that stopped it (when known).

    The statement is the error's, else the call's ``sql`` argument, else the SQL of the first
    call it cites (execute cites the call that produced its SQL; that SQL is what failed).
    """
    sql = getattr(exc, "sql", "") or args.get("sql") or ""
    if not sql:
        for ref in tool.refs:
            out = known.get(str(args.get(ref) or ""), {}).get("output")
            if isinstance(out, dict) and out.get("sql"):
                sql = out["sql"]
                break
    detail = {"sql": sql} if sql else {}
    if rule := getattr(exc, "rule", None):
        detail["rule"] = rule
    return detail
