"""Seed 002's wire contract: how a pipeline event reads to a client of ``ask_agent_stream``.

The pipeline's events (``routerlab.agents.events``) carry routerlab's own payload and the
graph's node names; this module turns them into what seed 002's clients read: the seed's node
names (``classify_question``, ``agent_sql_generation``, ``agent_sql_execution``, ``agent_chat``,
``format_response``; the graph node stays in ``graph_node``), ISO-8601 timestamps, an icon, a
per-event ``status`` and ``sub_status``, the routing mode used, and for the completed event seed
002's ``response``, ``query_result`` and ``classification_info``; an error event names the
offending SQL and the rule that stopped it, with the seed's ``error_type`` (a refused write is
``forbidden_keywords``). Every table here is data, so a new node, tool or intent is one entry
(``docs/api.md`` shows one example of each event).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from routerlab.app.ask_request import ROUTING_MODES

__all__ = [
    "ICONS",
    "QUESTION_TYPES",
    "SEED_DISPLAY_NAMES",
    "SEED_ERROR_TYPES",
    "SEED_NODES",
    "TOOL_SEED_NODES",
    "event_status",
    "iso_timestamp",
    "present",
    "routing_mode_used",
    "seed_node",
    "sub_status",
]

#: seed 002's node of each graph node (a tool event is mapped by its tool: :data:`TOOL_SEED_NODES`)
SEED_NODES: dict[str, str] = {
    "start": "start",
    "intent_route": "classify_question",
    "route": "classify_question",
    "direct": "classify_question",
    "dispatch": "classify_question",
    "ask_human": "agent_chat",
    "respond": "format_response",
}

#: seed 002's node of each sub-agent: the SQL path is generation then execution, the rest talks
TOOL_SEED_NODES: dict[str, str] = {
    "data_discovery": "agent_sql_generation",
    "generate_sql": "agent_sql_generation",
    "fix_sql": "agent_sql_generation",
    "execute_sql_and_analyze_result": "agent_sql_execution",
    "explain_sql": "agent_chat",
    "chat": "agent_chat",
    "ask_human": "agent_chat",
    "refuse": "agent_chat",
    "abstain": "agent_chat",
}

#: a tool none of the tables knows (a plugged-in or distractor tool) reports under this node
OTHER_TOOL_NODE = "agent_tool"

#: what seed 002 shows for each of its nodes
SEED_DISPLAY_NAMES: dict[str, str] = {
    "start": "Starting",
    "classify_question": "Analysing the question type",
    "agent_sql_generation": "Generating the SQL query",
    "agent_sql_execution": "Running the query",
    "agent_chat": "Thinking about the answer",
    "format_response": "Formatting the result",
    OTHER_TOOL_NODE: "Running a tool",
}

#: seed 002's ``error_type`` of a guard rule: a write (or a write hidden in a query) is the seed's
#: refused keyword; the guard's other rules keep routerlab's class
SEED_ERROR_TYPES: dict[str, str] = {
    "only_select": "forbidden_keywords",
    "dml_in_subquery": "forbidden_keywords",
}

#: icon per graph node and per sub-agent (a tool event shows its tool's)
ICONS: dict[str, str] = {
    "start": "🚀",
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
    "start": "the run started",
    "direct": "bypassing the router",
    "ask_human": "resuming with the user's reply",
}


def iso_timestamp(unix_s: float) -> str:
    """Seed 002's timestamp: ISO-8601, UTC, to the millisecond (``2026-11-26T01:02:03.456+00:00``)."""
    return datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="milliseconds")


def seed_node(event: dict[str, Any], previous: str | None = None) -> str:
    """Seed 002's node of a pipeline event.

    Args:
        event: The event as the pipeline yielded it (``node`` is the graph node).
        previous: Seed node of the run's previous event. An error event reports where the run
            ended (the seed's error of a refused write is on ``agent_sql_generation``), not the
            node that wrote the message.

    Returns:
        One of :data:`SEED_NODES`' or :data:`TOOL_SEED_NODES`' values, or :data:`OTHER_TOOL_NODE`.
    """
    if event["type"] == "error" and previous not in (None, "start"):
        return str(previous)
    tool = event.get("tool")
    if tool:
        return TOOL_SEED_NODES.get(tool, OTHER_TOOL_NODE)
    return SEED_NODES.get(event["node"], event["node"])


def _next_nodes(tools: list[str]) -> str:
    """``agent_sql_generation (data_discovery)``: the seed's node of each next call, and the call."""
    return ", ".join(f"{TOOL_SEED_NODES.get(t, OTHER_TOOL_NODE)} ({t})" for t in tools) or "format_response"


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
        # the seed's classify_question says how it classified, then where the run goes
        method = route.get("method") or route.get("strategy")
        return f"classified by {method}; next: {_next_nodes(route.get('tools') or [])}"
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
        state_summary: The run's summary after this event (``ProgressSummary.add``); its
            ``node`` is the event's seed node.
        echo: Request fields every event repeats (``user_id``, ``context_type``,
            ``ignored_fields``), only those the request set.

    Returns:
        The event's own fields with seed 002's ``node`` (the graph's in ``graph_node``), its
        ``display_name`` and an ISO-8601 ``timestamp``, plus ``icon``, ``status``,
        ``sub_status``, ``state_summary`` and the echoed fields; a completed event's
        ``answer``/``rows``/``columns``/``row_count``/``summary`` become seed 002's
        ``response``, ``query_result`` and ``summary``, with its ``question_type``,
        ``classification_info`` and ``routing_mode``; a ``classify_question`` progress event
        carries the ``question_type`` and ``classification_info`` of its decision (``UNCERTAIN``
        before the router decided); an error event gains ``error`` (its
        message), seed 002's ``error_type`` (routerlab's class stays in ``error_class``) and the
        state summary's ``sql`` and ``validation_error_type``. ``execution_path`` is the seed's
        nodes in order; the graph's path of a final event stays in ``graph_path``.
    """
    data = dict(event)
    summary = dict(state_summary)
    node = str(summary.pop("node"))
    icon_key = data.get("tool") or data["node"]
    extra: dict[str, Any] = {
        "node": node,
        "graph_node": data["node"],
        "display_name": SEED_DISPLAY_NAMES.get(node, data.get("display_name", node)),
        "timestamp": iso_timestamp(float(data["timestamp"])),
        "icon": ICONS.get(icon_key, "•"),
        "status": event_status(event),
        "sub_status": sub_status(event),
    }
    if "execution_path" in data:
        extra |= {"execution_path": list(summary["execution_path"]), "graph_path": data.pop("execution_path")}
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
    elif node == "classify_question":
        # seed 002's classify_question reports its result: question_type, confidence, method
        classification = _classification(data.get("route"))
        extra |= {"question_type": classification["question_type"], "classification_info": classification}
    elif data["type"] == "error":
        error_class = data.get("error_type") or "error"
        error_type = SEED_ERROR_TYPES.get(str(data.get("rule") or ""), error_class)
        extra |= {"error": data.get("details", ""), "error_type": error_type, "error_class": error_class}
        summary |= {"sql": data.get("sql") or summary.get("sql"), "validation_error_type": error_type}
    return {**data, **extra, **echo, "state_summary": summary}
