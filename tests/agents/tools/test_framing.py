"""Output handling of generate_sql case by case, the chat framing's prompt pinned on a real database."""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.errors import ConfigError, UnknownComponentError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.framing import SQL_OUTPUT, chat_messages, sql_framing, sql_of_reply


@pytest.mark.parametrize(
    ("reply", "sql", "rules"),
    [
        # a bare query, with or without its semicolon
        ("SELECT count(*) FROM singer", "SELECT count(*) FROM singer", []),
        ("SELECT count(*) FROM singer;", "SELECT count(*) FROM singer", []),
        # a fenced block, and prose after the fence
        ("```sql\nSELECT name FROM singer\n```", "SELECT name FROM singer", ["fence"]),
        ("```sql\nSELECT name FROM singer;\n```\nThis lists every singer.", "SELECT name FROM singer", ["fence"]),
        ("```\nSELECT name FROM singer\n```", "SELECT name FROM singer", ["fence"]),
        # prose before the query (a label, a sentence)
        ("SQL: SELECT name FROM singer", "SELECT name FROM singer", ["preamble"]),
        ("Here is the query:\nSELECT name FROM singer", "SELECT name FROM singer", ["preamble"]),
        # text after the statement: cut at the first semicolon outside quotes
        (
            "SELECT name FROM singer WHERE country = 'a;b'; -- the singers of a;b",
            "SELECT name FROM singer WHERE country = 'a;b'",
            ["trailing"],
        ),
        # prose on the next line without a semicolon: trailing lines are dropped until it parses
        ("SELECT name FROM singer\nThis query returns the names.", "SELECT name FROM singer", ["cut"]),
        # a reply cut off at the token budget inside its fence: the last half-written line goes
        (
            "```sql\nSELECT name FROM singer\nWHERE age > (SELECT avg(age)",
            "SELECT name FROM singer",
            ["open_fence", "cut"],
        ),
        # truncated with no complete line: kept as written, so the engine's error is recorded
        ("SELECT name FROM singer WHERE age > (SELECT", "SELECT name FROM singer WHERE age > (SELECT", []),
        # a CTE starts at WITH
        (
            "WITH s AS (SELECT * FROM singer) SELECT count(*) FROM s",
            "WITH s AS (SELECT * FROM singer) SELECT count(*) FROM s",
            [],
        ),
        # a write is never cut down to the query inside it, nor a stacked write dropped: the guard
        # must see what the model wrote (found by tests/routerlab/test_hostile_questions.py)
        ("INSERT INTO singer SELECT * FROM singer", "INSERT INTO singer SELECT * FROM singer", ["write"]),
        ("CREATE TABLE x AS SELECT * FROM singer;", "CREATE TABLE x AS SELECT * FROM singer", ["write"]),
        ("SELECT 1; DROP TABLE singer", "SELECT 1; DROP TABLE singer", ["write"]),
        ("Sure:\nUPDATE singer SET age = 0", "UPDATE singer SET age = 0", ["write"]),
        ("```sql\nATTACH 'x.db' AS x\n```", "ATTACH 'x.db' AS x", ["fence", "write"]),
        # prose that only sounds like a write is still prose
        (
            "SELECT name FROM singer;\nCreate an index on name to speed this up.",
            "SELECT name FROM singer",
            ["trailing"],
        ),
    ],
)
def test_sql_of_reply_case_by_case(reply: str, sql: str, rules: list[str]):
    got = sql_of_reply(reply, "sqlite")
    assert got.sql == sql
    assert got.rules == rules


def test_a_reply_without_a_query_gives_no_select():
    got = sql_of_reply("I cannot answer that from this schema.", "sqlite")
    assert "SELECT" not in got.sql and got.rules == []


def test_clean_keeps_trailing_prose_that_extract_drops():
    reply = "SELECT name FROM singer\nThis query returns the names."
    assert SQL_OUTPUT["clean"](reply, "sqlite") == reply
    assert SQL_OUTPUT["extract"](reply, "sqlite") == "SELECT name FROM singer"
    # both read a fenced block the same way
    fenced = "```sql\nSELECT 1\n```"
    assert SQL_OUTPUT["clean"](fenced, "sqlite") == SQL_OUTPUT["extract"](fenced, "sqlite") == "SELECT 1"


def test_chat_messages_put_the_schema_first_and_name_the_dialect():
    a = chat_messages(schema="CREATE TABLE t (x INT);", dialect="sqlite", hint="", question="How many?")
    b = chat_messages(schema="CREATE TABLE t (x INT);", dialect="sqlite", hint="x is a count", question="Other?")
    assert a[0] == {"role": "system", "content": "You are an expert SQLite programmer."}
    assert a[1]["content"].startswith("CREATE TABLE t (x INT);\n\n")
    # the prefix up to the question is shared by every question on the database
    shared = a[1]["content"].split("Question:")[0]
    assert b[1]["content"].startswith(shared)
    assert b[1]["content"].endswith("Question: Other?\nEvidence: x is a count")
    assert chat_messages(schema="s", dialect="duckdb", hint="", question="q")[0]["content"].endswith(
        "DuckDB programmer."
    )


