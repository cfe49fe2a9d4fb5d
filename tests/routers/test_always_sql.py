"""The always_sql baseline: the routed pipeline with every decision ``sql``, nothing else changed."""

from __future__ import annotations

from routerlab import routers
from routerlab.agents.graph import Pipeline
from tests.routers.test_single_call import sql_lm

COUNT_DOGS = "SELECT count(*) FROM Pets WHERE PetType = 'dog'"


def _run(router: str, lm, db, question: str, oracle_intent: str):
    return Pipeline(routers.router.build(router), lm).run(question, str(db), oracle_intent=oracle_intent)


def test_every_request_goes_through_the_sql_plan(spiderlike_db):
    lm = sql_lm(COUNT_DOGS)
    # a greeting, a write and a vague request are all answered with SQL: no asking, refusing, chatting
    for question, gold in (
        ("How many dogs are there?", "sql"),
        ("hello!", "chat"),
        ("Delete all rows from the Pets table", "refuse"),
        ("How did that one do?", "clarify"),
    ):
        t = _run("always_sql", lm, spiderlike_db, question, gold)
        first = t.route_decisions[0]
        assert first["intent"] == "sql" and first["method"] == "always_sql" and first["confidence"] == 1.0
        assert "generate_sql" in t.tool_names and "ask_human" not in t.tool_names and "refuse" not in t.tool_names
        assert t.rows == [[2]]
        assert t.router_usage.lm_calls == 0


def test_it_differs_from_perfect_routing_only_by_routing(spiderlike_db):
    """On a data question the gold-label router and always_sql make the same calls and get the same rows."""
    lm = sql_lm("SELECT count(*) FROM Pets WHERE pet_type = 'dog'")
    oracle = _run("oracle", lm, spiderlike_db, "How many dogs are there?", "sql")
    always = _run("always_sql", lm, spiderlike_db, "How many dogs are there?", "sql")
    assert always.tool_names == oracle.tool_names
    # the same repair runs in both: discovery, schema checks and repair are the pipeline's, not the router's
    assert always.rows == oracle.rows == [[2]]
    assert always.tool_calls[1]["output"]["repairs"] == oracle.tool_calls[1]["output"]["repairs"]


def test_always_sql_is_labelled_a_baseline():
    assert routers.label("always_sql") == "always_sql (baseline)"
    assert "always_sql" in routers.router.names()
