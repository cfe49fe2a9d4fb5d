"""The ``tools`` node: run the calls the last decision requested, in order."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from routerlab.agents.nodes.call_deadline import out_of_time
from routerlab.agents.nodes.call_outcome import CallOutcome
from routerlab.agents.nodes.call_record import call_event, call_record, state_effects, tool_message
from routerlab.agents.nodes.call_run import injections, run_call
from routerlab.agents.nodes.call_structured import validate_structured
from routerlab.agents.nodes.env import NodeEnv, conversation_of
from routerlab.agents.nodes.updates import ToolsUpdate
from routerlab.agents.state import PipelineState
from routerlab.agents.tools import Tool, ToolContext
from routerlab.agents.tools.store import MemoryStore

__all__ = ["tools_node"]


def tools_node(env: NodeEnv, state: PipelineState) -> ToolsUpdate:
    """Each requested call's record, message, event and cost, and what the calls set for the turn.

    Reads ``messages`` (the last, an AI message with the calls), ``tool_calls`` (a call may cite
    an earlier one, even of this step), ``database`` and ``store`` (seed 004's InjectedStore,
    shared by this step's calls). A call replays a stored outcome when replay has one; a turn
    out of time starts no further call.

    Raises:
        Exception: A transient tool error (the node's retry policy takes it).
    """
    msg = state["messages"][-1]
    assert isinstance(msg, AIMessage)
    conv = conversation_of(state)
    messages: list[ToolMessage] = []
    records: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    usage: list[dict[str, Any]] = []
    update: dict[str, Any] = {}
    known = dict(state.get("tool_calls", {}))
    memory = MemoryStore(state.get("store"))
    for call in msg.tool_calls:
        if out_of_time():
            break
        tool = env.tools[call["name"]]
        ctx = ToolContext(
            db=env.database(state["database"]),
            lm=env.lm,
            programs=env.programs,
            settings=env.config.tools,
            state={**state, "tool_calls": known},
        )
        started = time.time()
        outcome = _outcome(env, tool, call["args"], ctx, memory, known)
        usage.append({"tool": tool.name, **outcome.usage.__dict__})
        outcome = validate_structured(outcome, tool, env.response_formats)
        cid = str(call["id"])  # the route node gives every call its id (a PlannedCall's)
        records[cid] = known[cid] = call_record(outcome, known.get(cid, {}), started)
        messages.append(tool_message(outcome, cid, tool, env.config.tools.message_rows))
        events.append(call_event(outcome, tool, conv))
        update |= outcome.turn_update | state_effects(outcome, tool)
    if memory.changed:
        update["store"] = memory.snapshot()
    return {**update, "messages": messages, "tool_calls": records, "events": events, "subagent_usage": usage}  # type: ignore[typeddict-item]


def _outcome(
    env: NodeEnv,
    tool: Tool,
    args: Mapping[str, Any],
    ctx: ToolContext,
    memory: MemoryStore,
    known: Mapping[str, Any],
) -> CallOutcome:
    """The call's stored outcome when replay has one, else the outcome of running it (then stored)."""
    key = env.replay.key(tool, args, ctx.state)
    replayed = env.replay.lookup(key)
    if replayed is not None:
        # the convention of DSPy's response cache (docs/metrics.md §7): counted, free, instant,
        # and the cold cost is what the stored outcome cost when it was computed
        return CallOutcome(replayed.output, usage=replayed.usage.as_cached(), replayed=True)
    outcome = run_call(tool, args, injections(tool, ctx, memory), known)
    if outcome.ok:
        env.replay.store(key, tool, outcome.output, outcome.usage)
    return outcome
