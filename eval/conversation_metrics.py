"""Multi-turn figures: question-level and interaction-level rates, per turn (docs/metrics.md §10).

A conversation's turns are scored one by one like any example; these figures group them, as
SParC and CoSQL report them:

* **question-level** (``question.<scorer>``): the rate over every turn of every conversation;
* **interaction-level** (``conversation.<scorer>``): a conversation (one attempt of it) counts
  when every one of its turns ran; its value is 1 when every turn scored 1, 0 when any turn
  scored less, and it is left out when a turn's score is None (an invalid gold, a scorer that
  does not apply);
* **per turn** (``turn.<k>.<scorer>``, k = 1, 2, 3 and ``4+``): the question-level rate over the
  turns at that position.

Every interval resamples conversations whole (:func:`routerlab.eval.stats.cluster_bootstrap_ci`):
turns of one conversation are not independent, and attempts of one conversation neither.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from routerlab.eval.rate import Rate, rate
from routerlab.eval.scoring import ExampleResult, did_run

__all__ = [
    "CONVERSATION_SCORERS",
    "TURN_BUCKETS",
    "ConversationSummary",
    "conversation_summary",
    "turn_bucket",
]

#: scorers summarised per turn and per conversation
CONVERSATION_SCORERS: tuple[str, ...] = ("ex", "success")

#: the turn positions reported apart (SParC / CoSQL report turns 1, 2, 3 and 4 or later)
TURN_BUCKETS: tuple[str, ...] = ("1", "2", "3", "4+")

#: a bucket's spelling in MLflow metric keys (``+`` is not a key character there)
_BUCKET_KEY = {"4+": "4plus"}


def turn_bucket(turn: int) -> str:
    """The reported position of a turn: ``1``, ``2``, ``3`` or ``4+``."""
    return TURN_BUCKETS[min(turn, len(TURN_BUCKETS)) - 1]


@dataclass
class ConversationSummary:
    """Question-level, interaction-level and per-turn rates of one run.

    Attributes:
        per_question: ``scorer -> Rate`` over every turn of every conversation.
        per_turn: ``bucket -> scorer -> Rate`` over the turns at that position (``1`` .. ``4+``).
        per_conversation: ``scorer -> Rate`` over complete conversations (interaction level).
        conversations: Complete conversations (attempts counted apart).
        incomplete: Conversations left out because a turn has no result or did not run.
    """

    per_question: dict[str, Rate] = field(default_factory=dict)
    per_turn: dict[str, dict[str, Rate]] = field(default_factory=dict)
    per_conversation: dict[str, Rate] = field(default_factory=dict)
    conversations: int = 0
    incomplete: int = 0

    def metrics(self) -> dict[str, float]:
        """Flat MLflow metrics: ``question.*``, ``conversation.*`` (with ``_ci_low|_ci_high|_n``), ``turn.<k>.*``."""
        out: dict[str, float] = {"conversation.n": float(self.conversations)}
        for prefix, rates in (("question", self.per_question), ("conversation", self.per_conversation)):
            for name, r in rates.items():
                out |= r.metrics(f"{prefix}.{name}")
        for k, rates in self.per_turn.items():
            for name, r in rates.items():
                out |= r.metrics(f"turn.{_BUCKET_KEY.get(k, k)}.{name}")
        return out


def _all_of(values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return 1.0 if all(v >= 1 - 1e-9 for v in values) else 0.0  # type: ignore[operator]


def conversation_summary(
    results: Sequence[ExampleResult], scorers: Sequence[str] = CONVERSATION_SCORERS
) -> ConversationSummary | None:
    """The multi-turn figures of one run's results, or None when none of them applies.

    None when no result belongs to a conversation, or when no turn carries any of ``scorers``:
    a ``route`` session's turns hold first decisions only, and a table of n/a would read as a run
    that produced nothing.

    Args:
        results: One run's results (any mix of single requests and turns).
        scorers: Scorers to summarise.
    """
    turns = [r for r in results if r.conversation]
    if not turns or not any(name in r.scores for r in turns for name in scorers):
        return None
    ran = [r for r in turns if did_run(r)]
    by_turn: dict[str, list[ExampleResult]] = defaultdict(list)
    for r in ran:
        by_turn[turn_bucket(r.turn)].append(r)
    groups: dict[tuple[str, int], list[ExampleResult]] = defaultdict(list)
    for r in turns:
        groups[(str(r.conversation), r.attempt)].append(r)
    complete = {
        key: g
        for key, g in groups.items()
        if sorted(x.turn for x in g) == list(range(1, g[0].turns + 1)) and all(did_run(x) for x in g)
    }
    per_conversation = {}
    for name in scorers:
        scored = [
            (v, conv) for (conv, _), g in complete.items() if (v := _all_of([x.value(name) for x in g])) is not None
        ]
        per_conversation[name] = Rate.of([v for v, _ in scored], [c for _, c in scored])
    return ConversationSummary(
        per_question={name: rate(ran, name) for name in scorers},
        per_turn={k: {name: rate(by_turn[k], name) for name in scorers} for k in TURN_BUCKETS if by_turn[k]},
        per_conversation=per_conversation,
        conversations=len(complete),
        incomplete=len(groups) - len(complete),
    )
