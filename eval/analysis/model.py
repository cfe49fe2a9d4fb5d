"""The one model of a session's comparison: every number any view shows, typed and serialisable.

:func:`routerlab.eval.analysis.build.build_comparison` fills it from the results store; the
console, the report, MLflow, CSV/Parquet and the Python API only render it. It holds no NaN
(a figure that does not exist is absent or None) and round-trips through JSON
(:meth:`SessionComparison.to_json` / :meth:`SessionComparison.from_json`).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "Cost",
    "Decision",
    "Disagreement",
    "Failure",
    "Interval",
    "PairTest",
    "Part",
    "RouterFigures",
    "SessionComparison",
    "Verdict",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Interval:
    """A rate with its 95 % bootstrap interval.

    Attributes:
        value / low / high: The rate and its interval.
        n: Examples it is over.
        count: Examples that count (``value * n`` for a 0/1 rate: right, or diverted).
        empty: Of the matches counted, those of two empty results (EX's empty-equals-empty,
            docs/metrics.md §2.1): shown apart, so a rate resting on them is visible.
    """

    value: float
    low: float
    high: float
    n: int
    count: int = 0
    empty: int = 0

    @property
    def degenerate(self) -> bool:
        """Every outcome was the same: the bootstrap interval has no width."""
        return self.low == self.high


@dataclass(frozen=True)
class Cost:
    """What one router cost per example, as medians and tails (never a mean that depends on run order).

    Attributes:
        unit: ``ms per decision`` (routing) or ``s per request`` (end to end, cold).
        p50 / p95: The median and 95th percentile of the per-example latency in ``unit``; end to
            end at cold cost (each LM call as it cost when first computed).
        lm_calls: The router's and sub-agents' LM calls per example (cache hits included).
        router_lm: What the router's own LM calls took per example, in ``unit``'s time (ms per
            decision, s per request), at cold cost.
        tokens: Prompt and completion tokens per example, router and sub-agents, at cold cost.
    """

    unit: str
    p50: float
    p95: float
    lm_calls: float
    router_lm: float
    tokens: float


@dataclass(frozen=True)
class Failure:
    """One example a router got wrong on its part's verdict measure.

    Attributes:
        example_id: The example (``#attempt`` when repeated).
        intent: Its gold intent.
        decision: The intent the router decided (None: no decision, a crash).
        method / confidence: How the router decided and how sure it was.
        question: The request's text.
        reason: The score's one-line reason (or the error class).
    """

    example_id: str
    intent: str
    decision: str | None
    method: str
    confidence: float | None
    question: str
    reason: str


@dataclass(frozen=True)
class RouterFigures:
    """One router's figures in one part.

    Attributes:
        router: Its display name (the registry name; with the run id when a part runs it twice).
        run_id: The stored run.
        baseline: A reference (always SQL, one plain call, perfect or random routing), never chosen.
        same_as: The router whose decisions and scores this one repeats example for example in
            this part: shown once (``= always_sql``), never tested.
        status: The run's status (``FINISHED``; anything else means partial figures).
        n: Results that ran; ``not_run``: stored examples that never started.
        rates: ``measure key -> rate``, the part's measures only.
        per_intent: ``gold intent -> rate`` of the part's verdict measure.
        confusion: ``gold intent -> decided intent -> count`` (``none``: no decision).
        cost: Latency and LM use.
        failures: Every example it got wrong on the verdict measure.
        figures: Further figures where they apply, flat as MLflow logs them: the confidence
            calibration (``calibration.ece``, §3.5); end to end, answer or abstain (``risk.*``,
            §8), the conversation figures (``question.ex``, ``conversation.ex``: interaction EX,
            ``turn.<k>.ex``, with ``_ci_low|_ci_high|_n``; §10), the asking account
            (``asking.*``, §11), with repeated attempts ``pass_hat_k`` / ``pass_at_k`` (§4.4) and
            the examples whose gold SQL cannot run (``gold_failed``, §2.1).
    """

    router: str
    run_id: str
    baseline: bool
    same_as: str | None
    status: str
    n: int
    not_run: int
    rates: dict[str, Interval]
    per_intent: dict[str, Interval]
    confusion: dict[str, dict[str, int]]
    cost: Cost
    failures: list[Failure] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PairTest:
    """One paired test between two routers on one measure (``a`` minus ``b``).

    Attributes:
        measure: The measure key.
        a / b: The routers (``a`` the one with the higher rate).
        n: Examples both have a value for.
        rate_a / rate_b: Their rates over those ``n``.
        diff / low / high: ``rate_a - rate_b`` and its 95 % paired-bootstrap interval.
        test: The deciding test's name (``McNemar``; ``sign-flip`` for turns of conversations).
        p: Its two-sided p-value.
        a_only / b_only: Examples only ``a`` got right, only ``b``.
        mdd: The smallest difference this ``n`` detects (80 % power, 5 % level, paired).
        significant: ``p`` < 0.05.
    """

    measure: str
    a: str
    b: str
    n: int
    rate_a: float
    rate_b: float
    diff: float
    low: float
    high: float
    test: str
    p: float
    a_only: int
    b_only: int
    mdd: float
    significant: bool


@dataclass(frozen=True)
class Verdict:
    """The verdict of one part on one measure.

    Attributes:
        measure: The measure key.
        n: Examples the best router was scored on.
        smoke: Too few to compare (this ``n`` detects only differences of 0.5 or more).
        best: The best candidate (baselines never are); ties go to the cheaper.
        value / low / high: Its rate and interval.
        better_than: ``router -> p`` of the routers it beats significantly.
        not_told_apart: ``router -> p`` of those this sample cannot tell from it.
        mdd: The smallest difference from the best this sample detects.
        cheapest: The cheapest candidate (by median cost) whose rate lies in the best's interval.
        references: Baselines' rates, for reference.
    """

    measure: str
    n: int
    smoke: bool
    best: str
    value: float
    low: float
    high: float
    better_than: dict[str, float]
    not_told_apart: dict[str, float]
    mdd: float
    cheapest: str
    references: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """One router's decision on one example, with its reason."""

    intent: str | None
    method: str
    confidence: float | None
    correct: bool


@dataclass(frozen=True)
class Disagreement:
    """An example on which the candidate routers of one part decided differently.

    Attributes:
        example_id / intent / question: The example, its gold intent and text.
        decisions: ``router -> decision`` (every candidate router of the part).
    """

    example_id: str
    intent: str
    question: str
    decisions: dict[str, Decision]


@dataclass(frozen=True)
class Part:
    """One part of a session.

    Attributes:
        key: ``routing`` (first decisions) or ``end_to_end`` (whole turns).
        unit: What one example is (``first decisions``, ``whole turns``).
        measures: The measure keys that apply to this part, verdict measures first.
        verdict_measures: The measures the verdict judges (the first is the part's headline).
        routers: Each router's figures, best first on the headline measure (the order does not
            depend on which router ran first).
        pairs: One paired test per pair of distinct candidate routers and verdict measure.
        verdicts: The verdict per verdict measure.
        disagreements: Examples the candidate routers decided differently.
    """

    key: str
    unit: str
    measures: list[str]
    verdict_measures: list[str]
    routers: list[RouterFigures]
    pairs: list[PairTest]
    verdicts: list[Verdict]
    disagreements: list[Disagreement]

    def router(self, name: str) -> RouterFigures:
        """The figures of ``name`` in this part (KeyError when it did not run here)."""
        for r in self.routers:
            if r.router == name:
                return r
        raise KeyError(name)

    @property
    def smoke(self) -> bool:
        """Too few examples to tell routers apart (every verdict is a smoke check)."""
        return bool(self.verdicts) and all(v.smoke for v in self.verdicts)


@dataclass(frozen=True)
class SessionComparison:
    """Everything any view shows about one session (or a selection of stored runs).

    Attributes:
        session: The session id.
        dataset / split / lm: What it ran on.
        parts: Its parts, routing first.
        notes: One line per run that did not finish.
    """

    session: str
    dataset: str
    split: str
    lm: str
    parts: list[Part]
    notes: list[str] = field(default_factory=list)

    def part(self, key: str) -> Part:
        """The part ``key`` (``routing`` or ``end_to_end``); KeyError when the session has none."""
        for p in self.parts:
            if p.key == key:
                return p
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (:meth:`from_dict` rebuilds the same object)."""
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        """The model as JSON text."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionComparison:
        """Inverse of :meth:`to_dict`."""
        return _build(cls, data)

    @classmethod
    def from_json(cls, text: str) -> SessionComparison:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))


def _build(kind: Any, value: Any) -> Any:
    """``value`` (plain JSON data) as an instance of the type ``kind``."""
    origin = typing.get_origin(kind)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: _build(hints[f.name], value[f.name]) for f in dataclasses.fields(kind) if f.init})
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return _build(inner[0], value)
    if origin is list:
        (item,) = typing.get_args(kind)
        return [_build(item, v) for v in value]
    if origin is dict:
        _, item = typing.get_args(kind)
        return {k: _build(item, v) for k, v in value.items()}
    if kind is float:
        return float(value)
    return value
