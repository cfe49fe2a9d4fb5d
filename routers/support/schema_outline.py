"""The compact schema an LM router reads: every table with its column names, in a bounded size.

An LM can only say "this database does not hold that" if it sees what the database does hold.
Table names alone (what the intent classifiers read before) name the entities but not the
measures, attributes or dates. The outline goes into the router's stable prompt prefix, so it is
evaluated once per database and every request of that database reuses its KV state.

A small LM that sees the outline still rarely concludes that a term is absent from it. The
deterministic schema check can: :func:`schema_finding` turns what it found missing into one line
of the per-request part ("Schema check: no column measures 'departure delay'."), so the LM decides
with that evidence. It is empty when the check finds nothing, so answerable requests cost no
extra tokens.

Told what is missing, the embedded 1.5B model still asks the user or writes SQL rather than
abstain (README, "LM routers with the schema check's finding": 0 of 20 abstentions). So every LM
router family also reads the finding as a gate, :func:`abstains_on_gap`: when the LM's first
decision would answer a data request (SQL) or ask about it with nothing the ambiguity check finds
open, and the schema check finds what the request names missing from the database, the decision
is to abstain, naming what is missing. The LM still decides everything else (chat, refusals,
explanations, repairs, a clarification the ambiguity check supports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from routerlab.agents.errors import ConfigError, RouterlabError
from routerlab.agents.tools.text import normalise_request
from routerlab.agents.turn_history import history_of
from routerlab.routers.base import turn_database
from routerlab.routers.support.ambiguity import clarifying_question, find_ambiguities
from routerlab.routers.support.intent import Classification
from routerlab.routers.support.schema_gap import schema_gaps

if TYPE_CHECKING:
    from routerlab.agents.db import Database
    from routerlab.agents.routing import RouterEnv
    from routerlab.agents.state import PipelineState

__all__ = [
    "GATED_INTENTS",
    "SCHEMA_VIEWS",
    "SchemaView",
    "abstains_on_gap",
    "ambiguity_finding",
    "check_view",
    "gate_on_gap",
    "request_note",
    "schema_finding",
    "schema_outline",
    "schema_view",
]

SchemaView = Literal["none", "tables", "columns"]
SCHEMA_VIEWS: tuple[str, ...] = ("none", "tables", "columns")


def check_view(router: str, view: str) -> SchemaView:
    """``view`` if it is one of :data:`SCHEMA_VIEWS`; a :class:`ConfigError` naming the router otherwise."""
    if view not in SCHEMA_VIEWS:
        raise ConfigError(
            f"unknown schema view for the {router} router",
            expected=", ".join(SCHEMA_VIEWS),
            found=repr(view),
            fix=f"pass --router-arg {router}.schema=columns (or tables, none)",
        )
    return view  # type: ignore[return-value]


def schema_outline(db: Database, max_chars: int = 1500) -> str:
    """``table(col, col, ...); ...`` for every table, cut at ``max_chars`` (the cut is marked).

    Tables come in the database's order; a table's columns are cut before the tables are, so
    every table is named when it can be.
    """
    tables = db.tables()
    budget = max_chars // max(len(tables), 1) - 2  # per table, with its "; " separator
    parts = []
    for t in tables:
        cols: list[str] = []
        used = len(t.name) + 2
        for c in t.columns:
            if used + len(c.name) + 2 > budget:
                cols.append("...")
                break
            cols.append(c.name)
            used += len(c.name) + 2
        parts.append(f"{t.name}({', '.join(cols)})")
    text = "; ".join(parts)
    return text if len(text) <= max_chars else text[: max_chars - 4].rsplit("; ", 1)[0] + "; ..."


def schema_view(env: RouterEnv | None, state: PipelineState, view: SchemaView) -> str:
    """The turn's database as a router's prompt shows it (empty without one, or for ``none``)."""
    if view == "none" or env is None or env.open_db is None or not state.get("database"):
        return ""
    try:
        db = env.open_db(state["database"])
    except RouterlabError:
        return ""  # no schema to show: the router decides from the request alone
    if view == "tables":
        return ", ".join(t.name for t in db.tables())
    return schema_outline(db)


def ambiguity_finding(env: RouterEnv | None, state: PipelineState) -> str:
    """The ambiguity check's question about the turn's request as one line, or ``""`` when it found nothing.

    ``Ambiguity check: Which one do you mean: Qinling North or Qinling South?``
    (:func:`~routerlab.routers.support.ambiguity.find_ambiguities`); without a database there is no finding.
    """
    db = turn_database(env, state)
    if db is None:
        return ""
    text = normalise_request(str(state.get("question", "") or ""))
    # with the conversation: a follow-up's pronoun is no ambiguity once an earlier turn supplies it
    question = clarifying_question(find_ambiguities(text, db, history=history_of(state)))
    return f"Ambiguity check: {question}" if question else ""


def request_note(env: RouterEnv | None, state: PipelineState, *, schema_check: bool, ambiguity_check: bool) -> str:
    """The evidence lines an LM router adds to the request: the findings it was asked for, one per line."""
    lines = [
        schema_finding(env, state) if schema_check else "",
        ambiguity_finding(env, state) if ambiguity_check else "",
    ]
    return "\n".join(line for line in lines if line)


#: first decisions the schema gate turns into an abstention: answering a data request, or asking about it
GATED_INTENTS: tuple[str, ...] = ("sql", "clarify")


def abstains_on_gap(env: RouterEnv | None, state: PipelineState, intent: str | None) -> bool:
    """Whether an LM router's first decision ``intent`` should be an abstention (the schema gate).

    True when ``intent`` is in :data:`GATED_INTENTS`, the schema check finds a gap in the request
    (:func:`schema_finding`, data requests only) and, for a clarification, the ambiguity check
    finds nothing open (a clarification it supports is asked first: the reply may settle the gap).
    """
    if intent not in GATED_INTENTS or not schema_finding(env, state):
        return False
    return intent == "sql" or not ambiguity_finding(env, state)


def gate_on_gap(env: RouterEnv | None, state: PipelineState, decided: Classification) -> Classification:
    """``decided`` (an LM classification), or an abstention when :func:`abstains_on_gap` says so.

    The abstention keeps the LM's confidence and usage; its method ends in ``+schema-gap``.
    """
    if not abstains_on_gap(env, state, decided.intent):
        return decided
    return decided._replace(intent="unanswerable", method=f"{decided.method}+schema-gap")


def schema_finding(env: RouterEnv | None, state: PipelineState) -> str:
    """The schema check's finding on the turn's request as one line, or ``""`` when it found no gap.

    The request is checked as the ``rules`` router's ``schema_gap`` rule checks it (data requests
    only, :func:`~routerlab.routers.support.schema_gap.schema_gaps`); without a database there is no finding.
    """
    db = turn_database(env, state)
    if db is None:
        return ""
    gaps = schema_gaps(str(state.get("question", "") or ""), db)
    return f"Schema check: {'; '.join(g.reason for g in gaps)}." if gaps else ""
