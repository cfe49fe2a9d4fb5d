"""What the user got in a conversation: the served rate and the asking account (docs/metrics.md §11).

Routing accuracy against a dataset's labels is not what a user gets: many CoSQL clarification
turns are an expert's "did you mean their names?" on a question a direct answer serves well,
and ``success`` counts such a turn answered directly, even correctly, as a failure. These
figures score the outcome instead:

* **served** (per turn): the turn got a correct answer, by asking or directly. A turn with gold
  SQL (``sql``, ``fix``, ``clarify``) is served when its ``ex`` is 1, whether the agent asked
  first or not; any other turn is served when its ``success`` is 1 (chat answered without data,
  a write refused, an unanswerable question declined).
* **the asking account**: asked when the example expected a question (of the ``clarify`` turns),
  asked when it did not (of the others), expected-clarify turns answered directly and correctly
  (served without asking), and the data questions sent away from SQL (``diverted``, §2.8).
* **asks per served turn**: the questions the agent asked the user over the turns, per turn
  served. Each question costs the user one exchange, needed or not: of two routers that serve as
  many turns, the one that asks less served them at less cost to the user.

Each router's served rate is tested against every other's, ``always_sql`` included, by the
comparison (:mod:`routerlab.eval.analysis.build`: one paired test per pair).

Built on :mod:`routerlab.eval.metrics` and :mod:`routerlab.eval.conversation_metrics`; neither
imports this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from routerlab.eval.conversation_metrics import conversation_summary
from routerlab.eval.rate import Rate, cluster_of
from routerlab.eval.robustness import Diversion, diversion_of_results
from routerlab.eval.scorers.execution import EX_INTENTS
from routerlab.eval.scorers.routing import asked
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import cluster_bootstrap_ratio_ci

__all__ = [
    "AskingAccount",
    "OutcomeSummary",
    "asked_back",
    "asks_of",
    "outcome_summary",
    "served",
]

_NONE = Rate(math.nan, 0, math.nan, math.nan)


def asked_back(result: ExampleResult) -> bool:
    """Whether the agent asked the user a question on this turn.

    From the trace when the result has one (the ``route`` scorer's test: an ``ask_human`` call or
    question); a result stored without its trace falls back to its first decision.
    """
    if result.trace is not None:
        return asked(result.trace)
    return result.predicted_intent == "clarify"


def asks_of(result: ExampleResult) -> int:
    """How many questions the agent asked the user on this turn (each an exchange the user paid).

    The ``ask_human`` calls of the trace: a turn that asked back and, after the user's reply,
    asked again counts 2. A question with no call recorded counts 1 (:func:`asked_back`).
    """
    calls = sum(1 for c in result.trace.tool_calls if c.get("name") == "ask_human") if result.trace else 0
    return max(calls, int(asked_back(result)))


def served(result: ExampleResult) -> float | None:
    """1 when the turn got a correct answer, by asking or directly; None when it cannot be told.

    A turn with gold SQL is served by a correct result (``ex`` 1) whether or not the agent asked
    first; any other turn by its ``success``. None when that score is absent or None (an invalid
    gold, a turn that never ran).
    """
    if not did_run(result):
        return None
    return result.value("ex") if result.intent in EX_INTENTS else result.value("success")


@dataclass(frozen=True)
class AskingAccount:
    """When a run asked back, and what came of the turns that expected it to.

    Attributes:
        clarify_turns: Turns whose example expected a question (gold ``clarify``).
        asked_expected: Of those, turns where the agent asked.
        answered_directly: Of those, turns answered without asking and correctly (served).
        other_turns: Turns whose example expected no question.
        asked_unexpected: Of those, turns where the agent asked anyway.
        diverted: Data questions (gold ``sql``) sent away from SQL (docs/metrics.md §2.8).
        asks: Questions asked over the scored turns, served or not (:func:`asks_of`).
        asks_per_served: ``asks`` over those turns per turn served, 95 % CI over conversations
            (``n``: the turns served; value NaN when none was).
    """

    clarify_turns: int
    asked_expected: int
    answered_directly: int
    other_turns: int
    asked_unexpected: int
    diverted: Diversion
    asks: int = 0
    asks_per_served: Rate = _NONE

    def metrics(self) -> dict[str, float]:
        """``asking.*`` counts and shares (a share only where its denominator is non-zero)."""
        out = {
            "asking.clarify_turns": float(self.clarify_turns),
            "asking.asked_expected": float(self.asked_expected),
            "asking.answered_directly": float(self.answered_directly),
            "asking.other_turns": float(self.other_turns),
            "asking.asked_unexpected": float(self.asked_unexpected),
            "asking.asks": float(self.asks),
        }
        out |= self.asks_per_served.metrics("asks_per_served", with_n=False)
        if self.clarify_turns:
            out["asking.asked_expected_rate"] = self.asked_expected / self.clarify_turns
            out["asking.answered_directly_rate"] = self.answered_directly / self.clarify_turns
        if self.other_turns:
            out["asking.asked_unexpected_rate"] = self.asked_unexpected / self.other_turns
        if self.diverted.n:
            out["asking.diverted"] = float(self.diverted.diverted)
            out["asking.diverted_rate"] = self.diverted.share
        return out


@dataclass(frozen=True)
class OutcomeSummary:
    """The outcome figures of one run over conversations.

    Attributes:
        served: Served rate over the turns (95 % CI over conversations).
        question_ex / interaction_ex: EX over every turn, and over complete conversations (§10).
        asking: The asking account.
    """

    served: Rate
    question_ex: Rate
    interaction_ex: Rate
    asking: AskingAccount

    def metrics(self) -> dict[str, float]:
        """Flat MLflow metrics: ``served`` (with ``_ci_low|_ci_high|_n``) and ``asking.*``."""
        return self.served.metrics("served") | self.asking.metrics()


def _per_served(asks: list[int], served_values: list[float], clusters: list[str]) -> Rate:
    """Questions asked per turn served, with its interval over conversations (none when nothing was served)."""
    n = int(sum(served_values))
    if not n:
        return _NONE
    low, high = cluster_bootstrap_ratio_ci(asks, served_values, clusters)
    return Rate(sum(asks) / n, n, low, high)


def outcome_summary(results: Sequence[ExampleResult]) -> OutcomeSummary | None:
    """The served rate and asking account of one run, or None when it has no end-to-end turn.

    None when no result is a conversation turn, or when no turn was scored end to end (neither
    ``ex`` nor ``success``: a ``route`` session's first decisions, whose asking figures are its
    recall table's).

    Args:
        results: One run's results; the turns that never ran are left out.
    """
    turns = [r for r in results if r.conversation and did_run(r)]
    conversation = [r for r in results if r.conversation]
    if not any(name in r.scores for r in conversation for name in ("ex", "success")):
        return None
    scored = [(v, cluster_of(r), asks_of(r)) for r in turns if (v := served(r)) is not None]
    clarify = [r for r in turns if r.intent == "clarify"]
    others = [r for r in turns if r.intent != "clarify"]
    account = AskingAccount(
        clarify_turns=len(clarify),
        asked_expected=sum(asked_back(r) for r in clarify),
        answered_directly=sum(not asked_back(r) and served(r) == 1.0 for r in clarify),
        other_turns=len(others),
        asked_unexpected=sum(asked_back(r) for r in others),
        diverted=diversion_of_results(turns),
        asks=sum(a for _, _, a in scored),
        asks_per_served=_per_served([a for _, _, a in scored], [v for v, _, _ in scored], [c for _, c, _ in scored]),
    )
    conversations = conversation_summary(turns, ("ex",))
    return OutcomeSummary(
        served=Rate.of([v for v, _, _ in scored], [c for _, c, _ in scored]),
        question_ex=conversations.per_question.get("ex", _NONE) if conversations else _NONE,
        interaction_ex=conversations.per_conversation.get("ex", _NONE) if conversations else _NONE,
        asking=account,
    )
