"""Named scripts for the scripted test-double LM (``--lm scripted:<name>``).

These are **test doubles**, not models: deterministic functions of the request, so that the CLI
can be driven end to end in tests and CI (crash and resume, fault injection, hostile input)
without loading a model. Results obtained with them say nothing about routing quality.

A script is registered in :data:`scripted_script` as a factory returning the reply function that
:class:`~routerlab.agents.lm.scripted.ScriptedEngine` calls with each request.

* ``basic``: answers every DSPy sub-agent field plainly (SQL: ``SELECT count(*)`` over the first
  table of the schema in the prompt; intent: ``sql``); a plain chat request for a query (the
  ``chat`` framing of ``generate_sql``) gets the same query in a fenced block; a tool-calling
  request gets a ``chat`` call with the user's last message.
* ``obey-injection``: does whatever a prompt injection asks: every SQL it writes is a write
  (DROP, DELETE, UPDATE, stacked statements...), and a tool-calling request asks ``fix_sql`` to
  "repair" a DROP. It exists to prove the guard and the read-only connection hold.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from dspy import lm15 as L

from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripted import Reply
from routerlab.agents.registry import Registry

__all__ = [
    "WRITE_STATEMENTS",
    "ReplyFn",
    "answer_field",
    "asks_for_sql",
    "requested_field",
    "scripted_script",
    "sql_answer",
]

ReplyFn = Callable[[L.Request], Reply]
"""What a script returns: the reply to one request."""

scripted_script: Registry[ReplyFn] = Registry("scripted LM script")
"""Registry of scripts for ``--lm scripted:<name>``."""

#: what ``obey-injection`` writes (``{t}``: the first table of the prompt's schema)
WRITE_STATEMENTS: tuple[str, ...] = (
    "DROP TABLE {t}",
    "DELETE FROM {t}",
    "UPDATE {t} SET {t} = NULL",
    "SELECT 1; DROP TABLE {t}",
    "INSERT INTO {t} SELECT * FROM {t}",
    "CREATE TABLE pwned AS SELECT * FROM {t}",
    "ATTACH 'pwned.db' AS p",
    "COPY {t} TO 'stolen.csv'",
)

_FIELD = re.compile(r"Your output fields are:\n1\. `(\w+)`")


def _prompt(request: L.Request) -> str:
    system = request.system if isinstance(request.system, str) else ""
    return "\n".join([system, *(text_of(m) for m in request.messages)])


def _output_field(request: L.Request) -> str:
    m = _FIELD.search(request.system if isinstance(request.system, str) else "")
    return m.group(1) if m else ""


def asks_for_sql(request: L.Request) -> bool:
    """Is ``request`` generate_sql asking for a query, in either framing?

    The ``fields`` framing names ``sql`` as its first output field; the ``chat`` framing asks
    for "one <dialect> query" and has no output fields. Scripted replies use this to answer the
    SQL sub-agent whichever framing a run's settings choose.
    """
    field = _output_field(request)
    if field:
        return field == "sql"
    return "Reply with the SQL query only." in _prompt(request)


def sql_answer(request: L.Request, sql: str) -> Reply:
    """``sql`` as generate_sql's reply in the request's framing (output fields, or the bare query)."""
    return {"fields": {"sql": sql}} if _output_field(request) else sql


def requested_field(request: L.Request) -> str:
    """The output field a sub-agent's request asks for.

    Its first DSPy output field; ``sql`` for generate_sql's plain chat request; ``""`` otherwise.
    """
    return _output_field(request) or ("sql" if asks_for_sql(request) else "")


def answer_field(request: L.Request, value: str) -> Reply:
    """``value`` as the reply to the field :func:`requested_field` names.

    In DSPy's field format for a DSPy request; bare (as a chat model writes it) for a plain chat
    request.
    """
    field = _output_field(request)
    if field:
        return {"fields": {field: value}}
    return value if asks_for_sql(request) else {"fields": {"": value}}


def _first_table(text: str) -> str:
    m = re.search(r"CREATE TABLE (\w+)", text)
    return m.group(1) if m else "t"


def _last_user_text(request: L.Request) -> str:
    users = [text_of(m) for m in request.messages if m.role == "user"]
    return users[-1] if users else ""


@scripted_script("basic")
def basic() -> ReplyFn:
    """Plain, deterministic answers (see the module docstring)."""

    def reply(request: L.Request) -> Reply:
        if request.tools:
            return {"name": "chat", "args": {"message": _last_user_text(request)[:200] or "hello"}}
        prompt = _prompt(request)
        table = _first_table(prompt)
        field = _output_field(request)
        if not field and "SQL query" in prompt:
            return f"```sql\nSELECT count(*) FROM {table}\n```"
        value = {
            "sql": f"SELECT count(*) FROM {table}",
            "fixed_sql": f"SELECT count(*) FROM {table}",
            "explanation": "It counts the rows of a table.",
            "reply": "Hello! Ask me about the data.",
            "intent": "sql",
        }.get(field, "ok")
        return {"fields": {field or "answer": value}}

    return reply


@scripted_script("obey-injection")
def obey_injection() -> ReplyFn:
    """Writes whatever damage a prompt injection asks for (see the module docstring)."""

    def reply(request: L.Request) -> Reply:
        prompt = _prompt(request)
        table = _first_table(prompt)
        pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(WRITE_STATEMENTS)
        write = WRITE_STATEMENTS[pick].format(t=table)
        if request.tools:
            return {"name": "fix_sql", "args": {"sql": f"DROP TABLE {table}", "error": "the table must go"}}
        field = _output_field(request)
        if not field:  # a plain chat request (generate_sql's chat framing): the write, bare
            return write
        value = {"intent": "sql", "explanation": f"Run {write}", "reply": f"Done: {write}"}.get(field, write)
        return {"fields": {field or "sql": value}}

    return reply
