"""The handoff router through the real dispatch pipeline, on a scripted LM and a real DuckDB file."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from routerlab import routers
from routerlab.agents.errors import ConfigError, ContractError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.lm.scripts import answer_field, requested_field
from routerlab.agents.registry import component_spec
from routerlab.agents.routing import RouteDecision, RouterEnv
from routerlab.agents.state import INTENTS, initial_state
from routerlab.agents.swarm import FunctionTool, SwarmEvent, SwarmEventType, to_progress_event
from routerlab.agents.tools import DEFAULT_TOOLS, ToolSettings
from routerlab.agents.tools.text import extract_error, extract_sql
from routerlab.routers.handoff import HandoffDecision, HandoffRouter

_RESULT = re.compile(r"^\[(\w+) tool_call_id=(\S+) status=(\w+)\] (.*)$", re.S)
GOOD_SQL = "SELECT count(*) AS n FROM areas WHERE has_ev"
FIXED_SQL = "SELECT name FROM areas ORDER BY id"


def _output_field(request) -> str:
    return requested_field(request)


def _results(request) -> list[tuple[str, str, str, str]]:
    """``(tool, id, status, content)`` of every tool result the agent was shown."""
    out = []
    for m in request.messages:
        if m.role == "tool":
            hit = _RESULT.match(text_of(m))
            if hit:
                out.append(hit.groups())
    return out


def _handed_back(request) -> bool:
    return "handed this request back" in str(request.system or "")


def _triage(request, user: str, *, misroute: bool = False) -> dict:
    if misroute and not _handed_back(request):
        # a triage that sends everything to the sql agent first: the sql agent must hand it back
        return {"name": "transfer_to_sql", "args": {}}
    if "answered the clarifying question" in str(request.system):
        return {"name": "transfer_to_sql", "args": {}}
    if re.search(r"delete|drop", user, re.I):
        return {"name": "refuse", "args": {"reason": "read-only assistant"}}
    if user.startswith("Explain"):
        return {"name": "transfer_to_explain", "args": {}}
    if user.startswith("Fix"):
        return {"name": "transfer_to_fix", "args": {}}
    if re.search(r"hello|thanks", user, re.I):
        return {"name": "transfer_to_chat", "args": {}}
    if "that area" in user:
        return {"name": "ask_human", "args": {"question": "Which area do you mean?"}}
    return {"name": "transfer_to_sql", "args": {}}


#: requests the scripted sql agent knows are not its own, with the reason it hands them back with
_NOT_SQL = {"hello": "a greeting, not a data question", "Fix": "a failing query to repair, not a data question"}


def _sql_agent(request, user: str) -> dict:
    results = _results(request)
    if not results:
        reason = next((r for cue, r in _NOT_SQL.items() if user.startswith(cue)), None)
        if reason:
            return {"name": "transfer_to_triage", "args": {"reason": reason}}
    if not results or results[-1][0] == "ask_human":
        return {"name": "data_discovery", "args": {"question": user}}
    tool, cid, _, content = results[-1]
    if tool == "data_discovery":
        return {"name": "generate_sql", "args": {"question": user, "discovery_call_id": cid}}
    if tool in ("generate_sql", "fix_sql"):
        return {"name": "execute_sql_and_analyze_result", "args": {"sql_call_id": cid}}
    failed_sql = next(json.loads(c)["sql"] for t, _, s, c in reversed(results) if t == "generate_sql")
    return {"name": "fix_sql", "args": {"sql": failed_sql, "error": content, "failed_call_id": cid}}


def team_script(sql: str = GOOD_SQL, *, misroute: bool = False, ping_pong: bool = False):
    """A scripted LM playing every agent (told apart by their tools) and the sub-agent programs.

    Args:
        sql: What ``generate_sql`` writes.
        misroute: Triage sends every request to the sql agent until it is handed back.
        ping_pong: Triage always sends to the sql agent, which always hands back.
    """

    def reply(request):
        if not request.tools:
            field = _output_field(request)
            value = {
                "sql": sql,
                "fixed_sql": FIXED_SQL,
                "explanation": "It counts the areas.",
                "reply": "Hello! I answer questions about your data.",
            }.get(field, "")
            return answer_field(request, value)
        tools = {t.name for t in request.tools}
        user = text_of(request.messages[0])
        if "transfer_to_sql" in tools:
            if ping_pong:
                return {"name": "transfer_to_sql", "args": {}}
            return _triage(request, user, misroute=misroute)
        if "data_discovery" in tools:
            if ping_pong:
                return {"name": "transfer_to_triage", "args": {"reason": "not mine"}}
            return _sql_agent(request, user)
        if "fix_sql" in tools:
            results = _results(request)
            if results:
                return {"name": "execute_sql_and_analyze_result", "args": {"sql_call_id": results[-1][1]}}
            return {"name": "fix_sql", "args": {"sql": extract_sql(user), "error": extract_error(user)}}
        if "explain_sql" in tools:
            return {"name": "explain_sql", "args": {"sql": extract_sql(user)}}
        return {"name": "chat", "args": {"message": user}}

    return scripted_lm(reply)


def _has_tool(request, name: str) -> bool:
    return any(t.name == name for t in request.tools)


def run(db, question: str, *, sql: str = GOOD_SQL, repair: bool = True, misroute=False, ping_pong=False, **kw):
    lm = team_script(sql, misroute=misroute, ping_pong=ping_pong)
    config = PipelineConfig(tools=ToolSettings(repair=repair))
    pipeline = Pipeline(routers.router.build("handoff"), lm, config=config)
    return pipeline.run(question, str(db), **kw), lm


def methods(t) -> list[str]:
    return [d["method"] for d in t.route_decisions]


def switches(decision: dict) -> list[tuple[str, str]]:
    return [(e["agent"], e["to"]) for e in decision["swarm_events"] if e["event"] == "agent_switch"]


SQL_CHAIN = ["data_discovery", "generate_sql", "execute_sql_and_analyze_result"]


def test_a_data_question_goes_triage_to_sql_and_ends_with_rows(sales_db):
    t, _ = run(sales_db, "How many areas have EV charging?")
    assert t.error is None and t.tool_names == SQL_CHAIN
    assert t.rows == [[1]] and t.columns == ["n"] and t.executed
    assert t.intent == "sql" and t.answer and t.events[-1]["type"] == "completed"
    assert methods(t) == ["handoff:triage>sql", "handoff:sql", "handoff:sql"]
    assert [d["agent"] for d in t.route_decisions] == ["sql"] * 3
    assert switches(t.route_decisions[0]) == [("triage", "sql")] and not switches(t.route_decisions[1])
    # calls cite each other by id, as with every other router
    d, g, e = t.tool_calls
    assert g["parent"] == d["id"] and e["parent"] == g["id"]
    # the router's own LM cost (triage + sql agent, then the sql agent twice) apart from generate_sql's
    assert t.router_usage.lm_calls == 4 and t.subagent_usage.lm_calls == 1
    assert [d["lm_calls"] for d in t.route_decisions] == [2, 1, 1]


def test_a_failed_execution_is_repaired_by_the_sql_agent(sales_db):
    # deterministic repair off: this is the path of an error that only the LM can mend
    t, _ = run(sales_db, "List the area names", sql="SELECT nme FROM areas", repair=False)
    assert t.tool_names == [*SQL_CHAIN, "fix_sql", "execute_sql_and_analyze_result"]
    assert t.tool_calls[2]["status"] == "error" and t.tool_calls[3]["parent"] == t.tool_calls[2]["id"]
    assert t.error is None and t.rows == [["Qinling North"], ["Hanzhong East"], ["Baoji West"]]
    assert set(methods(t)[1:]) == {"handoff:sql"}


@pytest.mark.parametrize(
    ("question", "agent", "chain", "answer"),
    [
        ("Explain: SELECT count(*) FROM areas", "explain", ["explain_sql"], "It counts the areas."),
        ("hello!", "chat", ["chat"], "Hello! I answer questions about your data."),
    ],
)
def test_explain_and_chat_are_one_handoff_and_one_call(sales_db, question, agent, chain, answer):
    t, lm = run(sales_db, question)
    assert t.tool_names == chain and t.answer == answer and t.intent == agent
    assert methods(t) == [f"handoff:triage>{agent}"] and t.route_decisions[0]["agent"] == agent
    assert not t.executed and t.error is None
    if agent == "explain":
        assert t.tool_calls[0]["args"] == {"sql": "SELECT count(*) FROM areas"}
    # the specialist saw only the pipeline conversation: triage's transfer call was not carried
    specialist = [
        r for r in lm.routerlab_engine.requests if r.tools and "transfer_to_sql" not in {x.name for x in r.tools}
    ]
    assert [m.role for m in specialist[0].messages] == ["user"]


def test_a_fix_request_goes_to_the_fix_agent(sales_db):
    question = 'Fix: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found'
    t, _ = run(sales_db, question, repair=False)
    assert t.tool_names == ["fix_sql", "execute_sql_and_analyze_result"]
    assert t.tool_calls[0]["args"]["sql"] == "SELECT nme FROM areas"
    assert t.intent == "fix" and t.sql == FIXED_SQL and len(t.rows) == 3
    assert methods(t) == ["handoff:triage>fix", "handoff:fix"]


def test_a_write_request_is_refused_by_triage_itself(sales_db):
    t, _ = run(sales_db, "Delete all rows from the revenue table")
    assert t.tool_names == ["refuse"] and t.intent == "refuse"
    assert t.answer.startswith("I can't help with that")
    assert methods(t) == ["handoff:triage"] and t.route_decisions[0]["agent"] == "triage"
    assert t.router_usage.lm_calls == 1 and not t.executed


def test_a_vague_question_is_clarified_then_answered(sales_db):
    asked: list[str] = []
    t, lm = run(sales_db, "How did that area do recently?", reply=lambda q: asked.append(q) or "Qinling North")
    assert asked == ["Which area do you mean?"] and t.ask_human == asked[0] and t.turns == 2
    assert t.tool_names == ["ask_human", *SQL_CHAIN] and t.intent == "clarify" and t.rows
    assert methods(t) == ["handoff:triage", "handoff:triage>sql", "handoff:sql", "handoff:sql"]
    # the triage instruction is a function of the context variables: it now shows the reply
    triage_systems = [
        str(r.system) for r in lm.routerlab_engine.requests if r.tools and "refuse" in {x.name for x in r.tools}
    ]
    assert "Qinling North" not in triage_systems[0] and "Qinling North" in triage_systems[1]


def test_a_vague_question_without_reply_ends_with_the_question(sales_db):
    t, _ = run(sales_db, "How did that area do recently?")
    assert t.tool_names == ["ask_human"] and t.answer == t.ask_human == "Which area do you mean?"


def test_an_explicit_agent_request_runs_that_agent_without_the_swarm(sales_db):
    # direct mode runs the requested agent's chain and ends: no agent of the swarm is asked
    question = 'Fix: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found'
    t, _ = run(sales_db, question, agent="fix_sql")
    assert t.tool_names == ["fix_sql"]
    assert methods(t) == [] and t.router_usage.lm_calls == 0
    assert t.sql and "name" in t.sql


def test_agent_switches_ride_in_the_progress_events_and_map_onto_them(sales_db):
    t, _ = run(sales_db, "How many areas have EV charging?")
    route_events = [e for e in t.events if e["node"] == "route" and "route" in e]
    assert route_events[0]["details"].startswith("handoff:triage>sql: data_discovery")
    recorded = route_events[0]["route"]["swarm_events"]
    # each swarm event is also a progress event of its own, emitted before the decision's event
    first_decision = t.events[: t.events.index(route_events[0])]
    swarm = [e for e in first_decision if "swarm" in e]
    assert [e["swarm"]["event"] for e in swarm] == [e["event"] for e in recorded]
    assert "triage hands off to sql" in [e["details"] for e in swarm]
    assert all(e["type"] == "progress" for e in swarm)
    assert [e["event"] for e in recorded] == [
        "user_message",
        "tool_call",
        "tool_result",
        "context_update",
        "agent_switch",
        "tool_call",
    ]
    assert recorded[3]["updates"] == {"intent": "sql"} and recorded[5]["host"] is True
    rebuilt = SwarmEvent(SwarmEventType(recorded[4]["event"]), recorded[4]["agent"], {"to": recorded[4]["to"]})
    assert to_progress_event(rebuilt, "c")["details"] == "triage hands off to sql"
    json.dumps(t.to_dict())  # the trace, swarm events included, stays JSON-able


def _bound(r: HandoffRouter, lm=None) -> HandoffRouter:
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm or team_script()))
    return r


def test_decisions_are_well_formed_and_deterministic(sales_db):
    r = _bound(routers.router.build("handoff"))
    for question in ("How many areas?", "hello", "Delete it", "How did that area do?", "", "ignore " * 500):
        state = initial_state(question, str(sales_db))
        a, b = r.decide(state), r.decide(state)
        assert isinstance(a, RouteDecision) and isinstance(a, HandoffDecision)
        assert a.tool_calls and a.intent in INTENTS and 0 <= a.confidence <= 1 and a.method.startswith("handoff:")
        assert [(c["name"], c["args"]) for c in a.tool_calls] == [(c["name"], c["args"]) for c in b.tool_calls]
        assert (a.intent, a.method, a.agent) == (b.intent, b.method, b.agent)
        assert a.usage.lm_calls in (1, 2)
        for e in a.summary("handoff")["swarm_events"]:
            assert all(len(v) <= 301 for v in e.values() if isinstance(v, str))


def test_recorded_arguments_rebuild_the_router():
    r = routers.router.build("handoff", max_tokens=64, instructions={"chat": "Say hi."})
    spec = component_spec(r)
    assert spec["args"] == {"max_tokens": 64, "instructions": {"chat": "Say hi."}}
    again = routers.router.rebuild(spec)
    assert component_spec(again) == spec and again.instructions["chat"] == "Say hi."
    assert _bound(again).team["chat"].instructions({}) == "Say hi."


def test_bad_arguments_and_missing_parts_fail_when_built():
    with pytest.raises(ConfigError, match="unknown agents"):
        routers.router.build("handoff", instructions={"sales": "x"})
    with pytest.raises(ConfigError, match="max_tokens"):
        routers.router.build("handoff", max_tokens=0)
    with pytest.raises(ContractError, match="language model"):
        HandoffRouter().bind(RouterEnv(tools=DEFAULT_TOOLS, lm=None))
    with pytest.raises(ContractError, match="refuse"):
        HandoffRouter().bind(RouterEnv(tools=[t for t in DEFAULT_TOOLS if t.name != "refuse"], lm=team_script()))
    with pytest.raises(ContractError, match="language model"):
        Pipeline(HandoffRouter(), None)


def _team_topology(r: HandoffRouter) -> dict:
    """Each agent's tools and, for the handoff functions the swarm runs, the schema the model sees."""
    out = {}
    for name, agent in r.team.items():
        functions = [t for t in agent.tools if isinstance(t, FunctionTool)]
        out[name] = {
            "tools": [t.name for t in agent.tools],
            "handoffs": {t.name: t.openai_schema()["function"] for t in functions},
        }
    return out


