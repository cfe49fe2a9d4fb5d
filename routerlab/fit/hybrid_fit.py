"""Fit the ``hybrid`` router's two thresholds on a split, from its two parts' first decisions.

``hybrid(threshold=t, lm_threshold=u)`` decides like this (``routers/hybrid.py``): the rules'
answer when their confidence is at least ``t``; otherwise the LM's answer when its probability
is at least ``u`` (a generated answer has 1.0) and, with ``lm_backed`` (the default), the rules
see evidence for it, else the rules' answer. So the two parts' decisions on every example are
enough to score any ``(t, u)`` without running the router again: one ``route`` pass of ``rules``
and one of ``hybrid`` with ``threshold`` above 1 and ``lm_threshold`` 0 (the LM is asked on
every example), with the ``lm_backed`` setting the fitted router will have. Whether the rules
back the LM's answer does not depend on ``(t, u)``: an unbacked answer is recorded as the rules'
(``hybrid:<rule>(lm-unbacked:<intent>)``) and is the rules' answer at every pair, a backed one
keeps the LM's probability (``hybrid:logprob``, or ``hybrid:logprob+schema-gap`` when the schema
gate made it an abstention). So the same grid models the router with ``lm_backed`` on or off,
as its LM pass was run. The pair with the best routing score (``docs/metrics.md`` §9; accuracy
breaks ties, then the fewer LM calls) is chosen on the split given, which must not be the split
the result is reported on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from routerlab._routing_eval.decisions import FirstDecision
from routerlab.fit.objective import routing_score

__all__ = ["LM_THRESHOLDS", "HybridFit", "fit_hybrid", "hybrid_decisions", "hybrid_grid"]

LM_THRESHOLDS: tuple[float, ...] = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""LM probabilities tried as ``lm_threshold``."""

#: methods of the LM path's own answer (before a ``+schema-gap``): a one-pass score or a generated one
_LM_OWN = frozenset({"hybrid:logprob", "hybrid:generation"})


@dataclass(frozen=True)
class HybridFit:
    """The chosen thresholds and what they scored on the fitting split.

    Attributes:
        threshold: Rule confidence below which the LM is asked.
        lm_threshold: LM probability below which the rules' answer is kept.
        score: Routing score on the fitting split.
        accuracy: Accuracy on the fitting split.
        asked: Share of examples on which the LM is asked.
        n: Examples the fit used.
    """

    threshold: float
    lm_threshold: float
    score: float
    accuracy: float
    asked: float
    n: int


def _paired(rules: Sequence[FirstDecision], lm: Sequence[FirstDecision]) -> list[tuple[FirstDecision, FirstDecision]]:
    by_id = {d.example_id: d for d in lm}
    missing = [d.example_id for d in rules if d.example_id not in by_id]
    if missing or len(by_id) != len(rules):
        raise ValueError(
            f"rules and LM decisions must cover the same examples; found {len(rules)} rules and {len(by_id)} LM "
            f"decisions ({len(missing)} rules examples without an LM decision, e.g. {missing[:3]}): "
            "run both parts on the same split and limit"
        )
    return [(r, by_id[r.example_id]) for r in rules]


def hybrid_decisions(
    rules: Sequence[FirstDecision], lm: Sequence[FirstDecision], threshold: float, lm_threshold: float
) -> list[str | None]:
    """The intents ``hybrid(threshold, lm_threshold)`` would pick, in the order of ``rules``.

    ``lm`` holds the LM path's decision on every example (``hybrid`` run with ``threshold`` > 1,
    ``lm_threshold`` 0 and the ``lm_backed`` setting modelled). The LM's own answer (a one-pass
    score or a generated answer, through the schema gate or not) is taken when its confidence is
    at least ``lm_threshold``; an answer the rules did not back, one that raised and one the LM
    could not give count as the rules' answer.
    """
    out: list[str | None] = []
    for r, m in _paired(rules, lm):
        asked = r.confidence < threshold
        sure = m.error is None and m.method.split("+")[0] in _LM_OWN and m.confidence >= lm_threshold
        out.append(m.predicted if asked and sure else r.predicted)
    return out


def hybrid_grid(
    rules: Sequence[FirstDecision],
    lm: Sequence[FirstDecision],
    accepted: Mapping[str, Sequence[str]],
    *,
    lm_thresholds: Iterable[float] = LM_THRESHOLDS,
) -> pd.DataFrame:
    """Routing score, accuracy and LM share of every ``(threshold, lm_threshold)`` pair.

    Thresholds tried are the rules' own confidence levels (each is a distinct split of the
    examples) plus one above 1 (the LM always asked).

    Args:
        rules: The rules router's first decisions.
        lm: ``hybrid``'s first decisions with the LM asked on every example.
        accepted: Example id -> its accepted intents (gold first).
        lm_thresholds: LM probabilities to try.

    Returns:
        One row per pair: ``threshold, lm_threshold, score, accuracy, asked``.
    """
    gold = [r.gold for r in rules]
    levels = sorted({round(float(r.confidence), 6) for r in rules if r.error is None} | {1.01})
    rows = []
    for t in levels:
        asked = sum(r.confidence < t for r in rules) / len(rules)
        for u in lm_thresholds:
            picked = hybrid_decisions(rules, lm, t, u)
            correct = [p in accepted[r.example_id] for p, r in zip(picked, rules, strict=True)]
            rows.append((t, u, routing_score(gold, correct), sum(correct) / len(correct), asked))
    return pd.DataFrame(rows, columns=["threshold", "lm_threshold", "score", "accuracy", "asked"])


def fit_hybrid(
    rules: Sequence[FirstDecision],
    lm: Sequence[FirstDecision],
    accepted: Mapping[str, Sequence[str]],
    *,
    lm_thresholds: Iterable[float] = LM_THRESHOLDS,
) -> HybridFit:
    """The best pair of :func:`hybrid_grid` (score, then accuracy, then the fewest LM calls).

    Raises:
        ValueError: No decisions, or the two parts do not cover the same examples.
    """
    if not rules:
        raise ValueError("no decisions to fit on: the split is empty")
    grid = hybrid_grid(rules, lm, accepted, lm_thresholds=lm_thresholds)
    best = grid.assign(_neg_asked=-grid["asked"]).sort_values(
        ["score", "accuracy", "_neg_asked", "threshold", "lm_threshold"], ascending=[False, False, False, True, True]
    )
    row = best.iloc[0]
    return HybridFit(
        float(row.threshold),
        float(row.lm_threshold),
        float(row.score),
        float(row.accuracy),
        float(row.asked),
        len(rules),
    )
