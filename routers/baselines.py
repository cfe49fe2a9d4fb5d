"""Baselines every comparison is read against: ``oracle`` (upper bound) and ``random`` (lower)."""

from __future__ import annotations

import hashlib
import random as _random

from routerlab.agents.state import INTENTS, PipelineState, is_intent
from routerlab.agents.trace import Usage
from routerlab.routers.base import router
from routerlab.routers.support.intent import Classification, IntentRouter

__all__ = ["OracleRouter", "RandomRouter"]


@router("oracle")
class OracleRouter(IntentRouter):
    """Routes by the example's gold intent (benchmarks set ``oracle_intent``); a baseline.

    Outside a benchmark there is no label and it falls back to ``sql`` with confidence 0. A
    gold ``clarify`` asks back at every turn position: the label says the turn needed a
    question, so an earlier data turn does not turn it into a follow-up.
    """

    follow_up_settles_clarify = False
    reads_replies = False

    def classify(self, state: PipelineState) -> Classification:
        """The gold label."""
        gold = state.get("oracle_intent")
        if is_intent(gold):
            return Classification(gold, 1.0, "oracle:label", Usage())
        return Classification("sql", 0.0, "oracle:no-label", Usage())


@router("random")
class RandomRouter(IntentRouter):
    """Picks an intent uniformly at random, seeded per request (deterministic); a baseline.

    Args:
        seed: Seed mixed with the question text.
        fix_budget: fix_sql calls a failed execution may trigger.
    """

    def __init__(self, seed: int = 0, fix_budget: int = 1) -> None:
        super().__init__(fix_budget=fix_budget)
        self.seed = seed

    #: a chance baseline: a reply is routed as randomly as any other turn
    reads_replies = False

    def classify(self, state: PipelineState) -> Classification:
        """A seeded uniform draw over the intents."""
        key = hashlib.sha256(f"{self.seed}|{state.get('question', '')}".encode()).digest()
        rng = _random.Random(int.from_bytes(key[:8], "big"))
        return Classification(rng.choice(INTENTS), 1.0 / len(INTENTS), "random", Usage())
