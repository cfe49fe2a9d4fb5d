"""The single_call baseline: one LM call from the whole schema, executed, and nothing else."""

from __future__ import annotations

import re

import pytest

from routerlab import routers
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm


def sql_lm(sql: str, fixed: str = "SELECT 'fix_sql was called'", seen: list | None = None):
    """A scripted LM answering generate_sql with ``sql`` and fix_sql with ``fixed``."""

    def reply(request):
        system = str(request.system or "")
        field = (re.search(r"Your output fields are:\n1\. `(\w+)`", system) or [None, ""])[1]
        if seen is not None:
            seen.append(" ".join(str(p) for m in request.messages for p in m.parts))
        return {"fields": {field: {"sql": sql, "fixed_sql": fixed}.get(field, "")}}

    return scripted_lm(reply)


def run(router: str, lm, db, question: str):
    return Pipeline(routers.router.build(router), lm).run(question, str(db), oracle_intent="sql")


def test_one_call_from_the_whole_schema_then_execution(spiderlike_db):
    seen: list[str] = []
    lm = sql_lm("SELECT count(*) FROM Pets WHERE PetType = 'dog'", seen=seen)
    t = run("single_call", lm, spiderlike_db, "How many dogs are there?")
    assert t.tool_names == ["generate_sql", "execute_sql_and_analyze_result"]
    assert "discovery_call_id" not in t.tool_calls[0]["args"]
    assert t.rows == [[2]] and t.error is None
    assert t.subagent_usage.lm_calls == 1 and t.router_usage.lm_calls == 0
    # every table of the database was in the one prompt, as the database spells it
    assert len(seen) == 1
    for table in ("Student", "Pets", "Has_Pet", "model_list", "car_names", '"Order Items"'):
        assert f"CREATE TABLE {table} (" in seen[0]


def test_no_repair_and_no_fix_sql_after_a_failing_query(spiderlike_db):
    lm = sql_lm("SELECT count(*) FROM Pets WHERE pet_type = 'dog'")
    t = run("single_call", lm, spiderlike_db, "How many dogs are there?")
    assert t.tool_names == ["generate_sql", "execute_sql_and_analyze_result"]
    assert "repairs" not in t.tool_calls[0]["output"]
    assert t.error_class == "sql_error" and "pet_type" in t.error
    # the routed pipeline repairs the same query without another LM call
    routed = run("oracle", lm, spiderlike_db, "How many dogs are there?")
    assert routed.rows == [[2]] and routed.tool_calls[1]["output"]["repairs"] == ["column pet_type -> PetType"]


def test_single_call_is_labelled_a_baseline():
    assert routers.label("single_call") == "single_call (baseline)"


@pytest.mark.model
def test_single_call_on_the_embedded_model(spiderlike_db):
    from routerlab.agents.lm import resolve_lm

    lm = resolve_lm("local", cache=False, max_tokens=96)
    t = run("single_call", lm, spiderlike_db, "How many students are there?")
    assert t.tool_names == ["generate_sql", "execute_sql_and_analyze_result"]
    assert t.subagent_usage.lm_calls == 1 and t.subagent_usage.prompt_tokens > 0
    assert t.rows == [[3]], t.sql
