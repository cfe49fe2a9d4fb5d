"""The single_call baseline: one LM call from the whole schema, executed, and nothing else."""

from __future__ import annotations

import re

import pytest

from routerlab import routers
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of


def sql_lm(sql: str, fixed: str = "SELECT 'fix_sql was called'", seen: list | None = None):
    """A scripted LM answering generate_sql with ``sql`` and fix_sql with ``fixed``.

    A plain chat request (the chat framing) gets ``sql`` as a chat model writes it: in a fenced
    block with a sentence after it.
    """

    def reply(request):
        system = str(request.system or "")
        field = (re.search(r"Your output fields are:\n1\. `(\w+)`", system) or [None, ""])[1]
        if seen is not None:
            seen.append("\n".join(text_of(m) for m in request.messages))
        if not field:
            return f"```sql\n{sql}\n```\nThis query answers the question."
        return {"fields": {field: {"sql": sql, "fixed_sql": fixed}.get(field, "")}}

    return scripted_lm(reply)


def run(router: str, lm, db, question: str, **args):
    return Pipeline(routers.router.build(router, **args), lm).run(question, str(db), oracle_intent="sql")


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


def test_single_call_on_the_real_spider_databases(spider_dev_a):
    """One question per real database: the prompt holds the whole schema as the database spells it."""
    from routerlab.agents.db import open_database

    firsts = {e.db_id: e for e in reversed(spider_dev_a)}
    assert len(firsts) == 8
    for e in firsts.values():
        seen: list[str] = []
        t = run("single_call", sql_lm(e.gold_sql, seen=seen), e.db_path, e.question)
        db = open_database(e.db_path)
        assert t.error is None and t.rows == db.execute(e.gold_sql, max_rows=10_000).rows, e.id
        assert len(seen) == 1 and db.schema_text() in seen[0]
        for table in db.tables():
            assert f"CREATE TABLE {table.name} (" in seen[0] or f'CREATE TABLE "{table.name}" (' in seen[0]
            assert all(c.name in seen[0] for c in table.columns)
        if any(table.foreign_keys for table in db.tables()):
            assert "FOREIGN KEY (" in seen[0]


@pytest.mark.model
def test_single_call_answers_a_real_spider_question_on_the_embedded_model(spider_dev_a):
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm

    e = next(e for e in spider_dev_a if e.difficulty == "easy" and e.db_id == "concert_singer")
    t = run("single_call", resolve_lm("local", cache=False, max_tokens=96), e.db_path, e.question)
    # one model call, the SQL it wrote run as is (this test also holds the checks of a second
    # model test on the pets/cars miniature, which asked the same things of another question)
    assert t.tool_names == ["generate_sql", "execute_sql_and_analyze_result"]
    assert t.subagent_usage.lm_calls == 1 and t.subagent_usage.prompt_tokens > 0
    gold = open_database(e.db_path).execute(e.gold_sql).rows
    assert sorted(map(tuple, t.rows)) == sorted(map(tuple, gold)), t.sql


def test_the_baselines_arguments_choose_view_and_framing_for_its_pipeline_only(spider_dev_a):
    """single_call's view/framing args reach generate_sql; another router's pipeline keeps the run's settings."""
    e = next(e for e in spider_dev_a if e.db_id == "concert_singer")
    lm = sql_lm("SELECT count(*) FROM singer")
    args = {"schema_view": "compact", "foreign_keys": False, "framing": "fields"}
    compact = Pipeline(routers.router.build("single_call", **args), lm)
    t = compact.run("How many singers are there?", e.db_path, oracle_intent="sql")
    prompt = "\n".join(text_of(m) for m in lm.routerlab_engine.requests[-1].messages)
    assert "singer(Singer_ID, Name, Country, Song_Name, Song_release_year, Age, Is_male)" in prompt
    assert "CREATE TABLE" not in prompt and "stadium.Stadium_ID" not in prompt
    assert t.rows == [[6]] and compact.config.tools.schema_view == "compact"
    assert "Your output fields are" in str(lm.routerlab_engine.requests[-1].system)
    # the pipeline of another router in the same process is untouched
    routed = Pipeline(routers.router.build("oracle"), lm)
    assert routed.config.tools.schema_view == "create_values" and routed.config.tools.sql_framing == "chat"
    routed.run("How many singers are there?", e.db_path, oracle_intent="sql")
    assert "CREATE TABLE singer (" in "\n".join(text_of(m) for m in lm.routerlab_engine.requests[-1].messages)


def test_single_call_fields_keeps_the_old_field_format(spiderlike_db):
    lm = sql_lm("SELECT count(*) FROM Pets WHERE PetType = 'dog'")
    t = run("single_call_fields", lm, spiderlike_db, "How many dogs are there?")
    request = lm.routerlab_engine.requests[-1]
    assert "Your output fields are:\n1. `sql`" in str(request.system)
    assert t.rows == [[2]] and t.tool_calls[0]["output"]["reply"] == "SELECT count(*) FROM Pets WHERE PetType = 'dog'"
    assert routers.router.build("single_call_fields").tool_settings == {
        "schema_view": "create_values",
        "foreign_keys": True,
        "sql_framing": "fields",
        "sql_output": "clean",
    }
    assert routers.label("single_call_fields") == "single_call_fields (baseline)"
    # single_call's default, the chat framing, asks in plain chat and keeps the raw reply
    chat = run("single_call", lm, spiderlike_db, "How many dogs are there?")
    assert "Your output fields are" not in str(lm.routerlab_engine.requests[-1].system)
    assert chat.rows == [[2]] and chat.tool_calls[0]["output"]["reply"].startswith("```sql")
