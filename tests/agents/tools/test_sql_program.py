"""The ``program`` framing: a saved generate_sql program's schema-less demos in the pipeline's prompt,
its name checked when the settings are built, and what a run records of it."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest

from routerlab import routers
from routerlab._runs.config import load_run_config
from routerlab.agents.errors import ConfigError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools import sql_program as sp
from routerlab.agents.tools.sql_program import SQLProgram, load_sql_program, schemaless, sql_program_record

#: the built-in database's schema, as a demo bootstrapped on it carries it before it is cut
BUILTIN_SCHEMA = "CREATE TABLE service_areas (  -- 40 rows\n  area_id INTEGER PRIMARY KEY\n);"
DEMOS = [
    # a demo as DSPy bootstraps it: every input, the schema of its own database included
    {
        "db_schema": BUILTIN_SCHEMA,
        "dialect": "duckdb",
        "hint": "",
        "question": "How many service areas are there?",
        "sql": "SELECT count(*) FROM service_areas",
    },
    {"dialect": "duckdb", "question": "Which brands run a branch?", "sql": "SELECT DISTINCT brand FROM branches"},
]


def _save(path: Path, demos: list[dict] = DEMOS) -> Path:
    program = SQLProgram()
    program.generate.demos = [dspy.Example(**d) for d in demos]
    program.save(str(path))
    return path


def _run(db: Path, question: str, program: str, reply_sql: str = "SELECT count(*) FROM Pets"):
    seen: list = []

    def reply(request):
        seen.append(request)
        return {"fields": {"sql": f"```sql\n{reply_sql}\n```"}}

    config = PipelineConfig(tools=ToolSettings(sql_framing="program", sql_program=program, sql_output="extract"))
    t = Pipeline(routers.router.build("oracle"), scripted_lm(reply), config=config).run(
        question, str(db), oracle_intent="sql"
    )
    assert len(seen) == 1
    return t, str(seen[0].system or ""), [(m.role, text_of(m)) for m in seen[0].messages]


def test_schemaless_keeps_the_question_the_dialect_the_sql_and_a_hint_that_says_something():
    assert schemaless(DEMOS[0]) == {
        "dialect": "duckdb",
        "question": "How many service areas are there?",
        "sql": "SELECT count(*) FROM service_areas",
    }
    with_hint = {**DEMOS[0], "hint": "closed areas count", "id": "sa-1"}
    assert schemaless(dspy.Example(**with_hint))["hint"] == "closed areas count"
    assert "id" not in schemaless(with_hint) and "db_schema" not in schemaless(with_hint)


def test_the_pipeline_shows_the_demos_without_schema_then_the_questions_schema_and_runs_the_query(
    tmp_path, spiderlike_db
):
    path = _save(tmp_path / "p.json")
    t, system, messages = _run(spiderlike_db, "How many pets are there?", str(path))
    # two demos as user / assistant turns, then the question's message
    assert [role for role, _ in messages] == ["user", "assistant", "user", "assistant", "user"]
    for demo, (_, user), (_, assistant) in zip(DEMOS, messages[0:4:2], messages[1:4:2], strict=True):
        assert user.startswith("This is an example of the task, though some input or output fields are not supplied.")
        assert f"[[ ## dialect ## ]]\nduckdb\n\n[[ ## question ## ]]\n{demo['question']}" in user
        assert "db_schema" not in user
        assert assistant.startswith(f"[[ ## sql ## ]]\n{demo['sql']}\n")
    # no other database's schema anywhere in the prompt: the demo's own was cut on the call
    prompt = system + "\n".join(text for _, text in messages)
    assert "CREATE TABLE service_areas" not in prompt and prompt.count("CREATE TABLE") == 6
    # the question's message opens with the schema data_discovery found (the per-database prefix)
    discovery = t.tool_calls[0]["output"]
    assert messages[-1][1].startswith(f"[[ ## db_schema ## ]]\n{discovery['schema']}\n\n[[ ## dialect ## ]]\nsqlite")
    assert "How many pets are there?" in messages[-1][1]
    # the reply went through the existing output handling and was executed
    assert [c["name"] for c in t.tool_calls] == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    assert t.sql == "SELECT count(*) FROM Pets" and t.rows == [[3]]


def test_two_questions_on_one_database_share_the_prompt_up_to_the_question(tmp_path, spiderlike_db):
    path = str(_save(tmp_path / "p.json"))
    _, system_a, a = _run(spiderlike_db, "How many pets are there?", path)
    _, system_b, b = _run(spiderlike_db, "How many students are there?", path, "SELECT count(*) FROM Student")
    assert system_a == system_b and a[:-1] == b[:-1]
    marker = "[[ ## question ## ]]"
    assert a[-1][1].split(marker)[0] == b[-1][1].split(marker)[0]
    assert a[-1][1] != b[-1][1]


def test_a_program_saved_with_schema_in_its_demos_is_loaded_back_whole_and_cut_only_in_the_prompt(tmp_path):
    path = _save(tmp_path / "p.json")
    loaded, file = load_sql_program(str(path))
    assert file == path and len(loaded.generate.demos) == 2
    assert loaded.generate.demos[0]["db_schema"] == BUILTIN_SCHEMA
    loaded.strip_demos()  # what a compile does before it saves
    assert [dict(d) for d in loaded.generate.demos] == [schemaless(d) for d in DEMOS]


def test_a_refit_under_the_same_path_is_loaded_again(tmp_path):
    path = _save(tmp_path / "p.json")
    first, _ = load_sql_program(str(path))
    _save(path, DEMOS[1:])
    again, _ = load_sql_program(str(path))
    assert again is not first and len(again.generate.demos) == 1
    assert load_sql_program(str(path))[0] is again  # the same content: the loaded program is shared


def test_bad_program_settings_fail_when_built_with_expected_found_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(sp, "SQL_PROGRAM_DIR", tmp_path)
    _save(tmp_path / "generate_sql_builtin.json")
    with pytest.raises(ConfigError, match="needs a program") as exc:
        ToolSettings(sql_framing="program")
    assert "known: builtin" in exc.value.fix
    with pytest.raises(ConfigError, match="no committed generate_sql program named 'builtn'") as exc:
        ToolSettings(sql_framing="program", sql_program="builtn")
    assert "did you mean 'builtin'" in exc.value.found and exc.value.fix == "set pipeline.tools.sql_program=builtin"
    with pytest.raises(ConfigError, match="no generate_sql program at") as exc:
        ToolSettings(sql_framing="program", sql_program=str(tmp_path / "missing.json"))
    assert exc.value.found == "missing file"
    # a named program is checked whatever the framing: a typo never passes silently
    with pytest.raises(ConfigError):
        ToolSettings(sql_framing="chat", sql_program="nope")
    # a committed name resolves; another framing leaves it unread (single_call fixes its own framing)
    assert ToolSettings(sql_framing="program", sql_program="builtin").sql_program == "builtin"
    assert sp.sql_program_names() == ["builtin"]


def test_a_config_file_naming_an_unknown_program_fails_when_loaded(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("pipeline: {tools: {sql_framing: program, sql_program: nope}}\n")
    with pytest.raises(ConfigError, match="no committed generate_sql program named 'nope'") as exc:
        load_run_config(cfg)
    assert "compile_generate_sql.py" in exc.value.fix


def test_the_program_is_recorded_by_name_and_digest_and_the_config_round_trips(tmp_path):
    path = _save(tmp_path / "p.json")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"pipeline: {{tools: {{sql_framing: program, sql_program: {path}, sql_output: extract}}}}\n")
    config = load_run_config(cfg)
    recorded = json.loads(json.dumps(config.to_dict()))  # as the store keeps it
    rebuilt = load_run_config(None, defaults=recorded)
    assert rebuilt.pipeline.tools == config.pipeline.tools
    assert rebuilt.pipeline.tools.sql_program == str(path)
    record = sql_program_record(str(path))
    assert record["name"] == str(path) and record["file"] == "p.json" and len(record["digest"]) == 12
    assert sql_program_record("") == {}


def test_the_replay_key_changes_with_the_programs_content(tmp_path):
    path = _save(tmp_path / "p.json")
    config = PipelineConfig(tools=ToolSettings(sql_framing="program", sql_program=str(path)))

    def key() -> dict:
        return Pipeline(routers.router.build("oracle"), scripted_lm(["x"]), config=config).replay.fixed["context"]

    before = key()
    _save(path, DEMOS[1:])
    after = key()
    assert before["tools"] == after["tools"] and before["sql_program"]["digest"] != after["sql_program"]["digest"]
    plain = Pipeline(routers.router.build("oracle"), scripted_lm(["x"]), config=PipelineConfig())
    assert "sql_program" not in plain.replay.fixed["context"]  # runs without a program keep their keys
