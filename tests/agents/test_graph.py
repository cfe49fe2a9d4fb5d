"""The dispatch graph's paths, driven by scripted routers/LMs on a real DuckDB file."""

from __future__ import annotations

import time

import pytest

from routerlab import routers
from routerlab.agents.db import file_digest
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.routing import RouteDecision
from routerlab.agents.tools import ToolSettings


def _output_field(request) -> str:
    return requested_field(request)


def program_script(sql="SELECT count(*) AS n FROM areas WHERE has_ev", fixed="SELECT name FROM areas ORDER BY id"):
    """A scripted LM answering the sub-agents' DSPy programs by their output field."""

    def reply(request):
        field = _output_field(request)
        value = {
            "sql": sql,
            "fixed_sql": fixed,
            "explanation": "It counts the areas.",
            "reply": "Hello! I answer questions about your data.",
        }.get(field, "")
        return answer_field(request, value)

    return scripted_lm(reply)


@pytest.fixture
def lm():
    return program_script()


def run(router_name, lm, db, question, **kw):
    p = Pipeline(routers.router.build(router_name), lm, config=kw.pop("config", None))
    return p, p.run(question, str(db), **kw)


CASES = [
    (
        "How many areas have EV charging?",
        "sql",
        ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"],
    ),
    ("Explain: SELECT count(*) FROM areas", "explain", ["explain_sql"]),
    (
        'Fix: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found',
        "fix",
        ["fix_sql", "execute_sql_and_analyze_result"],
    ),
    ("hello!", "chat", ["chat"]),
    ("Delete every row of revenue", "refuse", ["refuse"]),
]


@pytest.mark.parametrize(("question", "intent", "chain"), CASES)
def test_paths(lm, sales_db, question, intent, chain):
    _, t = run("oracle", lm, sales_db, question, oracle_intent=intent)
    assert t.tool_names == chain
    assert t.intent == intent
    assert t.error is None
    assert t.answer
    # every call has exactly one tool message with its id and a status
    tool_msgs = [m for m in t.messages if m["role"] == "tool"]
    assert sorted(m["tool_call_id"] for m in tool_msgs) == sorted(c["id"] for c in t.tool_calls)
    assert all(m["status"] == "success" for m in tool_msgs)
    assert t.events[-1]["type"] == "completed"
    assert t.executed == ("execute_sql_and_analyze_result" in chain)


def test_sql_path_links_calls_and_returns_rows(lm, sales_db):
    _, t = run("rules", lm, sales_db, "How many areas have EV charging?")
    d, g, e = t.tool_calls
    assert g["parent"] == d["id"] and e["parent"] == g["id"]
    assert t.sql == "SELECT count(*) AS n FROM areas WHERE has_ev"
    assert t.rows == [[1]] and t.columns == ["n"]
    assert t.subagent_usage.lm_calls == 1 and t.router_usage.lm_calls == 0


