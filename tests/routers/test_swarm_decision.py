"""The swarm's pipeline call as a decision (``routers/support/swarm_decision.py``), shared by ``handoff`` and ``team``.

A real swarm run (scripted LM for control flow) with the pipeline's real tools; the routers'
own tests (``test_handoff.py``, ``test_team.py``) run the same helpers through the pipeline.
"""

from __future__ import annotations

import time

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.swarm import Agent, MaxTurns, Swarm
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.routers.handoff import HandoffDecision as FromHandoff
from routerlab.routers.support.swarm_decision import (
    EVENT_TEXT_CAP,
    HandoffDecision,
    cap_text,
    pending_call,
    swarm_decision,
    within_turn,
)

LONG = "How many areas have EV charging? " * 20  # longer than the cap


def _run():
    tools = {t.name: t for t in DEFAULT_TOOLS}
    agent = Agent("sql", "Answer data questions.", [tools["data_discovery"]])
    lm = scripted_lm(lambda request: {"name": "data_discovery", "args": {"question": LONG}})
    return Swarm(lm, tool_choice="required", max_tokens=64).run(agent, [{"role": "user", "content": LONG}])


def test_the_first_pending_call_keeps_its_id_unless_the_turn_used_it():
    response = _run()
    assert [c["name"] for c in response.pending] == ["data_discovery"]
    cid = response.pending[0]["id"]
    assert pending_call({}, response) == [{"id": cid, "name": "data_discovery", "args": {"question": LONG}}]
    earlier = {cid: {"name": "data_discovery"}, "other": {"name": "chat"}}
    assert pending_call({"tool_calls": earlier}, response)[0]["id"] == f"{cid}_2"


def test_the_decision_holds_the_call_and_the_swarms_record_cut_to_the_cap():
    response = _run()
    calls = pending_call({}, response)
    d = swarm_decision(response, calls, intent="sql", method="handoff:sql", why="a new turn")
    assert isinstance(d, FromHandoff) and FromHandoff is HandoffDecision  # one class, re-exported
    assert (d.tool_calls, d.intent, d.method, d.confidence, d.answer, d.agent) == (
        calls,
        "sql",
        "handoff:sql",
        1.0,
        None,
        "sql",
    )
    assert d.activations[0]["reason"] == "a new turn" and d.activations[0]["agent"] == "sql"
    assert len(d.swarm_events) == len(response.events) == len(d.steps)
    assert [e["event"] for e in d.swarm_events] == ["user_message", "tool_call"]
    assert d.swarm_events[0]["text"] == LONG[:EVENT_TEXT_CAP] + "…"
    assert d.swarm_events[1]["args"]["question"] == LONG[:EVENT_TEXT_CAP] + "…"
    assert d.tool_calls[0]["args"]["question"] == LONG  # the call itself is never cut
    summary = d.summary("handoff")
    assert summary["agent"] == "sql" and summary["activations"] == d.activations
    stopped = swarm_decision(response, [], intent=None, method="team:sql:stopped", answer="no call")
    assert (stopped.confidence, stopped.answer, stopped.activations[0]["reason"]) == (0.0, "no call", "")


def test_cap_text_cuts_long_strings_at_any_depth_and_nothing_else():
    value = {"a": "x" * (EVENT_TEXT_CAP + 5), "b": [1, {"c": "short"}, "y" * EVENT_TEXT_CAP]}
    assert cap_text(value) == {"a": "x" * EVENT_TEXT_CAP + "…", "b": [1, {"c": "short"}, "y" * EVENT_TEXT_CAP]}


def test_within_turn_adds_the_turns_deadline_only_when_one_is_ahead():
    bound = MaxTurns(3)
    assert within_turn(bound, {}) is bound
    assert within_turn(bound, {"deadline": time.time() - 1}) is bound  # passed: the pipeline ends the turn
    ahead = within_turn(bound, {"deadline": time.time() + 30})
    assert ahead is not bound and "Timeout" in repr(ahead) and "MaxTurns" in repr(ahead)


def test_both_routers_check_their_agents_tools_through_the_routers_one_check():
    from routerlab import routers

    for name in ("handoff", "team"):
        with pytest.raises(ContractError) as err:
            routers.router.build(name).bind(RouterEnv(tools=DEFAULT_TOOLS[:1], lm=scripted_lm(["x"])))
        assert err.value.what == f"router {name!r} needs tools the pipeline lacks"
        assert "fix_sql" in err.value.expected and "fix_sql" in err.value.found