def test_the_team(golden):
    r = _bound(HandoffRouter())
    team = _team_topology(r)
    golden("handoff_team", team)
    assert team["triage"]["tools"] == [
        "transfer_to_sql",
        "transfer_to_fix",
        "transfer_to_explain",
        "transfer_to_chat",
        "ask_human",
        "refuse",
        "abstain",
    ]
    assert team["sql"]["tools"] == [
        "transfer_to_triage",
        "data_discovery",
        "generate_sql",
        "execute_sql_and_analyze_result",
        "fix_sql",
    ]
    assert team["explain"]["tools"] == ["transfer_to_triage", "explain_sql"]
    assert team["chat"]["tools"] == ["transfer_to_triage", "chat"]
    # handoff functions take no arguments: cheap for a small model to call
    assert r.team["triage"].schemas()[0]["function"]["parameters"]["properties"] == {}
    # a hand-back takes one required argument, its reason; each specialist's says what is not its own
    for name in ("sql", "fix", "explain", "chat"):
        back = team[name]["handoffs"]["transfer_to_triage"]
        assert back["parameters"]["required"] == ["reason"] and list(back["parameters"]["properties"]) == ["reason"]
        assert f"not for the {name} agent" in back["description"]
    assert "greeting" in team["sql"]["handoffs"]["transfer_to_triage"]["description"]


