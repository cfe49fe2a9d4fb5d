"""Spider-style SQL hardness (easy / medium / hard / extra), computed with sqlglot.

Spider's evaluation script counts three things on the top-level query and thresholds them:

* **component1**: WHERE, GROUP BY, ORDER BY, LIMIT present (1 each), one per joined table beyond
  the first, one per OR and per LIKE among the WHERE/HAVING conditions;
* **component2**: nested queries: subqueries used by the top-level query and set operations
  (UNION, INTERSECT, EXCEPT);
* **others**: one each for more than one aggregation, more than one selected column, more than
  one WHERE condition, more than one GROUP BY column.

Where Spider's own parser could not express a construct we extend it the natural way: subqueries
in FROM, in the select list and CTEs count as nested queries; every set operator of a chain
counts; window functions count as aggregations; ILIKE counts as LIKE; QUALIFY is treated like
HAVING; ORDER BY/LIMIT after a set operation belong to the top-level query.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

__all__ = ["HardnessCounts", "hardness_counts", "sql_hardness"]


@dataclass(frozen=True)
class HardnessCounts:
    """The three counts Spider thresholds."""

    component1: int
    component2: int
    others: int


def _arg(node: exp.Expr, name: str) -> exp.Expr | None:
    # sqlglot renamed "from"/"with" to "from_"/"with_"; accept both spellings
    return node.args.get(name) or node.args.get(f"{name}_")


def _is_query(node: exp.Expr) -> bool:
    return isinstance(node, exp.Select | exp.SetOperation)


def _walk_same_level(node: exp.Expr | None):
    """Yield ``node``'s descendants without entering nested queries."""
    if node is None:
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in current.iter_expressions():
            if not _is_query(child):
                stack.append(child)


def _nested_queries(node: exp.Expr | None) -> int:
    """Queries directly nested in ``node`` (not counting queries nested inside those)."""
    if node is None:
        return 0
    count = 0
    stack = list(node.iter_expressions())
    while stack:
        current = stack.pop()
        if _is_query(current):
            count += 1
            continue
        stack.extend(current.iter_expressions())
    return count


def _conditions(node: exp.Expr | None) -> list[exp.Expr]:
    """The leaf conditions of an AND/OR tree (parentheses looked through)."""
    if node is None:
        return []
    if isinstance(node, exp.Where | exp.Having | exp.Qualify | exp.Paren):
        return _conditions(node.this)
    if isinstance(node, exp.And | exp.Or):
        return _conditions(node.this) + _conditions(node.expression)
    return [node]


def _ors(node: exp.Expr | None) -> int:
    if node is None:
        return 0
    if isinstance(node, exp.Where | exp.Having | exp.Qualify | exp.Paren):
        return _ors(node.this)
    if isinstance(node, exp.And | exp.Or):
        return int(isinstance(node, exp.Or)) + _ors(node.this) + _ors(node.expression)
    return 0


def _is_like(cond: exp.Expr) -> bool:
    inner = cond.this if isinstance(cond, exp.Not) else cond
    return isinstance(inner, exp.Like | exp.ILike)


def _has_agg(node: exp.Expr) -> bool:
    return any(isinstance(n, exp.AggFunc | exp.Window) for n in _walk_same_level(node))


def _resolve_order_key(key: exp.Expr, select: exp.Select) -> exp.Expr:
    """The select expression an ORDER BY ordinal or alias stands for (else the key itself)."""
    projections = select.expressions
    if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
        position = int(key.this)
        if 1 <= position <= len(projections):
            return projections[position - 1]
    if isinstance(key, exp.Column) and not key.table:
        for projection in projections:
            if isinstance(projection, exp.Alias) and projection.alias == key.name:
                return projection.this
    return key


def _group_columns(select: exp.Select) -> int:
    group = select.args.get("group")
    if group is None:
        return 0
    if group.args.get("all"):
        # GROUP BY ALL groups by every selected expression that is not an aggregate
        return sum(1 for e in select.expressions if not _has_agg(e))
    return len(group.expressions)


