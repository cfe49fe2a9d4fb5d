"""The scoring contract: the Scorer protocol and its ``@scorer`` registry, the Score a scorer returns.

Also the ExampleResult one example's scores are recorded in, and the outcomes a run can end
with. Named for its job: the built-in scorers are in :mod:`routerlab.eval.scorers`; a new scorer
implements :class:`Scorer` and registers with :data:`scorer` (``docs/extending.md``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from routerlab.agents.registry import Registry
from routerlab.agents.trace import Trace, Usage
from routerlab.benchmarks.example import Example

__all__ = ["NOT_RUN", "NOT_RUN_ERROR_CLASS", "OUTCOMES", "ExampleResult", "Score", "Scorer", "did_run", "scorer"]

#: how an example's run ended: finished (scores apply), or the error class of what stopped it
#: ``not_run``: the example never started (the run's deadline passed first); it has no scores
OUTCOMES: tuple[str, ...] = ("ok", "error", "timeout", "crash", "not_run")

#: outcome of an example that never started
NOT_RUN = "not_run"
#: error class of an example the run's deadline kept from starting (older stores recorded these
#: with outcome ``timeout``)
NOT_RUN_ERROR_CLASS = "run_deadline"


def did_run(result: ExampleResult) -> bool:
    """True when the example actually ran; one that never started belongs in no rate or test."""
    return result.outcome != NOT_RUN and result.error_class != NOT_RUN_ERROR_CLASS


@dataclass(frozen=True)
class Score:
    """One scorer's verdict on one example.

    Attributes:
        name: Scorer name (the registry name).
        value: In [0, 1]; ``None`` when the scorer does not apply to the example (EX on a chat
            request) or the example is invalid for it (its gold SQL failed). ``None`` values are
            excluded from the scorer's denominator.
        reason: One line explaining the value (first violated rule, mismatch kind...).
        detail: Structured extras (e.g. per-mode trajectory matches).
    """

    name: str
    value: float | None
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Scorer(Protocol):
    """Scores one example from its trace. Must not raise for a bad trace: return value 0."""

    #: registry name, set by the ``@scorer`` decorator (never written in the class body); a class
    #: that names this protocol as its base (typed against it) inherits the empty default till then
    name: str = ""

    def score(self, example: Example, trace: Trace) -> Score:
        """Return the score of ``trace`` against ``example``."""
        ...


scorer: Registry[Scorer] = Registry("scorer", returns=Scorer, name_attr="name")
"""Decorator/registry: ``@scorer("ex") class ExecutionAccuracy: ...``."""


@dataclass
class ExampleResult:
    """Everything recorded for one example of one run.

    Attributes:
        example_id / dataset / split / intent / difficulty: Copied from the example.
        router / lm: Component names of the run.
        outcome: ``ok`` when the pipeline finished (even with a wrong answer), else how it ended.
        error_class / error: Why it failed, if it did.
        predicted_intent: Intent of the router's first decision.
        scores: ``scorer name -> Score``.
        latency_s: End-to-end wall time.
        node_latency_s: Seconds per graph node.
        router_usage / subagent_usage: LM cost, router apart from sub-agents.
        trace: The full trace (kept for the per-example table and disagreements).
        attempt: Run index when an example runs k > 1 times (pass^k), 0-based.
        conversation / turn / turns: The example's conversation id, its turn in it and the
            conversation's number of turns (None / 1 / 1 for a single request); per-conversation
            figures group results by them.
    """

    example_id: str
    dataset: str
    split: str
    intent: str
    difficulty: str | None
    router: str
    lm: str
    outcome: str
    error_class: str | None = None
    error: str | None = None
    predicted_intent: str | None = None
    scores: dict[str, Score] = field(default_factory=dict)
    latency_s: float = 0.0
    node_latency_s: dict[str, float] = field(default_factory=dict)
    router_usage: Usage = field(default_factory=Usage)
    subagent_usage: Usage = field(default_factory=Usage)
    trace: Trace | None = None
    attempt: int = 0
    conversation: str | None = None
    turn: int = 1
    turns: int = 1

    def value(self, scorer_name: str) -> float | None:
        """The value of one score, or None if absent or not applicable."""
        s = self.scores.get(scorer_name)
        return None if s is None else s.value

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (round-trips through :meth:`from_dict`)."""
        d = asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExampleResult:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["scores"] = {k: Score(**v) for k, v in d.get("scores", {}).items()}
        d["router_usage"] = Usage(**d.get("router_usage", {}))
        d["subagent_usage"] = Usage(**d.get("subagent_usage", {}))
        if d.get("trace") is not None:
            d["trace"] = Trace.from_dict(d["trace"])
        return cls(**d)
