"""What the intent mixer's generators share: the databases of a mix, parsed queries, derived examples."""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from routerlab.agents.db import Database, open_database
from routerlab.agents.errors import DatabaseError
from routerlab.agents.plan import CHAINS
from routerlab.agents.state import Intent
from routerlab.benchmarks.example import Example

__all__ = ["Databases", "derived", "parse_query", "table_names", "words"]


class Databases:
    """Opens each database once per mix; ``None`` for a file that cannot be opened."""

    def __init__(self) -> None:
        self._cache: dict[str, Database | None] = {}

    def get(self, path: str) -> Database | None:
        """The database at ``path``, opened on first use (None: it does not open)."""
        if path not in self._cache:
            try:
                self._cache[path] = open_database(path)
            except DatabaseError:
                self._cache[path] = None  # the example then keeps its sql intent
        return self._cache[path]


def parse_query(sql: str, dialect: str | None) -> exp.Expr | None:
    """The query ``sql`` parsed, or None when it does not parse as one."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (ParseError, TokenError, ValueError):
        return None
    return tree if isinstance(tree, exp.Query) else None


def derived(base: Example, intent: Intent, question: str, **fields: Any) -> Example:
    """A request of ``intent`` made from ``base``: its database, split and dataset, ``meta["mixed_from"]``."""
    meta = {"mixed_from": base.id, **fields.pop("meta", {})}
    return Example(
        id=f"{base.id}-{intent}",
        question=question,
        db_id=base.db_id,
        db_path=base.db_path,
        intent=intent,
        expected_chain=CHAINS[intent],
        split=base.split,
        dataset=base.dataset,
        meta=meta,
        **fields,
    )


def words(identifier: str) -> str:
    """``birth_year`` / ``BirthYear`` -> ``birth year``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", identifier)
    return re.sub(r"[_\s]+", " ", spaced).strip().lower()


def table_names(tree: exp.Expr) -> list[str]:
    """Real tables read by the query, in order of appearance (CTE names excluded)."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names: list[str] = []
    for t in tree.find_all(exp.Table):
        if t.name and t.name.lower() not in ctes and t.name not in names:
            names.append(t.name)
    return names
