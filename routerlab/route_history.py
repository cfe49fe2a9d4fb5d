"""The earlier turns a router sees when ``routerlab route`` decides a turn of a conversation.

The assistant keeps each finished turn as a :class:`~routerlab.agents.turn_history.Turn`
(question, answer, intent, the SQL that ran, its columns, row count and one-line summary, the
tables it used), and ``ask --conversation`` passes those of the earlier turns to the router of the
next one. ``routerlab route`` runs no sub-agent, so it builds the same turns from the dataset:

* ``gold`` (default): each earlier turn as the assistant would hold it had it answered that turn
  right: the gold intent; for an intent whose chain executes SQL (sql, clarify, fix) the gold SQL,
  run read-only on the turn's database for its columns, row count and summary (the same summary
  the execution tool writes, which is also the answer), and the tables it reads. One wrong
  decision therefore never changes what the following turns see.
* ``predicted``: each earlier turn as the router itself decided it: its predicted intent; the gold
  SQL and its result only when that intent's chain executes SQL (the sub-agents are taken to do
  their part right: ``route`` measures routing), else no SQL and no answer. A turn routed to a
  refusal leaves nothing for its follow-up to build on, as it would in the assistant.

Turns without SQL (chat, refuse, explain, unanswerable) keep an empty answer: the dataset holds no
reply text for them, and the routers read the intent and the question of such turns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp, parse_one

from routerlab.agents.turn_history import Turn
from routerlab.agents.plan import CHAINS
from routerlab.benchmarks.example import Example

__all__ = ["HISTORIES", "gold_turn", "predicted_turn", "runs_sql"]

#: settings of the execution tool (agents/tools/context.py) the summary is computed with
_MAX_ROWS = 1000
_TIMEOUT_S = 10.0


def runs_sql(intent: str | None) -> bool:
    """Whether the canonical chain of ``intent`` executes SQL (sql, clarify, fix)."""
    return intent is not None and "execute_sql_and_analyze_result" in CHAINS.get(intent, ())  # type: ignore[call-overload]


def _tables(sql: str, dialect: str, names: list[str]) -> list[str]:
    """The database's tables that ``sql`` reads, in the database's spelling (what linking finds)."""
    real = {n.lower(): n for n in names}
    try:
        ast = parse_one(sql, read=dialect)
    except Exception:  # an unparsable gold query still gives its turn; only the tables are lost
        return []
    return sorted({real[t.name.lower()] for t in ast.find_all(exp.Table) if t.name.lower() in real})


def gold_turn(example: Example) -> Turn:
    """The turn the assistant keeps after answering ``example`` right (see the module docstring).

    A gold query that does not run leaves the turn as a failed execution leaves it: no SQL and
    the error class.
    """
    from routerlab.agents.db import open_database
    from routerlab.agents.errors import RouterlabError
    from routerlab.agents.tools.subagents import result_summary

    turn = Turn(
        question=example.question,
        answer="",
        intent=example.intent,
        sql=None,
        columns=[],
        row_count=0,
        summary=None,
        tables=[],
        error_class=None,
    )
    if not (runs_sql(example.intent) and example.gold_sql):
        return turn
    db = open_database(example.db_path)
    try:
        result = db.execute(example.gold_sql, timeout_s=_TIMEOUT_S, max_rows=_MAX_ROWS)
    except RouterlabError as exc:
        return Turn(**{**turn, "error_class": exc.error_class})
    summary = result_summary(result.columns, result.rows, result.row_count, result.truncated)
    return Turn(
        **{
            **turn,
            "answer": summary,
            "sql": example.gold_sql,
            "columns": list(result.columns),
            "row_count": result.row_count,
            "summary": summary,
            "tables": _tables(example.gold_sql, db.dialect, [t.name for t in db.tables()]),
        }
    )


def predicted_turn(gold: Turn, predicted: str | None) -> Turn:
    """The turn as the router decided it: its intent, and the gold result only if that intent runs SQL."""
    if runs_sql(predicted) and gold.get("sql"):
        return Turn(**{**gold, "intent": predicted})
    return Turn(
        question=gold["question"],
        answer="",
        intent=predicted,
        sql=None,
        columns=[],
        row_count=0,
        summary=None,
        tables=[],
        error_class=None,
    )


HistoryTurn = Callable[[Turn, Any], Turn]
"""``(gold turn, the router's predicted intent) -> the turn later turns see``."""

#: ``--history`` choices: how an earlier turn is kept, given its gold turn and the decision on it
HISTORIES: dict[str, HistoryTurn] = {
    "gold": lambda gold, predicted: gold,
    "predicted": predicted_turn,
}