def test_unknown_settings_fail_when_built_with_the_known_names():
    with pytest.raises(UnknownComponentError, match="schema view") as exc:
        ToolSettings(schema_view="create_value")
    assert "create_values" in exc.value.fix
    with pytest.raises(UnknownComponentError, match="sql framing"):
        ToolSettings(sql_framing="plain")
    with pytest.raises(ConfigError, match="output handling"):
        ToolSettings(sql_output="strict")
    # the baseline's arguments are checked when it is built, not at its first question
    with pytest.raises(UnknownComponentError):
        routers.router.build("single_call", schema_view="rows")
    assert sorted(sql_framing.names()) == ["chat", "fields", "program"]


def _prompt_of(router: str, db, question: str, **args) -> tuple[str, str, dict]:
    seen: list = []

    def reply(request):
        seen.append(request)
        return "```sql\nSELECT count(*) FROM singer\n```"

    t = Pipeline(routers.router.build(router, **args), scripted_lm(reply)).run(question, str(db), oracle_intent="sql")
    assert len(seen) == 1
    return str(seen[0].system or ""), "\n".join(text_of(m) for m in seen[0].messages), t.tool_calls[0]["output"]


def test_the_chosen_plain_calls_prompt_on_a_real_spider_database_is_pinned(spider_dev_a, golden):
    """single_call's default (the comparison's choice, confirmed on all 382: the plain chat call,
    CREATE TABLE + values, foreign keys) on concert_singer, a real Spider SQLite file."""
    e = next(e for e in spider_dev_a if e.db_id == "concert_singer")
    system, user, output = _prompt_of("single_call", e.db_path, "How many singers do we have?")
    golden("plain_call_prompt_concert_singer", {"system": system, "user": user})
    assert output["sql"] == "SELECT count(*) FROM singer"
    assert output["reply"] == "```sql\nSELECT count(*) FROM singer\n```"


def test_the_field_format_prompt_on_a_real_spider_database_is_pinned(spider_dev_a, golden):
    """``single_call.framing=fields`` (the field format, which led on 48 questions only) on concert_singer."""
    e = next(e for e in spider_dev_a if e.db_id == "concert_singer")
    system, user, output = _prompt_of("single_call", e.db_path, "How many singers do we have?", framing="fields")
    golden("plain_call_prompt_concert_singer_fields", {"system": system, "user": user})
    assert "Your output fields are" in system and "CREATE TABLE singer (" in user
    assert output["sql"] == "SELECT count(*) FROM singer"


@pytest.mark.parametrize(
    "db_id",
    ["battle_death", "car_1", "concert_singer", "course_teach", "dog_kennels", "poker_player", "tvshow", "voter_1"],
)
def test_the_pipelines_generate_sql_asks_exactly_what_the_plain_call_asks(spider_dev_a, db_id):
    """With the plain call's view and framing, the routed generate_sql starts where the baseline starts.

    Every spider-dev-a schema fits ``schema_budget_chars``, so linking keeps all tables and
    data_discovery's rendering is the whole-schema view the plain call renders: the two first
    model requests are the same text (and the same LM-cache key), so the pipeline can only
    differ from the baseline by what it adds after that call.
    """
    from routerlab.agents.graph import PipelineConfig

    e = next(e for e in spider_dev_a if e.db_id == db_id)
    plain = _prompt_of("single_call", e.db_path, e.question, framing="chat")
    seen: list = []

    def reply(request):
        seen.append(request)
        return "```sql\nSELECT 1\n```"

    tools = ToolSettings(sql_framing="chat", sql_output="extract")
    t = Pipeline(routers.router.build("oracle"), scripted_lm(reply), config=PipelineConfig(tools=tools)).run(
        e.question, str(e.db_path), oracle_intent="sql"
    )
    assert t.tool_names[:2] == ["data_discovery", "generate_sql"]
    routed = (str(seen[0].system or ""), "\n".join(text_of(m) for m in seen[0].messages))
    assert routed == plain[:2]
    assert seen[0].config.temperature in (0, 0.0, None)


def test_by_default_the_pipeline_and_the_plain_call_send_the_same_first_request(spider_dev_a):
    """Defaults agree: the routed generate_sql's first request is single_call's (same view and framing)."""
    e = next(e for e in spider_dev_a if e.db_id == "car_1")
    plain = _prompt_of("single_call", e.db_path, e.question)
    seen: list = []

    def reply(request):
        seen.append(request)
        return "SELECT 1"

    Pipeline(routers.router.build("oracle"), scripted_lm(reply)).run(e.question, str(e.db_path), oracle_intent="sql")
    assert (str(seen[0].system or ""), "\n".join(text_of(m) for m in seen[0].messages)) == plain[:2]
