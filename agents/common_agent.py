"""Seed 000's "Common Agent" names, as entry points into the pipeline (no second copy of it).

The seed's graph has the nodes ``invoke_common_agent`` (the router's model call),
``action_dispatch_node`` (where the run goes next), ``tool_call_node`` (running a tool),
``direct_tool_node`` (a named agent, bypassing the router) and ``response_to_user_chain`` (the
answer); routerlab's :class:`~routerlab.agents.graph.Pipeline` has the same nodes under its own
names (:data:`SEED_GRAPH_NODES`). The seed's state is :class:`CommonAgentState`, every field
of it a view of the pipeline's :class:`~routerlab.agents.state.PipelineState`
(:func:`common_agent_state`), and its ``ToolCallInfo`` mappings (``tool_call_id`` -> name /
input / output) are a view of the state's call records (:func:`tool_call_info`), split into the
seed's chat level (this turn) and session level (the conversation so far) by
:func:`session_and_chat_info`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from routerlab.agents.db import open_database
from routerlab.agents.state import ToolCallRecord
from routerlab.agents.tools.text import extract_sql

__all__ = [
    "SEED_GRAPH_NODES",
    "CommonAgentState",
    "ToolCallInfo",
    "common_agent_state",
    "response_to_user",
    "session_and_chat_info",
    "tool_call_info",
]

#: seed 000's node name -> the pipeline graph's node (its ``intent_route`` is the graph's
#: conditional start edge, ``Pipeline._intent_route``, as in the seed)
SEED_GRAPH_NODES: dict[str, str] = {
    "invoke_common_agent": "route",
    "action_dispatch_node": "dispatch",
    "tool_call_node": "tools",
    "direct_tool_node": "direct",
    "response_to_user_chain": "respond",
}


class ToolCallInfo(TypedDict):
    """Seed 000's ``ToolCallInfo``: three mappings keyed by ``tool_call_id``."""

    tool_call_output_mapping: dict[str, Any]
    tool_call_name_mapping: dict[str, Any]
    tool_call_input_mapping: dict[str, Any]


class CommonAgentState(TypedDict, total=False):
    """Seed 000's ``CommonAgentState``: its fields, computed from a pipeline state by :func:`common_agent_state`.

    Keys (the pipeline key each is read from):
        question: ``question``.
        chat_id: This turn's number in the conversation (``len(history) + 1``).
        session_id: The conversation (``conversation_id``; routerlab's ids are text, not ints).
        chat_context: ``hint``, and ``user_reply`` / ``clarification`` when set.
        selected_tables: The tables of the turn's latest successful ``data_discovery`` call
            (``{"name": table}``): routerlab finds them, the seed's user selected them.
        selected_table_groups: Always None: routerlab has no table groups.
        sql_dialect: The database's dialect (``duckdb`` or ``sqlite``).
        original_sql: The SQL the request itself carries (a fix or explain request), else None.
        error_message: ``error``.
        session_tool_call_info / chat_tool_call_info: :func:`session_and_chat_info`.
        messages: ``messages`` (the same ``add_messages`` reducer).
        interruption_reason: Why the turn stopped short of an answer: ``confirmation``,
            ``ask_human``, ``internal_error``, the error class of a ``timeout`` or
            ``step_limit``, else "".
        timeout_timestamp: ``deadline``.
        run_name: ``run_config["run_name"]``, else "".
        has_internal_error / internal_error_message: the same keys.
    """

    question: str | None
    chat_id: int | None
    session_id: str | None
    chat_context: dict[str, str] | None
    selected_tables: list[dict[str, Any]] | None
    selected_table_groups: list[dict[str, Any]] | None
    sql_dialect: str | None
    original_sql: str | None
    error_message: str | None
    session_tool_call_info: ToolCallInfo | None
    chat_tool_call_info: ToolCallInfo | None
    messages: Annotated[list[AnyMessage], add_messages]
    interruption_reason: str
    timeout_timestamp: float
    run_name: str
    has_internal_error: bool
    internal_error_message: str | None


