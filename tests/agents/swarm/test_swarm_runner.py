"""The swarm loop on a scripted LM: handoffs, history, context, terminators and trace events."""

from __future__ import annotations

import itertools

import pytest

from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.swarm import (
    PROGRESS_NODE,
    Agent,
    Context,
    ContextVariables,
    MaxActivations,
    MaxTurns,
    Result,
    Swarm,
    SwarmEventType,
    TextMatch,
    Timeout,
    to_progress_event,
)
from routerlab.agents.tools import chat as chat_tool

E = SwarmEventType


def make_team(*, carry_history: bool = True):
    """A triage agent that hands tea questions to a shop agent, which looks prices up."""

    def shop_instruction(ctx: Context) -> str:
        return f"You sell tea to {ctx.get('customer', 'someone')}."

    def lookup(item: str, ctx: Context) -> Result:
        """Look up the price of an item.

        Args:
            item: The item.
        """
        return Result(value=f"{item} costs 3", context_variables={"last_item": item})

    shop = Agent("shop", shop_instruction, [lookup])

    def remember(name: str) -> ContextVariables:
        """Remember the customer's name.

        Args:
            name: The customer's name.
        """
        return ContextVariables(customer=name)

    def transfer_to_shop() -> Agent | Result:
        """Hand a question about prices to the shop agent."""
        return shop if carry_history else Result(value="shop takes over", agent=shop, carry_history=False)

    triage = Agent("triage", "Route the request.", [remember, transfer_to_shop])
    return triage, shop


SCRIPT = [
    {"name": "remember", "args": {"name": "Ann"}},
    {"name": "transfer_to_shop", "args": {}},
    {"name": "lookup", "args": {"item": "tea"}},
    "Tea costs 3. DONE",
]