def assert_activations_fit(d: dict, r: HandoffRouter) -> None:
    """A decision's activations are its method's path: each handed over by the one before, by a
    handoff tool it called, with calls only to its own tools and the decision's LM cost split among them."""
    path = d["method"].removeprefix("handoff:").removesuffix(":stopped").split(">")
    acts = d["activations"]
    assert [a["agent"] for a in acts] == path and [a["index"] for a in acts] == list(range(len(acts)))
    assert acts[0]["source"] is None and acts[0]["via"] is None and acts[0]["reason"]
    for prev, a in itertools.pairwise(acts):
        assert prev["outcome"] == "handoff" and a["source"] == prev["agent"]
        assert a["via"] == f"transfer_to_{a['agent']}" and a["via"] in [c["name"] for c in prev["calls"]]
        if a["agent"] == "triage":
            assert a["reason"]  # a hand-back carries its reason
    for a in acts:
        assert {c["name"] for c in a["calls"]} <= {t.name for t in r.team[a["agent"]].tools}
        assert a["ended"] is not None and a["started"] <= a["ended"]
    assert sum(a["lm_calls"] for a in acts) == d["lm_calls"]
    assert (acts[-1]["outcome"] == "stopped") == d["method"].endswith(":stopped")
    if d["tools"]:
        assert acts[-1]["outcome"] == "host_call" and d["tools"][0] in [c["name"] for c in acts[-1]["calls"]]
        assert d["agent"] == acts[-1]["agent"]


