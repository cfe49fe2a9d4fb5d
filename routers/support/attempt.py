"""What an SQL attempt showed: the evidence an answer-first router decides on (issue 49).

An answer-first router drafts the SQL of anything that may be a data request and reads the
outcome from the turn's tool calls instead of judging the request's words:

* the SQL sub-agent declined (``sql_may_decline``'s ``unanswerable`` output): the schema holds
  nothing to answer with;
* the guard refused a drafted statement as a write (``only_select`` or ``dml_in_subquery`` on a
  statement that inserts, updates, deletes or changes the catalogue): the request would change
  stored data;
* the draft failed and the plan has no repair left: no query for it runs;
* the draft ran: its result is the answer.

Several candidate queries (execution-guided selection) that return different results are
recorded as such (``distinct_results``): evidence of more than one reading, not yet acted on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import sqlglot
from sqlglot import exp

__all__ = [
    "STORED_DATA_WRITES",
    "WRITE_GUARD_RULES",
    "Attempt",
    "Verdict",
    "changes_stored_data",
    "distinct_results",
    "read_attempt",
]

#: sqlglot statements that change stored data or the catalogue. Not ``exp.Command``: sqlglot's
#: fallback for text it cannot parse ("create dates of ...") is prose, not a write
STORED_DATA_WRITES: tuple[type[exp.Expr], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Drop,
    exp.Create,
    exp.Alter,
    exp.Merge,
    exp.TruncateTable,
    exp.Grant,
)

#: the guard rules (``routerlab.agents.db.guard``) that a write statement breaks; the others (a
#: forbidden function, a file path, a parse error) refuse what is not a change of stored data
WRITE_GUARD_RULES: frozenset[str] = frozenset({"only_select", "dml_in_subquery"})

#: the tools of a draft, in the canonical plan's order
_DRAFT_TOOLS = ("data_discovery", "generate_sql", "fix_sql", "execute_sql_and_analyze_result")

Verdict = Literal["declined", "write", "failed", "answered", "pending"]


def changes_stored_data(sql: str, dialect: str = "duckdb") -> bool:
    """Whether ``sql`` holds a statement (or a sub-statement) that changes stored data.

    Text that does not parse changes nothing: the guard never runs it.
    """
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, ValueError, RecursionError):
        return False
    return any(s is not None and (isinstance(s, STORED_DATA_WRITES) or s.find(*STORED_DATA_WRITES)) for s in statements)


@dataclass(frozen=True)
class Attempt:
    """What the turn's draft showed so far.

    Attributes:
        verdict: ``declined``, ``write``, ``failed`` (the last call of the draft failed),
            ``answered`` (its SQL ran) or ``pending`` (nothing conclusive yet).
        calls: Names of the draft's calls so far, in order.
        missing: What the SQL sub-agent said the schema lacks, when it declined.
        sql: The statement the verdict is about (the one that ran, or the one refused).
        guard_rule: The guard rule that refused a statement, if one did.
        error_class: The error class of the draft's failed last call, if it failed.
        row_count: Rows the executed draft returned.
        candidates: Candidate queries execution-guided selection compared (0: no selection).
        distinct_results: Distinct results among the candidates that ran (disagreement when > 1).
        lm_calls: Sub-agent LM calls the draft cost so far (the router itself calls none).
    """

    verdict: Verdict
    calls: tuple[str, ...] = ()
    missing: str | None = None
    sql: str | None = None
    guard_rule: str | None = None
    error_class: str | None = None
    row_count: int | None = None
    candidates: int = 0
    distinct_results: int = 0
    lm_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, without the fields that say nothing about this attempt."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if v not in (None, 0, ())}


def _records(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    return sorted(state.get("tool_calls", {}).values(), key=lambda r: r.get("step", 0))


def distinct_results(records: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """``(candidates, distinct results)`` of the latest selection among the draft's calls.

    A candidate's ``votes`` count the candidates with its result, so a result shared by ``v``
    candidates contributes ``v`` times ``1/v``: the sum over those that ran is the number of
    distinct results.

    Args:
        records: Tool-call records in step order, as the pipeline state or a stored trace holds
            them (``scripts/ask_on_disagreement.py`` reads stored runs with it).
    """
    for r in reversed(records):
        selection = (r.get("output") or {}).get("selection") if isinstance(r.get("output"), dict) else None
        if selection:
            ran = [c for c in selection.get("candidates", []) if c.get("error") is None and c.get("votes")]
            return len(selection.get("candidates", [])), round(sum(1 / c["votes"] for c in ran))
    return 0, 0


def _lm_calls(state: Mapping[str, Any]) -> int:
    usage = state.get("subagent_usage") or []
    return sum(int(u.get("lm_calls", 0) or 0) for u in usage if u.get("tool") in _DRAFT_TOOLS)


def read_attempt(state: Mapping[str, Any], dialect: str = "duckdb") -> Attempt:
    """The evidence of the turn's draft, read from its tool calls.

    Args:
        state: The pipeline state after the draft's latest call.
        dialect: The turn's database dialect, to read a refused statement.
    """
    records = [r for r in _records(state) if r.get("name") in _DRAFT_TOOLS]
    calls = tuple(r["name"] for r in records)
    candidates, distinct = distinct_results(records)
    common: dict[str, Any] = {
        "calls": calls,
        "candidates": candidates,
        "distinct_results": distinct,
        "lm_calls": _lm_calls(state),
    }
    if not records:
        return Attempt("pending", **common)
    last = records[-1]
    output = last.get("output")
    if last.get("status") == "success" and isinstance(output, dict) and output.get("unanswerable"):
        return Attempt("declined", missing=str(output.get("missing") or ""), **common)
    if last.get("status") == "error":
        detail = last.get("error_detail") or {}
        rule, sql = detail.get("rule"), str(detail.get("sql") or "")
        refused = last.get("error_class") == "guard_violation" and rule in WRITE_GUARD_RULES
        if refused and changes_stored_data(sql, dialect):
            return Attempt("write", sql=sql, guard_rule=rule, error_class="guard_violation", **common)
        return Attempt("failed", sql=sql or None, guard_rule=rule, error_class=last.get("error_class"), **common)
    if last.get("name") == "execute_sql_and_analyze_result" and isinstance(output, dict):
        return Attempt("answered", sql=output.get("sql"), row_count=output.get("row_count"), **common)
    return Attempt("pending", **common)
