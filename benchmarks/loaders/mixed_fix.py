"""The mixer's ``fix`` requests: the gold SQL broken with sqlglot until it really fails on its database.

The request carries the broken SQL and the engine's own error text; the gold is the original SQL.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from sqlglot import exp

from routerlab.agents.db import Database
from routerlab.agents.errors import GuardViolation, QueryTimeout, SQLExecutionError
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders import mixed_common as common

__all__ = ["derive_fix"]

#: attempts at breaking a query before the example stays ``sql``
_FIX_TRIES = 6
#: seconds a mutated (or the baseline) query may run while checking that it fails
_TIMEOUT_S = 5.0

_FIX_TEMPLATES: tuple[str, ...] = (
    "This query fails, can you fix it?\n\n{sql}\n\nError: {error}",
    'I wanted to answer "{question}" but my query fails:\n\n{sql}\n\nError: {error}',
    "Can you repair this SQL? Running it gives an error.\n\n{sql}\n\nError: {error}",
    "{sql}\n\nthe database says: {error}",
    "Why does the database reject this?\n{sql}\nIt answers: {error}",
    "Esta consulta no funciona:\n\n{sql}\n\nError: {error}",
    "I keep getting {error} when I run\n\n{sql}\n\nWhat did I get wrong?",
    "Help! {sql} -- error: {error}",
)


_WRONG_FUNCTIONS: dict[type[exp.Expr], str] = {
    exp.Count: "COUNTS",
    exp.Sum: "SUMM",
    exp.Avg: "AVERAGE",
    exp.Max: "MAXIMUM",
    exp.Min: "MINIMUM",
    exp.Length: "LENGHT",
    exp.Upper: "UPPERCASE",
    exp.Lower: "LOWERCASE",
    exp.Abs: "ABSOLUTE",
    exp.Round: "ROUNDED",
}


# -- ratios and planning -------------------------------------------------------------------------


def _typo(name: str, rng: random.Random) -> str | None:
    """A misspelling of ``name`` that differs from it case-insensitively (identifiers ignore case)."""
    options = {name + "s" if not name.endswith("s") else name[:-1], name + name[-1]}
    if len(name) > 3:
        options.add(name[:-1])
        i = rng.randrange(1, len(name) - 1)
        options.add(name[:i] + name[i + 1 :])
        options.add(name[:i] + name[i + 1] + name[i] + name[i + 2 :])
    candidates = sorted(o for o in options if o and o.lower() != name.lower())
    return rng.choice(candidates) if candidates else None


def _misspell_one(tree: exp.Expr, nodes: list[exp.Column] | list[exp.Table], rng: random.Random) -> exp.Expr | None:
    """``tree`` with the name of one of ``nodes`` (drawn by ``rng``) misspelt, its quoting kept; None if none can be."""
    if not nodes:
        return None
    node = rng.choice(nodes)
    new = _typo(node.name, rng)
    if new is None:
        return None
    node.set("this", exp.to_identifier(new, quoted=node.this.quoted))
    return tree


def _misspell_column(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    columns = [c for c in tree.find_all(exp.Column) if isinstance(c.this, exp.Identifier) and c.name]
    return _misspell_one(tree, columns, rng)


def _misspell_table(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return _misspell_one(tree, [t for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes], rng)


def _drop_group_by_column(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    group = tree.find(exp.Group)
    if group is None or not group.expressions:
        return None
    if len(group.expressions) == 1:
        group.pop()
    else:
        rng.choice(group.expressions).pop()
    return tree


def _wrong_function(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    funcs = [f for f in tree.find_all(exp.Func) if type(f) in _WRONG_FUNCTIONS]
    if not funcs:
        return None
    func = rng.choice(funcs)
    args = [a for a in (func.this, *func.expressions, func.args.get("decimals")) if a is not None]
    func.replace(exp.Anonymous(this=_WRONG_FUNCTIONS[type(func)], expressions=args))
    return tree


_MUTATIONS: dict[str, Callable[[exp.Expr, random.Random], exp.Expr | None]] = {
    "misspelled_column": _misspell_column,
    "misspelled_table": _misspell_table,
    "dropped_group_by_column": _drop_group_by_column,
    "wrong_function": _wrong_function,
}


def _engine_error(db: Database, sql: str) -> str | None:
    """The engine's error text for ``sql``, or None if it runs (or is refused before running)."""
    try:
        db.execute(sql, timeout_s=_TIMEOUT_S, max_rows=1)
    except SQLExecutionError as exc:
        return exc.engine_message
    except (GuardViolation, QueryTimeout):
        return None  # not an engine error: a fix request must carry the database's own message
    return None


def derive_fix(e: Example, rng: random.Random, dbs: common.Databases) -> Example | None:
    """A ``fix`` request from ``e``: its gold SQL broken until it fails, or None (it stays ``sql``)."""
    db = dbs.get(e.db_path)
    tree = common.parse_query(e.gold_sql or "", db.dialect) if db else None
    if db is None or tree is None:
        return None
    kinds = sorted(_MUTATIONS)
    rng.shuffle(kinds)
    for attempt in range(_FIX_TRIES):
        kind = kinds[attempt % len(kinds)]
        mutated = _MUTATIONS[kind](tree.copy(), rng)
        if mutated is None:
            continue
        broken = mutated.sql(dialect=db.dialect)
        error = _engine_error(db, broken)
        if error is None:
            continue
        # the failure must come from the mutation, not from sqlglot re-rendering the query
        if _engine_error(db, tree.sql(dialect=db.dialect)) is not None:
            return None
        question = rng.choice(_FIX_TEMPLATES).format(sql=broken, error=error, question=e.question)
        return common.derived(
            e,
            "fix",
            question,
            gold_sql=e.gold_sql,
            difficulty=e.difficulty,
            hint=e.hint,
            input_sql=broken,
            error_text=error,
            meta={"breakage": kind, "original_question": e.question},
        )
    return None