def _selected_tables(records: Iterable[ToolCallRecord]) -> list[dict[str, Any]] | None:
    found = [
        r
        for r in sorted(records, key=lambda r: r.get("step", 0))
        if r.get("name") == "data_discovery" and r.get("status") == "success" and isinstance(r.get("output"), dict)
    ]
    return [{"name": t} for t in found[-1]["output"].get("tables") or []] if found else None


def _interruption(state: Mapping[str, Any]) -> str:
    if state.get("confirmation"):
        return "confirmation"
    if state.get("ask_human"):
        return "ask_human"
    if state.get("has_internal_error"):
        return "internal_error"
    return str(state.get("error_class") or "") if state.get("error_class") in ("timeout", "step_limit") else ""


def common_agent_state(state: Mapping[str, Any], earlier: Iterable[ToolCallRecord] = ()) -> CommonAgentState:
    """Seed 000's ``CommonAgentState`` of a pipeline state (a view: nothing is stored twice).

    Args:
        state: A pipeline state (``Pipeline.final_state``).
        earlier: Call records of the conversation's earlier turns (the session level).
    """
    session, chat = session_and_chat_info(state, earlier)
    context = {k: str(state[k]) for k in ("hint", "user_reply", "clarification") if state.get(k)}
    database = state.get("database")
    question = state.get("question")
    return CommonAgentState(
        question=question,
        chat_id=len(state.get("history") or ()) + 1,
        session_id=state.get("conversation_id"),
        chat_context=context,
        selected_tables=_selected_tables((state.get("tool_calls") or {}).values()),
        selected_table_groups=None,
        sql_dialect=open_database(database).dialect if database else None,
        original_sql=extract_sql(question) if question else None,
        error_message=state.get("error"),
        session_tool_call_info=session,
        chat_tool_call_info=chat,
        messages=list(state.get("messages") or ()),
        interruption_reason=_interruption(state),
        timeout_timestamp=float(state.get("deadline") or 0.0),
        run_name=str((state.get("run_config") or {}).get("run_name") or ""),
        has_internal_error=bool(state.get("has_internal_error")),
        internal_error_message=state.get("internal_error_message"),
    )


def tool_call_info(records: Iterable[ToolCallRecord] | Mapping[str, ToolCallRecord]) -> ToolCallInfo:
    """The seed's mappings of call records (the state's ``tool_calls``), in call order.

    A call that has not run yet has no output entry (as in the seed, where the output is
    recorded after the tool ran).
    """
    values = list(records.values()) if isinstance(records, Mapping) else list(records)
    ordered = sorted(values, key=lambda r: r.get("step", 0))
    return {
        "tool_call_output_mapping": {r["id"]: r["output"] for r in ordered if "output" in r},
        "tool_call_name_mapping": {r["id"]: r["name"] for r in ordered},
        "tool_call_input_mapping": {r["id"]: dict(r.get("args") or {}) for r in ordered},
    }


def session_and_chat_info(
    state: Mapping[str, Any], earlier: Iterable[ToolCallRecord] = ()
) -> tuple[ToolCallInfo, ToolCallInfo]:
    """Seed 000's ``(session_tool_call_info, chat_tool_call_info)``.

    Args:
        state: A pipeline state (its ``tool_calls`` are this turn's: the chat level).
        earlier: Records of the conversation's earlier turns (the session level adds them).
    """
    chat = list((state.get("tool_calls") or {}).values())
    return tool_call_info([*earlier, *chat]), tool_call_info(chat)


def response_to_user(state: Mapping[str, Any]) -> dict[str, Any]:
    """Seed 000's ``response_to_user_chain`` result of a finished turn's state.

    Returns:
        ``{"response_agent", "sub_agent_response", "mid_state"}``: the last tool that ran
        successfully (None when none did), its output, and the state as a plain dict.
    """
    records = sorted((state.get("tool_calls") or {}).values(), key=lambda r: r.get("step", 0))
    done = [r for r in records if r.get("status") == "success"]
    last = done[-1] if done else None
    return {
        "response_agent": last["name"] if last else None,
        "sub_agent_response": last.get("output") if last else None,
        "mid_state": dict(state),
    }
