"""The SQL sub-agent may decline: a question the schema cannot answer gets a sentinel, not a forced query.

With ``pipeline.tools.sql_may_decline``, ``generate_sql`` asks its program (same demos, one more
instruction) to answer ``UNANSWERABLE: <what is missing>`` when no table or column holds what the
question needs. The tool then returns ``{"sql": None, "unanswerable": True, "missing": ...}``,
and the canonical plan's next call is ``abstain`` with that reason; an ``llm`` router sees the
same output and can choose ``abstain`` itself. No SQL runs.
"""

from __future__ import annotations

import re
from typing import Any

import dspy

from routerlab.agents.tools.programs import GenerateSQL

__all__ = ["DECLINE_INSTRUCTION", "declined", "declining"]

DECLINE_INSTRUCTION = (
    "If no table or column of the schema holds what the question asks for (an entity, measure, attribute "
    "or period the database does not record), do not guess: answer exactly UNANSWERABLE: followed by what "
    "is missing."
)
_SENTINEL = re.compile(r"^\W*UNANSWERABLE\b\W*(.*)$", re.I | re.S)


def declining(generate: dspy.Predict) -> dspy.Predict:
    """A copy of the ``generate`` predictor whose instructions also allow declining (demos kept)."""
    signature = GenerateSQL.with_instructions(f"{GenerateSQL.instructions.strip()}\n\n{DECLINE_INSTRUCTION}")
    predict = dspy.Predict(signature, **getattr(generate, "config", {}))
    predict.demos = list(generate.demos)
    return predict


def declined(text: Any) -> str | None:
    """What the program said is missing when it declined (``""`` if it did not say), else None."""
    m = _SENTINEL.match(str(text or "").strip())
    return None if m is None else m.group(1).strip().strip("`'\".").strip()
