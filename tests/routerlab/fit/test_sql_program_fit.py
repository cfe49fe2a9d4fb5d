"""Compiling the generate_sql program on the built-in train split: the bootstrap's choice of demos
by execution match, the saved program and its provenance, the script's bad arguments, and one
compile on the embedded model (marked ``model``: the lead runs it alone)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.errors import ConfigError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.sql_program import load_sql_program
from routerlab.benchmarks.builtin import load_builtin
from routerlab.fit.sql_program_fit import fit_sql_program, sql_train_examples

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "compile_generate_sql.py"
_QUESTION = re.compile(r"\[\[ ## question ## \]\]\n(.*?)\n\n", re.S)


@pytest.fixture(scope="module")
def builtin():
    return load_builtin()


def _teacher(gold: dict[str, str], right: set[str], requests: list):
    """A scripted LM answering the gold query (fenced, as small models do) for ``right`` questions, else a wrong one."""

    def reply(request):
        requests.append(request)
        last = text_of(request.messages[-1])
        question = _QUESTION.findall(last + "\n\n")[-1]
        sql = gold[question] if question in right else "SELECT 42"
        return {"fields": {"sql": f"```sql\n{sql}\n```"}}

    return reply


@pytest.fixture(scope="module")
def compiled(builtin, tmp_path_factory):
    train = sql_train_examples(builtin, 6)
    gold = {e.question: e.gold_sql for e in train}
    right = {train[1].question, train[4].question}
    requests: list = []
    out = tmp_path_factory.mktemp("fit") / "generate_sql_tiny.json"
    report = fit_sql_program(
        builtin, scripted_lm(_teacher(gold, right, requests)), lm_spec="scripted:teacher", train_limit=6, out=out
    )
    return report, out, train, right, requests


def test_only_train_data_questions_of_the_builtin_benchmark_are_read(builtin):
    train = sql_train_examples(builtin)
    assert len(train) == 62 and {e.split for e in train} == {"train"} and {e.intent for e in train} == {"sql"}
    dev_ids = {e.id for e in builtin.split("dev")}
    assert not dev_ids & {e.id for e in train}


def test_the_bootstrap_keeps_the_questions_the_model_got_right_then_labelled_ones(compiled):
    report, out, train, right, _ = compiled
    program, _ = load_sql_program(str(out))
    demos = [dict(d) for d in program.generate.demos]
    # two bootstrapped demos (the two questions answered right, in the model's own words), then
    # two labelled ones (gold SQL) from the rest: up to twice the bootstrapped count
    assert {d["question"] for d in demos[:2]} == right
    assert all(d["sql"].startswith("```sql\n") for d in demos[:2])
    labelled = {e.question: e.gold_sql for e in train if e.question not in right}
    assert all(labelled[d["question"]] == d["sql"] for d in demos[2:]) and len(demos) == 4
    # saved without schema: the question, the dialect and the SQL only
    assert all(set(d) == {"dialect", "question", "sql"} and d["dialect"] == "duckdb" for d in demos)
    assert report.demos == 4 and report.demo_questions == [d["question"] for d in demos]


def test_the_train_score_is_execution_match_on_the_train_questions(compiled):
    report, _, _, _, _ = compiled
    # the scripted model answers 2 of the 6 right, compiled or not (its replies do not read the demos)
    assert report.train_score == report.zero_shot_train_score == round(2 / 6, 4)
    assert report.train_size == 6


def test_no_prompt_of_the_compile_holds_a_second_schema(compiled):
    *_, requests = compiled
    assert requests
    for request in requests:
        prompt = "\n".join(text_of(m) for m in request.messages)
        # the teacher's labelled demos are whole train examples: their schemas are cut on every call
        assert prompt.count("CREATE TABLE service_areas") == 1


def test_the_provenance_says_what_was_fit_how_and_why(compiled):
    report, out, *_ = compiled
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["optimizer"] == "bootstrap" and meta["optimizer_args"] == {"demos": 2, "seed": 0}
    assert "BootstrapFewShot" in meta["why"] and "DAIL" in meta["why"]
    assert (meta["dataset"], meta["split"], meta["train_size"]) == ("builtin", "train", 6)
    assert "execution match" in meta["metric"] and meta["output"] == "extract"
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", meta["commit"]) and re.fullmatch(r"\d{4}-\d\d-\d\d", meta["date"])
    assert meta["train_score"] == report.train_score and meta["lm"] == "scripted:teacher"
    assert meta["program_file"] == "generate_sql_tiny.json" and meta["settings"]["schema_view"] == "create_values"


def test_the_compiled_program_runs_in_the_pipeline_on_a_built_in_question(compiled):
    _, out, train, *_ = compiled
    seen: list = []

    def reply(request):
        seen.append(request)
        return {"fields": {"sql": "SELECT count(*) FROM service_areas"}}

    config = PipelineConfig(tools=ToolSettings(sql_framing="program", sql_program=str(out), sql_output="extract"))
    t = Pipeline(routers.router.build("oracle"), scripted_lm(reply), config=config).run(
        "How many service areas are there?", train[0].db_path, oracle_intent="sql"
    )
    assert len(seen) == 1 and len(seen[0].messages) == 9  # four demos, then the question
    assert t.sql == "SELECT count(*) FROM service_areas" and len(t.rows) == 1


def test_a_dataset_other_than_the_builtin_one_is_refused(builtin):
    class Other:
        name = "spider"

    with pytest.raises(ConfigError, match="built-in benchmark") as exc:
        sql_train_examples(Other())
    assert "reported sets" in exc.value.fix
    with pytest.raises(ConfigError, match="output handling"):
        fit_sql_program(builtin, scripted_lm(["x"]), lm_spec="scripted:x", output="strict")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--demos", "9"], "--demos 9 out of range"),
        (["--out", "program.txt"], "is not a program file name"),
        (["--train-limit", "0"], "--train-limit 0 out of range"),
        (["--output", "strict"], "unknown SQL output handling"),
    ],
)
def test_the_script_exits_2_on_bad_arguments_with_expected_found_fix(tmp_path, monkeypatch, capsys, args, message):
    spec = importlib.util.spec_from_file_location("compile_generate_sql", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.chdir(tmp_path)
    assert script.main(["--lm", "scripted:basic", "--no-zero-shot", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "expected:" in err and "fix:" in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_script_compiles_with_a_progress_bar_and_prints_the_provenance(tmp_path):
    target = tmp_path / "generate_sql_mine.json"
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--lm", "scripted:basic", "--train-limit", "3", "--out", str(target)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert printed == json.loads(target.with_suffix(".meta.json").read_text())
    assert printed["train_size"] == 3 and target.is_file()
    assert "compiled on train" in out.stderr and "zero-shot on train" in out.stderr


@pytest.mark.model
def test_a_tiny_program_compiled_on_the_embedded_model_answers_a_built_in_question(builtin, tmp_path):
    """One bootstrapped demo from two train questions, then a third train question through the pipeline."""
    from routerlab.agents.lm import resolve_lm

    lm = resolve_lm("local")
    out = tmp_path / "generate_sql_tiny.json"
    report = fit_sql_program(builtin, lm, lm_spec="local", demos=1, train_limit=2, out=out, zero_shot=False)
    assert report.train_size == 2 and 1 <= report.demos <= 2
    program, _ = load_sql_program(str(out))
    assert all("db_schema" not in d for d in program.generate.demos)
    e = sql_train_examples(builtin)[5]  # not one of the two compiled on; no reported set is read
    config = PipelineConfig(tools=ToolSettings(sql_framing="program", sql_program=str(out), sql_output="extract"))
    t = Pipeline(routers.router.build("oracle"), lm, config=config).run(e.question, e.db_path, oracle_intent="sql")
    generate = next(c for c in t.tool_calls if c["name"] == "generate_sql")
    assert generate["status"] == "success" and t.sql and t.sql.upper().lstrip().startswith(("SELECT", "WITH"))


def test_a_session_records_the_program_and_its_config_rebuilds_the_run(compiled, tmp_path):
    from rich.console import Console

    from routerlab._runs.config import load_run_config
    from routerlab._runs.runner import RunConfig
    from routerlab._runs.session import SessionSpec, run_session
    from routerlab.agents.tools.sql_program import sql_program_digest
    from routerlab.eval.store import ResultsStore

    _, out, *_ = compiled
    tools = ToolSettings(sql_framing="program", sql_program=str(out), sql_output="extract")
    spec = SessionSpec(
        routers=[("oracle", {})],
        config=RunConfig(limit=2, split="train", intents=("sql",), pipeline=PipelineConfig(tools=tools)),
        tracking_uri=None,
        store_path=str(tmp_path / "results.duckdb"),
    )
    lm = scripted_lm(lambda request: {"fields": {"sql": "SELECT count(*) FROM service_areas"}})
    result = run_session(spec, console=Console(quiet=True), lm=lm)
    run = ResultsStore(spec.store_path).run(result.run_ids[0])
    assert run["params"]["sql_program"] == {"name": str(out), "file": out.name, "digest": sql_program_digest(out)}
    rebuilt = load_run_config(None, defaults=run["config"])
    assert rebuilt.pipeline.tools == tools
