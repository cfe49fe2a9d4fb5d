"""Seed 000's ``has_internal_error`` and confirmation requests, on the real pipeline and a real DuckDB file."""

from __future__ import annotations

from routerlab import routers
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import function_schema
from tests.routerlab.serve.test_api import Gate, make_lm


def _run(pipeline: Pipeline, question: str, db, conv: str) -> tuple[list[dict], dict]:
    events = list(pipeline.stream(question, str(db), conversation_id=conv))
    return events, pipeline.final_state(conv)


def _sql_lm():
    gate = Gate()
    gate.release.set()
    return make_lm(gate)


def test_a_tool_error_that_ends_the_turn_is_an_internal_error(sales_db):
    pipeline = Pipeline(routers.router.build("rules"), _sql_lm())
    events, state = _run(pipeline, "How many areas have EV charging? [guard]", sales_db, "g")
    assert state["error_class"] == "guard_violation"  # not repairable: the turn ends on it
    assert state["has_internal_error"] is True
    assert state["internal_error_message"].startswith("generate_sql failed:")
    assert events[-1]["type"] == "error" and events[-1]["has_internal_error"] is True


def test_an_error_of_the_turn_itself_is_not_an_internal_error(sales_db):
    # one router step: the turn ends on its step limit, no call failed
    pipeline = Pipeline(routers.router.build("rules"), _sql_lm(), config=PipelineConfig(max_steps=1))
    _events, state = _run(pipeline, "How many areas have EV charging?", sales_db, "s")
    assert state["error_class"] == "step_limit" and not state.get("has_internal_error")


def stage_delete(table: str) -> dict:
    """Prepare deleting a table's rows; the user must confirm first.

    Args:
        table: The table.
    """
    return {"needs_confirmation": f"Delete every row of {table}? Reply yes to confirm.", "table": table}


def test_a_tool_asking_for_confirmation_ends_the_turn_with_its_question(sales_db):
    description, parameters, injected = function_schema(stage_delete)
    staged = Tool("stage_delete", description, parameters, stage_delete, injected)
    lm = scripted_lm(lambda r: {"name": "stage_delete", "args": {"table": "revenue"}} if r.tools else "x")
    pipeline = Pipeline(routers.router.build("llm"), lm, tools=[*DEFAULT_TOOLS, staged])
    events, state = _run(pipeline, "Clear the revenue table", sales_db, "c")
    question = "Delete every row of revenue? Reply yes to confirm."
    done = events[-1]
    assert done["type"] == "completed" and done["confirmation"] is True
    assert done["ask_human"] == done["answer"] == question == state["answer"]
    assert not state.get("error") and len(state["router_usage"]) == 1  # the router was not asked again
