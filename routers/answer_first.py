"""The ``answer_first`` router: draft the SQL, then decide on what the attempt showed (issue 49).

Word rules misread how people write: "could you update that list so it shows their ages?" is
refused as a write, a word the schema does not use is declined as unanswerable. This router
reads words only to set aside what is plainly not a data request (SQL to explain or fix,
greetings and small talk, and the security refusals: injected instructions, secrets, files and
settings), exactly as ``rules`` does. Everything else is drafted through the canonical SQL plan
(discovery, generation, repair, execution) and decided on the evidence
(:mod:`routerlab.routers.support.attempt`):

* the SQL sub-agent declined (``sql_may_decline``, switched on by this router): ``abstain``;
* the guard refused the drafted statement as a write: ``refuse``;
* the draft does not run after the plan's repairs: ``abstain``;
* otherwise the executed result is the answer.

The router calls no LM itself; a decision's cost is the pipeline's own calls (the draft's
sub-agent calls, counted as sub-agent usage, and in the decision's ``evidence``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from routerlab.agents.plan import REFUSAL_REASON, call_id, next_call
from routerlab.agents.routing import PlannedCall, RouteDecision, RouterEnv
from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.trace import Usage
from routerlab.routers.base import router
from routerlab.routers.rules import RulesRouter
from routerlab.routers.support.attempt import Attempt, read_attempt
from routerlab.routers.support.intent import DONE_ANSWER, Classification, IntentRouter
from routerlab.routers.support.reply import Reply, as_reply, read_reply

__all__ = ["AnswerFirstRouter"]

#: intents the rules decide without a draft: requests about quoted SQL and turns for no database
_NOT_DATA = frozenset({"explain", "fix", "chat"})

#: refusals that are not about changing stored data (an attack on the assistant, a request for
#: secrets, files or settings): a draft would prove nothing about them, so the rules' word stands
_SECURITY_RULES = frozenset({"prompt_injection", "secrets", "outside_sql", "outside_request"})

#: the intent and method of each conclusive verdict of a draft
_VERDICTS: dict[str, tuple[Intent, str]] = {
    "declined": ("unanswerable", "answer_first:declined"),
    "write": ("refuse", "answer_first:write"),
    "failed": ("unanswerable", "answer_first:did-not-run"),
}


@router("answer_first")
class AnswerFirstRouter(IntentRouter):
    """Rules for what is not a data request; for the rest, the SQL is drafted and its outcome decides.

    Args:
        fix_budget: fix_sql calls a failed execution may trigger before the draft counts as
            not running.
        decline: Let the SQL sub-agent decline a question the schema cannot answer
            (``pipeline.tools.sql_may_decline``, set for this router's pipeline); the decline is
            the evidence of an abstention. Declining asks in the field format, so SQL generation
            differs from ``always_sql``'s chat framing; False keeps the run's settings (then only
            a draft that does not run abstains).
        rules_without: Rules left out of the rules' table (the ``rules`` router's ``without``).
        today: The rules' reference date (the ``rules`` router's ``today``).
    """

    def __init__(
        self,
        fix_budget: int = 1,
        decline: bool = True,
        rules_without: Sequence[str] | str = (),
        today: str | None = None,
    ) -> None:
        super().__init__(fix_budget=fix_budget)
        self.decline = decline
        self._rules = RulesRouter(fix_budget=fix_budget, without=rules_without, today=today)
        self.rules_without = self._rules.without
        self.today = today
        self.reference_date = self._rules.reference_date
        self.clarify_kinds = self._rules.clarify_kinds
        # read by the pipeline: this router's sub-agents may decline (agents/graph.py)
        self.tool_settings: dict[str, Any] = {"sql_may_decline": True} if decline else {}
        #: tool errors this router's pipeline hands back to it instead of ending the turn: a guard
        #: refusal of the draft is evidence (a write: refuse; anything else: the draft did not run)
        self.recoverable_errors: tuple[str, ...] = ("guard_violation",)

    def bind(self, env: RouterEnv) -> None:
        """Needs the plan's tools (``abstain`` and ``refuse`` among them); the rules read the same env."""
        super().bind(env)
        self._rules.bind(env)

    def classify(self, state: PipelineState) -> Classification:
        """The rules' decision for what is not a data request; a draft (``sql``) for the rest."""
        return self._reading(state, read_reply(state, self._database(state)))[0]

    def _reading(self, state: PipelineState, reply: Reply | None) -> tuple[Classification, dict[str, Any]]:
        """The first step's classification and, for a draft, what the words alone suggested.

        A reply to the assistant's pending question (``routers/support/reply.py``) is drafted as
        the pending request whatever the words alone suggest, unless they call for a refusal, or
        a fix or an explanation of SQL the reply holds.
        """
        words = Classification(*self._rules.classify(state))
        answers = reply is not None and reply.replaces(words.intent)
        if not answers and (words.intent in _NOT_DATA or words.method.removeprefix("rule:") in _SECURITY_RULES):
            return Classification(words.intent, words.confidence, f"answer_first:{words.method}", Usage()), {}
        # what the words suggested is kept as evidence, never as the decision
        evidence = {"rules": words.method, "rules_intent": words.intent, "drafted": True}
        method = f"answer_first:draft:reply-{reply.kind}" if answers and reply is not None else "answer_first:draft"
        return Classification("sql", 1.0, method, Usage()), evidence

    def decide(self, state: PipelineState) -> RouteDecision:
        """The first step classifies; while drafting, each step reads the attempt so far."""
        route: dict[str, Any] = state.get("route") or {}
        reply = read_reply(state, self._database(state))
        if not state.get("tool_calls"):
            (intent, conf, method, usage), evidence = self._reading(state, reply)
            call = next_call(as_reply(state, reply) if intent == "sql" else state, intent, fix_budget=self.fix_budget)
            if call is None:  # every first step of these intents has a call; kept for safety
                return RouteDecision(answer=DONE_ANSWER, intent=intent, confidence=conf, method=method, usage=usage)
            return RouteDecision(
                tool_calls=[call], intent=intent, confidence=conf, method=method, usage=usage, evidence=evidence
            )
        if route.get("intent") != "sql":
            return super().decide(state)  # a decision of the rules' follows the plan as theirs do
        attempt = read_attempt(state, self._dialect(state))
        call = next_call(as_reply(state, reply), "sql", fix_budget=self.fix_budget)
        if attempt.verdict == "write":
            return self._verdict(attempt, self._refuse(state))
        if attempt.verdict == "declined" or (attempt.verdict == "failed" and call is None):
            return self._verdict(attempt, self._abstain(state, attempt))
        # the draft goes on (or is done): what it showed so far is recorded with the step; candidates
        # that disagree in result (``distinct_results`` > 1) are recorded, not yet acted on
        return dataclasses.replace(super().decide(state), evidence=attempt.to_dict())

    def _verdict(self, attempt: Attempt, call: PlannedCall) -> RouteDecision:
        intent, method = _VERDICTS[attempt.verdict]
        # the draft was classified ``sql``; what it showed replaces that classification
        return RouteDecision(
            tool_calls=[call],
            intent=intent,
            confidence=1.0,
            method=method,
            usage=Usage(),
            evidence=attempt.to_dict(),
            revises=True,
        )

    @staticmethod
    def _request(state: PipelineState) -> str:
        question = state.get("question", "") or ""
        return f"{question} ({state['user_reply']})" if state.get("user_reply") else question

    def _refuse(self, state: PipelineState) -> PlannedCall:
        return {"id": call_id(state, "refuse"), "name": "refuse", "args": {"reason": REFUSAL_REASON}}

    def _abstain(self, state: PipelineState, attempt: Attempt) -> PlannedCall:
        args = {"question": self._request(state), "missing": attempt.missing or ""}
        return {"id": call_id(state, "abstain"), "name": "abstain", "args": args}

    def _dialect(self, state: PipelineState) -> str:
        db = self._database(state)
        return str(getattr(db, "dialect", None) or "duckdb")
