"""The ``abstain`` sub-agent: say what the database lacks instead of forcing a query."""

from __future__ import annotations

from typing import Annotated

from routerlab.agents.answerability import check_question
from routerlab.agents.tools.base import tool
from routerlab.agents.tools.context import ToolContext
from routerlab.agents.tools.schema import INJECTED

__all__ = ["abstain"]


# ctx is injected by the pipeline and kept out of the schema, so out of the docstring too (D417)
@tool(terminal=True)
def abstain(question: str, ctx: Annotated[ToolContext, INJECTED], missing: str = "") -> dict:  # noqa: D417
    """Decline a data question this database cannot answer, saying which entity, measure or period it lacks.

    Use it when no table or column holds what the question needs; it runs no SQL.

    Args:
        question: The user's data question.
        missing: What the database lacks, if already known (a measure, entity, period or column).
    """
    verdict = check_question(question, ctx.db)
    gaps = [{"kind": g.kind, "term": g.term, "reason": g.reason} for g in verdict.gaps]
    if gaps:
        answer = verdict.explain()
    else:
        # the router judged it unanswerable on its own grounds: report those, never a guess of ours
        what = missing.strip() or "the information this question needs"
        held = f" It holds: {', '.join(verdict.tables[:12])}." if verdict.tables else ""
        answer = f"This database cannot answer that: it has no table or column for {what}.{held}"
        if missing.strip():
            gaps = [{"kind": "declared", "term": missing.strip(), "reason": f"declared missing: {missing.strip()}"}]
    return {"answer": answer, "missing": gaps, "tables": list(verdict.tables)}
