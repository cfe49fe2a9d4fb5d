"""How ``generate_sql`` asks the model for a query, and how a query is read out of the reply.

Two choices, both :class:`ToolSettings` fields recorded with every run:

* ``sql_framing`` (registry :data:`sql_framing`): ``fields`` sends the ``GenerateSQL`` DSPy
  signature under the project's ChatAdapter (``[[ ## field ## ]]`` headers, the field
  descriptions); ``chat`` sends one plain chat exchange as the text-to-SQL literature does: a
  system line naming the dialect, then the schema, the question and "answer with one SQL query".
  ``program`` runs a compiled ``generate_sql`` program (``ToolSettings.sql_program``,
  :mod:`routerlab.agents.tools.sql_program`): the field format with schema-less few-shot demos
  after the instructions. The schema comes first in every framing's question message, so every
  question on a database shares the prompt prefix.
* ``sql_output`` (table :data:`SQL_OUTPUT`): ``clean`` is :func:`clean_sql` (fences, a label, a
  trailing semicolon); ``extract`` is :func:`sql_of_reply`, which also drops prose before and
  after the statement and cuts a reply truncated at the token budget back to what parses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.lm.chat import chat
from routerlab.agents.registry import Registry
from routerlab.agents.tools.programs import clean_sql
from routerlab.agents.tools.sql_program import load_sql_program
from routerlab.agents.tools.text import parses_as_sql

if TYPE_CHECKING:
    import dspy

    from routerlab.agents.tools.programs import SQLPrograms

__all__ = [
    "CHAT_MAX_TOKENS",
    "CHAT_PROMPTS",
    "PROGRAM_FRAMINGS",
    "SQL_OUTPUT",
    "Sampling",
    "SqlFraming",
    "SqlReply",
    "chat_messages",
    "sql_framing",
    "sql_of_reply",
]

#: completion budget of the chat framing: the fields framing's (``SQLPrograms.generate``)
CHAT_MAX_TOKENS = 256

#: the dialect as the chat framing names it to the model
_DIALECT_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB"}


@dataclass(frozen=True)
class Sampling:
    """One sampled reply instead of the greedy one (execution-guided selection's candidates).

    Attributes:
        temperature: Sampling temperature.
        seed: Sampling seed: candidates of one prompt differ by seed only, so each is reproducible
            and its own response-cache entry.
    """

    temperature: float
    seed: int


@runtime_checkable
class SqlFraming(Protocol):
    """Asks ``lm`` for one query answering ``question`` on ``schema``; returns the raw reply."""

    def __call__(
        self,
        lm: dspy.LM,
        programs: SQLPrograms,
        *,
        schema: str,
        dialect: str,
        hint: str,
        question: str,
        sampling: Sampling | None = None,
        program: str = "",
    ) -> str:
        """The model's reply, unprocessed (output handling is :data:`SQL_OUTPUT`'s job).

        Args:
            lm: The model.
            programs: The sub-agents' DSPy programs (the ``fields`` framing runs ``generate``).
            schema: The schema text (a :mod:`routerlab.agents.tools.views` rendering).
            dialect: The database's dialect (``sqlite``, ``duckdb``).
            hint: Extra evidence about the question (may be empty).
            question: The question.
            sampling: Sample instead of decoding greedily (None: greedy, the default).
            program: The compiled program a framing that runs one reads (``ToolSettings.sql_program``;
                the others ignore it).
        """
        ...


sql_framing: Registry[str] = Registry("sql framing")
"""Registry of prompt framings of SQL generation by name."""


@sql_framing("fields")
def fields_framing(
    lm: dspy.LM,
    programs: SQLPrograms,
    *,
    schema: str,
    dialect: str,
    hint: str,
    question: str,
    sampling: Sampling | None = None,
    program: str = "",
) -> str:
    """The ``GenerateSQL`` signature in DSPy's field format (the framing before issue 40)."""
    if sampling is not None:
        lm = lm.copy(temperature=sampling.temperature, seed=sampling.seed)
    with lm_context(lm):
        pred = programs.generate(db_schema=schema, dialect=dialect, hint=hint, question=question)
    return pred.sql or ""


