"""Every database a run will use, checked before the run: it opens, and it has its examples' tables.

A Spider folder with one 0-byte database ran to FINISHED with exit 0: that database's examples
were stored as crashes and scored 0, so the router's route rate fell for a harness fault. The
check here runs once per database over the examples a run selected, whatever loader produced
them (``spider``, ``bird``, ``text2sql_data``, a table file, and any loader added later), so no
loader has to remember it.

A database is bad when it does not open (missing, empty, neither SQLite nor DuckDB, unreadable)
or lacks a table its examples' gold SQL reads. ``routerlab run`` refuses a bad one (exit 2,
naming the file, the examples and the fix), or with ``--skip-bad-databases`` leaves its examples
out as ``not_run`` (error class ``bad_database``) and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from routerlab.agents.db import open_database
from routerlab.agents.errors import DatasetError
from routerlab.benchmarks.example import Example

__all__ = ["BAD_DATABASE_CLASS", "BadDatabase", "check_databases", "needed_tables"]

#: error class of an example left out because its database is bad (outcome ``not_run``)
BAD_DATABASE_CLASS = "bad_database"


@dataclass(frozen=True)
class BadDatabase:
    """A database that cannot serve its examples.

    Attributes:
        path: The file.
        reason: What is wrong (does not open: ...; lacks tables ...).
        examples: Ids of the selected examples that use it.
    """

    path: str
    reason: str
    examples: tuple[str, ...]

    def line(self) -> str:
        """One line for a message: the file, why, and which examples."""
        shown = ", ".join(self.examples[:5]) + (f" and {len(self.examples) - 5} more" if len(self.examples) > 5 else "")
        return f"{self.path}: {self.reason} (used by {len(self.examples)} example(s): {shown})"


def needed_tables(sql: str | None, dialect: str) -> set[str]:
    """Lower-cased names of the tables ``sql`` reads (CTE names excluded; empty when it does not parse)."""
    if not sql:
        return set()
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError, RecursionError):
        return set()  # unparsable gold SQL is the scorer's business, not the database's
    names: set[str] = set()
    for tree in trees:
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        names |= {t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes}
    return names


def _problem(path: str, examples: Sequence[Example]) -> str | None:
    """Why ``path`` cannot serve ``examples`` (None: it can)."""
    try:
        db = open_database(path)
        tables = {t.name.lower() for t in db.tables()}
    except Exception as exc:  # any failure to open or read it is the finding
        what = getattr(exc, "what", None) or f"{type(exc).__name__}: {exc}"
        return f"does not open ({str(what)[:200]})"
    if not tables:
        return "has no tables (an empty or truncated file)"
    needed: set[str] = set()
    for e in examples:
        needed |= needed_tables(e.gold_sql, db.dialect)
    missing = sorted(needed - tables)
    if missing:
        return f"lacks table(s) {', '.join(missing)} that its examples' gold SQL reads"
    return None


def check_databases(examples: Sequence[Example]) -> list[BadDatabase]:
    """The bad databases among those ``examples`` use, each opened once, in first-use order."""
    by_path: dict[str, list[Example]] = {}
    for e in examples:
        by_path.setdefault(e.db_path, []).append(e)
    bad = []
    for path, users in by_path.items():
        reason = _problem(path, users)
        if reason is not None:
            bad.append(BadDatabase(path, reason, tuple(e.id for e in users)))
    return bad


def bad_databases_error(bad: Sequence[BadDatabase]) -> DatasetError:
    """The exit-2 error of a run whose databases are bad (before anything is written)."""
    return DatasetError(
        f"{len(bad)} database(s) cannot serve their examples",
        expected="every database the run uses opens and has the tables its examples read",
        found="; ".join(b.line() for b in bad),
        fix="restore the file(s) (copy or download them again), or pass --skip-bad-databases to leave "
        "their examples out as not run",
        details={"databases": [b.path for b in bad], "option": "--skip-bad-databases"},
    )
