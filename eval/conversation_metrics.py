"""Multi-turn figures: every scorer per turn, and per conversation (docs/metrics.md §10).

A conversation's turns are scored one by one like any example; these figures group them. Per
turn *k*: the rate of a scorer over the results of turn *k*. Per conversation: a conversation
(one attempt of it) counts when every one of its turns ran; its value for a scorer is 1 when
every turn scored 1, 0 when any turn scored less, and it is left out when a turn's score is
None (an invalid gold, a scorer that does not apply).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from routerlab.eval.metrics import Rate, rate
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import bootstrap_ci
from routerlab.eval.tables import captioned_table

__all__ = ["CONVERSATION_SCORERS", "ConversationSummary", "conversation_summary", "render_conversations"]

#: scorers summarised per turn and per conversation
CONVERSATION_SCORERS: tuple[str, ...] = ("ex", "success")


@dataclass
class ConversationSummary:
    """Per-turn and per-conversation rates of one run.

    Attributes:
        per_turn: ``turn -> scorer -> Rate`` over the results of that turn.
        per_conversation: ``scorer -> Rate`` over complete conversations.
        conversations: Complete conversations (attempts counted apart).
        incomplete: Conversations left out because a turn has no result or did not run.
    """

    per_turn: dict[int, dict[str, Rate]] = field(default_factory=dict)
    per_conversation: dict[str, Rate] = field(default_factory=dict)
    conversations: int = 0
    incomplete: int = 0

    def metrics(self) -> dict[str, float]:
        """Flat MLflow metrics: ``conversation.<scorer>[_ci_low|_ci_high|_n]``, ``turn.<k>.<scorer>``."""
        out: dict[str, float] = {"conversation.n": float(self.conversations)}
        for name, r in self.per_conversation.items():
            if r.n:
                out |= {
                    f"conversation.{name}": r.value,
                    f"conversation.{name}_ci_low": r.ci_low,
                    f"conversation.{name}_ci_high": r.ci_high,
                    f"conversation.{name}_n": float(r.n),
                }
        for k, rates in self.per_turn.items():
            for name, r in rates.items():
                if r.n:
                    out[f"turn.{k}.{name}"] = r.value
        return out


def _all_of(values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return 1.0 if all(v >= 1 - 1e-9 for v in values) else 0.0  # type: ignore[operator]


def _rate_of(values: list[float]) -> Rate:
    if not values:
        return Rate(math.nan, 0, math.nan, math.nan)
    low, high = bootstrap_ci(values)
    return Rate(float(np.mean(values)), len(values), low, high)


def conversation_summary(
    results: Sequence[ExampleResult], scorers: Sequence[str] = CONVERSATION_SCORERS
) -> ConversationSummary | None:
    """The multi-turn figures of one run's results, or None when no result belongs to a conversation.

    Args:
        results: One run's results (any mix of single requests and turns).
        scorers: Scorers to summarise.
    """
    turns = [r for r in results if r.conversation]
    if not turns:
        return None
    by_turn: dict[int, list[ExampleResult]] = defaultdict(list)
    for r in turns:
        if did_run(r):
            by_turn[r.turn].append(r)
    groups: dict[tuple[str, int], list[ExampleResult]] = defaultdict(list)
    for r in turns:
        groups[(str(r.conversation), r.attempt)].append(r)
    complete = [
        g
        for g in groups.values()
        if sorted(x.turn for x in g) == list(range(1, g[0].turns + 1)) and all(did_run(x) for x in g)
    ]
    per_conversation = {}
    for name in scorers:
        values = [v for g in complete if (v := _all_of([x.value(name) for x in g])) is not None]
        per_conversation[name] = _rate_of(values)
    return ConversationSummary(
        per_turn={k: {name: rate(by_turn[k], name) for name in scorers} for k in sorted(by_turn)},
        per_conversation=per_conversation,
        conversations=len(complete),
        incomplete=len(groups) - len(complete),
    )


def render_conversations(
    labels: dict[str, str], summaries: dict[str, ConversationSummary | None], fmt: str = "table"
) -> str:
    """The multi-turn table, one row per run (``""`` when no run has conversations).

    Args:
        labels: ``run_id -> router label``, in display order.
        summaries: ``run_id -> ConversationSummary`` (None for a run without conversations).
        fmt: ``table`` (plain text) or ``markdown``.
    """
    runs = [r for r in labels if summaries.get(r) is not None]
    if not runs:
        return ""
    turn_ids = sorted({k for r in runs for k in summaries[r].per_turn})  # type: ignore[union-attr]
    header = ["router", "conversations", *(f"conv {s}" for s in CONVERSATION_SCORERS)]
    header += [f"turn {k} {s}" for k in turn_ids for s in CONVERSATION_SCORERS]
    body = []
    for r in runs:
        s = summaries[r]
        assert s is not None
        row = [labels[r], f"{s.conversations}" + (f" (+{s.incomplete} incomplete)" if s.incomplete else "")]
        row += [s.per_conversation[n].fmt() for n in CONVERSATION_SCORERS]
        row += [s.per_turn.get(k, {}).get(n, Rate(math.nan, 0, math.nan, math.nan)).fmt()
                for k in turn_ids for n in CONVERSATION_SCORERS]  # fmt: skip
        body.append(row)
    note = (
        "Conversations (every turn scored; a conversation succeeds when all its turns do; "
        "95 % bootstrap CIs; docs/metrics.md §10)."
    )
    return captioned_table(header, body, note, fmt)