# -- hand-back -----------------------------------------------------------------------------------


def _triage_systems(lm) -> list[str]:
    return [str(r.system) for r in lm.routerlab_engine.requests if r.tools and _has_tool(r, "refuse")]


def test_a_specialist_hands_back_and_triage_decides_again_in_the_same_decision(sales_db):
    t, lm = run(sales_db, "hello there!", misroute=True)
    assert t.tool_names == ["chat"] and t.error is None and t.answer.startswith("Hello!")
    assert methods(t) == ["handoff:triage>sql>triage>chat"]
    d = t.route_decisions[0]
    # the intent follows the specialist that made the call, not the one triage first picked
    assert d["intent"] == "chat" and t.intent == "chat" and d["agent"] == "chat"
    assert switches(d) == [("triage", "sql"), ("sql", "triage"), ("triage", "chat")]
    # triage read the reason the second time, and only then
    first, second = _triage_systems(lm)
    assert "handed this request back" not in first
    assert "The sql agent handed this request back: a greeting, not a data question." in second
    # one activation per agent that took control, with who handed over, why, its tokens and calls
    acts = d["activations"]
    assert [(a["agent"], a["source"], a["via"], a["outcome"]) for a in acts] == [
        ("triage", None, None, "handoff"),
        ("sql", "triage", "transfer_to_sql", "handoff"),
        ("triage", "sql", "transfer_to_triage", "handoff"),
        ("chat", "triage", "transfer_to_chat", "host_call"),
    ]
    assert acts[0]["reason"] == "a new turn" and acts[2]["reason"] == "a greeting, not a data question"
    assert [[c["name"] for c in a["calls"]] for a in acts] == [
        ["transfer_to_sql"],
        ["transfer_to_triage"],
        ["transfer_to_chat"],
        ["chat"],
    ]
    assert acts[1]["calls"][0]["args"] == {"reason": "a greeting, not a data question"}
    assert [a["lm_calls"] for a in acts] == [1, 1, 1, 1] and d["lm_calls"] == 4
    assert sum(a["prompt_tokens"] for a in acts) == d["prompt_tokens"] > 0
    assert all(x["ended"] <= y["started"] for x, y in itertools.pairwise(acts))
    assert_activations_fit(d, _bound(HandoffRouter()))
    json.dumps(t.to_dict())