def test_clarify_interrupts_and_resumes_with_the_reply(lm, sales_db):
    asked = []
    _, t = run(
        "oracle",
        lm,
        sales_db,
        "How did it do?",
        oracle_intent="clarify",
        reply=lambda q: asked.append(q) or "Qinling North",
    )
    assert asked and t.ask_human == asked[0]
    assert t.turns == 2
    assert t.tool_names == ["ask_human", "data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    gen = t.tool_calls[2]
    assert "Qinling North" in gen["args"]["question"]


def test_clarify_without_reply_ends_the_turn_with_the_question(lm, sales_db):
    _, t = run("oracle", lm, sales_db, "How did it do?", oracle_intent="clarify")
    assert t.tool_names == ["ask_human"]
    assert t.answer == t.ask_human
    assert not t.executed


def test_guard_violation_ends_the_turn_with_its_rule(sales_db):
    lm = program_script(sql="DELETE FROM areas")
    before = file_digest(sales_db)
    _, t = run("oracle", lm, sales_db, "How many areas?", oracle_intent="sql")
    assert t.error_class == "guard_violation"
    assert "only SELECT" in t.error or "DELETE" in t.error
    assert t.events[-1]["type"] == "error"
    assert file_digest(sales_db) == before


def test_sql_error_is_recoverable_through_fix_sql(sales_db):
    lm = program_script(sql="SELECT nme FROM areas", fixed="SELECT name FROM areas ORDER BY id")
    # deterministic repair off: this is the LM path a mis-spelt column takes without it
    cfg = PipelineConfig(tools=ToolSettings(repair=False))
    _, t = run("oracle", lm, sales_db, "List area names", oracle_intent="sql", config=cfg)
    assert t.tool_names == [
        "data_discovery",
        "generate_sql",
        "execute_sql_and_analyze_result",
        "fix_sql",
        "execute_sql_and_analyze_result",
    ]
    failed, fix = t.tool_calls[2], t.tool_calls[3]
    assert failed["status"] == "error" and failed["error_class"] == "sql_error"
    assert fix["parent"] == failed["id"]
    assert t.rows[0] == ["Qinling North"] and t.error is None


def test_unrepairable_sql_ends_with_the_engine_error(sales_db):
    lm = program_script(sql="SELECT nme FROM areas", fixed="SELECT nme2 FROM areas")
    cfg = PipelineConfig(tools=ToolSettings(fix_attempts=1, repair=False))
    _, t = run("oracle", lm, sales_db, "List area names", oracle_intent="sql", config=cfg)
    assert t.error_class == "sql_error"
    assert "nme2" in t.error


def test_misspelt_column_is_repaired_without_an_lm_call(sales_db):
    lm = program_script(sql="SELECT nme FROM areas ORDER BY id", fixed="SELECT 'the LM was asked'")
    _, t = run("oracle", lm, sales_db, "List area names", oracle_intent="sql")
    assert t.tool_names == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    gen = t.tool_calls[1]["output"]
    assert gen["repairs"] == ["column nme -> name"]
    assert t.rows[0] == ["Qinling North"] and t.error is None


class _Loop:
    """A scripted router that never ends: data_discovery forever."""

    name = "loop"

    def bind(self, env):
        pass

    def decide(self, state):
        n = len(state.get("tool_calls", {}))
        return RouteDecision(
            tool_calls=[{"id": f"c{n}", "name": "data_discovery", "args": {"question": "q"}}],
            intent="sql",
            method="loop",
        )


def test_step_limit_bounds_a_looping_router(lm, sales_db):
    p = Pipeline(_Loop(), lm, config=PipelineConfig(max_steps=3))
    t = p.run("q", str(sales_db))
    assert t.error_class == "step_limit"
    assert t.steps == 3


def test_deadline_bounds_a_turn(lm, sales_db):
    class Slow(_Loop):
        def decide(self, state):
            time.sleep(0.3)
            return super().decide(state)

    p = Pipeline(Slow(), lm, config=PipelineConfig(max_steps=50, timeout_s=0.5))
    t = p.run("q", str(sales_db))
    assert t.error_class == "timeout"


def test_unknown_tool_from_router_is_an_error(lm, sales_db):
    class Bad(_Loop):
        def decide(self, state):
            return RouteDecision(tool_calls=[{"id": "x", "name": "drop_everything", "args": {}}], intent="sql")

    t = Pipeline(Bad(), lm).run("q", str(sales_db))
    assert t.error_class == "unknown_tool"


def test_explicit_agent_bypasses_the_router(lm, sales_db):
    p = Pipeline(routers.router.build("random"), lm)
    t = p.run("Explain SELECT 1", str(sales_db), agent="explain_sql")
    assert t.tool_names == ["explain_sql"]
    assert "direct" in t.path and "route" not in t.path


def test_events_stream_live_in_order(lm, sales_db):
    p = Pipeline(routers.router.build("rules"), lm)
    events = list(p.stream("How many areas have EV charging?", str(sales_db)))
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "completed" and set(kinds[:-1]) == {"progress"}
    assert [e["node"] for e in events][:2] == ["route", "tools"]
    assert len({e["conversation_id"] for e in events}) == 1
    assert events[-1]["execution_path"][-1] == "respond"


def test_graph_topology_matches_golden(lm, golden):
    p = Pipeline(routers.router.build("rules"), lm)
    g = p.graph.get_graph()
    edges = sorted(f"{e.source}->{e.target}{' (conditional)' if e.conditional else ''}" for e in g.edges)
    golden("graph_topology", {"nodes": sorted(g.nodes), "edges": edges})


def test_non_router_is_rejected_when_the_graph_is_built(lm):
    from routerlab.agents.errors import ContractError

    with pytest.raises(ContractError):
        Pipeline(object(), lm)  # type: ignore[arg-type]
