"""Earlier turns of a conversation, as the routers and sub-agents of a later turn see them.

A turn is kept small: the request, the answer, the intent, the SQL that ran and a summary of its
result (never the rows), and the tables schema linking found. ``PipelineState.history`` holds the
previous turns, oldest first; the application keeps them between requests
(``routerlab.conversation_store``). A follow-up ("and in 2023?", "now only the top 3") reuses the
last data turn: its SQL and question go to SQL generation with the new request, and its tables
to schema linking.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from routerlab.agents.trace import Trace

__all__ = [
    "HISTORY_TURNS",
    "Turn",
    "history_of",
    "history_text",
    "last_data_turn",
    "question_in_context",
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
    return Turn(
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
        line = f"User: {t.get('question', '')} | Assistant ({t.get('intent') or 'no intent'}): "
        line += f"SQL {t['sql']}" if t.get("sql") else str(t.get("answer", ""))[:160]
        lines.append(line)
    return "\n".join(lines)


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


def history_of(state: Any) -> list[Turn]:
    """The earlier turns recorded in a state mapping (empty when there are none)."""
    return list(state.get("history") or [])