def _top_select(root: exp.Expr) -> tuple[exp.Select, int, exp.Expr]:
    """Split the top-level query into the parts Spider's counts look at.

    Returns:
        The leftmost SELECT, the number of set operators chained to it, and the node that holds
        the query's ORDER BY/LIMIT (the set operation when there is one).
    """
    set_ops = 0
    node = root
    while isinstance(node, exp.SetOperation):
        set_ops += 1 + _count_set_ops(node.expression)
        node = node.this
    while isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.SetOperation):  # a parenthesised chain on the left
        select, more, _ = _top_select(node)
        return select, set_ops + more, root
    if not isinstance(node, exp.Select):
        raise ValueError(f"not a query: {root.sql()[:80]!r}")
    return node, set_ops, root


def _count_set_ops(node: exp.Expr) -> int:
    while isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.SetOperation):
        return 1 + _count_set_ops(node.this) + _count_set_ops(node.expression)
    return 0


def hardness_counts(sql: str, dialect: str = "duckdb") -> HardnessCounts:
    """Count Spider's hardness components of one query.

    Args:
        sql: One SELECT statement (may use CTEs and set operations).
        dialect: sqlglot dialect to parse with.

    Returns:
        The component1, component2 and others counts.

    Raises:
        ValueError: If ``sql`` is not a single query.
    """
    try:
        root = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        raise ValueError(f"cannot parse SQL: {exc}") from exc
    select, set_ops, outer = _top_select(root)

    where = select.args.get("where")
    having = select.args.get("having") or select.args.get("qualify")
    order = outer.args.get("order") or select.args.get("order")
    limit = outer.args.get("limit") or select.args.get("limit")
    from_ = _arg(select, "from")
    joins = select.args.get("joins") or []
    tables = (1 if from_ is not None else 0) + len(joins)
    conds = _conditions(where)
    having_conds = _conditions(having)

    comp1 = sum(1 for present in (where, select.args.get("group"), order, limit) if present is not None)
    comp1 += max(tables - 1, 0)
    comp1 += _ors(where) + _ors(having)
    comp1 += sum(1 for c in conds + having_conds if _is_like(c))

    # nested queries hang off the top-level SELECT's clauses and CTEs (of the SELECT or the chain)
    comp2 = set_ops
    for holder in {id(n): n for n in (select, outer, root)}.values():
        with_ = _arg(holder, "with")
        comp2 += len(with_.expressions) if with_ is not None else 0
    for clause in (from_, where, having, select.args.get("group")):
        comp2 += _nested_queries(clause)
    for part in [*joins, *select.expressions]:
        comp2 += _nested_queries(part)

    units = list(select.expressions) + conds + having_conds
    units += list(select.args["group"].expressions) if select.args.get("group") else []
    units += [_resolve_order_key(o.this, select) for o in order.expressions] if order is not None else []
    aggs = sum(1 for u in units if _has_agg(u))
    others = sum(
        (
            aggs > 1,
            len(select.expressions) > 1,
            len(conds) > 1,
            _group_columns(select) > 1,
        )
    )
    return HardnessCounts(component1=comp1, component2=comp2, others=others)


def sql_hardness(sql: str, dialect: str = "duckdb") -> str:
    """Spider's hardness level of a query.

    Args:
        sql: One SELECT statement.
        dialect: sqlglot dialect to parse with.

    Returns:
        ``"easy"``, ``"medium"``, ``"hard"`` or ``"extra"``.

    Raises:
        ValueError: If ``sql`` is not a single parseable query.
    """
    c = hardness_counts(sql, dialect)
    c1, c2, o = c.component1, c.component2, c.others
    if c1 <= 1 and o == 0 and c2 == 0:
        return "easy"
    if (o <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and o < 2 and c2 == 0):
        return "medium"
    if (o > 2 and c1 <= 2 and c2 == 0) or (2 < c1 <= 3 and o <= 2 and c2 == 0) or (c1 <= 1 and o == 0 and c2 <= 1):
        return "hard"
    return "extra"