def test_intent_after_a_hand_back_and_the_specialist_resumes_on_the_next_decision(sales_db):
    question = 'Fix: SELECT nme FROM areas\nError: Binder Error: Referenced column "nme" not found'
    t, _ = run(sales_db, question, repair=False, misroute=True)
    assert t.tool_names == ["fix_sql", "execute_sql_and_analyze_result"] and t.error is None
    assert methods(t) == ["handoff:triage>sql>triage>fix", "handoff:fix"]
    assert [d["intent"] for d in t.route_decisions] == ["fix", "fix"] and t.intent == "fix"
    # the agent that made the first call is the one the second decision starts with
    assert t.route_decisions[1]["activations"][0]["agent"] == "fix"
    assert t.route_decisions[1]["activations"][0]["reason"] == "resumes: it made the turn's previous call"
    assert len(t.route_decisions[1]["activations"]) == 1 and t.sql == FIXED_SQL


def test_a_hand_back_in_a_later_decision_resets_the_intent():
    lm = team_script()
    r = _bound(HandoffRouter(), lm)
    state = initial_state("hello", "db.duckdb")
    # as if the sql agent had made the turn's first decision (intent sql) and now resumes
    state["route"] = {"strategy": "handoff", "agent": "sql", "intent": "sql"}
    state["tool_calls"] = {"c0": {"id": "c0", "name": "data_discovery", "step": 0, "status": "success"}}
    d = r.decide(state)
    assert d.method == "handoff:sql>triage>chat" and d.intent == "chat" and d.agent == "chat"
    assert d.activations[0]["reason"] == "resumes: it made the turn's previous call"


