"""Seed 002's wire contract: how a pipeline event reads to a client of ``ask_agent_stream``.

The pipeline's events (``routerlab.agents.events``) carry routerlab's own payload; this module
adds what seed 002's clients read: an icon, a per-event ``status`` and ``sub_status``, the
routing mode used, and for the completed event seed 002's ``response``, ``query_result`` and
``classification_info``; an error event names the offending SQL and the rule that stopped it.
Every table here is data, so a new node, tool or intent is one entry (``docs/api.md`` shows one
example of each event).
"""

from __future__ import annotations

from typing import Any

from routerlab.serve.models import ROUTING_MODES

__all__ = ["ICONS", "QUESTION_TYPES", "event_status", "present", "routing_mode_used", "sub_status"]

#: icon per graph node and per sub-agent (a tool event shows its tool's)
ICONS: dict[str, str] = {
    "intent_route": "🧭",
    "direct": "🎯",
    "route": "🤔",
    "dispatch": "🔀",
    "tools": "🔧",
    "respond": "📝",
    "data_discovery": "🔎",
    "generate_sql": "🔧",
    "fix_sql": "🩹",
    "execute_sql_and_analyze_result": "⚙️",
    "explain_sql": "📖",
    "chat": "💭",
    "ask_human": "❓",
    "refuse": "⛔",
    "abstain": "🤷",
}

#: seed 002's question type of each intent (what a client switches on); no intent: UNCERTAIN
QUESTION_TYPES: dict[str, str] = {
    "sql": "DATABASE",
    "fix": "DATABASE",
    "clarify": "DATABASE",
    "unanswerable": "DATABASE",
    "explain": "CHAT",
    "chat": "CHAT",
    "refuse": "CHAT",
}

#: seed 002's name of the routers it knows (``rules`` is its ``rule``); other routers keep their own
_SEED_MODE: dict[str, str] = {router: mode for mode, router in ROUTING_MODES.items() if router}

#: what comes after a sub-agent that succeeded
_AFTER_TOOL: dict[str, str] = {
    "data_discovery": "schema found, SQL generation next",
    "generate_sql": "the SQL passed the read-only guard, execution next",
    "fix_sql": "the repaired SQL passed the read-only guard, execution next",
    "execute_sql_and_analyze_result": "query done, writing the answer",
    "explain_sql": "explanation written",
    "chat": "reply written",
    "refuse": "request declined",
    "abstain": "the database cannot answer this",
}

#: what a progress event of a node (not a tool) means for the client
_NODE_SUB_STATUS: dict[str, str] = {
    "direct": "bypassing the router",
    "ask_human": "resuming with the user's reply",
}


def routing_mode_used(router: str, direct: bool) -> str:
    """The routing mode a request ran under: seed 002's name of its router, or ``direct``."""
    return "direct" if direct else _SEED_MODE.get(router, router)


def event_status(event: dict[str, Any]) -> str:
    """``success`` / ``error`` of the step an event reports, ``waiting`` for a reply, else ``running``."""
    if event["type"] == "error":
        return "error"
    if event["type"] == "completed":
        return "waiting" if event.get("ask_human") else "success"
    return str(event.get("status") or "running")


def sub_status(event: dict[str, Any]) -> str:
    """One short line on what the event means for what comes next (seed 002's ``sub_status``)."""
    kind = event["type"]
    if kind == "error":
        if event.get("rule"):
            return f"stopped by the SQL guard rule {event['rule']}"
        if event.get("has_internal_error"):
            return "internal error: a model or tool call failed in a way the router cannot repair"
        return f"the turn ended: {event.get('error_type') or 'error'}"
    if kind == "completed":
        return "waiting for the user's reply" if event.get("ask_human") else "done"
    tool = event.get("tool")
    if tool:
        if event.get("status") == "error":
            return f"{tool} failed; the router decides whether to repair it"
        return _AFTER_TOOL.get(tool, f"{tool} done")
    route = event.get("route")
    if isinstance(route, dict):
        return f"next: {', '.join(route.get('tools') or []) or 'the answer'}"
    return _NODE_SUB_STATUS.get(event.get("node", ""), "in progress")


def _classification(route: dict[str, Any] | None) -> dict[str, Any]:
    route = route or {}
    intent = route.get("intent")
    return {
        "question_type": QUESTION_TYPES.get(intent or "", "UNCERTAIN"),
        "intent": intent,
        "confidence": route.get("confidence"),
        "method": route.get("method"),
    }


def present(event: dict[str, Any], state_summary: dict[str, Any], echo: dict[str, Any]) -> dict[str, Any]:
    """The ``data`` of one event's envelope.

    Args:
        event: The event as the pipeline yielded it.
        state_summary: The run's summary after this event (``ProgressSummary.add``).
        echo: Request fields every event repeats (``user_id``, ``context_type``,
            ``ignored_fields``), only those the request set.

    Returns:
        The event's own fields, ``icon``, ``status``, ``sub_status``, ``state_summary`` and the
        echoed fields; a completed event's ``answer``/``rows``/``columns``/``row_count``/
        ``summary`` become seed 002's ``response``, ``query_result`` and ``summary``, with its
        ``question_type``, ``classification_info`` and ``routing_mode``; an error event gains
        ``error`` (its message) and the state summary's ``sql`` and ``validation_error_type``.
    """
    data = dict(event)
    icon_key = data.get("tool") or data["node"]
    extra: dict[str, Any] = {
        "icon": ICONS.get(icon_key, "•"),
        "status": event_status(event),
        "sub_status": sub_status(event),
    }
    summary = dict(state_summary)
    if data["type"] == "completed":
        rows = data.pop("rows", None) or []
        columns = data.pop("columns", None) or []
        classification = _classification(data.pop("classification", None) or data.get("route"))
        extra |= {
            "response": data.pop("answer", None),
            "question_type": classification["question_type"],
            "query_result": {"columns": columns, "rows": rows, "row_count": data.pop("row_count", len(rows))},
            "summary": data.pop("summary", None),
            "classification_info": classification,
            "routing_mode": summary.get("routing_mode"),
        }
    elif data["type"] == "error":
        extra["error"] = data.get("details", "")
        summary |= {"sql": data.get("sql"), "validation_error_type": data.get("error_type")}
    return {**data, **extra, **echo, "state_summary": summary}
