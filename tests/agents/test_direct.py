"""Direct mode: an explicit agent request runs that agent (after the calls it cites), never the router."""

from __future__ import annotations

import pytest

from routerlab import routers
from routerlab.agents.graph import Pipeline
from routerlab.agents.plan import DIRECT_CHAINS
from tests.agents.test_graph import program_script

COUNT_SQL = "SELECT count(*) AS n FROM areas WHERE has_ev"
QUESTION = "How many areas have EV charging?"


def _run(db, question, agent, *, lm=None, reply=None):
    # the random router would pick anything: a direct request that consulted it would show
    pipeline = Pipeline(routers.router.build("random"), lm or program_script())
    events = list(pipeline.stream(question, str(db), agent=agent, reply=reply, conversation_id="d1"))
    return pipeline.final_state("d1"), events


@pytest.mark.parametrize(
    ("agent", "chain", "answer"),
    [
        ("data_discovery", ["data_discovery"], "Relevant tables: "),
        ("generate_sql", ["data_discovery", "generate_sql"], COUNT_SQL),
        ("execute_sql_and_analyze_result", list(DIRECT_CHAINS["execute_sql_and_analyze_result"]), "1 row"),
    ],
)
def test_the_requested_agent_runs_after_the_calls_it_cites(sales_db, agent, chain, answer):
    state, events = _run(sales_db, QUESTION, agent)
    records = sorted(state["tool_calls"].values(), key=lambda r: r["step"])
    assert [r["name"] for r in records] == chain == list(DIRECT_CHAINS[agent])
    assert all(r["status"] == "success" for r in records)
    # every reference points at the call made for it
    by_name = {r["name"]: r for r in records}
    if "generate_sql" in by_name:
        assert by_name["generate_sql"]["args"]["discovery_call_id"] == by_name["data_discovery"]["id"]
    if "execute_sql_and_analyze_result" in by_name:
        assert by_name["execute_sql_and_analyze_result"]["args"]["sql_call_id"] == by_name["generate_sql"]["id"]
    assert "route" not in state["path"] and not state.get("router_usage")
    assert state["executed"] is (agent == "execute_sql_and_analyze_result")
    assert events[-1]["type"] == "completed" and events[-1]["answer"].startswith(answer)
    directs = [e["details"] for e in events if e["node"] == "direct"]
    # the events say which call runs and why; none claims the agent while running another
    assert directs[0].startswith(f"explicit request for {agent}")
    if chain[0] != agent:
        assert f"{chain[0]} first ({agent} needs its output)" in directs[0]


def test_direct_ask_human_asks_then_answers_the_clarified_question(sales_db):
    state, events = _run(sales_db, "How did that area do recently?", "ask_human", reply=lambda q: "Qinling North")
    names = [r["name"] for r in sorted(state["tool_calls"].values(), key=lambda r: r["step"])]
    assert names == list(DIRECT_CHAINS["ask_human"])
    assert state["user_reply"] == "Qinling North" and "route" not in state["path"]
    assert events[-1]["type"] == "completed" and events[-1]["rows"] == [[1]]


@pytest.mark.parametrize("agent", ["generate_sql", "execute_sql_and_analyze_result"])
def test_direct_mode_never_skips_the_guard(sales_db, agent):
    state, events = _run(sales_db, "Remove the areas", agent, lm=program_script(sql="DELETE FROM areas"))
    assert not state["executed"]
    last = events[-1]
    assert last["type"] == "error" and last["error_type"] == "guard_violation"
    assert last["sql"] == "DELETE FROM areas" and last["rule"] == "only_select"
    assert [r["name"] for r in state["tool_calls"].values()] == ["data_discovery", "generate_sql"]


def test_a_failed_call_ends_a_direct_request_without_the_router(sales_db):
    # the query fails at execution; no router is asked to repair it
    state, events = _run(
        sales_db, QUESTION, "execute_sql_and_analyze_result", lm=program_script(sql="SELECT nosuch FROM areas")
    )
    assert events[-1]["type"] == "error"
    assert state["error_class"] == "sql_error" and "route" not in state["path"]
    assert events[-1]["sql"] == "SELECT nosuch FROM areas"
