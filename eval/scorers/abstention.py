"""Abstention: did the assistant decline the questions its database cannot answer, and only those?"""

from __future__ import annotations

from routerlab.agents.trace import Trace
from routerlab.benchmarks.example import Example
from routerlab.eval.risk import gold_class, response_of
from routerlab.eval.scoring import Score, Scorer, scorer

__all__ = ["Abstention"]


@scorer("abstain")
class Abstention(Scorer):
    """1 when an unanswerable question was abstained on, 0 when it got anything else.

    Not applicable (None) to other requests, so the rate is abstention recall; the detail records
    the response and gold class of every example, which ``routerlab.eval.risk`` turns into
    coverage, abstention precision and the penalty score.
    """

    def score(self, example: Example, trace: Trace) -> Score:
        """Abstention on an unanswerable question; None for other gold intents."""
        gold = gold_class(example.intent)
        response = response_of(trace)
        detail = {"response": response, "gold": gold}
        if gold != "unanswerable":
            return Score(self.name, None, f"not an unanswerable question ({response})", detail)
        if response == "abstain":
            return Score(self.name, 1.0, "abstained", detail)
        return Score(self.name, 0.0, f"did not abstain ({response})", detail)
