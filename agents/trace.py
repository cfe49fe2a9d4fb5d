"""What one example leaves behind after the pipeline ran: the scorers' only input."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Trace", "Usage"]


@dataclass
class Usage:
    """LM cost of a part of the pipeline.

    Attributes:
        lm_calls: Number of LM requests (cache hits included).
        cache_hits: Requests answered from the response cache.
        prompt_tokens / completion_tokens: Token counts reported by the backend.
        latency_s: Wall time spent inside LM calls.
        cost_usd: Price when the provider reports one, else 0.
    """

    lm_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> Usage:
        """Return the sum of two usages."""
        return Usage(
            lm_calls=self.lm_calls + other.lm_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_s=self.latency_s + other.latency_s,
            cost_usd=self.cost_usd + other.cost_usd,
        )


@dataclass
class Trace:
    """The final state of one example's run, flattened for scoring and storage.

    Attributes:
        example_id: Id of the replayed example.
        answer: Final answer text shown to the user.
        sql: The last SQL the pipeline produced (generated or fixed), if any.
        columns / rows: Result of the last successful execution (capped).
        executed: True if any SQL was executed against the database.
        ask_human: The clarifying question asked, if any.
        intent: Intent of the first route decision (what the router thought the request was).
        route_decisions: Every route decision (strategy, intent, confidence, method, tools).
        tool_calls: Tool-call records in request order (see ``routerlab.agents.state.ToolCallRecord``),
            then the calls the pipeline refused to run (a tool it does not have), with status
            ``rejected``.
        invalid_tool_calls: Calls the LM emitted that could not be parsed or validated
            (LangGraph's ``invalid_tool_calls``): ``id``, ``name``, raw ``args``, ``error``, and
            ``step``, the number of recorded calls before it.
        messages: The conversation as dicts (role, content, tool_calls, tool_call_id, status).
        events: Progress events (type progress/completed/error).
        path: Node names in execution order.
        node_latency_s: Seconds spent per node name (summed over visits).
        total_latency_s: Wall time of the whole example, all turns.
        router_usage: LM cost of the router's own decisions.
        subagent_usage: LM cost of the sub-agents (SQL generation, repair, explanation...).
        error / error_class: Why the turn ended in error, if it did.
        turns: Graph invocations (2 when a clarification was answered and resumed).
        steps: Router decisions taken.
    """

    example_id: str
    answer: str | None = None
    sql: str | None = None
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    executed: bool = False
    ask_human: str | None = None
    intent: str | None = None
    route_decisions: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    invalid_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    node_latency_s: dict[str, float] = field(default_factory=dict)
    total_latency_s: float = 0.0
    router_usage: Usage = field(default_factory=Usage)
    subagent_usage: Usage = field(default_factory=Usage)
    error: str | None = None
    error_class: str | None = None
    turns: int = 1
    steps: int = 0

    @property
    def tool_names(self) -> list[str]:
        """Names of the called tools, in order."""
        return [c["name"] for c in self.tool_calls]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trace:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["router_usage"] = Usage(**d.get("router_usage", {}))
        d["subagent_usage"] = Usage(**d.get("subagent_usage", {}))
        return cls(**d)
