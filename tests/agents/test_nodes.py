"""The graph's nodes and a tool call's pieces (routerlab.agents.nodes), on real databases and caches."""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel

from routerlab import routers
from routerlab.agents import graph
from routerlab.agents.errors import GuardViolation, ToolError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.deadline import CallDeadlineExceeded, DeadlineScope, within
from routerlab.agents.nodes import CallOutcome, CallReplay
from routerlab.agents.nodes.call_deadline import bind_deadline, out_of_time
from routerlab.agents.nodes.call_errors import classify
from routerlab.agents.nodes.call_record import call_record, state_effects, tool_message
from routerlab.agents.nodes.call_structured import validate_structured
from routerlab.agents.tools import DEFAULT_TOOLS, SQLPrograms, ToolContext, ToolSettings
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import INJECTED, function_schema
from routerlab.agents.tools.subagents import ask_human, execute_sql_and_analyze_result, generate_sql
from routerlab.agents.trace import Usage

AGENTS = Path(graph.__file__).parent


def run_statement(sql: str, ctx: Annotated[ToolContext, INJECTED]) -> dict:
    """Run a statement the user wrote, read-only.

    Args:
        sql: The statement.
    """
    result = ctx.db.execute(sql, timeout_s=5.0, max_rows=10)
    return {"sql": sql, "columns": result.columns, "rows": result.rows, "row_count": result.row_count}


def _statement_tool(*, executes_sql: bool) -> Tool:
    description, parameters, injected = function_schema(run_statement)
    return Tool("run_statement", description, parameters, run_statement, injected, executes_sql=executes_sql)


def _run_once(tool: Tool, sql: str, db) -> dict:
    """One turn: the LM router calls ``tool`` once with ``sql``, then answers in text."""
    asked: list[int] = []

    def reply(request):
        if request.tools and not asked:
            asked.append(1)
            return {"name": tool.name, "args": {"sql": sql}}
        return "done"

    pipeline = Pipeline(routers.router.build("llm"), scripted_lm(reply), tools=[*DEFAULT_TOOLS, tool])
    list(pipeline.stream("Run my statement", str(db), conversation_id="n"))
    return pipeline.final_state("n")


def test_only_the_executor_declares_that_it_executes_sql():
    assert execute_sql_and_analyze_result.executes_sql is True
    assert [t.name for t in DEFAULT_TOOLS if t.executes_sql] == ["execute_sql_and_analyze_result"]


@pytest.mark.parametrize("executes_sql", [True, False])
def test_the_tools_flag_not_its_name_decides_what_a_call_sets(sales_db, executes_sql):
    sql = "SELECT name FROM areas WHERE has_ev"
    state = _run_once(_statement_tool(executes_sql=executes_sql), sql, sales_db)
    assert state["rows"] == [["Qinling North"]] and state["executed"] is True
    # an executor's sql is the statement it ran, not a new current SQL of the turn
    assert state["sql"] == (None if executes_sql else sql)


@pytest.mark.parametrize("executes_sql", [True, False])
def test_a_failed_call_of_an_executor_still_marks_the_turn_executed(sales_db, executes_sql):
    state = _run_once(_statement_tool(executes_sql=executes_sql), "SELECT nothing FROM nowhere", sales_db)
    record = next(r for r in state["tool_calls"].values() if r["name"] == "run_statement")
    assert record["status"] == "error" and record["error_class"] == "sql_error"
    assert state["executed"] is executes_sql


def test_state_effects_follow_the_flag():
    failed = CallOutcome("boom", "error", "sql_error")
    ran = CallOutcome({"sql": "SELECT 1", "columns": ["x"], "rows": [[1]], "summary": "1 row"})
    renamed = replace(execute_sql_and_analyze_result, name="run_it")
    assert state_effects(failed, renamed) == {"executed": True}
    assert state_effects(failed, generate_sql) == {}
    assert state_effects(ran, renamed) == {
        "rows": [[1]],
        "columns": ["x"],
        "executed": True,
        "row_count": 1,
        "summary": "1 row",
    }
    assert state_effects(ran, generate_sql)["sql"] == "SELECT 1"


def test_a_tool_error_is_classified_with_the_statement_of_the_call_it_cites():
    known = {"g1": {"output": {"sql": "SELECT x FROM t"}}}
    exc = ToolError("no such column x", error_class="sql_error")
    out = classify(exc, execute_sql_and_analyze_result, {"sql_call_id": "g1"}, known)
    assert (out.status, out.error_class, out.output) == ("error", "sql_error", "no such column x")
    assert out.error_detail == {"sql": "SELECT x FROM t"} and out.turn_update == {}
    guard = GuardViolation("write", "writes are refused", sql="DROP TABLE t")
    assert classify(guard, generate_sql, {}, {}).error_detail == {"sql": "DROP TABLE t", "rule": "write"}


