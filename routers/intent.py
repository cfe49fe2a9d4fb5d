"""Base of the intent routers: classify the request once, then follow the canonical plan."""

from __future__ import annotations

from typing import Any, NamedTuple

from routerlab.agents.conversation import history_of, last_data_turn
from routerlab.agents.plan import TOOL_INTENT, next_call
from routerlab.agents.routing import RouteDecision, RouterEnv
from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.trace import Usage
from routerlab.routers.base import require_tools

__all__ = ["DONE_ANSWER", "TOOL_INTENT", "Classification", "IntentRouter"]


DONE_ANSWER = "I have nothing further to do for this request."


class Classification(NamedTuple):
    """What an intent router decided about a request, before the plan picks the calls.

    Attributes:
        intent: One of the intents in ``routerlab.agents.state.INTENTS``.
        confidence: In [0, 1].
        method: How it was decided (``rule:unsafe_verb``, ``llm``, ``hybrid:rules``...).
        usage: The router's own LM cost for this decision (none for rules).
    """

    intent: Intent
    confidence: float
    method: str
    usage: Usage


class IntentRouter:
    """Shared ``decide``: classify on the first step, then the plan for that intent.

    In a conversation, a request classified ``clarify`` right after a data turn is a follow-up
    (the earlier turn supplies what it leaves open): it is answered as ``sql``, method
    ``<method>:follow-up``.

    Subclasses implement :meth:`classify` and set ``name``.

    Args:
        fix_budget: fix_sql calls a failed execution may trigger.
    """

    name = "intent"
    #: tools the canonical plan may call; checked against the pipeline's tools at bind time
    needs_tools: tuple[str, ...] = tuple(TOOL_INTENT)

    def __init__(self, fix_budget: int = 1) -> None:
        self.fix_budget = fix_budget
        self.env: RouterEnv | None = None

    def bind(self, env: RouterEnv) -> None:
        """Check that every tool of the plan is available."""
        require_tools(self.name, self.needs_tools, env)
        self.env = env

    def classify(self, state: PipelineState) -> Classification:
        """Return ``(intent, confidence, method, usage)`` for the request."""
        raise NotImplementedError

    def decide(self, state: PipelineState) -> RouteDecision:
        """Classify once (first step), then emit the next call of the plan."""
        route: dict[str, Any] = state.get("route") or {}
        if state.get("tool_calls") and route.get("intent"):
            intent, conf, method, usage = route["intent"], route.get("confidence", 1.0), "plan", Usage()
        else:
            intent, conf, method, usage = self.classify(state)
            if intent == "clarify" and last_data_turn(history_of(state)) is not None:
                # ambiguous alone ("and that area?"), but the conversation's last data turn gives
                # the context a clarifying question would ask for: a follow-up data question
                intent, method = "sql", f"{method}:follow-up"
        call = next_call(state, intent, fix_budget=self.fix_budget)
        if call is None:
            records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
            if records and records[-1].get("status") == "error":
                # the plan has nothing left to try: no decision, the pipeline ends with that error
                return RouteDecision(intent=intent, confidence=conf, method=f"{method}:gave-up", usage=usage)
            return RouteDecision(answer=DONE_ANSWER, intent=intent, confidence=conf, method=method, usage=usage)
        return RouteDecision(tool_calls=[call], intent=intent, confidence=conf, method=method, usage=usage)
