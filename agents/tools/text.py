"""Pull SQL and error text out of a user's request ("fix this: SELECT ... Error: ...")."""

from __future__ import annotations

import re
import unicodedata

import sqlglot
from sqlglot.errors import SqlglotError

from routerlab.agents.lexicon import LINKING_STOP_WORDS, plural_s

__all__ = ["extract_error", "extract_sql", "normalise_request", "parses_as_sql", "tokens"]

#: characters that render as nothing: a zero-width letter splits "DR\u200bOP" so no pattern matches
_INVISIBLE = dict.fromkeys(
    map(ord, "\u00ad\u034f\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff")
)


def normalise_request(text: str) -> str:
    """Return ``text`` as the routers' checks read it: NFKC-normalised, invisible characters removed.

    Full-width and compatibility letters become ASCII, so a disguised keyword matches like the
    plain one.
    """
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE)


_SQL_START = re.compile(r"\b(SELECT|WITH)\b", re.I)
_ENGINE_ERROR = re.compile(
    r"((?:Binder|Parser|Catalog|Conversion|Invalid Input|Syntax|Operational|Programming)\s*Error\b.*)", re.S
)
_IDENT = r"(?:\"[^\"]+\"|'[^']+'|`[^`]+`|\[[^\]]+\]|[\w.]+)"
#: engines' own messages, which carry no "Error" word when a user quotes them bare ("It answers:
#: no such column: x"); each is cut at the message's end so the request's prose stays out
_BARE_ENGINE_ERROR = re.compile(
    # SQLite
    rf"(no such (?:column|table|function|collation)\s*:\s*{_IDENT}"
    rf"|ambiguous column name\s*:\s*{_IDENT}"
    r"|near \"[^\"]*\"\s*:\s*syntax error"
    r"|misuse of (?:aggregate|window) function\s*\w*\(?\)?"
    # PostgreSQL
    rf"|(?:column|relation|function|table|schema)\s+{_IDENT}\s+does not exist"
    # MySQL
    rf"|Unknown column\s+{_IDENT}\s+in\s+{_IDENT}"
    rf"|Table\s+{_IDENT}\s+doesn't exist)",
    re.I,
)
_WORD = re.compile(r"[a-z0-9]+")


def parses_as_sql(text: str, dialect: str = "duckdb") -> bool:
    """True when ``text`` parses as exactly one SQL statement."""
    try:
        parsed = sqlglot.parse(text, read=dialect)
    # SqlglotError covers TokenError too: prose with an apostrophe ("last year's") does not tokenize
    except (SqlglotError, ValueError, RecursionError):
        return False
    return len([p for p in parsed if p is not None]) == 1


def extract_sql(text: str, dialect: str = "duckdb") -> str | None:
    """Return the SQL query embedded in a request, or None.

    Takes the span from the first SELECT/WITH keyword and shrinks it line by line from the end
    until it parses, so trailing prose ("Error: ...") is dropped.
    """
    m = _SQL_START.search(text)
    if not m:
        return None
    candidate = text[m.start() :]
    fenced = re.search(r"```(?:sql)?\s*(.*?)```", text, re.S | re.I)
    if fenced and _SQL_START.search(fenced.group(1)):
        candidate = fenced.group(1)
    lines = candidate.strip().splitlines()
    for end in range(len(lines), 0, -1):
        chunk = "\n".join(lines[:end]).strip().rstrip(";").strip()
        # cut at an inline error marker on the last line
        chunk = re.split(r"\s+(?:error|Error|ERROR)\s*:", chunk)[0].strip().rstrip(";").strip()
        if chunk and parses_as_sql(chunk, dialect):
            return chunk
    return None


def extract_error(text: str) -> str | None:
    """Return the error message quoted in a request, or None.

    Found by an engine's error class ("Binder Error: ...", "OperationalError: ..."), by an
    engine's own bare message (SQLite's "no such column: x", PostgreSQL's "column "x" does not
    exist", MySQL's "Unknown column 'x' in 'field list'"), or after "error:" / "exception:".
    """
    m = _ENGINE_ERROR.search(text)
    if m:
        return m.group(1).strip()
    m = _BARE_ENGINE_ERROR.search(text)
    if m:
        return m.group(1).strip()
    m = re.search(r"\b(?:error|exception)\s*:\s*(.+)$", text, re.I | re.S)
    return m.group(1).strip() if m else None


def tokens(text: str) -> list[str]:
    """Lower-case alphanumeric tokens (identifiers split on underscores)."""
    return _WORD.findall(text.lower().replace("_", " "))


def stems(text: str) -> set[str]:
    """Content-word stems for lexical schema linking: ``areas`` and ``area`` both give ``area``."""
    return {plural_s(t) for t in tokens(text) if t not in LINKING_STOP_WORDS and len(t) >= 2}
