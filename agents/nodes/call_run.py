"""Running one tool call: its injected values, its cost, what it raised, the deadline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routerlab.agents.lm.usage import usage_scope
from routerlab.agents.nodes.call_deadline import bind_deadline
from routerlab.agents.nodes.call_errors import classify
from routerlab.agents.nodes.call_outcome import CallOutcome
from routerlab.agents.tools import Tool, ToolContext
from routerlab.agents.tools.store import MemoryStore

__all__ = ["injections", "run_call"]


def injections(tool: Tool, ctx: ToolContext, memory: MemoryStore) -> dict[str, Any]:
    """The values of ``tool``'s injected parameters: the store, the run's state (seed 004) or the tool context."""
    return tool.injections(ctx, memory, ctx.state)


def run_call(tool: Tool, args: Mapping[str, Any], injected: Mapping[str, Any], known: Mapping[str, Any]) -> CallOutcome:
    """Run ``tool`` on ``args`` and return what it came to, with the LM cost it measured.

    Args:
        tool: The tool.
        args: The router's arguments (validated by the tool).
        injected: The injected parameters' values (:func:`injections`).
        known: The turn's call records so far (an error's statement may come from a cited call).

    Raises:
        Exception: A transient error, for the node's retry policy.
    """
    with usage_scope() as log:
        try:
            outcome = CallOutcome(tool(args, **injected))
        except Exception as exc:
            outcome = classify(exc, tool, args, known)
    outcome = bind_deadline(outcome)
    outcome.usage = log.total()
    return outcome