def test_a_crash_ends_the_turn_and_a_transient_error_goes_to_the_retry_policy():
    out = classify(ValueError("bad"), generate_sql, {}, {})
    assert out.error_class == "tool_crash" and out.output == "ValueError: bad"
    assert out.turn_update == {
        "has_internal_error": True,
        "internal_error_message": "generate_sql failed: ValueError: bad",
        "error": "generate_sql failed: ValueError: bad",
        "error_class": "tool_crash",
    }
    with pytest.raises(ConnectionError):
        classify(ConnectionError("reset"), generate_sql, {}, {})
    cut = CallDeadlineExceeded("run", 3.0)
    assert classify(cut, generate_sql, {}, {}).error_class == "run_deadline"


def test_a_cut_model_call_ends_the_turn_even_when_the_tool_caught_it():
    scope = DeadlineScope(at=float("inf"), bound="turn")
    assert bind_deadline(CallOutcome({"answer": "ok"})).ok  # no scope: nothing cut
    with within(scope):
        assert not out_of_time() and bind_deadline(CallOutcome({"answer": "ok"})).ok
        scope.cut = CallDeadlineExceeded("turn", 2.0)
        out = bind_deadline(CallOutcome({"answer": "a fallback"}))
        assert out_of_time()
    assert (out.status, out.error_class) == ("error", "timeout")
    assert out.turn_update == {"error": str(scope.cut), "error_class": "timeout"}


class _Answer(BaseModel):
    answer: str


def test_structured_output_validates_or_fails_the_call():
    good = validate_structured(CallOutcome({"answer": "hi"}), generate_sql, {"generate_sql": _Answer})
    assert good.ok and good.structured == {"answer": "hi"}
    bad = validate_structured(CallOutcome({"sql": "x"}), generate_sql, {"generate_sql": _Answer})
    assert bad.error_class == "invalid_structured_response" and bad.structured is None
    assert bad.output.startswith("generate_sql output does not fit _Answer: answer:")
    failed = CallOutcome("boom", "error", "sql_error")
    assert validate_structured(failed, generate_sql, {"generate_sql": _Answer}) is failed
    untyped = CallOutcome({"sql": "x"})
    assert validate_structured(untyped, generate_sql, {}).structured is None


def test_replay_stores_and_finds_an_outcome_in_a_real_cache(tmp_path, sales_db):
    lm = scripted_lm(["x"])
    state = {"question": "q", "database": str(sales_db), "hint": "", "tool_calls": {}}
    off = CallReplay.of(False, lm, SQLPrograms(), ToolSettings())
    assert off.key(generate_sql, {"question": "q"}, state) is None and off.lookup("k") is None
    on = CallReplay.of(str(tmp_path / "outcomes.sqlite"), lm, SQLPrograms(), ToolSettings())
    key = on.key(generate_sql, {"question": "q"}, state)
    assert key is not None and on.lookup(key) is None
    on.store(key, generate_sql, {"sql": "SELECT 1"}, Usage(lm_calls=1))
    found = on.lookup(key)
    assert found is not None and found.output == {"sql": "SELECT 1"} and found.usage.lm_calls == 1
    assert on.key(ask_human, {"question": "which?"}, state) is None  # a question to the user is never replayed
    other = CallReplay.of(str(tmp_path / "outcomes.sqlite"), lm, SQLPrograms(), ToolSettings(max_rows=3))
    assert other.key(generate_sql, {"question": "q"}, state) != key  # the tool settings are part of the key


def test_a_record_and_message_of_a_replayed_failed_and_structured_call():
    out = CallOutcome({"rows": [[1], [2], [3]]}, replayed=True, structured={"a": 1})
    record = call_record(out, {"id": "c", "name": "t", "step": 0}, started=1.0)
    assert record["replayed"] is True and record["structured_response"] == {"a": 1} and record["id"] == "c"
    assert record["status"] == "success" and record["started"] == 1.0 and record["ended"] >= 1.0
    assert tool_message(out, "c", generate_sql, rows_shown=2).content == '{"rows": [[1], [2]]}'
    failed = tool_message(CallOutcome("no table", "error", "sql_error"), "c", generate_sql, rows_shown=2)
    assert failed.content == "ERROR [sql_error]: no table" and failed.status == "error"


def _functions(path: Path) -> list[tuple[str, int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (n.name, n.end_lineno - n.lineno + 1, ast.get_docstring(n) or "")  # type: ignore[operator]
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_the_pipeline_wires_nodes_and_no_node_function_is_long():
    lines, _ = inspect.getsourcelines(Pipeline)
    assert len(lines) <= 250, f"Pipeline is {len(lines)} lines; move what is not wiring into agents/nodes/"
    long = [
        (path.name, name, n)
        for path in [AGENTS / "graph.py", *sorted((AGENTS / "nodes").glob("*.py"))]
        for name, n, _doc in _functions(path)
        if n > 120
    ]
    assert long == []
    source = "".join(p.read_text(encoding="utf-8") for p in [AGENTS / "graph.py", *(AGENTS / "nodes").glob("*.py")])
    assert '"execute_sql_and_analyze_result"' not in source  # tool behaviour lives in the tool
