"""The ``direct`` node: an explicit agent request runs the calls the agent cites, then the agent."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage

from routerlab.agents.events import make_event
from routerlab.agents.nodes.env import NodeEnv, conversation_of
from routerlab.agents.nodes.messages import ai_message
from routerlab.agents.nodes.updates import DirectUpdate
from routerlab.agents.plan import TOOL_INTENT, direct_call
from routerlab.agents.routing import RouteDecision
from routerlab.agents.state import PipelineState

__all__ = ["answer_of", "direct_node"]


def direct_node(env: NodeEnv, state: PipelineState) -> DirectUpdate:
    """The next call of the agent's chain, its answer when done, or the error of a failed call.

    Never the router: with none to repair it, a failed call ends the request with its error.
    Reads ``agent``, ``tool_calls`` and (through :func:`~routerlab.agents.plan.direct_call`) the
    request's keys.
    """
    agent = str(state["agent"])
    conv = conversation_of(state)
    records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
    if records and records[-1].get("status") == "error":
        last = records[-1]
        return {
            "error": f"{last['name']} failed: {last.get('output')}",
            "error_class": last.get("error_class") or "tool_error",
            "error_detail": dict(last.get("error_detail") or {}),
        }
    call = direct_call(state, agent)
    if call is None:
        answer = answer_of(records[-1].get("output")) if records else ""
        return {
            "messages": [AIMessage(content=answer)],
            "events": [make_event("progress", "direct", f"{agent} done", conv)],
        }
    intent = TOOL_INTENT.get(agent, "sql")
    decision = RouteDecision(tool_calls=[call], intent=intent, method=f"direct:{agent}")
    details = f"explicit request for {agent}"
    if call["name"] != agent:
        details += f": {call['name']} first ({agent} needs its output)"
    return {
        "messages": [ai_message(decision)],
        "route": decision.summary("direct"),
        "events": [make_event("progress", "direct", details, conv, route=decision.summary("direct"))],
    }


def answer_of(output: Any) -> str:
    """The answer a direct request gives when its agent is not terminal: what the agent produced."""
    if not isinstance(output, dict):
        return str(output or "")
    for key in ("answer", "explanation", "summary", "sql"):
        if output.get(key):
            return str(output[key])
    if output.get("tables"):
        return "Relevant tables: " + ", ".join(map(str, output["tables"]))
    return json.dumps(output, default=str, ensure_ascii=False)[:2000]