def chat_messages(*, schema: str, dialect: str, hint: str, question: str) -> list[dict[str, str]]:
    """The plain chat exchange of the ``chat`` framing (pinned by a golden test).

    The system line depends only on the dialect and the user message starts with the schema, so
    the prefix up to the question is the same for every question on a database.
    """
    name = _DIALECT_NAMES.get(dialect, dialect)
    evidence = f"\nEvidence: {hint}" if hint else ""
    user = (
        f"{schema}\n\n"
        f"Answer the question with one {name} query over the tables above. Reply with the SQL query only.\n"
        f"Question: {question}{evidence}"
    )
    return [{"role": "system", "content": f"You are an expert {name} programmer."}, {"role": "user", "content": user}]


@sql_framing("chat")
def chat_framing(
    lm: dspy.LM,
    programs: SQLPrograms,
    *,
    schema: str,
    dialect: str,
    hint: str,
    question: str,
    sampling: Sampling | None = None,
    program: str = "",
) -> str:
    """One plain chat call, greedy unless ``sampling``, the schema first (:func:`chat_messages`)."""
    messages = chat_messages(schema=schema, dialect=dialect, hint=hint, question=question)
    if sampling is None:
        return chat(lm, messages, max_tokens=CHAT_MAX_TOKENS).text
    return chat(lm, messages, max_tokens=CHAT_MAX_TOKENS, temperature=sampling.temperature, seed=sampling.seed).text


@sql_framing("program")
def program_framing(
    lm: dspy.LM,
    programs: SQLPrograms,
    *,
    schema: str,
    dialect: str,
    hint: str,
    question: str,
    sampling: Sampling | None = None,
    program: str = "",
) -> str:
    """The compiled program ``program`` (:func:`~routerlab.agents.tools.sql_program.load_sql_program`).

    The ``fields`` framing with the program's schema-less demos between the instructions and the
    question; the question's schema still opens its message.
    """
    compiled, _ = load_sql_program(program)
    if sampling is not None:
        lm = lm.copy(temperature=sampling.temperature, seed=sampling.seed)
    with lm_context(lm):
        pred = compiled(db_schema=schema, dialect=dialect, hint=hint, question=question)
    return pred.sql or ""


#: framings that run a saved program: ``ToolSettings`` checks that it names one when built
PROGRAM_FRAMINGS: frozenset[str] = frozenset({"program"})

CHAT_PROMPTS: dict[str, Callable[..., list[dict[str, str]]]] = {"chat": chat_messages}
"""Framings whose request is one plain chat exchange, by name: the messages they send.

A batched engine can be sent exactly these messages (execution-guided selection decodes all its
candidates in one call over the greedy call's prompt); a framing that goes through a DSPy
adapter (``fields``, ``program``) is not here, and its candidates are sampled one by one.
The replies' token budget is :data:`CHAT_MAX_TOKENS`, the chat framing's.
"""


@dataclass
class SqlReply:
    """The query read out of a model's reply, and which output rules fired.

    Attributes:
        sql: The query ("" when the reply holds none).
        rules: The rules that changed the text, in order: ``fence`` (a fenced block was taken),
            ``open_fence`` (a fence never closed: the reply ran out), ``preamble`` (prose before
            the query), ``trailing`` (text after the statement), ``cut`` (the end of a reply that
            does not parse was dropped, line by line, down to what parses).
    """

    sql: str
    rules: list[str] = field(default_factory=list)


