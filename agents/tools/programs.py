"""DSPy programs behind the LM-backed sub-agents (signatures + modules, so optimizers can tune them).

Field order matters for speed: the schema comes first, so consecutive prompts about the same
database share a prefix the local model reuses from its KV cache.
"""

from __future__ import annotations

import re

import dspy

__all__ = ["ChatReply", "ExplainSQL", "FixSQL", "GenerateSQL", "SQLPrograms", "clean_sql"]


class GenerateSQL(dspy.Signature):
    """Write one read-only SQL query that answers the question on the given database schema.

    Use only tables and columns from the schema. Return only the SQL, no explanation.
    """

    db_schema: str = dspy.InputField(desc="tables, columns and example values")
    dialect: str = dspy.InputField(desc="SQL dialect of the database")
    hint: str = dspy.InputField(desc="extra evidence about the question, may be empty")
    question: str = dspy.InputField()
    sql: str = dspy.OutputField(desc="a single SELECT statement")


class FixSQL(dspy.Signature):
    """Repair a SQL query that failed on the given database; keep its intent.

    Use only tables and columns from the schema. Return only the corrected SQL.
    """

    db_schema: str = dspy.InputField(desc="tables, columns and example values")
    dialect: str = dspy.InputField(desc="SQL dialect of the database")
    sql: str = dspy.InputField(desc="the failing query")
    error: str = dspy.InputField(desc="the database's error message")
    fixed_sql: str = dspy.OutputField(desc="a single corrected SELECT statement")


class ExplainSQL(dspy.Signature):
    """Explain in plain English what a SQL query returns, in one or two short sentences."""

    db_schema: str = dspy.InputField(desc="tables and columns the query may use")
    sql: str = dspy.InputField()
    explanation: str = dspy.OutputField()


class ChatReply(dspy.Signature):
    """You are a friendly data assistant for a SQL database. Reply in one short sentence without querying data."""

    message: str = dspy.InputField()
    reply: str = dspy.OutputField()


class SQLPrograms(dspy.Module):
    """The four LM-backed sub-agent programs, as one module an optimizer can tune or save."""

    def __init__(self) -> None:
        super().__init__()
        # Completion budgets: on a CPU every generated token of the embedded model costs about a
        # second, and small models sometimes ramble past a short answer.
        self.generate = dspy.Predict(GenerateSQL, max_tokens=256)
        self.fix = dspy.Predict(FixSQL, max_tokens=256)
        self.explain = dspy.Predict(ExplainSQL, max_tokens=128)
        self.chat = dspy.Predict(ChatReply, max_tokens=64)


_FENCE = re.compile(r"```(?:sql|SQL)?\s*(.*?)```", re.S)


def clean_sql(text: str) -> str:
    """Strip markdown fences, leading labels and trailing semicolons from model-written SQL."""
    text = text.strip()
    m = _FENCE.search(text)
    if m:
        text = m.group(1).strip()
    text = re.sub(r"^(?:sql|SQL)\s*:\s*", "", text)
    # keep only the first statement; the guard would refuse stacked ones anyway
    return text.strip().rstrip(";").strip()