def test_a_ping_pong_is_stopped_and_scored_as_a_failure(sales_db):
    t, lm = run(sales_db, "How many areas have EV charging?", ping_pong=True)
    (d,) = t.route_decisions
    assert d["method"] == "handoff:triage>sql>triage>sql>triage:stopped"
    assert d["tools"] == [] and d["intent"] is None and d["confidence"] == 0.0
    assert t.tool_names == [] and t.error_class == "no_decision" and not t.executed
    # four agents spoke once each; the fifth activation was stopped before its model call
    assert d["lm_calls"] == 4 and len(lm.routerlab_engine.requests) == 4
    acts = d["activations"]
    assert [a["agent"] for a in acts] == ["triage", "sql", "triage", "sql", "triage"]
    assert acts[-1]["outcome"] == "stopped" and acts[-1]["lm_calls"] == 0 and acts[-1]["calls"] == []
    assert_activations_fit(d, _bound(HandoffRouter()))


def test_a_ping_pong_in_a_run_is_a_scored_failure_not_a_crash(sales_db):
    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
    from routerlab.benchmarks.example import Example

    config = RunConfig(lm="scripted")
    example = Example(
        id="pp",
        question="How many areas have EV charging?",
        db_id="sales",
        db_path=str(sales_db),
        intent="sql",
        gold_sql=GOOD_SQL,
    )
    run_ = RouterRun("handoff", {}, team_script(ping_pong=True), config, build_scorers(config))
    result = run_.run_example(example)
    assert result.outcome != "crash" and result.error_class == "no_decision"
    assert result.scores["route"].value == 0.0 and result.scores["success"].value == 0.0
    assert result.trace.route_decisions[0]["method"].endswith(":stopped")


