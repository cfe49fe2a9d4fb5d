"""The canonical plan: given an intent and the calls so far, the next tool call.

Intent routers (rules, hybrid, dspy, oracle, random) classify a request once and then follow this
plan; the ``llm`` router decides every step itself. Both produce the same kinds of calls, so the
scorers compare like with like.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from routerlab.agents.state import Intent, PipelineState, ToolCallRecord
from routerlab.agents.tools.text import extract_error, extract_sql

if TYPE_CHECKING:
    from routerlab.agents.routing import PlannedCall

__all__ = [
    "CHAINS",
    "CLARIFY_QUESTION",
    "DIRECT_CHAINS",
    "REFUSAL_REASON",
    "TOOL_INTENT",
    "call_id",
    "direct_call",
    "next_call",
    "request_text",
]

#: intent implied by the first tool a router calls
TOOL_INTENT: dict[str, Intent] = {
    "data_discovery": "sql",
    "generate_sql": "sql",
    "execute_sql_and_analyze_result": "sql",
    "fix_sql": "fix",
    "explain_sql": "explain",
    "chat": "chat",
    "ask_human": "clarify",
    "refuse": "refuse",
    "abstain": "unanswerable",
}

#: tool names in the order the dispatch pipeline calls them for a request of each intent
CHAINS: dict[Intent, tuple[str, ...]] = {
    "sql": ("data_discovery", "generate_sql", "execute_sql_and_analyze_result"),
    "explain": ("explain_sql",),
    "fix": ("fix_sql", "execute_sql_and_analyze_result"),
    "chat": ("chat",),
    "clarify": ("ask_human", "data_discovery", "generate_sql", "execute_sql_and_analyze_result"),
    "refuse": ("refuse",),
    "unanswerable": ("abstain",),
}


#: what an explicit agent request (direct mode) runs: the calls whose outputs the agent cites,
#: then the agent itself; a clarification serves only to answer the clarified data question, so
#: ``ask_human`` goes on with that question's chain
DIRECT_CHAINS: dict[str, tuple[str, ...]] = {
    "data_discovery": ("data_discovery",),
    "generate_sql": ("data_discovery", "generate_sql"),
    "execute_sql_and_analyze_result": ("data_discovery", "generate_sql", "execute_sql_and_analyze_result"),
    "fix_sql": ("fix_sql",),
    "explain_sql": ("explain_sql",),
    "chat": ("chat",),
    "ask_human": CHAINS["clarify"],
    "refuse": ("refuse",),
    "abstain": ("abstain",),
}

CLARIFY_QUESTION = "Could you be more specific: which service area, time period or measure do you mean?"
REFUSAL_REASON = "this assistant only reads data; it does not change, delete or expose it."


def call_id(state: PipelineState, name: str) -> str:
    """A deterministic, unique-per-turn tool_call_id."""
    n = len(state.get("tool_calls", {}))
    digest = hashlib.sha1(f"{state.get('question', '')}|{n}|{name}".encode()).hexdigest()[:10]
    return f"call_{n:02d}_{digest}"


def _records(state: PipelineState) -> list[ToolCallRecord]:
    return sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))


def _last(state: PipelineState, *names: str) -> ToolCallRecord | None:
    for r in reversed(_records(state)):
        if r.get("name") in names:
            return r
    return None


def _call(state: PipelineState, name: str, **args: Any) -> PlannedCall:
    return {"id": call_id(state, name), "name": name, "args": args}


def _declined(record: ToolCallRecord) -> bool:
    """The SQL sub-agent said the schema cannot answer (``pipeline.tools.sql_may_decline``)."""
    output = record.get("output")
    return isinstance(output, dict) and bool(output.get("unanswerable"))


def _sql_plan(state: PipelineState, question: str, fix_budget: int) -> PlannedCall | None:
    last = _records(state)[-1] if state.get("tool_calls") else None
    if last is None or last["name"] in ("ask_human",):
        return _call(state, "data_discovery", question=question)
    if last["name"] == "data_discovery" and last.get("status") == "success":
        return _call(state, "generate_sql", question=question, discovery_call_id=last["id"])
    if last["name"] == "generate_sql" and last.get("status") == "success" and _declined(last):
        return _call(state, "abstain", question=question, missing=str(last["output"].get("missing") or ""))
    if last["name"] in ("generate_sql", "fix_sql") and last.get("status") == "success":
        return _call(state, "execute_sql_and_analyze_result", sql_call_id=last["id"])
    if last["name"] == "execute_sql_and_analyze_result" and last.get("status") == "error":
        fixes = sum(1 for r in _records(state) if r["name"] == "fix_sql")
        producer = _last(state, "generate_sql", "fix_sql")
        if fixes < fix_budget and producer and isinstance(producer.get("output"), dict):
            return _call(
                state,
                "fix_sql",
                sql=producer["output"].get("sql", ""),
                error=str(last.get("output", "")),
                failed_call_id=last["id"],
            )
    return None


def _direct_args(state: PipelineState, name: str, question: str) -> dict[str, Any]:
    """The arguments of ``name`` in a direct chain: from the request and the calls made so far."""
    discovery = _last(state, "data_discovery")
    producer = _last(state, "generate_sql", "fix_sql")
    args: dict[str, Any] = {
        "data_discovery": {"question": question},
        "generate_sql": {"question": question, **({"discovery_call_id": discovery["id"]} if discovery else {})},
        "execute_sql_and_analyze_result": {"sql_call_id": producer["id"] if producer else ""},
        "fix_sql": {"sql": extract_sql(question) or question, "error": extract_error(question) or "the query fails"},
        "explain_sql": {"sql": extract_sql(question) or question},
        "chat": {"message": question},
        "ask_human": {"question": CLARIFY_QUESTION},
        "refuse": {"reason": REFUSAL_REASON},
        "abstain": {"question": question},
    }.get(name, {})
    return args


def request_text(state: PipelineState) -> str:
    """The request as the plan's calls carry it: the question, with the user's reply when there is one."""
    question = state.get("question", "")
    return f"{question} ({state['user_reply']})" if state.get("user_reply") else question


def direct_call(state: PipelineState, agent: str) -> PlannedCall | None:
    """The next call of an explicit request for ``agent`` (direct mode), None once it has run.

    The chain is :data:`DIRECT_CHAINS`' (an agent outside it runs alone, with no arguments).
    Its position is the number of calls made this turn, so a failed call is never retried here:
    the pipeline ends the turn with its error.
    """
    chain = DIRECT_CHAINS.get(agent, (agent,))
    done = len(state.get("tool_calls", {}))
    if done >= len(chain):
        return None
    question = request_text(state)
    return _call(state, chain[done], **_direct_args(state, chain[done], question))


def next_call(state: PipelineState, intent: str, *, fix_budget: int = 1) -> PlannedCall | None:
    """The next call of the canonical plan for ``intent``, or None when the plan is done.

    Args:
        state: Current pipeline state.
        intent: The classified intent.
        fix_budget: How many fix_sql calls a failed execution may trigger.
    """
    question = request_text(state)
    calls = state.get("tool_calls", {})
    if intent == "clarify" and not state.get("user_reply"):
        # a benchmark turn asks the dataset's question: the scripted reply answers that one
        asked = state.get("clarification") or CLARIFY_QUESTION
        return _call(state, "ask_human", question=asked) if not calls else None
    if intent in ("sql", "clarify"):
        return _sql_plan(state, question, fix_budget)
    if intent == "fix":
        if not calls:
            sql = extract_sql(question) or question
            error = extract_error(question) or "the query fails"
            return _call(state, "fix_sql", sql=sql, error=error)
        return _sql_plan(state, question, fix_budget)
    if calls:
        return None
    if intent == "explain":
        return _call(state, "explain_sql", sql=extract_sql(question) or question)
    if intent == "chat":
        return _call(state, "chat", message=question)
    if intent == "refuse":
        return _call(state, "refuse", reason=REFUSAL_REASON)
    if intent == "unanswerable":
        return _call(state, "abstain", question=question)
    return None
