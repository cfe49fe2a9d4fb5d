"""Checks that catch a query that runs but answers another question than the one asked.

A query that fails is caught by the engine; one that runs and returns the wrong shape is not.
Each check here compares what the question's wording presupposes with what the result shows,
as answer-type checks in question answering do: a question that asks for a list is not answered
by one count, "how many" is not answered by a list, "different" is not answered with repeated
rows, and a question that presupposes rows is not answered by none. The cues are closed-class
English words and phrases, not learnt from any benchmark's questions.

A check is a function registered with ``@result_check("name")``; ``ToolSettings.result_checks``
names the ones that run. A finding becomes feedback for ONE more ``generate_sql`` call (the
execution-feedback path of :mod:`routerlab.agents.tools.feedback`); the original query is kept
unless the new one runs and fails fewer checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from routerlab.agents.registry import Registry

if TYPE_CHECKING:
    from routerlab.agents.db import QueryResult

__all__ = ["Finding", "ResultCheck", "check_result", "result_check"]

#: the question asks for a count
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b|\bcounts\b", re.I)
#: ... of each group, so several rows may answer it
_PER_GROUP = re.compile(r"\b(each|every|per|respectively|for all|by each|for every)\b", re.I)
#: the question asks for a list of things
_LIST = re.compile(
    r"^\s*(list|show|give|find|return|display|name|tell|get|enumerate)\b"
    r"|\b(which|what) (are|were)\b|\bwho (are|were)\b|\bwhich\b|\bnames?\b|\ball\b",
    re.I,
)
#: the question asks for each thing once
_DISTINCT = re.compile(r"\b(different|distinct|unique)\b", re.I)
#: a yes/no or existence question: no rows is a possible answer
_EXISTENCE = re.compile(r"^\s*(is|are|was|were|does|do|did|has|have|had|can|could)\b|\bwhether\b|\bif any\b", re.I)


@dataclass(frozen=True)
class Finding:
    """A check that failed.

    Attributes:
        check: The check's registered name.
        text: What was wrong, in words the model reads as feedback.
    """

    check: str
    text: str


@runtime_checkable
class ResultCheck(Protocol):
    """Returns what is wrong with ``result`` as an answer to ``question`` (None: nothing)."""

    def __call__(self, question: str, sql: str, result: QueryResult, dialect: str) -> str | None:
        """The finding's text, or None.

        Args:
            question: The question.
            sql: The query that ran.
            result: Its result.
            dialect: The database's dialect (to parse ``sql``).
        """
        ...


result_check: Registry[str | None] = Registry("result check")
"""Registry of result checks by name (``ToolSettings.result_checks``)."""


def _projections(sql: str, dialect: str) -> list[exp.Expr] | None:
    """The outer SELECT's projections (aliases removed), or None for anything else."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    return [p.unalias() for p in tree.expressions]


def _is_count(node: exp.Expr) -> bool:
    return isinstance(node, exp.Count)


@result_check("empty")
def empty(question: str, sql: str, result: QueryResult, dialect: str) -> str | None:
    """No rows (or one row of NULLs: an aggregate over nothing) for a question that presupposes some.

    A yes/no or existence question ("Are there ...", "whether") may be answered by no rows. A
    count of zero is an answer, so only NULLs count as empty here.
    """
    if _EXISTENCE.search(question):
        return None
    if not result.rows:
        return "It returned no rows, but the question presupposes that some exist."
    if len(result.rows) == 1 and all(v is None for v in result.rows[0]):
        return "It returned only NULL, but the question presupposes a value."
    return None


@result_check("count_for_list")
def count_for_list(question: str, sql: str, result: QueryResult, dialect: str) -> str | None:
    """One count where the question asks for a list (``list``, ``which``, ``what are``) and no count."""
    if _COUNT.search(question) or not _LIST.search(question):
        return None
    if len(result.rows) != 1 or len(result.columns) != 1:
        return None
    projections = _projections(sql, dialect)
    if projections and len(projections) == 1 and _is_count(projections[0]):
        return "It returned a single count, but the question asks for a list of items, not how many."
    return None


@result_check("list_for_count")
def list_for_count(question: str, sql: str, result: QueryResult, dialect: str) -> str | None:
    """Several rows where the question asks how many (and not per group)."""
    if not _COUNT.search(question) or _PER_GROUP.search(question):
        return None
    if result.row_count > 1:
        return f"It returned {result.row_count} rows, but the question asks for one number (how many)."
    return None


@result_check("duplicates")
def duplicates(question: str, sql: str, result: QueryResult, dialect: str) -> str | None:
    """Repeated rows, or a count of every row, where the question asks for different/distinct things."""
    if not _DISTINCT.search(question):
        return None
    rows = [tuple(map(repr, r)) for r in result.rows]
    if len(set(rows)) < len(rows):
        return "It returned repeated rows, but the question asks for different (distinct) items."
    if not _COUNT.search(question) or re.search(r"\b(distinct|group\s+by)\b", sql, re.I):
        return None  # a DISTINCT anywhere (a subquery's, a count's) or a grouping already counts each once
    projections = _projections(sql, dialect) or []
    if any(_is_count(p) for p in projections):
        return "It counts every row, but the question asks how many different ones: count the distinct values."
    return None


def check_result(names: tuple[str, ...], question: str, sql: str, result: QueryResult, dialect: str) -> list[Finding]:
    """Run the checks registered as ``names`` on one result; the findings in ``names`` order.

    Raises:
        UnknownComponentError: A name no check has (the message lists them).
    """
    out = []
    for name in names:
        text = result_check.get(name)(question, sql, result, dialect)
        if text is not None:
            out.append(Finding(name, text))
    return out
