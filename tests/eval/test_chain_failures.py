"""chain_valid on traces the real pipeline produces when a turn fails (scripted LMs force each failure).

Each case runs the real LangGraph pipeline on a real DuckDB file with the ``llm`` or ``retrieval``
router driven by a scripted LM whose replies make one kind of failure happen, then scores the trace
the runner would score. A failed turn must be invalid and name the rule it broke, even though the
respond node answers it with an apology.
"""

from __future__ import annotations

import time

import pytest

from routerlab import routers
from routerlab._runs.runner import RouterRun, RunConfig
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.tools.distractors import is_distractor, tool_registry
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers.chain import ChainValidity

QUESTION = "How many areas have EV charging?"


def _discover_forever(request):
    """Routing requests: always another data_discovery call; sub-agent requests: a plain reply."""
    if request.tools:
        return {"name": "data_discovery", "args": {"question": QUESTION}}
    return {"fields": {"tables": "areas"}}


def _score(trace):
    score = ChainValidity().score(None, trace)  # type: ignore[arg-type]  (the example is not read)
    return score.value, score.detail["rule"], score.reason


def test_step_limit_is_invalid(sales_db):
    lm = scripted_lm(_discover_forever)
    t = Pipeline(routers.router.build("llm"), lm, config=PipelineConfig(max_steps=3)).run(QUESTION, str(sales_db))
    assert t.error_class == "step_limit" and t.answer.startswith("Sorry")
    assert t.tool_names == ["data_discovery"] * 3
    value, rule, reason = _score(t)
    assert (value, rule) == (0.0, "step_limit") and "step_limit" in reason


def test_invalid_tool_call_is_recorded_and_invalid(sales_db):
    lm = scripted_lm([{"name": "generate_sql", "args": {"nonsense": 1}}])
    t = Pipeline(routers.router.build("llm"), lm).run(QUESTION, str(sales_db))
    assert t.error_class == "invalid_tool_call" and t.answer
    assert t.tool_calls == []
    assert [c["name"] for c in t.invalid_tool_calls] == ["generate_sql"]
    assert t.invalid_tool_calls[0]["step"] == 0 and "question" in t.invalid_tool_calls[0]["error"]
    value, rule, reason = _score(t)
    assert (value, rule) == (0.0, "invalid_tool_call") and "generate_sql" in reason


def test_unknown_tool_from_the_lm_is_an_invalid_call(sales_db):
    lm = scripted_lm([{"name": "drop_everything", "args": {}}])
    t = Pipeline(routers.router.build("llm"), lm).run(QUESTION, str(sales_db))
    value, rule, _ = _score(t)
    assert (value, rule) == (0.0, "invalid_tool_call")
    assert "unknown tool" in t.invalid_tool_calls[0]["error"]


def test_a_call_to_a_distractor_is_in_the_chain_and_invalid(sales_db):
    target = next(
        t
        for t in tool_registry(64)
        if is_distractor(t)
        and all(t.parameters["properties"][p].get("type") == "string" for p in t.parameters["required"])
    )
    args = dict.fromkeys(target.parameters["required"], "x")

    def reply(request):
        if [t.name for t in request.tools] == ["retrieve_tools"]:
            return {"name": "retrieve_tools", "args": {"query": target.description}}
        return {"name": target.name, "args": args}

    router = routers.router.build("retrieval", index="bm25", tool_scale=64)
    t = Pipeline(router, scripted_lm(reply)).run("Do that platform thing", str(sales_db))
    assert t.error_class == "unknown_tool"
    assert t.tool_names == [target.name] and t.tool_calls[0]["status"] == "rejected"
    value, rule, reason = _score(t)
    assert (value, rule) == (0.0, "unknown_tool") and target.name in reason


def test_deadline_is_invalid(sales_db):
    def slow(request):
        time.sleep(0.3)
        return _discover_forever(request)

    config = PipelineConfig(max_steps=50, timeout_s=0.5)
    t = Pipeline(routers.router.build("llm"), scripted_lm(slow), config=config).run(QUESTION, str(sales_db))
    assert t.error_class == "timeout"
    assert t.tool_calls and t.tool_calls[0]["status"] == "success"  # the calls themselves were fine
    assert _score(t)[:2] == (0.0, "deadline")


def test_a_router_that_raises_is_a_crash_and_invalid(sales_db):
    def broken(request):
        raise ValueError("the router's model broke")

    config = RunConfig(lm="scripted:basic", scorers=("chain_valid",))
    run = RouterRun("llm", {}, scripted_lm(broken), config, [ChainValidity()])
    example = Example(
        id="e1",
        question=QUESTION,
        db_id="sales",
        db_path=str(sales_db),
        intent="sql",
        gold_sql="SELECT count(*) FROM areas WHERE has_ev",
    )
    result = run.run_example(example)
    assert result.outcome == "crash"
    score = result.scores["chain_valid"]
    assert (score.value, score.detail["rule"]) == (0.0, "crash") and "the router's model broke" in score.reason


@pytest.mark.parametrize("intent", ["sql", "chat", "refuse"])
def test_a_turn_that_succeeds_stays_valid(sales_db, intent):
    def reply(request):
        fields = {"sql": "SELECT count(*) FROM areas WHERE has_ev", "reply": "Hello!"}
        field = requested_field(request) or "reply"
        return answer_field(request, fields[field])

    t = Pipeline(routers.router.build("oracle"), scripted_lm(reply)).run(QUESTION, str(sales_db), oracle_intent=intent)
    assert t.error is None
    assert _score(t)[:2] == (1.0, None)
