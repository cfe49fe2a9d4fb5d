"""The ``team`` router through the real pipeline on a real DuckDB file (scripted LM for control flow)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from routerlab import routers
from routerlab.agents.errors import ConfigError, ContractError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.routers.team import DEFAULT_ORDER

QUESTION = "How many areas have EV charging?"
COUNT_SQL = "SELECT count(*) FROM areas WHERE has_ev"


def _member(request) -> str:
    """Which member is speaking (its role line opens its instruction)."""
    system = str(request.system or "")
    for name, cue in (
        ("triage", "You guard"),
        ("sql", "You answer questions about the data"),
        ("fix", "You repair failing SQL"),
        ("explain", "You explain SQL"),
        ("chat", "You chat"),
    ):
        if system.startswith(cue):
            return name
    return ""


def team_lm(speakers: list[str]):
    """Plays members that know their job: the one whose request it is acts, the others pass."""

    def reply(request):
        if not request.tools:
            return COUNT_SQL  # the generate_sql program
        member = _member(request)
        speakers.append(member)
        text = " ".join(str(p) for m in request.messages for p in m.parts)
        done = dict(re.findall(r"\[(\w+) tool_call_id=(\w+) status=success\]", text))
        if member == "explain" and "Explain:" in text:
            return {"name": "explain_sql", "args": {"sql": "SELECT 1"}}
        if member == "sql" and "Explain:" not in text:
            if "data_discovery" not in done:
                return {"name": "data_discovery", "args": {"question": QUESTION}}
            if "generate_sql" not in done:
                return {
                    "name": "generate_sql",
                    "args": {"question": QUESTION, "discovery_call_id": done["data_discovery"]},
                }
            return {"name": "execute_sql_and_analyze_result", "args": {"sql_call_id": done["generate_sql"]}}
        return {"name": "pass_turn", "args": {"reason": f"not for {member}"}}

    return scripted_lm(reply)


def test_a_data_question_passes_to_the_sql_agent_which_runs_its_chain(sales_db):
    speakers: list[str] = []
    pipeline = Pipeline(routers.router.build("team"), team_lm(speakers))
    events = list(pipeline.stream(QUESTION, str(sales_db), conversation_id="t1"))
    state = pipeline.final_state("t1")
    assert not state.get("error"), state.get("error")
    records = sorted(state["tool_calls"].values(), key=lambda r: r["step"])
    assert [r["name"] for r in records] == ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]
    assert state["rows"] == [[1]]
    # first decision: every member before sql passed, in order; later ones: sql resumes at once
    assert speakers == [*DEFAULT_ORDER, "sql", "sql"]
    decisions = state["router_usage"]
    assert decisions[0]["method"] == "team:fix>explain>chat>triage>sql"
    assert [d["method"] for d in decisions[1:]] == ["team:sql", "team:sql"]
    assert {d["agent"] for d in decisions} == {"sql"} and decisions[0]["intent"] == "sql"
    assert decisions[0]["lm_calls"] == 5
    acts = decisions[0]["activations"]
    assert [a["agent"] for a in acts] == list(DEFAULT_ORDER)
    assert [a["outcome"] for a in acts] == ["passed"] * 4 + ["host_call"]
    # every pass is a progress event (the team's trace events ride along under "swarm")
    passes = [e for e in events if "swarm" in e and e["swarm"]["event"] == "tool_call"]
    assert [e["swarm"]["agent"] for e in passes][:4] == list(DEFAULT_ORDER[:4])
    assert all("pass_turn" in e["details"] for e in passes[:4])


def test_an_explain_request_stops_at_the_explain_agent(sales_db):
    speakers: list[str] = []
    pipeline = Pipeline(routers.router.build("team"), team_lm(speakers))
    list(pipeline.stream("Explain: SELECT count(*) FROM areas", str(sales_db), conversation_id="t2"))
    state = pipeline.final_state("t2")
    assert speakers == ["fix", "explain"]
    assert state["router_usage"][0]["intent"] == "explain" and state["router_usage"][0]["tools"] == ["explain_sql"]


def test_a_team_where_everyone_passes_stops_without_a_call(sales_db):
    pass_all = scripted_lm(lambda r: {"name": "pass_turn", "args": {"reason": "no"}} if r.tools else "x")
    pipeline = Pipeline(routers.router.build("team", rounds=2, catch_all=None), pass_all)
    list(pipeline.stream("hello", str(sales_db), conversation_id="t3"))
    state = pipeline.final_state("t3")
    decision = state["router_usage"][0]
    assert decision["method"].endswith(":stopped") and decision["tools"] == []
    assert len(decision["activations"]) == 2 * len(DEFAULT_ORDER)  # two rounds, then the terminator
    assert state["error_class"] == "no_decision"


def test_the_catch_all_member_is_offered_no_pass_and_not_told_how_to_pass(sales_db):
    offered: dict[str, tuple[list[str], str]] = {}

    def reply(request):
        if not request.tools:
            return "x"
        offered[_member(request)] = ([t.name for t in request.tools], str(request.system))
        return {"name": "pass_turn", "args": {"reason": "no"}}

    pipeline = Pipeline(routers.router.build("team"), scripted_lm(reply))
    list(pipeline.stream("hello", str(sales_db), conversation_id="t5"))
    assert set(offered) == set(DEFAULT_ORDER)
    for member, (tools, system) in offered.items():
        catch_all = member == "sql"
        assert ("pass_turn" in tools) is not catch_all, member
        assert ("call pass_turn" in system) is not catch_all, member
    # a pass the catch-all was not offered is an invalid call: a scored failure, no call made
    decision = pipeline.final_state("t5")["router_usage"][0]
    assert decision["tools"] == [] and decision["activations"][-1]["agent"] == "sql"


def test_a_member_with_its_own_lm(sales_db):
    speakers: list[str] = []
    shared = team_lm(speakers)
    # the chat member runs scripted:basic, which always calls chat; the others use the pipeline's
    router = routers.router.build("team", order=["chat", "triage", "sql"], agent_lms={"chat": "scripted:basic"})
    pipeline = Pipeline(router, shared)
    list(pipeline.stream("hello there", str(sales_db), conversation_id="t4"))
    state = pipeline.final_state("t4")
    assert state["router_usage"][0]["tools"] == ["chat"] and state["router_usage"][0]["method"] == "team:chat"
    assert speakers == []  # the shared model was never asked: the chat member's own one answered


@pytest.mark.parametrize(
    "kwargs",
    [
        {"order": ["sql", "sql", "triage"]},
        {"order": ["sql"]},
        {"order": ["sql", "triage", "poet"]},
        {"rounds": 0},
        {"agent_lms": {"poet": "scripted:basic"}},
        {"instructions": {"fix": "x"}, "order": ["sql", "triage"]},
        {"catch_all": "fix", "order": ["sql", "triage"]},
    ],
)
def test_bad_arguments_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        routers.router.build("team", **kwargs)


def test_bind_needs_an_lm_and_the_tools():
    with pytest.raises(ContractError):
        routers.router.build("team").bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None))
    with pytest.raises(ContractError):
        routers.router.build("team").bind(RouterEnv(tools=DEFAULT_TOOLS[:3], lm=scripted_lm(["x"])))


def test_route_and_run_accept_the_team_router(tmp_path):
    from routerlab.cli import app

    out = tmp_path / "decisions.csv"
    result = CliRunner().invoke(
        app, ["route", "--router", "team", "--lm", "scripted:basic", "--limit", "7", "--out", str(out), "--no-mlflow"]
    )
    assert result.exit_code == 0, result.output
    assert "team" in result.output and "team:" in out.read_text()
    store = tmp_path / "r.duckdb"
    result = CliRunner().invoke(
        app,
        ["run", "--router", "team", "--lm", "scripted:basic", "--limit", "2", "--store", str(store), "--no-mlflow"],
    )
    assert result.exit_code == 0, result.output
    assert "team" in result.output


@pytest.mark.model
def test_the_team_on_the_embedded_model(sales_db):
    """The team's contract on real model output (one request per kind; the benchmark measures quality)."""
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.state import initial_state

    router = routers.router.build("team")
    # the 1.5B model: on the 0.5B the team talks longer and the test takes longer (74 s, 2026-11-28)
    router.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=resolve_lm("local", max_tokens=128)))
    tool_names = {t.name for t in DEFAULT_TOOLS}
    for text in (QUESTION, "hello!", "Delete all rows from the revenue table"):
        state = initial_state(text, str(sales_db))
        decision = router.decide(state)
        # a call to a pipeline tool, or a stopped team: never a call to an unknown tool or no record
        assert decision.method.startswith("team:")
        assert all(c["name"] in tool_names for c in decision.tool_calls)
        assert decision.tool_calls or decision.method.endswith(":stopped") or decision.invalid_tool_calls
        assert decision.usage.lm_calls >= 1
