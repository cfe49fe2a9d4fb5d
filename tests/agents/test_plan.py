"""The canonical plan: the next call for each intent given the calls so far."""

import pytest

from routerlab.agents.plan import CLARIFY_QUESTION, next_call
from routerlab.agents.state import initial_state


def _state(question="How many areas?", **extra):
    s = initial_state(question, "/tmp/x.duckdb")
    s.update(extra)
    return s


def _rec(cid, name, status="success", output=None, step=0, **args):
    return {cid: {"id": cid, "name": name, "status": status, "output": output or {}, "step": step, "args": args}}


def test_sql_plan_walks_discovery_generate_execute():
    s = _state()
    c1 = next_call(s, "sql")
    assert c1["name"] == "data_discovery" and c1["args"] == {"question": "How many areas?"}
    s["tool_calls"] = _rec("d", "data_discovery", output={"schema": "..."})
    c2 = next_call(s, "sql")
    assert c2["name"] == "generate_sql" and c2["args"]["discovery_call_id"] == "d"
    s["tool_calls"] |= _rec("g", "generate_sql", output={"sql": "SELECT 1"}, step=1)
    c3 = next_call(s, "sql")
    assert c3["name"] == "execute_sql_and_analyze_result" and c3["args"] == {"sql_call_id": "g"}


def test_failed_execution_triggers_one_fix_then_gives_up():
    s = _state()
    s["tool_calls"] = (
        _rec("d", "data_discovery", output={"schema": "."})
        | _rec("g", "generate_sql", output={"sql": "SELECT nme"}, step=1)
        | _rec("e", "execute_sql_and_analyze_result", status="error", output="Binder Error: nme", step=2)
    )
    fix = next_call(s, "sql", fix_budget=1)
    assert fix["name"] == "fix_sql"
    assert fix["args"] == {"sql": "SELECT nme", "error": "Binder Error: nme", "failed_call_id": "e"}
    s["tool_calls"] |= _rec("f", "fix_sql", output={"sql": "SELECT name"}, step=3)
    s["tool_calls"] |= _rec("e2", "execute_sql_and_analyze_result", status="error", output="again", step=4)
    assert next_call(s, "sql", fix_budget=1) is None


def test_fix_request_extracts_sql_and_error_from_the_question():
    q = 'Fix this: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found'
    c = next_call(_state(q), "fix")
    assert c["name"] == "fix_sql"
    assert c["args"]["sql"] == "SELECT nme FROM areas"
    assert c["args"]["error"].startswith("Binder Error")
    assert "failed_call_id" not in c["args"]


@pytest.mark.parametrize(("intent", "tool"), [("explain", "explain_sql"), ("chat", "chat"), ("refuse", "refuse")])
def test_single_step_intents_then_done(intent, tool):
    s = _state("Explain SELECT 1")
    c = next_call(s, intent)
    assert c["name"] == tool
    s["tool_calls"] = _rec(c["id"], tool)
    assert next_call(s, intent) is None


def test_clarify_asks_then_runs_sql_plan_with_the_reply():
    s = _state("What was revenue last month?")
    c = next_call(s, "clarify")
    assert c == {"id": c["id"], "name": "ask_human", "args": {"question": CLARIFY_QUESTION}}
    s["tool_calls"] = _rec(c["id"], "ask_human", output={"reply": "Qinling North"})
    s["user_reply"] = "Qinling North"
    c2 = next_call(s, "clarify")
    assert c2["name"] == "data_discovery"
    assert "Qinling North" in c2["args"]["question"]


def test_call_ids_are_unique_within_a_turn():
    s = _state()
    ids = set()
    for i, name in enumerate(["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]):
        c = next_call(s, "sql")
        assert c["name"] == name
        ids.add(c["id"])
        s["tool_calls"] = s["tool_calls"] | _rec(c["id"], name, output={"schema": ".", "sql": "SELECT 1"}, step=i)
    assert len(ids) == 3
