"""The routing objective the ``dspy`` router's optimizers maximise (``docs/metrics.md`` §9).

Plain first-decision accuracy is dominated by data questions (more than half of a split), so an
optimizer that maximises it can ignore the rare intents that matter most to a user: asking when
a request is ambiguous (``clarify``) and refusing what must not be served (``refuse``). The
objective is half accuracy, half a recall averaged over intents in which ``clarify`` and
``refuse`` count ``safety`` times as much as the others:

    routing score = 1/2 * accuracy + 1/2 * sum_k m_k * recall_k / sum_k m_k

over the intents k present in the scored set, ``m_k = safety`` for clarify and refuse, 1 else.

DSPy optimizers average a per-example metric, so :class:`RoutingObjective` turns the score into
per-example weights of the gold intent, computed from the split the optimizer is given:
``w_k = 1/2 / N + 1/2 * m_k / (n_k * M)`` (``n_k`` examples of intent k out of ``N``,
``M = sum_k m_k``), divided by the largest weight so every example scores in [0, 1]. On a set
with the same intent mix the metric's mean is then the routing score times a constant, so both
rank programs alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SAFETY_INTENTS", "RoutingObjective", "intent_correct", "intent_weights", "routing_score"]

SAFETY_INTENTS: tuple[str, ...] = ("clarify", "refuse")
"""Intents whose recall counts ``safety`` times as much in the balanced half of the score."""


def _multiplier(intent: str, safety: float) -> float:
    return safety if intent in SAFETY_INTENTS else 1.0


def intent_weights(gold: Sequence[str], *, safety: float = 2.0) -> dict[str, float]:
    """Gold intent -> ``N * w_k`` (module docstring): the routing score is the mean of the right examples' weights."""
    counts = Counter(gold)
    total_m = sum(_multiplier(k, safety) for k in counts)
    return {k: 0.5 + 0.5 * len(gold) * _multiplier(k, safety) / (c * total_m) for k, c in counts.items()}


def routing_score(gold: Sequence[str], correct: Sequence[bool], *, safety: float = 2.0) -> float:
    """Half accuracy, half the safety-weighted mean recall per gold intent (module docstring).

    Args:
        gold: Each example's gold intent.
        correct: Whether each example's predicted intent was accepted.
        safety: Weight of clarify and refuse recall relative to the other intents.

    Returns:
        The score in [0, 1]; NaN for an empty set.

    Raises:
        ValueError: ``gold`` and ``correct`` differ in length, or ``safety`` is not positive.
    """
    if len(gold) != len(correct):
        raise ValueError(f"gold ({len(gold)}) and correct ({len(correct)}) must have the same length")
    if safety <= 0:
        raise ValueError(f"safety must be positive, got {safety}")
    if not gold:
        return float("nan")
    accuracy = sum(correct) / len(gold)
    hits: Counter[str] = Counter()
    counts = Counter(gold)
    for g, c in zip(gold, correct, strict=True):
        hits[g] += bool(c)
    total_m = sum(_multiplier(k, safety) for k in counts)
    balanced = sum(_multiplier(k, safety) * hits[k] / n for k, n in counts.items()) / total_m
    return 0.5 * accuracy + 0.5 * balanced


def intent_correct(gold: Any, pred: Any) -> bool:
    """Whether ``pred.intent`` is the gold intent or one of its accepted alternates."""
    accepted = getattr(gold, "accepted", None) or [gold.intent]
    return str(getattr(pred, "intent", "")).strip() in accepted


@dataclass(frozen=True)
class RoutingObjective:
    """Per-example form of :func:`routing_score`, as a DSPy metric.

    Attributes:
        weights: Gold intent -> weight in (0, 1]; an intent not in the map weighs as the
            smallest known weight (it was absent from the split the weights came from).
        safety: The clarify / refuse multiplier the weights were built with.
    """

    weights: Mapping[str, float] = field(default_factory=dict)
    safety: float = 2.0

    @classmethod
    def from_intents(cls, intents: Sequence[str], *, safety: float = 2.0) -> RoutingObjective:
        """The weights of a split whose gold intents are ``intents`` (see the module docstring).

        Raises:
            ValueError: ``intents`` is empty or ``safety`` is not positive.
        """
        if not intents:
            raise ValueError("the objective needs a non-empty split to weigh its intents")
        if safety <= 0:
            raise ValueError(f"safety must be positive, got {safety}")
        raw = intent_weights(intents, safety=safety)
        top = max(raw.values())
        return cls({k: v / top for k, v in sorted(raw.items())}, safety)

    def weight(self, intent: str) -> float:
        """The weight of an example whose gold intent is ``intent``."""
        return self.weights.get(intent, min(self.weights.values(), default=1.0))

    def __call__(
        self, gold: Any, pred: Any, trace: Any = None, pred_name: str | None = None, pred_trace: Any = None
    ) -> Any:
        """The example's weight when its prediction is accepted, else 0.

        DSPy optimizers call ``metric(gold, pred, trace)``; GEPA also passes ``pred_name`` when it
        asks for feedback on one predictor, and then gets the same score with a sentence saying
        what the right intent was.
        """
        ok = intent_correct(gold, pred)
        score = self.weight(gold.intent) if ok else 0.0
        if pred_name is None:
            return score
        import dspy

        said = str(getattr(pred, "intent", "")).strip() or "nothing parsable"
        feedback = (
            f"Correct: the request's intent is {gold.intent}."
            if ok
            else f"Wrong: the program said {said}, but the request's intent is {gold.intent}"
            + (
                f" (also accepted: {', '.join(a for a in gold.accepted if a != gold.intent)})."
                if len(gold.accepted) > 1
                else "."
            )
        )
        return dspy.Prediction(score=score, feedback=feedback)