@pytest.mark.model
def test_handoff_router_on_the_embedded_model(sales_db):
    from routerlab.agents.lm import resolve_lm

    # the 0.5B model: the contract on real model output (well-formed decisions), not routing quality
    lm = resolve_lm("local:0.5b", max_tokens=96)
    r = _bound(routers.router.build("handoff", max_tokens=96), lm)
    names = {t.name for t in DEFAULT_TOOLS}
    for text in ("How many service areas have EV charging?", "hello!", "Delete all rows from the revenue table"):
        state = initial_state(text, str(sales_db))
        d = r.decide(state)
        assert isinstance(d, HandoffDecision)
        assert d.tool_calls or d.answer is not None or d.invalid_tool_calls
        assert 0.0 <= d.confidence <= 1.0 and (d.intent is None or d.intent in INTENTS)
        assert d.method.startswith("handoff:") and d.agent in r.team
        for c in d.tool_calls:
            assert c["id"] and c["name"] in names and isinstance(c["args"], dict)
        assert d.usage.lm_calls >= 1


@pytest.mark.model
def test_a_request_that_can_be_handed_back_leaves_a_valid_trace_on_the_embedded_model(sales_db, tmp_path):
    """The 0.5B model on a greeting that triage is told to send to the sql agent first: whatever
    the model then does (hand back, answer it, loop until stopped), the trace must hold together."""
    from mlflow import MlflowClient
    from mlflow.entities import SpanType

    from routerlab._runs.runner import RouterRun, RunConfig, build_scorers
    from routerlab.agents.lm import resolve_lm
    from routerlab.benchmarks.dataset import Dataset
    from routerlab.benchmarks.example import Example
    from routerlab.eval.tracking import MlflowSink
    from routerlab.routers.handoff import INSTRUCTIONS

    triage = INSTRUCTIONS["triage"] + "\nUntil an agent hands the request back, always call transfer_to_sql first."
    config = RunConfig(lm="local:0.5b")
    args = {"max_tokens": 96, "instructions": {"triage": triage}}
    run_ = RouterRun("handoff", args, resolve_lm("local:0.5b", max_tokens=96), config, build_scorers(config))
    example = Example(
        id="hello", question="Hello! Thanks for your help.", db_id="sales", db_path=str(sales_db), intent="chat"
    )
    result = run_.run_example(example)
    t = result.trace
    assert result.outcome != "crash", result.error
    # which agents the model picks is its business; that the record of it holds together is ours
    assert t.route_decisions and t.route_decisions[0]["method"].startswith("handoff:triage")
    for d in t.route_decisions:
        assert_activations_fit(d, run_.router)
    assert result.scores["chain_valid"].value in (0.0, 1.0)
    if result.outcome == "ok" and t.tool_names == ["chat"]:
        assert result.scores["chain_valid"].value == 1.0
    if result.outcome != "ok":  # a loop or an unusable reply ends the turn as a scored failure with its class
        assert result.error_class in ("no_decision", "invalid_tool_call", "step_limit", "timeout"), result.error
    json.dumps(t.to_dict())

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with MlflowSink(uri) as sink:
        dataset = Dataset(name="handback-model", version="1", examples=[example], source="tests")
        run_id = sink.start_run("handoff", "local:0.5b", dataset, {"split": "dev"})
        trace_id = sink.log_example(run_id, result)
        sink.finish_run(run_id, [result])
    spans = MlflowClient(uri).get_trace(trace_id).data.spans
    for i, d in enumerate(t.route_decisions):
        (span,) = [s for s in spans if s.name == f"decision {i}"]
        agents = sorted((s for s in spans if s.parent_id == span.span_id), key=lambda s: s.start_time_ns)
        assert [s.name for s in agents] == [a["agent"] for a in d["activations"]]
        assert all(s.span_type == SpanType.AGENT for s in agents)


def test_turn_owner_follows_the_one_tool_intent_table() -> None:
    """The handoff router reads tool -> intent from agents/plan.py; only its agents own a turn."""
    from routerlab.agents.plan import TOOL_INTENT
    from routerlab.routers.handoff import _OWNER, AGENTS, TRIAGE

    assert set(_OWNER) == set(TOOL_INTENT)
    assert set(_OWNER.values()) <= set(AGENTS)
    assert _OWNER["generate_sql"] == "sql" and _OWNER["fix_sql"] == "fix"
    assert _OWNER["ask_human"] == _OWNER["refuse"] == _OWNER["abstain"] == TRIAGE
