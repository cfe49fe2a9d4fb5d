"""Seed 000's "Common Agent" names, as entry points into the pipeline (no second copy of it).

The seed's graph has the nodes ``invoke_common_agent`` (the router's model call),
``action_dispatch_node`` (where the run goes next), ``tool_call_node`` (running a tool),
``direct_tool_node`` (a named agent, bypassing the router) and ``response_to_user_chain`` (the
answer); routerlab's :class:`~routerlab.agents.graph.Pipeline` has the same nodes under its own
names (:data:`SEED_GRAPH_NODES`). The seed's state is :class:`CommonAgentState`
(routerlab's :class:`~routerlab.agents.state.PipelineState`), and its ``ToolCallInfo`` mappings
(``tool_call_id`` -> name / input / output) are a view of the state's call records
(:func:`tool_call_info`), split into the seed's chat level (this turn) and session level (the
conversation so far) by :func:`session_and_chat_info`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from routerlab.agents.state import PipelineState, ToolCallRecord

__all__ = [
    "SEED_GRAPH_NODES",
    "CommonAgentState",
    "ToolCallInfo",
    "response_to_user",
    "session_and_chat_info",
    "tool_call_info",
]

CommonAgentState = PipelineState
"""Seed 000's ``CommonAgentState``: the pipeline's state."""

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