_FENCED = re.compile(r"```[ \t]*(?:sql|sqlite|SQL)?[ \t]*\n?(.*?)```", re.S)
_OPEN_FENCE = re.compile(r"```[ \t]*(?:sql|sqlite|SQL)?[ \t]*\n?(.*)$", re.S)
_START = re.compile(r"\b(SELECT|WITH)\b", re.I)
# a statement that is not a query, where a statement starts (text start, a new line, after ";"),
# in SQL's own shape so that prose ("Create an index to speed it up") does not match
_WRITE = re.compile(
    r"(?:^|\n|;)\s*(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|REPLACE\s+INTO"
    r"|DROP\s+(?:TABLE|VIEW|INDEX|SCHEMA|DATABASE|MACRO|SEQUENCE|TRIGGER)"
    r"|CREATE\s+(?:OR\s+REPLACE\s+|TEMP\w*\s+|UNIQUE\s+)*(?:TABLE|VIEW|INDEX|SCHEMA|MACRO|SEQUENCE|TRIGGER)"
    r"|ALTER\s+TABLE|ATTACH\b|DETACH\b|COPY\s+\S+\s+(?:TO|FROM)|PRAGMA\s+\w|INSTALL\s+\w|LOAD\s+\w"
    r"|SET\s+\w+\s*=|CALL\s+\w+\s*\(|TRUNCATE\b|VACUUM\b|EXPORT\s+DATABASE|IMPORT\s+DATABASE)",
    re.I,
)


def _statement_in(text: str) -> bool:
    """Does ``text`` hold a statement: a query, or a write (which the guard must see)?"""
    return bool(_START.search(text) or _WRITE.search(text))


def _statement_end(text: str) -> int | None:
    """Index of the first ``;`` outside quotes and comments, or None."""
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            return i
        i += 1
    return None


def sql_of_reply(text: str, dialect: str = "sqlite") -> SqlReply:
    """Read the one query out of a model's reply.

    In order: take the first fenced block (or, for a fence that never closes, everything after
    it); start at the first SELECT/WITH; end at the first semicolon outside quotes; if what
    remains does not parse, drop trailing lines until it does (prose after the query, or the
    clause a truncated reply left half-written). A reply that never parses is returned from its
    SELECT on, so the engine's error is what the run records. A reply holding a statement that is
    not a query (an INSERT, a DROP, a stacked write after a query, ...) is returned from its first
    statement on, uncut: the guard must see what the model wrote, never a query cut out of it.
    """
    rules: list[str] = []
    body = text.strip()
    fenced = _FENCED.search(body)
    if fenced and _statement_in(fenced.group(1)):
        body, rules = fenced.group(1), ["fence"]
    else:
        opened = _OPEN_FENCE.search(body)
        if opened and _statement_in(opened.group(1)):
            body, rules = opened.group(1), ["open_fence"]
    write = _WRITE.search(body)
    if write is not None:
        # never cut a query out of a write ("INSERT INTO t SELECT ...") nor drop a stacked write
        # ("SELECT 1; DROP TABLE t"): the reply goes to the guard as written, which rejects it
        begin = min(m.start() for m in (write, _START.search(body)) if m is not None)
        head = body[begin:].lstrip("; \n\t")
        return SqlReply(clean_sql(head), [*rules, "write"])
    start = _START.search(body)
    if start is None:
        return SqlReply(clean_sql(body), rules)
    if body[: start.start()].strip():
        rules.append("preamble")
    body = body[start.start() :]
    end = _statement_end(body)
    if end is not None:
        if body[end + 1 :].strip():
            rules.append("trailing")
        body = body[:end]
    body = body.strip()
    if parses_as_sql(body, dialect):
        return SqlReply(body, rules)
    lines = body.splitlines()
    for n in range(len(lines) - 1, 0, -1):
        chunk = "\n".join(lines[:n]).strip()
        if parses_as_sql(chunk, dialect):
            return SqlReply(chunk, [*rules, "cut"])
    return SqlReply(body, rules)


SQL_OUTPUT: dict[str, Callable[[str, str], str]] = {
    "clean": lambda text, dialect: clean_sql(text),
    "extract": lambda text, dialect: sql_of_reply(text, dialect).sql,
}
"""Output handling by name (``ToolSettings.sql_output``): reply text and dialect -> the query."""
