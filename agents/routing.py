"""The Router protocol and what a router returns: the contract between routers and the pipeline.

Lives in the agent layer because the dispatch graph calls routers; router strategies themselves
(and their registry) live in ``routerlab.routers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.trace import Usage

if TYPE_CHECKING:
    import dspy

    from routerlab.agents.db import Database
    from routerlab.agents.tools import Tool

__all__ = ["PlannedCall", "RouteDecision", "Router", "RouterEnv", "classifying_decision"]


class PlannedCall(TypedDict):
    """One tool call a router chose: the tool, its arguments, and an id unique within the turn."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass
class RouteDecision:
    """What a router chose for the next step.

    Attributes:
        tool_calls: Calls to make, each ``{"id", "name", "args"}`` (ids unique per turn).
        answer: A final answer instead of tool calls (ends the turn).
        intent: The intent the decision implies (``sql``, ``explain``, ...).
        confidence: In [0, 1].
        method: How it was decided (``rule:unsafe_verb``, ``llm``, ``hybrid:rules``...).
        usage: The router's own LM cost for this decision (never the sub-agents').
        invalid_tool_calls: Calls the LM produced that could not be parsed or validated,
            with the raw text (LangGraph's ``invalid_tool_calls``).
        steps: What the router did inside this one decision (a swarm's handoffs, say), as
            ``(node, details, data)``; the pipeline emits each as a progress event before the
            decision's own ``route`` event.
        selected_tool_ids: Tools this decision selected (a retrieving router's); the pipeline
            merges them into the state's ``selected_tool_ids`` without duplicates.
        evidence: What the router observed and decided on (an answer-first router's reading of
            its drafted SQL: declined, refused as a write, failed, ran); JSON-able, in the
            summary only when set, so other routers' summaries are unchanged.
        revises: This decision's intent replaces the turn's classification (an answer-first
            router that drafted a query as ``sql`` and then found it declined or a write); the
            turn's intent is otherwise its first decision's (:func:`classifying_decision`).
    """

    tool_calls: list[PlannedCall] = field(default_factory=list)
    answer: str | None = None
    intent: Intent | None = None
    confidence: float = 1.0
    method: str = ""
    usage: Usage = field(default_factory=Usage)
    invalid_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    selected_tool_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    revises: bool = False

    def summary(self, strategy: str) -> dict[str, Any]:
        """A JSON-able summary stored in state and traces."""
        return {
            "strategy": strategy,
            "intent": self.intent,
            "confidence": self.confidence,
            "method": self.method,
            "tools": [c["name"] for c in self.tool_calls],
            "answer": self.answer is not None,
            "invalid_tool_calls": len(self.invalid_tool_calls),
            "lm_calls": self.usage.lm_calls,
            "cache_hits": self.usage.cache_hits,
            "cost_usd": self.usage.cost_usd,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "latency_s": self.usage.latency_s,
            "cold_prompt_tokens": self.usage.cold_prompt_tokens,
            "cold_completion_tokens": self.usage.cold_completion_tokens,
            "cold_latency_s": self.usage.cold_latency_s,
            "cold_cost_usd": self.usage.cold_cost_usd,
            "cold_unknown": self.usage.cold_unknown,
            **({"evidence": dict(self.evidence)} if self.evidence else {}),
            **({"revises": True} if self.revises else {}),
        }


def classifying_decision(decisions: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The decision summary that classified a turn, from its decisions in order.

    The last one that revises the classification (``RouteDecision.revises``) with an intent,
    else the first with an intent (later ones follow its plan); None when none has one.
    """
    revised = [d for d in decisions if d.get("revises") and d.get("intent")]
    if revised:
        return revised[-1]
    return next((d for d in decisions if d.get("intent")), None)


@dataclass
class RouterEnv:
    """What a router may use besides the state; bound once when the pipeline is compiled.

    Attributes:
        tools: The tools the router may call.
        lm: The language model (routers that need none ignore it).
        open_db: Opens (cached, read-only) the database of a turn, for schema summaries.
    """

    tools: Sequence[Tool]
    lm: dspy.LM | None = None
    open_db: Callable[[str], Database] | None = None


@runtime_checkable
class Router(Protocol):
    """Decides the next step of a turn. Built through the ``router`` registry."""

    #: registry name, set by the ``@router`` decorator (never written in the class body); a class
    #: that names this protocol as its base (typed against it) inherits the empty default till then
    name: str = ""

    def bind(self, env: RouterEnv) -> None:
        """Receive tools/LM; raise ``ContractError`` if something the router needs is missing."""
        ...

    def decide(self, state: PipelineState) -> RouteDecision:
        """Return the next step for ``state``. Must not raise for odd input."""
        ...
