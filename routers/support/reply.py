"""A turn that answers the assistant's own question continues the request that question was about.

When the conversation's last turn ended on a question to the user (a clarifying question, a
choice between readings, a confirmation: the state's ``pending_question``, set from the history
by :func:`routerlab.agents.state.initial_state`), the user's next turn is read as its answer.
"Yes", "no", "the first one", "exactly", a column or value name, "yes, the capacity" or a
restated question all continue the pending request: the turn is a data question (SQL for the
reading the reply settles), never chat, a clarification or a declared gap.

Every router reads a reply here, in one place: :func:`read_reply` says whether the turn is one
and of which kind, :meth:`Reply.replaces` which first decisions it replaces with ``sql``, and
:func:`as_reply` the state the plan builds its calls from (the pending request with the reply,
so schema linking and SQL generation read the request with the question asked back and the
reply, not "yes" alone: :func:`routerlab.agents.turn_history.reply_in_context`).

A turn after a pending question is not a reply when it closes the conversation ("thanks, bye",
"never mind") or asks for something the turn checks recognise as no data request (an action,
small talk, general knowledge; ``routers/support/turns.py``), and thanks alone answer nothing.
A refusal a router decides is never replaced, nor a fix or an explanation of SQL the reply holds.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from routerlab.agents.plan import next_call, request_text
from routerlab.agents.routing import PlannedCall, RouteDecision
from routerlab.agents.state import PipelineState
from routerlab.agents.tools.text import extract_sql, normalise_request
from routerlab.agents.turn_history import PendingQuestion, chosen_reading, reply_in_context
from routerlab.routers.support.turns import TURN_CHECKS, split_social

__all__ = ["REPLY_OVERRIDES", "Reply", "ReplyKind", "as_reply", "continue_pending", "read_reply"]

ReplyKind = Literal["affirm", "deny", "choice", "answer"]

#: first decisions a reply turns into ``sql`` (method ``...:reply-<kind>``): the ones that would leave
#: the request unanswered for no reason the reply gives, and ``sql`` itself (marked as a reply); a
#: refusal stands, and a fix or an explanation when the reply holds SQL to fix or explain
#: (:meth:`Reply.replaces`)
REPLY_OVERRIDES: frozenset[str] = frozenset({"sql", "chat", "clarify", "unanswerable"})
#: decisions about SQL the user gives: a reply that holds none ("yes") gives nothing to fix or explain
_ABOUT_GIVEN_SQL = frozenset({"fix", "explain"})

#: a router's own decision type (a swarm's HandoffDecision stays one when continued)
_D = TypeVar("_D", bound=RouteDecision)

_AFFIRM = re.compile(
    r"^\W*(?:yes|yeah|yea|yep|yup|ya|sure|ok(?:ay)?|correct|right|exactly|indeed|absolutely|definitely|certainly"
    r"|precisely|of course|affirmative|please do|go ahead|do it"
    r"|that'?s (?:right|correct|it|what i (?:mean|want)(?:ed)?)"
    r"|i (?:do|did|mean|meant|want|would)|both|all of them|either)\b",
    re.I,
)
_DENY = re.compile(r"^\W*(?:no|nope|nah|not really|neither|wrong|incorrect|not (?:that|quite|exactly))\b", re.I)
#: words that end the exchange instead of answering it
_CLOSING = re.compile(
    r"\b(?:bye|goodbye|good ?night|see you|that'?s all|that is all|nothing else|no more questions|never ?mind"
    r"|forget (?:it|about it)|no,? thanks?(?: you)?|cancel|stop)\b",
    re.I,
)
#: turn checks whose match is a request of its own, not an answer
_OTHER_REQUESTS = ("action", "small_talk", "general_knowledge")


@dataclass(frozen=True)
class Reply:
    """A turn read as the answer to the pending question.

    Attributes:
        kind: ``affirm`` ("yes"), ``deny`` ("no"), ``choice`` (it picks one offered reading)
            or ``answer`` (other words: a column or value name, a restated request).
        pending: The question it answers.
        text: The reply as the user wrote it.
        chosen: The offered reading it picks, if it picks one.
    """

    kind: ReplyKind
    pending: PendingQuestion
    text: str
    chosen: str | None = None

    def replaces(self, intent: str | None) -> bool:
        """Whether a first decision ``intent`` gives way to the pending request's SQL.

        :data:`REPLY_OVERRIDES` do, and a fix or an explanation of SQL the reply does not hold (an
        LM's reading of "yes" after a question that showed SQL); a refusal never does.
        """
        if intent in REPLY_OVERRIDES:
            return True
        return intent in _ABOUT_GIVEN_SQL and extract_sql(self.text) is None


def read_reply(state: PipelineState, db: Any = None) -> Reply | None:
    """The turn of ``state`` as the answer to its pending question, or None (no question, or no answer).

    Args:
        state: The turn's state (``pending_question`` and ``question``).
        db: The turn's database, for the general-knowledge check (None: the text alone decides).
    """
    pending = state.get("pending_question")
    if not pending:
        return None
    raw = str(state.get("question", "") or "")
    text = normalise_request(raw)
    if not text.strip() or (_CLOSING.search(text) and len(text.split()) <= 8):
        return None
    rest = split_social(text).rest
    if rest and any(TURN_CHECKS[kind](rest, db) for kind in _OTHER_REQUESTS):
        return None
    chosen = chosen_reading(rest or text, pending.get("readings") or [])
    if _AFFIRM.match(text):
        kind: ReplyKind = "affirm"
    elif _DENY.match(text):
        kind = "deny"
    elif chosen is not None and len(pending.get("readings") or []) > 1:
        kind = "choice"
    elif not rest:
        return None  # thanks or praise alone answer nothing
    else:
        kind = "answer"
    return Reply(kind, pending, raw, chosen)


def as_reply(state: PipelineState, reply: Reply | None) -> PipelineState:
    """The state the plan builds a reply's calls from: the pending request, with the reply as the user's reply.

    The plan writes the request as ``request (reply)`` for schema linking and SQL generation, as it
    does for a reply given within the turn, the reply with the question it answers and the reading
    it chose (:func:`~routerlab.agents.turn_history.reply_in_context`); without a reply, ``state``
    itself.
    """
    if reply is None or not reply.pending.get("request"):
        return state
    answer = reply_in_context(reply.pending, reply.text)
    return PipelineState(**{**state, "question": reply.pending["request"], "user_reply": answer})


#: calls whose ``question`` is the user's request: on a reply, the pending request with the reply
_REQUEST_CALLS = frozenset({"data_discovery", "generate_sql"})


def continue_pending(decision: _D, state: PipelineState, db: Any = None) -> _D:
    """``decision``, or the pending request's first SQL call when the turn answers the assistant's question.

    For routers that choose tool calls themselves (``llm``, ``retrieval``, ``handoff``, ``team``),
    on the first step of the turn: a reply the model routed to chat, a clarification or an
    abstention (or to no valid call) continues the request, and a data call of its own is replaced
    by the plan's, which carries the request with the reply (method ``<method>:reply-<kind>``).
    Later steps of a request so continued follow the calls the model makes, each asking about the
    pending request with the reply (its ``question``), not about "yes" alone.

    Args:
        decision: The router's own decision.
        state: The turn's state.
        db: The turn's database, for :func:`read_reply` (None: the text alone decides).
    """
    if state.get("tool_calls"):
        return _on_request(decision, state, db)
    reply = read_reply(state, db)
    if reply is None or (decision.intent is not None and not reply.replaces(decision.intent)):
        return decision  # a refusal stands (a fix or an explanation of SQL given); no valid call: go on
    call = next_call(as_reply(state, reply), "sql")
    if call is None:
        return decision
    return dataclasses.replace(
        decision,
        tool_calls=[call],
        answer=None,
        intent="sql",
        method=f"{decision.method}:reply-{reply.kind}",
        invalid_tool_calls=[],
    )


def _on_request(decision: _D, state: PipelineState, db: Any) -> _D:
    """A later step's ``decision`` with its data calls asking about the pending request (a reply turn's SQL path)."""
    if (state.get("route") or {}).get("intent") != "sql" or not any(
        c["name"] in _REQUEST_CALLS for c in decision.tool_calls
    ):
        return decision
    reply = read_reply(state, db)
    if reply is None:
        return decision
    request = request_text(as_reply(state, reply))
    calls: list[PlannedCall] = [
        {**c, "args": {**c["args"], "question": request}} if c["name"] in _REQUEST_CALLS else c
        for c in decision.tool_calls
    ]
    return dataclasses.replace(decision, tool_calls=calls)
