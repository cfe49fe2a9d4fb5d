"""The ``route`` node: the router decides the next step (tool calls or an answer)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from routerlab.agents.events import make_event
from routerlab.agents.lm.deadline import CallDeadlineExceeded, deadline_cut
from routerlab.agents.lm.usage import usage_scope
from routerlab.agents.nodes.env import NodeEnv, conversation_of
from routerlab.agents.nodes.messages import ai_message
from routerlab.agents.nodes.transient import is_transient
from routerlab.agents.nodes.updates import RouteUpdate, TurnError
from routerlab.agents.routing import RouteDecision
from routerlab.agents.state import PipelineState

__all__ = ["internal_error", "route_node"]


def route_node(env: NodeEnv, state: PipelineState) -> RouteUpdate | TurnError:
    """The router's decision, its cost and events; an error when the turn cannot go on.

    Reads ``deadline`` and ``remaining_steps`` (and the router reads what it needs); the turn ends
    past its deadline, out of steps, when the router's own call fails or cut by a deadline, and
    when the decision has neither calls nor an answer.

    Raises:
        Exception: A transient router error (the node's retry policy takes it; exhausted, the run
            records a crash).
    """
    if time.time() > state.get("deadline", float("inf")):
        return {"error": "the turn ran past its deadline", "error_class": "timeout"}
    if state.get("remaining_steps", 1) <= 0:
        return {"error": "the turn used all its router steps", "error_class": "step_limit"}
    with usage_scope() as log:
        try:
            decision = env.router.decide(state)
        except CallDeadlineExceeded as exc:
            return exc.turn_update()  # type: ignore[return-value]
        except Exception as exc:
            if is_transient(exc):
                raise
            return internal_error(env.router.name, f"{type(exc).__name__}: {exc}", type(exc).__name__)
    if (cut := deadline_cut()) is not None:
        # a router that caught the cut call (and fell back) still ran out of time
        return cut.turn_update()  # type: ignore[return-value]
    measured = log.total()
    if decision.usage.lm_calls == 0 and measured.lm_calls:
        decision.usage = measured
    summary = decision.summary(env.router.name)
    update: RouteUpdate = {
        "messages": [ai_message(decision)],
        "route": summary,
        "router_usage": [summary],
        "remaining_steps": state.get("remaining_steps", 1) - 1,
        "selected_tool_ids": list(decision.selected_tool_ids),
        "events": _events(env, decision, summary, conversation_of(state)),
    }
    if not decision.tool_calls and decision.answer is None:
        update |= _no_step(decision, state)
    return update


def _events(env: NodeEnv, decision: RouteDecision, summary: dict[str, Any], conv: str) -> list[dict[str, Any]]:
    """The decision's own steps as progress events, then the route event."""
    return [
        *(make_event("progress", node, details, conv, **data) for node, details, data in decision.steps),
        make_event(
            "progress",
            "route",
            f"{decision.method or env.router.name}: "
            f"{', '.join(summary['tools']) or 'answer'} (intent {decision.intent}, "
            f"confidence {decision.confidence:.2f})",
            conv,
            route=summary,
        ),
    ]


def _no_step(decision: RouteDecision, state: Mapping[str, Any]) -> TurnError:
    """The error of a decision with neither tool calls nor an answer."""
    records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
    if decision.invalid_tool_calls:
        return {"error": "the router produced no valid tool call", "error_class": "invalid_tool_call"}
    if records and records[-1].get("status") == "error":
        last = records[-1]
        message = f"{last['name']} failed and the router gave up: {last.get('output')}"
        # seed 000: a tool error that ends the turn is an internal error
        return {
            "error": message,
            "error_class": last.get("error_class") or "tool_error",
            "has_internal_error": True,
            "internal_error_message": message,
        }
    return {"error": "the router produced no decision", "error_class": "no_decision"}


def internal_error(router_name: str, message: str, kind: str) -> TurnError:
    """The update of a router whose own call raised: the turn ends with an internal error.

    The class is ``crash:<exception type>``, the name the runner gives an exception that
    escaped the pipeline, so scoring and the crash verdict see the same failure either way.
    """
    text = f"the {router_name} router failed: {message}"
    return {
        "has_internal_error": True,
        "internal_error_message": text,
        "error": message,
        "error_class": f"crash:{kind}",
    }
