"""Deterministic SQL repair: map unknown or mis-cased identifiers to the schema's real ones.

A small model often writes a query that is right but for one identifier: ``pet_type`` for
``PetType``, ``T1.Make`` where ``Make`` lives on the other side of the join, ``singers`` for
``singer``. Each such query fails, and a ``fix_sql`` call costs seconds of CPU. This module
resolves every table and column of the query against the database's catalog with sqlglot's
scopes (aliases, subqueries, CTEs, correlated references) and rewrites only what does not
resolve, choosing the closest real name. Whatever it cannot resolve is reported, so that only
those queries reach ``fix_sql``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

if TYPE_CHECKING:
    from routerlab.agents.db import TableInfo

__all__ = [
    "Catalog",
    "ForeignKey",
    "Repair",
    "catalog_of",
    "closest_name",
    "foreign_keys_of",
    "query_identifiers",
    "repair_sql",
]

#: ``table name -> column names``, exactly as the database spells them
Catalog = Mapping[str, Sequence[str]]
#: ``(table, column, referenced table, referenced column)``
ForeignKey = tuple[str, str, str, str]

#: similarity a misspelt name needs to be mapped (difflib ratio of the normalised names)
_CUTOFF = 0.75


@dataclass(frozen=True)
class Repair:
    """The outcome of :func:`repair_sql`.

    Attributes:
        sql: The repaired query (the input text unchanged when nothing was rewritten).
        changes: One ``kind old -> new`` line per rewritten identifier.
        unresolved: Identifiers no real one could be found for (``fix_sql`` gets those queries).
    """

    sql: str
    changes: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()


def catalog_of(tables: Iterable[object]) -> dict[str, list[str]]:
    """The catalog of ``TableInfo`` objects (``Database.tables()``)."""
    return {t.name: [c.name for c in t.columns] for t in tables}  # type: ignore[attr-defined]


def _norm(name: str) -> str:
    # PetType, pet_type and "Pet Type" are one name to a reader; compare them as one
    return re.sub(r"[^0-9a-z]", "", name.lower())


def closest_name(wanted: str, candidates: Iterable[str]) -> str | None:
    """The real name ``wanted`` most plausibly means, or None when none is close enough.

    In order: the same name in another case; the same name ignoring case, underscores and
    spaces; one unique candidate that contains the other as a whole prefix or suffix
    (``singer_name`` -> ``Name``); the closest by difflib ratio, if unique at that score and
    at least 0.75.
    """
    cands = list(dict.fromkeys(candidates))
    for test in (lambda c: c == wanted, lambda c: c.lower() == wanted.lower(), lambda c: _norm(c) == _norm(wanted)):
        hits = [c for c in cands if test(c)]
        if len(hits) == 1:
            return hits[0]
    w = _norm(wanted)
    if not w:
        return None
    affix = [
        c
        for c in cands
        if len(_norm(c)) >= 3
        and (w.endswith(_norm(c)) or w.startswith(_norm(c)) or _norm(c).endswith(w) or _norm(c).startswith(w))
    ]
    if len(affix) == 1:
        return affix[0]
    scored = sorted(((difflib.SequenceMatcher(None, w, _norm(c)).ratio(), c) for c in cands), reverse=True)
    if scored and scored[0][0] >= _CUTOFF and (len(scored) == 1 or scored[1][0] < scored[0][0]):
        return scored[0][1]
    return None


def _ident(name: str, dialect: str) -> exp.Identifier:
    safe = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None
    quoted = not safe or name.upper() in _reserved(dialect)
    return exp.to_identifier(name, quoted=quoted)


def _reserved(dialect: str) -> frozenset[str]:
    try:
        return frozenset(w.upper() for w in sqlglot.Dialect.get_or_raise(dialect).tokenizer_class.KEYWORDS)
    except (SqlglotError, AttributeError, ValueError):
        return frozenset()


def _sources(scope: Scope | None) -> tuple[dict[str, str], dict[str, set[str] | None]]:
    """``alias -> real table`` and ``alias -> output columns`` of derived tables, outer scopes too.

    Keys are lower-cased (SQLite and DuckDB resolve unquoted names case-insensitively). The
    innermost scope comes first and shadows outer ones, as it does in SQL; a derived table
    whose outputs cannot be listed maps to None.
    """
    tables: dict[str, str] = {}
    derived: dict[str, set[str] | None] = {}
    while scope is not None:
        for alias, source in scope.sources.items():
            key = alias.lower()
            if key in tables or key in derived:
                continue
            if isinstance(source, exp.Table):
                tables[key] = source.name
            elif isinstance(source, Scope):
                selects = getattr(source.expression, "selects", None)
                derived[key] = None if selects is None else {s.alias_or_name.lower() for s in selects}
        scope = scope.parent
    return tables, derived


def _select_aliases(scope: Scope) -> set[str]:
    selects = getattr(scope.expression, "selects", None) or []
    return {s.alias.lower() for s in selects if isinstance(s, exp.Alias)}


def _find(name: str, columns: Sequence[str]) -> str | None:
    hits = [c for c in columns if c.lower() == name.lower()]
    return hits[0] if len(hits) == 1 else None


class _Repairer:
    def __init__(self, catalog: Catalog, dialect: str) -> None:
        self.catalog = {t: list(cols) for t, cols in catalog.items()}
        self.dialect = dialect
        self.changes: list[str] = []
        self.unresolved: list[str] = []
        #: ids of the columns rewritten or left unresolved (their join conditions are suspect)
        self.suspect: set[int] = set()
        #: columns found on no table of their query (a table may be missing from the FROM)
        self.missing: list[exp.Column] = []

    def _real_table(self, name: str) -> str | None:
        return name if name in self.catalog else _find(name, list(self.catalog))

    def tables(self, ast: exp.Expr) -> None:
        ctes = {c.alias_or_name.lower() for c in ast.find_all(exp.CTE)}
        for t in ast.find_all(exp.Table):
            name = t.name
            if not name or name.lower() in ctes or self._real_table(name) == name:
                continue
            if self._real_table(name) is not None and not t.this.quoted:
                continue  # only the case differs, and unquoted names ignore case
            real = closest_name(name, self.catalog)
            if real is None:
                self.unresolved.append(f"table {name}")
                continue
            t.set("this", _ident(real, self.dialect))
            self.changes.append(f"table {name} -> {real}")

    def columns(self, ast: exp.Expr) -> None:
        seen: set[int] = set()
        # innermost scopes first: a correlated reference is resolved where it is written
        for scope in traverse_scope(ast):
            tables, derived = _sources(scope)
            aliases = _select_aliases(scope)
            for col in scope.columns:
                if col.name == "*" or not col.name or id(col) in seen:
                    continue
                seen.add(id(col))
                if col.table:
                    self._qualified(col, tables, derived)
                else:
                    self._bare(col, tables, derived, aliases)

    def _rename(self, col: exp.Column, new: str, table_alias: str | None = None) -> None:
        if table_alias is None and new.lower() == col.name.lower() and not col.this.quoted:
            return  # only the case differs, and unquoted names ignore case
        old = col.sql(dialect=self.dialect)
        self.suspect.add(id(col))
        col.set("this", _ident(new, self.dialect))
        if table_alias is not None:
            col.set("table", exp.to_identifier(table_alias))
        self.changes.append(f"column {old} -> {col.sql(dialect=self.dialect)}")

    def _qualified(self, col: exp.Column, tables: dict[str, str], derived: dict[str, set[str] | None]) -> None:
        q, name = col.table.lower(), col.name
        if q in derived:
            return
        table = tables.get(q)
        if table is None:
            self.unresolved.append(f"column {col.sql(dialect=self.dialect)} (no table {col.table} in FROM)")
            self.suspect.add(id(col))
            return
        cols = self.catalog.get(self._real_table(table) or "", [])
        exact = _find(name, cols)
        if exact is not None:
            if exact != name:
                self._rename(col, exact)
            return
        # the column exists, exactly, on another table of the query: the model put it on the
        # wrong side of a join
        owners = [a for a, t in tables.items() if _find(name, self.catalog.get(self._real_table(t) or "", []))]
        if len(owners) == 1:
            owner_cols = self.catalog[self._real_table(tables[owners[0]]) or ""]
            self._rename(col, _find(name, owner_cols) or name, _alias_spelling(col, owners[0]))
            return
        near = closest_name(name, cols)
        if near is not None:
            self._rename(col, near)
            return
        self._anywhere(col, tables)

    def _bare(
        self, col: exp.Column, tables: dict[str, str], derived: dict[str, set[str] | None], aliases: set[str]
    ) -> None:
        name = col.name
        if name.lower() in aliases:
            return
        if any(out is None or name.lower() in out for out in derived.values()):
            return
        spellings = {_find(name, self.catalog.get(self._real_table(t) or "", [])) for t in tables.values()} - {None}
        if spellings:
            if len(spellings) == 1 and name not in spellings:
                self._rename(col, spellings.pop())  # type: ignore[arg-type]
            return
        if self.dialect == "sqlite" and col.this.quoted:
            # SQLite reads a double-quoted name that is no column as a string literal
            return
        self._anywhere(col, tables)

    def _anywhere(self, col: exp.Column, tables: dict[str, str]) -> None:
        """Closest column over every table of the scope; qualified when several tables are joined."""
        name = col.name
        pool: dict[str, str] = {}
        for alias, t in tables.items():
            for c in self.catalog.get(self._real_table(t) or "", []):
                pool.setdefault(c, alias)
        near = closest_name(name, pool)
        if near is None:
            self.unresolved.append(f"column {col.sql(dialect=self.dialect)}")
            self.suspect.add(id(col))
            self.missing.append(col)
            return
        qualifier = pool[near] if len(tables) > 1 else None
        self._rename(col, near, None if qualifier is None else _alias_spelling(col, qualifier))

    def missing_tables(self, foreign_keys: Sequence[ForeignKey]) -> None:
        """Join the table a missing column lives on, when one foreign key links it to the query.

        ``SELECT Name FROM poker_player`` where ``Name`` is on ``people``, which
        ``poker_player.People_ID`` references, becomes ``... JOIN people ON
        poker_player.People_ID = people.People_ID`` with the column qualified. A column found on
        several tables outside the query, or a table linked to it by more than one key, is left
        unresolved.
        """
        for col in self.missing:
            select = col.find_ancestor(exp.Select)
            if select is None:
                continue
            from_ = select.args.get("from_") or select.args.get("from")
            if from_ is None or not isinstance(from_.this, exp.Table):
                continue
            joined = [from_.this] + [j.this for j in select.args.get("joins") or []]
            if not all(isinstance(t, exp.Table) for t in joined):
                continue
            inside = {t.name.lower() for t in joined}
            links = []
            for owner, cols in self.catalog.items():
                if owner.lower() in inside or _find(col.name, cols) is None:
                    continue
                for t, c, rt, rc in foreign_keys:
                    for src in joined:
                        if t.lower() == src.name.lower() and rt.lower() == owner.lower():
                            links.append((owner, src, c, rc))
                        elif rt.lower() == src.name.lower() and t.lower() == owner.lower():
                            links.append((owner, src, rc, c))
            if len(links) != 1:
                continue
            owner, src, src_col, owner_col = links[0]
            on = exp.EQ(
                this=exp.column(_ident(src_col, self.dialect), table=exp.to_identifier(src.alias_or_name)),
                expression=exp.column(_ident(owner_col, self.dialect), table=_ident(owner, self.dialect)),
            )
            join = exp.Join(this=exp.Table(this=_ident(owner, self.dialect)), on=on)
            select.set("joins", [*(select.args.get("joins") or []), join])
            old = col.sql(dialect=self.dialect)
            col.set("this", _ident(_find(col.name, self.catalog[owner]) or col.name, self.dialect))
            col.set("table", _ident(owner, self.dialect))
            self.unresolved = [u for u in self.unresolved if u != f"column {old}"]
            self.changes.append(f"join {owner} ON {on.sql(dialect=self.dialect)} for column {old}")

    def joins(self, ast: exp.Expr, foreign_keys: Sequence[ForeignKey]) -> None:
        """Rewrite a suspect ``JOIN ... ON a = b`` to the one foreign key linking its tables.

        Suspect: a column of the condition was rewritten or is unknown; both sides name the same
        table (``T2.MakeId = T2.MakeId`` after a column moved across the join); or the two
        tables are linked by a foreign key but the condition equates two differently named
        columns that are not that key (``countries.Continent = car_makers.Country``). A join
        whose tables share no key, or more than one, is left as written.
        """
        links = {(t.lower(), c.lower(), rt.lower(), rc.lower()) for t, c, rt, rc in foreign_keys}
        for select in list(ast.find_all(exp.Select)):
            from_ = select.args.get("from_") or select.args.get("from")
            if from_ is None or not isinstance(from_.this, exp.Table):
                continue
            seen = [(from_.this.alias_or_name, from_.this.name)]
            for join in select.args.get("joins") or []:
                if not isinstance(join.this, exp.Table):
                    break  # a derived table: its columns are not in the catalog
                jalias, jtable = join.this.alias_or_name, join.this.name
                self._join(join, (jalias, jtable), seen, links)
                seen.append((jalias, jtable))

    def _join(
        self,
        join: exp.Join,
        joined: tuple[str, str],
        seen: list[tuple[str, str]],
        links: set[tuple[str, str, str, str]],
    ) -> None:
        on = join.args.get("on")
        if not isinstance(on, exp.EQ) or not all(isinstance(x, exp.Column) for x in (on.this, on.expression)):
            return
        jalias, jtable = joined
        keys = []
        for alias, table in seen:
            for t, c, rt, rc in links:
                if t == jtable.lower() and rt == table.lower():
                    keys.append((alias, rc, jalias, c))
                elif rt == jtable.lower() and t == table.lower():
                    keys.append((alias, c, jalias, rc))
        if len(keys) != 1:
            return
        alias, pcol, _, jcol = keys[0]
        left, right = on.this, on.expression
        sides = {left.table.lower(), right.table.lower()}
        aliases = {a.lower(): t.lower() for a, t in [*seen, joined]}
        pair = {
            (aliases.get(left.table.lower()), left.name.lower()),
            (aliases.get(right.table.lower()), right.name.lower()),
        }
        if pair == {(aliases[alias.lower()], pcol), (jtable.lower(), jcol)}:
            return  # already the key
        suspect = id(left) in self.suspect or id(right) in self.suspect or len(sides) == 1
        # both columns exist: only a join of the two keyed tables on unrelated names is rewritten
        unrelated = sides == {alias.lower(), jalias.lower()} and left.name.lower() != right.name.lower()
        if not suspect and not unrelated:
            return
        real = {t.lower(): t for t in self.catalog}
        pname = _find(pcol, self.catalog.get(real.get(aliases[alias.lower()], ""), [])) or pcol
        jname = _find(jcol, self.catalog.get(real.get(jtable.lower(), ""), [])) or jcol
        new = exp.EQ(
            this=exp.column(_ident(pname, self.dialect), table=exp.to_identifier(alias)),
            expression=exp.column(_ident(jname, self.dialect), table=exp.to_identifier(jalias)),
        )
        self.changes.append(f"join {on.sql(dialect=self.dialect)} -> {new.sql(dialect=self.dialect)}")
        # the condition's columns were reported unresolved; the new key resolves them
        for col in (left, right):
            self.unresolved = [
                u for u in self.unresolved if not u.startswith(f"column {col.sql(dialect=self.dialect)}")
            ]
        join.set("on", new)


def _alias_spelling(col: exp.Column, alias: str) -> str:
    """The alias as the query spells it (``T1``, not the lower-cased key)."""
    select = col.find_ancestor(exp.Select)
    while select is not None:
        for node in select.find_all(exp.Table, exp.Subquery):
            if node.alias and node.alias.lower() == alias:
                return node.alias
            if isinstance(node, exp.Table) and not node.alias and node.name.lower() == alias:
                return node.name
        select = select.find_ancestor(exp.Select)
    return alias


def foreign_keys_of(tables: Iterable[TableInfo]) -> list[ForeignKey]:
    """Foreign keys ``(table, column, ref_table, ref_column)`` of ``TableInfo`` objects.

    Names are spelt as the tables spell them; an implicit target column is resolved to the
    target's primary key.
    """
    infos = list(tables)
    by_lower = {t.name.lower(): t for t in infos}
    out: list[ForeignKey] = []
    for t in infos:
        for col, ref_t, ref_c in t.foreign_keys:
            target = by_lower.get(ref_t.lower())
            if target is None:
                continue
            if not ref_c:
                ref_c = next((c.name for c in target.columns if c.primary_key), "")
            if ref_c:
                out.append((t.name, col, target.name, ref_c))
    return list(dict.fromkeys(out))


def repair_sql(sql: str, catalog: Catalog, dialect: str, foreign_keys: Sequence[ForeignKey] | None = None) -> Repair:
    """Resolve every identifier of ``sql`` against ``catalog``; rewrite the ones that do not.

    The query text is kept as written unless an identifier was rewritten (sqlglot then prints
    the query in ``dialect``). Names are compared case-insensitively, as SQLite and DuckDB do.

    Args:
        sql: One query.
        catalog: ``table -> columns`` of the database (:func:`catalog_of`).
        dialect: ``sqlite`` or ``duckdb``.
        foreign_keys: The database's keys (:func:`foreign_keys_of`); given, suspect join
            conditions are rewritten to the key linking the joined tables. None: joins untouched.

    Returns:
        The query, the rewrites and what could not be resolved (a parse error included).
    """
    try:
        ast = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError as exc:
        return Repair(sql, (), (f"parse error: {str(exc).splitlines()[0][:160]}",))
    fixer = _Repairer(catalog, dialect)
    try:
        fixer.tables(ast)
        fixer.columns(ast)
        if foreign_keys:
            fixer.missing_tables(foreign_keys)
            fixer.joins(ast, foreign_keys)
    except SqlglotError as exc:  # a scope sqlglot cannot build: leave the query to the database
        return Repair(sql, (), (f"unresolvable query structure: {str(exc)[:160]}",))
    if not fixer.changes:
        return Repair(sql, (), tuple(fixer.unresolved))
    return Repair(ast.sql(dialect=dialect), tuple(fixer.changes), tuple(fixer.unresolved))


def query_identifiers(sql: str, catalog: Catalog, dialect: str) -> tuple[set[str], set[tuple[str, str]]]:
    """Real tables and ``(table, column)`` pairs a query reads, resolved through its aliases.

    Names come back as the catalog spells them; identifiers that do not resolve are left out.
    Used to measure schema-linking recall from gold queries.

    Raises:
        sqlglot.errors.SqlglotError: The query does not parse.
    """
    ast = sqlglot.parse_one(sql, read=dialect)
    real = {t.lower(): t for t in catalog}
    tables = {real[t.name.lower()] for t in ast.find_all(exp.Table) if t.name.lower() in real}
    columns: set[tuple[str, str]] = set()
    for scope in traverse_scope(ast):
        srcs, _ = _sources(scope)
        for col in scope.columns:
            if col.name in ("", "*"):
                continue
            if col.table:
                owners = [srcs.get(col.table.lower())]
            else:
                owners = list(srcs.values())
            for t in owners:
                rt = real.get((t or "").lower())
                hit = rt and _find(col.name, catalog[rt])
                if hit:
                    columns.add((rt, hit))  # type: ignore[arg-type]
                    break
    return tables, columns
