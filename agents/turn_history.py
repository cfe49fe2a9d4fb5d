"""Earlier turns of a conversation, as the routers and sub-agents of a later turn see them.

A turn is kept small: the request, the answer, the intent, the SQL that ran and a summary of its
result (never the rows), and the tables schema linking found. ``PipelineState.history`` holds the
previous turns, oldest first; the application keeps them between requests
(``routerlab.conversation_store``). A follow-up ("and in 2023?", "now only the top 3") reuses the
last data turn: its SQL and question go to SQL generation with the new request, and its tables
to schema linking.

A turn that ended on a question to the user (a clarifying question, a choice between readings,
a confirmation) leaves that question pending (:class:`PendingQuestion`): the user's next turn is
read as its answer ("yes", "the first one", "yes, the capacity"), and SQL generation sees the
request with the question asked back, the reply and the reading it chose (:func:`reply_in_context`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypedDict

from routerlab.agents.trace import Trace

__all__ = [
    "HISTORY_TURNS",
    "PendingQuestion",
    "Turn",
    "assistant_said",
    "chosen_reading",
    "history_of",
    "history_text",
    "last_data_turn",
    "pending_question",
    "question_in_context",
    "readings_of",
    "reply_in_context",
    "turn_from_trace",
    "turn_without_sql",
]

#: earlier turns a routing prompt shows (the most recent ones)
HISTORY_TURNS = 3

#: characters of an answer kept in a turn
_ANSWER_CHARS = 500


class Turn(TypedDict, total=False):
    """One finished turn, as later turns see it.

    Keys:
        question: The request as the user sent it.
        answer: The answer given (cut at 500 characters).
        intent: The intent the turn was classified as.
        sql: The SQL of the turn when it ran successfully, else None.
        columns: Columns of its result.
        row_count: Rows its result had.
        summary: The execution's one-line summary of the result.
        tables: Tables schema linking found for it.
        error_class: Why the turn failed, if it did.
        asked: The question the turn ended on, still unanswered (a clarifying question the user
            has not replied to within the turn); absent otherwise.
        replied: The user's reply to a question asked within the turn (the question is settled);
            absent when the turn asked nothing or was left waiting.
    """

    question: str
    answer: str
    intent: str | None
    sql: str | None
    columns: list[str]
    row_count: int
    summary: str | None
    tables: list[str]
    error_class: str | None
    asked: str
    replied: str


class PendingQuestion(TypedDict):
    """The assistant's question the user's next turn answers.

    Keys:
        request: The user's request the question was about.
        asked: The question as the assistant asked it ("" when the turn kept no text of it).
        readings: The readings it offered to choose from or confirm (``readings_of``), in order.
    """

    request: str
    asked: str
    readings: list[str]


def turn_from_trace(question: str, trace: Trace) -> Turn:
    """The turn a finished trace leaves in its conversation.

    Args:
        question: The request of the turn.
        trace: Its trace (``Pipeline.run`` or ``build_trace``).
    """
    executed = [c for c in trace.tool_calls if c.get("name") == "execute_sql_and_analyze_result"]
    ran = next((c for c in reversed(executed) if c.get("status") == "success"), None)
    out = ran.get("output") if ran else None
    discovery = next(
        (c for c in reversed(trace.tool_calls) if c.get("name") == "data_discovery" and c.get("status") == "success"),
        None,
    )
    tables = (discovery.get("output") or {}).get("tables", []) if discovery else []
    asks = [c for c in trace.tool_calls if c.get("name") == "ask_human"]
    # a question the user replied to within the turn is settled; one left waiting is pending
    waiting = bool(asks) and asks[-1].get("status") != "success" and bool(trace.ask_human)
    turn = Turn(
        question=question,
        answer=str(trace.answer or "")[:_ANSWER_CHARS],
        intent=trace.intent,
        sql=out.get("sql") if isinstance(out, dict) else None,
        columns=list(out.get("columns", [])) if isinstance(out, dict) else [],
        row_count=int(out.get("row_count", 0)) if isinstance(out, dict) else 0,
        summary=out.get("summary") if isinstance(out, dict) else None,
        tables=[str(t) for t in tables],
        error_class=trace.error_class,
    )
    if waiting:
        turn["asked"] = str(trace.ask_human)
    elif asks and asks[-1].get("status") == "success":
        turn["replied"] = str((asks[-1].get("output") or {}).get("reply", ""))
    return turn


def turn_without_sql(question: str, intent: str | None, *, error_class: str | None = None) -> Turn:
    """A turn that ran no SQL: no answer text, no result, no tables (a chat or refusal, or a failed run).

    Args:
        question: The request of the turn.
        intent: The intent it was classified as.
        error_class: Why the turn failed, if it did.
    """
    return Turn(
        question=question,
        answer="",
        intent=intent,
        sql=None,
        columns=[],
        row_count=0,
        summary=None,
        tables=[],
        error_class=error_class,
    )


def last_data_turn(history: Sequence[Turn]) -> Turn | None:
    """The most recent turn whose SQL ran (what a follow-up builds on), or None."""
    return next((t for t in reversed(history) if t.get("sql") and not t.get("error_class")), None)


def history_text(history: Sequence[Turn], max_turns: int = HISTORY_TURNS) -> str:
    """The last ``max_turns`` turns as short lines for a routing prompt ("" without history)."""
    lines = []
    for t in history[-max_turns:]:
        if t.get("asked"):
            lines.append(f"User: {t.get('question', '')} | Assistant asked back: {t['asked']}")
            continue
        line = f"User: {t.get('question', '')} | Assistant ({t.get('intent') or 'no intent'}): "
        line += f"SQL {t['sql']}" if t.get("sql") else str(t.get("answer", ""))[:160]
        lines.append(line)
    return "\n".join(lines)


def assistant_said(turn: Turn) -> str:
    """What the assistant said at the end of ``turn``: the question it left pending, else its answer."""
    return str(turn.get("asked") or turn.get("answer") or "")


def pending_question(history: Sequence[Turn]) -> PendingQuestion | None:
    """The question the last turn left for the user to answer, or None.

    The last turn asked when it kept an unanswered question (``asked``), or when it was a
    clarification with no reply recorded within it (``replied``): a turn of a dataset's gold or
    predicted history (``routerlab route``), where the dataset writes the user's reply as the next
    turn, or a turn stored before ``asked`` was kept. Such a turn keeps no text of the question
    unless it ran no SQL and its answer is the question.
    """
    if not history:
        return None
    last = history[-1]
    if last.get("asked"):
        asked = str(last["asked"])
    elif last.get("intent") == "clarify" and "replied" not in last and not last.get("error_class"):
        asked = "" if last.get("sql") else str(last.get("answer") or "")
    else:
        return None
    return PendingQuestion(request=str(last.get("question", "")), asked=asked, readings=readings_of(asked))


#: where the offered readings start: after a colon, or after the words that offer them
_OFFER = re.compile(
    r"^.*?(?::|\b(?:did|do|would|are|were)\s+you\s+(?:mean|want|wish|like|need|asking\s+(?:about|for))(?:\s+to\s+"
    r"(?:ask\s+(?:for|about)|know|see|get|show))?|\byou\s+(?:mean|want)|\bwhich\s+(?:one|of\s+(?:these|them|the\s+\w+))"
    r"(?:\s+do\s+you\s+(?:mean|want))?|\bis\s+it|\bshould\s+i\s+(?:use|show|count))\s+",
    re.I | re.S,
)
_CHOICE_SPLIT = re.compile(r"\s*,\s*(?:or\s+)?|\s+or\s+", re.I)


def readings_of(asked: str) -> list[str]:
    """The readings a clarifying question offers, in order ("" offers none).

    "Did you mean Id or ModelId?" -> ``["Id", "ModelId"]``; "Which one do you mean: Qinling North
    or Qinling South?" -> both names; "Do you want the name of the dog?" -> the one reading it asks
    the user to confirm. A question that offers nothing to choose ("Could you specify your
    question?") -> ``[]``.
    """
    m = _OFFER.match(asked.split("?")[0] if "?" in asked else asked)
    if m is None:
        return []
    body = (asked.split("?")[0] if "?" in asked else asked)[m.end() :]
    parts = [p.strip(" .!\"'") for p in _CHOICE_SPLIT.split(body.strip())]
    return [p for p in parts if p]


#: ordinal words of a choice between readings, by index (-1: the last)
_ORDINALS: dict[str, int] = {
    "first": 0, "1st": 0, "former": 0, "one": 0, "1": 0,
    "second": 1, "2nd": 1, "two": 1, "2": 1,
    "third": 2, "3rd": 2, "three": 2, "3": 2,
    "fourth": 3, "4th": 3, "four": 3, "4": 3,
    "last": -1, "latter": -1,
}  # fmt: skip
_PICK = re.compile(r"\b(?:the\s+)?(first|1st|former|second|2nd|third|3rd|fourth|4th|last|latter)\b"
                   r"|\b(?:option|choice|number|no\.?|#)\s*(one|two|three|four|[1-4])\b", re.I)  # fmt: skip


def chosen_reading(reply: str, readings: Sequence[str]) -> str | None:
    """The reading ``reply`` picks among ``readings`` ("the first one", "option 2", a reading's words), or None.

    A reply naming every word of exactly one reading, or more of one reading's words than of
    any other, picks it; "both", "all", "neither" pick none (the reply itself says it).
    """
    if not readings:
        return None
    if len(readings) > 1 and (m := _PICK.search(reply)):
        index = _ORDINALS[(m.group(1) or m.group(2)).lower()]
        if -len(readings) <= index < len(readings):
            return readings[index]
    said = set(re.findall(r"[a-z0-9]+", reply.lower()))
    overlap = [len(said & set(re.findall(r"[a-z0-9]+", r.lower())) - _READING_FILLER) for r in readings]
    best = max(overlap)
    if best and overlap.count(best) == 1:
        return readings[overlap.index(best)]
    return None


#: words of a reading that pick nothing by themselves ("the", "of"): only its content words choose
_READING_FILLER = frozenset(("a", "an", "the", "of", "to", "for", "with", "in", "on", "by", "and", "or", "all"))


def question_in_context(question: str, history: Sequence[Turn]) -> str:
    """``question`` with the last data turn it may follow up on, for SQL generation.

    Without an earlier data turn the question is returned unchanged, so a first turn's prompt is
    exactly the single-request prompt (and its cached answers stay valid).
    """
    last = last_data_turn(history)
    if last is None:
        return question
    result = f" Its result: {last['summary']}" if last.get("summary") else ""
    return (
        f"{question}\n(Earlier in this conversation the user asked: {last.get('question', '')!r}, "
        f"answered by this SQL: {last['sql']}.{result} If the question above follows up on it, "
        "adapt that SQL; otherwise ignore it.)"
    )


def reply_in_context(pending: PendingQuestion, reply: str) -> str:
    """A reply to the pending question as SQL generation reads it: the question asked back, reply, reading chosen.

    The plan writes it after the pending request, as it writes a reply given within the turn:
    "Which stadium is the best? (the assistant asked back: 'By capacity or attendance?'; the
    user replied: 'the first one', choosing 'capacity')".
    """
    asked = f"the assistant asked back: {pending['asked']!r}; " if pending["asked"] else ""
    chosen = chosen_reading(reply, pending["readings"])
    picked = f", choosing {chosen!r}" if chosen and len(pending["readings"]) > 1 else ""
    return f"{asked}the user replied: {reply!r}{picked}"


def history_of(state: Any) -> list[Turn]:
    """The earlier turns recorded in a state mapping (empty when there are none)."""
    return list(state.get("history") or [])
