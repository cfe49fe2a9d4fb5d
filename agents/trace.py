"""What one example leaves behind after the pipeline ran: the scorers' only input."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["Trace", "Usage", "answered_by_reply"]


@dataclass
class Usage:
    """LM cost of a part of the pipeline: what this run paid, and what the calls cost cold.

    A call answered from a cache (DSPy's response cache, or ``--replay``) costs this run almost
    nothing, so *observed* cost depends on what ran before. Its *cold* cost is what the call cost
    when it was first computed (stored with the cache entry), so it is the same whichever router
    or run computed it first. A call computed now has cold cost = observed cost.

    Attributes:
        lm_calls: Number of LM requests (cache hits included).
        cache_hits: Requests answered from the response cache.
        prompt_tokens / completion_tokens: Token counts reported by the backend (observed).
        latency_s: Wall time spent inside LM calls (observed).
        cost_usd: Price when the provider reports one, else 0.
        cold_prompt_tokens / cold_completion_tokens / cold_latency_s / cold_cost_usd: The same
            figures for the calls as first computed.
        cold_unknown: Cache hits whose cold cost was never recorded (cached before routerlab
            recorded cold costs); their cold figures are 0, so a non-zero count means the cold
            totals are a lower bound.
    """

    lm_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cold_prompt_tokens: int = 0
    cold_completion_tokens: int = 0
    cold_latency_s: float = 0.0
    cold_cost_usd: float = 0.0
    cold_unknown: int = 0

    def add(self, other: Usage) -> Usage:
        """Return the sum of two usages."""
        return Usage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(Usage)})

    @classmethod
    def computed(cls, prompt_tokens: int, completion_tokens: int, latency_s: float, cost_usd: float = 0.0) -> Usage:
        """One call computed now: its cold cost is what it cost."""
        return cls(
            lm_calls=1,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
            cost_usd=cost_usd,
            cold_prompt_tokens=prompt_tokens,
            cold_completion_tokens=completion_tokens,
            cold_latency_s=latency_s,
            cold_cost_usd=cost_usd,
        )

    def as_cached(self) -> Usage:
        """These calls answered from a cache: nothing observed, the same cold cost."""
        return Usage(
            lm_calls=self.lm_calls,
            cache_hits=self.lm_calls,
            cold_prompt_tokens=self.cold_prompt_tokens,
            cold_completion_tokens=self.cold_completion_tokens,
            cold_latency_s=self.cold_latency_s,
            cold_cost_usd=self.cold_cost_usd,
            cold_unknown=self.cold_unknown,
        )

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Usage:
        """The usage fields of a stored row (a route summary, a sub-agent usage record...)."""
        names = {f.name: f.type for f in fields(Usage)}
        values: dict[str, Any] = {k: (float if names[k] == "float" else int)(row.get(k) or 0) for k in names}
        return cls(**values)


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
        run_config: Seed 004's ``RunnableConfig`` fields of the run (``tags``, ``metadata``,
            ``run_name``); empty when none were given.
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
    run_config: dict[str, Any] = field(default_factory=dict)

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


def answered_by_reply(asked: Trace, reply: str, after: Trace) -> Trace:
    """One example's trace when its turn asked back and the user's reply came as the next turn.

    ``asked`` ended on a question to the user (its last ``ask_human`` call still ``pending``);
    ``after`` is the turn the reply started, with ``asked`` as the turn before it. The example is
    scored on what the user got in the end, so the joined trace has ``after``'s answer, SQL, result
    and error, and the first decision, questions and costs of both: the question's call is
    recorded as answered by ``reply`` (status ``success``, a result message), as a reply given
    within the turn records it, and ``after``'s calls follow it (their steps after ``asked``'s).

    Args:
        asked: The trace of the turn that asked back.
        reply: The user's reply.
        after: The trace of the reply turn.
    """
    calls = [dict(c) for c in asked.tool_calls]
    pending = next((c for c in reversed(calls) if c.get("name") == "ask_human" and c.get("status") == "pending"), None)
    messages = list(asked.messages)
    if pending is not None:
        pending.update(output={"reply": reply}, status="success")
        messages.append(
            {"role": "tool", "content": reply, "tool_call_id": pending["id"], "name": "ask_human", "status": "success"}
        )
    offset = len(calls)
    later = [{**c, "step": int(c.get("step", 0)) + offset} for c in after.tool_calls]
    invalid = [{**c, "step": int(c.get("step", 0)) + offset} for c in after.invalid_tool_calls]
    nodes = dict(asked.node_latency_s)
    for node, seconds in after.node_latency_s.items():
        nodes[node] = nodes.get(node, 0.0) + seconds
    return Trace(
        example_id=asked.example_id,
        answer=after.answer,
        sql=after.sql,
        columns=list(after.columns),
        rows=list(after.rows),
        executed=asked.executed or after.executed,
        # a question the reply turn asked in its turn is the one left waiting
        ask_human=after.ask_human or asked.ask_human,
        intent=asked.intent,
        route_decisions=[*asked.route_decisions, *after.route_decisions],
        tool_calls=[*calls, *later],
        invalid_tool_calls=[*asked.invalid_tool_calls, *invalid],
        messages=[*messages, *after.messages],
        events=[*asked.events, *after.events],
        path=[*asked.path, *after.path],
        node_latency_s=nodes,
        total_latency_s=asked.total_latency_s + after.total_latency_s,
        router_usage=asked.router_usage.add(after.router_usage),
        subagent_usage=asked.subagent_usage.add(after.subagent_usage),
        error=after.error,
        error_class=after.error_class,
        turns=asked.turns + after.turns,
        steps=asked.steps + after.steps,
        run_config=dict(asked.run_config),
    )