def test_handoff_by_returning_an_agent_keeps_the_history_and_the_context():
    lm = scripted_lm(SCRIPT)
    triage, shop = make_team()
    r = Swarm(lm).run(triage, "How much is tea? I am Ann.")
    assert r.answer == "Tea costs 3. DONE" and r.agent is shop
    assert r.switches() == [("triage", "shop")]
    assert r.context_variables == {"customer": "Ann", "last_item": "tea"}
    assert r.status.turns == 4 + 3 and r.status.activations == 2 and r.stopped_by is None
    assert r.usage.lm_calls == 4 and not r.pending
    requests = lm.routerlab_engine.requests
    # the shop's instruction was rendered with the context triage's tool set
    assert requests[2].system == "You sell tea to Ann."
    assert [t.name for t in requests[2].tools] == ["lookup"]
    # history carried: the shop sees the user and triage's two calls and results
    assert [m.role for m in requests[2].messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert [m["role"] for m in r.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_result_without_history_starts_the_next_agent_from_the_request():
    lm = scripted_lm(SCRIPT)
    triage, _ = make_team(carry_history=False)
    r = Swarm(lm).run(triage, "How much is tea?")
    shop_request = lm.routerlab_engine.requests[2]
    assert [m.role for m in shop_request.messages] == ["user"]
    assert text_of(shop_request.messages[0]) == "How much is tea?"
    assert shop_request.system == "You sell tea to Ann."  # context variables still carried it
    switch = next(e for e in r.events if e.type is E.AGENT_SWITCH)
    assert switch.data == {"to": "shop", "carry_history": False}


def test_event_sequence():
    seen = []
    triage, _ = make_team()
    r = Swarm(scripted_lm(SCRIPT), on_event=seen.append).run(triage, "How much is tea?")
    assert seen == r.events
    assert [(e.type, e.agent) for e in r.events] == [
        (E.USER_MESSAGE, "triage"),
        (E.TOOL_CALL, "triage"),
        (E.TOOL_RESULT, "triage"),
        (E.CONTEXT_UPDATE, "triage"),
        (E.TOOL_CALL, "triage"),
        (E.TOOL_RESULT, "triage"),
        (E.AGENT_SWITCH, "triage"),
        (E.TOOL_CALL, "shop"),
        (E.TOOL_RESULT, "shop"),
        (E.CONTEXT_UPDATE, "shop"),
        (E.AGENT_MESSAGE, "shop"),
    ]
    assert r.events[3].data == {"updates": {"customer": "Ann"}}
    assert r.events[7].data["args"] == {"item": "tea"} and r.events[7].data["host"] is False
    assert r.events[8].data["value"] == "tea costs 3"
    assert all(a.timestamp <= b.timestamp for a, b in itertools.pairwise(r.events))


def test_events_map_onto_progress_events():
    triage, _ = make_team()
    r = Swarm(scripted_lm(SCRIPT)).run(triage, "How much is tea?")
    progress = [to_progress_event(e, "conv1") for e in r.events]
    assert all(p["type"] == "progress" and p["conversation_id"] == "conv1" for p in progress)
    assert [p["node"] for p in progress] == [PROGRESS_NODE[e.type] for e in r.events]
    assert progress[0]["display_name"] == "Reading the request"
    assert progress[6]["details"] == "triage hands off to shop"
    assert progress[6]["swarm"]["event"] == "agent_switch" and progress[6]["swarm"]["to"] == "shop"
    assert progress[1]["details"] == 'triage calls remember({"name": "Ann"})'
    assert progress[-1]["details"] == "shop: Tea costs 3. DONE"
    assert progress[0]["timestamp"] == r.events[0].timestamp


def test_host_tools_end_the_run_as_pending_calls():
    lm = scripted_lm([{"name": "chat", "args": {"message": "hi"}}])
    agent = Agent("front", "Chat.", [chat_tool])
    r = Swarm(lm, tool_choice="required").run(agent, [{"role": "user", "content": "hi"}])
    assert [(c["name"], c["args"]) for c in r.pending] == [("chat", {"message": "hi"})]
    assert r.answer is None and r.events[-1].type is E.TOOL_CALL and r.events[-1].data["host"] is True
    assert r.messages[-1]["tool_calls"][0]["function"]["name"] == "chat"
    assert lm.routerlab_engine.requests[0].config.tool_choice.mode == "required"


def test_tool_errors_go_back_to_the_model():
    def order(item: str) -> str:
        """Order an item.

        Args:
            item: The item.
        """
        raise ToolError(f"{item} is out of stock", error_class="stock")

    lm = scripted_lm([{"name": "order", "args": {"item": "tea"}}, "Sorry, no tea."])
    r = Swarm(lm).run(Agent("shop", "Sell.", [order]), "tea!")
    assert r.answer == "Sorry, no tea."
    result = next(e for e in r.events if e.type is E.TOOL_RESULT)
    assert result.data["status"] == "error" and result.data["value"] == "ERROR [stock]: tea is out of stock"
    assert "out of stock" in text_of(lm.routerlab_engine.requests[1].messages[-1])


def test_unusable_replies_are_returned_as_invalid_calls():
    lm = scripted_lm([{"name": "no_such_tool", "args": {}}])
    triage, _ = make_team()
    r = Swarm(lm).run(triage, "x")
    assert r.invalid_tool_calls and r.invalid_tool_calls[0]["name"] == "no_such_tool"
    assert r.answer is None and not r.pending


def test_max_turns_stops_a_handoff_loop():
    ping = Agent("ping", "Pass.")
    pong = Agent("pong", "Pass.")

    def to_pong() -> Agent:
        """Pass to pong."""
        return pong

    def to_ping() -> Agent:
        """Pass to ping."""
        return ping

    ping = Agent("ping", "Pass.", [to_pong])
    pong = Agent("pong", "Pass.", [to_ping])

    def reply(request):
        return {"name": request.tools[0].name, "args": {}}

    r = Swarm(scripted_lm(reply), terminator=MaxTurns(6)).run(ping, "go")
    assert r.stopped_by == "max_turns(6)" and r.status.turns == 6
    assert r.switches() == [("ping", "pong"), ("pong", "ping"), ("ping", "pong")]

    r = Swarm(scripted_lm(reply), terminator=MaxActivations(2) | MaxTurns(50)).run(ping, "go")
    assert r.stopped_by == "max_activations(2) | max_turns(50)"
    assert r.status.activations == 3 and r.usage.lm_calls == 2
    # the default terminator stops it too
    assert Swarm(scripted_lm(reply)).run(ping, "go").stopped_by == "max_turns(16)"


def test_timeout_uses_the_runs_clock():
    # clock readings: start, check before call 1, check before call 2, the response's status
    ticks = iter([0.0, 0.0, 5.0, 5.0])
    triage, _ = make_team()
    r = Swarm(scripted_lm(SCRIPT), terminator=Timeout(4), clock=lambda: next(ticks)).run(triage, "tea?")
    assert r.stopped_by == "timeout(4s)" and r.usage.lm_calls == 1


def test_combined_terminators_in_a_run():
    def note(text: str) -> str:
        """Take a note.

        Args:
            text: The note.
        """
        return "noted"

    agent = Agent("a", "Take notes.", [note])
    looping = {"name": "note", "args": {"text": "x"}}
    r = Swarm(scripted_lm([looping]), terminator=MaxTurns(4) | TextMatch("done")).run(agent, "go")
    assert r.stopped_by == "max_turns(4) | text('done')" and r.status.turns == 4
    ticks = itertools.count()
    r = Swarm(scripted_lm([looping]), terminator=MaxTurns(2) & Timeout(10), clock=lambda: float(next(ticks))).run(
        agent, "go"
    )
    assert r.stopped_by == "max_turns(2) & timeout(10s)"
    assert r.status.turns > 2 and r.status.elapsed_s >= 10


def test_contract_errors_when_the_swarm_is_built():
    with pytest.raises(ContractError, match="language model"):
        Swarm(None)
    with pytest.raises(ContractError, match="tool_choice"):
        Swarm(scripted_lm(["x"]), tool_choice="sometimes")
    with pytest.raises(ContractError, match="Terminator"):
        Swarm(scripted_lm(["x"]), terminator=5)  # type: ignore[arg-type]


def test_every_activation_is_recorded_with_its_source_reason_cost_and_calls():
    triage, _shop = make_team(carry_history=False)
    r = Swarm(scripted_lm(SCRIPT)).run(triage, "How much is tea? I am Ann.")
    first, second = r.activations
    assert (first.agent, first.index, first.source, first.via, first.outcome) == ("triage", 0, None, None, "handoff")
    assert (second.agent, second.index, second.source, second.via) == ("shop", 1, "triage", "transfer_to_shop")
    assert second.outcome == "answer" and second.reason == ""
    assert [c["name"] for c in first.calls] == ["remember", "transfer_to_shop"]
    assert [(c["name"], c["args"], c["host"]) for c in second.calls] == [("lookup", {"item": "tea"}, False)]
    # the run's cost is the sum of its activations'
    assert (first.usage.lm_calls, second.usage.lm_calls) == (2, 2)
    assert first.usage.prompt_tokens + second.usage.prompt_tokens == r.usage.prompt_tokens > 0
    assert first.started <= first.ended <= second.started <= second.ended
    d = second.to_dict()
    assert d["agent"] == "shop" and d["lm_calls"] == 2 and d["calls"][0]["name"] == "lookup"


def test_a_handoff_reason_lands_on_the_next_activation_and_a_stopped_one_is_kept():
    ping = Agent("ping", "Pass.")

    def back(why: str) -> Result:
        """Pass back to ping.

        Args:
            why: The reason.
        """
        return Result(value="back", agent=ping, reason=why)

    pong = Agent("pong", "Pass.", [back])

    def to_pong() -> Agent:
        """Pass to pong."""
        return pong

    ping = Agent("ping", "Pass.", [to_pong])

    def reply(request):
        name = request.tools[0].name
        return {"name": name, "args": {"why": "not mine"} if name == "back" else {}}

    r = Swarm(scripted_lm(reply), terminator=MaxActivations(3)).run(ping, "go")
    assert [(a.agent, a.via, a.reason, a.outcome) for a in r.activations] == [
        ("ping", None, "", "handoff"),
        ("pong", "to_pong", "", "handoff"),
        ("ping", "back", "not mine", "handoff"),
        ("pong", "to_pong", "", "stopped"),
    ]
    assert r.activations[-1].usage.lm_calls == 0 and r.activations[-1].ended is not None
    assert r.status.activations == len(r.activations) == 4
