"""The routing score (docs/metrics.md §9), case by case, and its per-example form."""

from __future__ import annotations

import math

import dspy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routerlab.agents.state import INTENTS
from routerlab.fit.objective import RoutingObjective, intent_correct, routing_score


def _ex(intent: str, accepted: tuple[str, ...] = ()) -> dspy.Example:
    return dspy.Example(request="r", intent=intent, accepted=[intent, *accepted]).with_inputs("request")


def test_the_documented_example():
    # 2 sql right, 1 clarify wrong, 1 chat right: accuracy 0.75, weighted recall (1 + 0 + 1) / (1 + 2 + 1)
    assert routing_score(["sql", "sql", "clarify", "chat"], [True, True, False, True]) == pytest.approx(0.625)


def test_cases():
    assert routing_score(["sql"] * 3, [True] * 3) == 1.0
    assert routing_score(["refuse", "sql"], [False, False]) == 0.0
    assert math.isnan(routing_score([], []))
    # a refuse miss costs more than a chat miss on the same set
    gold = ["sql", "sql", "refuse", "chat"]
    assert routing_score(gold, [True, True, False, True]) < routing_score(gold, [True, True, True, False])
    # safety=1 is half accuracy, half plain balanced recall
    assert routing_score(gold, [True, True, False, True], safety=1) == pytest.approx(0.5 * 0.75 + 0.5 * (2 / 3))
    with pytest.raises(ValueError, match="same length"):
        routing_score(["sql"], [])
    with pytest.raises(ValueError, match="positive"):
        routing_score(["sql"], [True], safety=0)


def test_weights_favour_rare_and_safety_intents_and_top_out_at_one():
    obj = RoutingObjective.from_intents(["sql"] * 6 + ["chat"] * 2 + ["clarify"] * 2)
    assert max(obj.weights.values()) == 1.0 == obj.weights["clarify"]
    assert obj.weights["sql"] < obj.weights["chat"] < obj.weights["clarify"]
    assert obj.weight("refuse") == obj.weights["sql"]  # unseen intent: the smallest weight
    with pytest.raises(ValueError, match="non-empty"):
        RoutingObjective.from_intents([])


def test_metric_accepts_alternates_and_gives_gepa_feedback():
    obj = RoutingObjective.from_intents(["sql", "chat", "explain"])
    gold = _ex("chat", ("explain",))
    assert intent_correct(gold, dspy.Prediction(intent="explain"))
    assert obj(gold, dspy.Prediction(intent="explain")) == obj.weight("chat")
    assert obj(gold, dspy.Prediction(intent="sql")) == 0.0
    fb = obj(gold, dspy.Prediction(intent="sql"), None, "route", None)
    assert fb.score == 0.0 and "intent is chat" in fb.feedback and "explain" in fb.feedback


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(INTENTS), st.booleans()), min_size=1, max_size=40))
def test_metric_mean_is_proportional_to_the_routing_score_on_the_same_mix(rows):
    gold = [g for g, _ in rows]
    correct = [c for _, c in rows]
    obj = RoutingObjective.from_intents(gold)
    mean = sum(obj.weight(g) * c for g, c in rows) / len(rows)
    n = len(rows)
    raw_top = max(
        0.5 / n + 0.5 * (2.0 if k in ("clarify", "refuse") else 1.0) / (gold.count(k) * _m(gold)) for k in set(gold)
    )
    assert mean * n * raw_top == pytest.approx(routing_score(gold, correct), abs=1e-9)


def _m(gold: list[str]) -> float:
    return sum(2.0 if k in ("clarify", "refuse") else 1.0 for k in set(gold))
