"""LM routers decide in one pass where the LM can score labels, and say which path decided."""

from __future__ import annotations

import math

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import resolve_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import INTENTS, initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.routers.llm import ARG_FILLERS, _citable

TOOL_NAMES = {t.name for t in DEFAULT_TOOLS}
UNSURE = "How did that area do recently?"  # the rules are unsure: hybrid asks the LM


def _bound(name, lm, **kwargs):
    r = routers.router.build(name, **kwargs)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    return r


def _record(cid, name, step, status="success", output=None):
    return {"id": cid, "name": name, "args": {}, "status": status, "step": step, "output": output}


def test_without_a_scorer_each_router_generates_and_says_so(sales_db):
    lm = resolve_lm("scripted:basic")
    state = initial_state(UNSURE, str(sales_db))
    assert _bound("dspy", lm).decide(state).method.split(":")[-1].startswith("generation")
    # the LM's chat has no rule of the rules' behind it: unbacked, the rules' clarify stands (issue 59)
    assert _bound("hybrid", lm).decide(state).method == "hybrid:rule:vague_reference(lm-unbacked:chat)"
    assert _bound("hybrid", lm, lm_backed=False).decide(state).method in ("hybrid:generation",) or "llm-invalid" in (
        _bound("hybrid", lm, lm_backed=False).decide(state).method
    )
    assert _bound("llm", lm).decide(state).method == "llm:generation"


def test_arguments_are_filled_from_the_state_and_citations_gate_the_candidates(sales_db):
    state = initial_state("how many areas?", str(sales_db))
    schemas = {t.name: t.openai_schema()["function"] for t in DEFAULT_TOOLS}
    # nothing to cite yet: a call that must cite a SQL call is not a candidate; generate_sql's
    # discovery citation is optional (without it the tool reads the whole schema), so it is one
    assert not _citable(state, schemas["execute_sql_and_analyze_result"])
    assert _citable(state, schemas["data_discovery"]) and _citable(state, schemas["fix_sql"])
    assert _citable(state, schemas["generate_sql"])
    assert "discovery_call_id" not in schemas["generate_sql"]["parameters"]["required"]
    state["tool_calls"] = {
        "d1": _record("d1", "data_discovery", 0),
        "g1": _record("g1", "generate_sql", 1, output={"sql": "SELECT nme FROM areas"}),
        "x1": _record("x1", "execute_sql_and_analyze_result", 2, status="error", output="no column nme"),
    }
    assert ARG_FILLERS[("generate_sql", "discovery_call_id")](state) == "d1"
    assert ARG_FILLERS[("execute_sql_and_analyze_result", "sql_call_id")](state) == "g1"
    assert ARG_FILLERS[("fix_sql", "sql")](state) == "SELECT nme FROM areas"
    assert ARG_FILLERS[("fix_sql", "error")](state) == "no column nme"
    assert ARG_FILLERS[("fix_sql", "failed_call_id")](state) == "x1"
    assert ARG_FILLERS[("data_discovery", "question")](state) == "how many areas?"


@pytest.fixture(scope="module")
def small_lm():
    # the 0.5B model: the mechanics on real output, not routing quality (routerlab route measures that)
    return resolve_lm("local:0.5b", cache=False, max_tokens=48)


@pytest.mark.model
def test_dspy_and_hybrid_read_the_intent_from_label_probabilities(small_lm, sales_db, tmp_path):
    state = initial_state(UNSURE, str(sales_db))
    d = _bound("dspy", small_lm).decide(state)
    assert d.method.endswith(":logprob") and d.intent in INTENTS
    assert 0.0 < d.confidence < 1.0 and d.usage.lm_calls == 1 and d.usage.completion_tokens == 0
    # with the database view dspy's program sees, hybrid's LM path is dspy's prompt: the same
    # distribution (hybrid applies no calibration offsets, so compare with the program without them)
    from routerlab.routers.dspy_router import load_program

    program, _ = load_program("builtin")
    program.route.calibration = {}
    plain = tmp_path / "plain.json"
    program.save(str(plain))
    d = _bound("dspy", small_lm, program=str(plain)).decide(state)
    # lm_backed=False: the LM path's own decision, not whether the rules back it
    h = _bound("hybrid", small_lm, program=str(plain), schema=program.route.schema, lm_backed=False).decide(state)
    assert h.method == "hybrid:logprob" and h.intent == d.intent and math.isclose(h.confidence, d.confidence)
    # by default it sees the columns too (so it can tell what the database lacks): still one pass
    cols = _bound("hybrid", small_lm, lm_backed=False).decide(state)
    assert cols.method == "hybrid:logprob" and cols.intent in INTENTS and cols.usage.completion_tokens == 0
    # an LM answer less sure than lm_threshold goes back to the rules' answer
    back = _bound("hybrid", small_lm, lm_threshold=1.0).decide(state)
    assert back.method.endswith("(lm-unsure)") and back.usage.lm_calls == 1


@pytest.mark.model
def test_llm_router_turn_cites_ids_it_did_not_generate(small_lm, sales_db):
    pipeline = Pipeline(routers.router.build("llm"), small_lm)
    trace = pipeline.run("How many service areas are in Shaanxi?", str(sales_db))
    first = trace.route_decisions[0]
    assert first["method"].startswith("llm:logprob") and 0.0 < first["confidence"] < 1.0
    calls = trace.tool_calls
    assert calls and all(c["name"] in TOOL_NAMES for c in calls)
    ids = {c["id"] for c in calls}
    for c in calls:
        for arg, value in c["args"].items():
            if arg.endswith("_call_id"):
                assert value in ids  # a citation always names a call of this turn
    if calls[0]["name"] in ("data_discovery", "chat"):
        assert next(iter(calls[0]["args"].values())) == "How many service areas are in Shaanxi?"


@pytest.mark.model
def test_llm_router_reads_the_schema_check_finding_in_its_one_pass_request(small_lm, sales_db):
    """The finding lengthens the per-request part only; the decision stays one forward pass."""
    from routerlab.routers.support.schema_outline import schema_finding

    question = "What is the average salary of the cashiers in each area?"
    state = initial_state(question, str(sales_db))
    env = RouterEnv(tools=DEFAULT_TOOLS, lm=small_lm, open_db=open_database)
    assert "salary" in schema_finding(env, state)  # the check does find the gap here
    plain = _bound("llm", small_lm).decide(state)
    told = _bound("llm", small_lm, schema_check=True).decide(state)
    for d in (plain, told):
        assert d.method.startswith("llm:logprob") and d.tool_calls[0]["name"] in TOOL_NAMES
        assert 0.0 < d.confidence < 1.0
    # the same cached prefix, a longer request: the finding's tokens are the only extra ones
    assert told.usage.prompt_tokens > plain.usage.prompt_tokens
