"""Base of the intent routers: classify the request once, then follow the canonical plan."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any, NamedTuple

from routerlab.agents.plan import TOOL_INTENT, next_call
from routerlab.agents.routing import PlannedCall, RouteDecision, RouterEnv
from routerlab.agents.state import Intent, PipelineState
from routerlab.agents.tools.text import normalise_request
from routerlab.agents.trace import Usage
from routerlab.agents.turn_history import history_of, last_data_turn
from routerlab.routers.base import require_tools, turn_database
from routerlab.routers.support.ambiguity import AMBIGUITY_KINDS, clarifying_question, find_ambiguities
from routerlab.routers.support.reply import as_reply, read_reply

__all__ = ["DONE_ANSWER", "TOOL_INTENT", "Classification", "IntentRouter"]


DONE_ANSWER = "I have nothing further to do for this request."


class Classification(NamedTuple):
    """What an intent router decided about a request, before the plan picks the calls.

    Attributes:
        intent: One of the intents in ``routerlab.agents.state.INTENTS``.
        confidence: In [0, 1].
        method: How it was decided (``rule:unsafe_verb``, ``llm``, ``hybrid:rules``...).
        usage: The router's own LM cost for this decision (none for rules).
    """

    intent: Intent
    confidence: float
    method: str
    usage: Usage


class IntentRouter:
    """Shared ``decide``: classify on the first step, then the plan for that intent.

    In a conversation, a request classified ``clarify`` right after a data turn is a follow-up
    (the earlier turn supplies what it leaves open): it is answered as ``sql``, method
    ``<method>:follow-up``. A turn that answers the assistant's pending question
    (``routers/support/reply.py``) continues the pending request: a chat, clarification or
    abstention is answered as ``sql``, method ``<method>:reply-<kind>``, and the plan's calls
    carry the request with the reply.

    A clarification asks what the schema-derived ambiguity check (``routers/support/ambiguity.py``) finds
    open in the request on its database ("Which one do you mean: Qinling North or Qinling
    South?"), and the plan's generic question only when it finds nothing. Every intent router
    asks the same way, so routers differ in whether they ask, not in what they ask.

    Subclasses implement :meth:`classify`; ``@router("x")`` sets their ``name``.

    Args:
        fix_budget: fix_sql calls a failed execution may trigger.
    """

    #: what a subclass registered with ``@router`` replaces by its registry name
    name = "intent"
    #: tools the canonical plan may call; checked against the pipeline's tools at bind time
    needs_tools: tuple[str, ...] = tuple(TOOL_INTENT)
    #: ambiguity kinds a clarifying question may name (``rules`` narrows it to its table's)
    clarify_kinds: tuple[str, ...] = AMBIGUITY_KINDS
    #: the date relative periods are read against (None: none, see ``routers/support/ambiguity.py``)
    reference_date: _dt.date | None = None
    #: whether a ``clarify`` the conversation settles is answered as a follow-up; a router whose
    #: ``clarify`` is a label, not a reading of the text (``oracle``), asks at every position
    follow_up_settles_clarify: bool = True
    #: whether a reply to the assistant's pending question turns the decision into ``sql``; a router
    #: whose decision is not a reading of the text (``oracle``, ``random``) keeps its own, and its
    #: SQL for the reply still reads the pending request with it
    reads_replies: bool = True

    def __init__(self, fix_budget: int = 1) -> None:
        self.fix_budget = fix_budget
        self.env: RouterEnv | None = None

    def bind(self, env: RouterEnv) -> None:
        """Check that every tool of the plan is available."""
        require_tools(self.name, self.needs_tools, env)
        self.env = env

    def classify(self, state: PipelineState) -> Classification:
        """Return ``(intent, confidence, method, usage)`` for the request."""
        raise NotImplementedError

    def decide(self, state: PipelineState) -> RouteDecision:
        """Classify once (first step), then emit the next call of the plan."""
        route: dict[str, Any] = state.get("route") or {}
        # the reply is the turn's context for every router: SQL for it reads the pending request with
        # the reply; only a router whose decision reads the text lets it change the intent
        reply = read_reply(state, self._database(state))
        if state.get("tool_calls") and route.get("intent"):
            intent, conf, method, usage = route["intent"], route.get("confidence", 1.0), "plan", Usage()
        else:
            intent, conf, method, usage = self.classify(state)
            if self.reads_replies and reply is not None and reply.replaces(intent):
                # the user answers the assistant's own question: the pending request goes on
                intent, method = "sql", f"{method}:reply-{reply.kind}"
            elif intent == "clarify" and self.follow_up_settles_clarify and self._settled_by_conversation(state):
                # ambiguous alone ("and that area?"), but the conversation's last data turn gives
                # the context a clarifying question would ask for: a follow-up data question
                intent, method = "sql", f"{method}:follow-up"
        call = next_call(as_reply(state, reply) if intent == "sql" else state, intent, fix_budget=self.fix_budget)
        if call is None:
            records = sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))
            if records and records[-1].get("status") == "error":
                # the plan has nothing left to try: no decision, the pipeline ends with that error
                return RouteDecision(intent=intent, confidence=conf, method=f"{method}:gave-up", usage=usage)
            return RouteDecision(answer=DONE_ANSWER, intent=intent, confidence=conf, method=method, usage=usage)
        decision = RouteDecision(tool_calls=[call], intent=intent, confidence=conf, method=method, usage=usage)
        return self.ask_specifically(decision, state)

    def _settled_by_conversation(self, state: PipelineState) -> bool:
        """Whether the conversation settles what a clarification would ask.

        Only after an earlier data turn, and only when the ambiguity check, given the
        conversation, finds nothing left open: a follow-up's pronoun or "that station" is
        settled by the turns before; which attributes, which of several tables or values, a
        vague count or a period the data do not reach are not, so they are still asked.
        """
        history = history_of(state)
        if last_data_turn(history) is None:
            return False
        text = normalise_request(state.get("question", "") or "")
        found = find_ambiguities(
            text, self._database(state), kinds=self.clarify_kinds, today=self.reference_date, history=history
        )
        return not found

    def ask_specifically(self, decision: RouteDecision, state: PipelineState) -> RouteDecision:
        """``decision`` with its ``ask_human`` question replaced by the ambiguity check's, if it found any.

        The plan's generic question ("which service area, time period or measure?") names one
        domain's words; the check's question names what this request leaves open on this database.
        """
        calls = decision.tool_calls
        if not calls or calls[0]["name"] != "ask_human" or not self.clarify_kinds:
            return decision
        if state.get("clarification"):
            # a benchmark turn's scripted reply answers the dataset's question: that one is asked
            return decision
        text = normalise_request(state.get("question", "") or "")
        found = find_ambiguities(
            text, self._database(state), kinds=self.clarify_kinds, today=self.reference_date, history=history_of(state)
        )
        question = clarifying_question(found)
        if question is None:
            return decision
        call: PlannedCall = {**calls[0], "args": {**calls[0].get("args", {}), "question": question}}
        return dataclasses.replace(decision, tool_calls=[call, *calls[1:]])

    def _database(self, state: PipelineState) -> Any:
        """The turn's database, or None when there is none to read (the text alone decides)."""
        return turn_database(self.env, state)
