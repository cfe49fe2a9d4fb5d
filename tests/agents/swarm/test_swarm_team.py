"""Seed 003's round-robin team on a scripted LM: order, broadcast, terminators, per-agent LMs, tools."""

from __future__ import annotations

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.swarm import (
    Agent,
    Context,
    MaxActivations,
    MaxTurns,
    RoundTeam,
    SwarmEventType,
    TextMatch,
    function_tool,
)
from routerlab.agents.tools import chat as chat_tool

E = SwarmEventType


def _system(request) -> str:
    return str(request.system or "")


def _said(request) -> str:
    return " ".join(text_of(m) for m in request.messages)


def poet_lm(log: list[str]):
    """Each member says who it is and how many earlier replies it read (the broadcast)."""

    def reply(request):
        name = _system(request).split(":")[0]
        log.append(name)
        seen = _said(request).count("] ")
        return f"{name} line {seen}" + (" DONE" if name == "critic" and seen >= 4 else "")

    return scripted_lm(reply)


def test_agents_take_turns_on_one_shared_conversation():
    log: list[str] = []
    a, b, c = (Agent(n, f"{n}: write one line") for n in ("poet", "editor", "critic"))
    team = a | b | c
    assert isinstance(team, RoundTeam) and [m.name for m in team.agents] == ["poet", "editor", "critic"]
    team.lm = poet_lm(log)
    team.terminator = TextMatch("DONE") | MaxActivations(9)
    team.add_task("Write a poem about spring.")
    response = team.run_sync()
    # round robin until the critic has read four replies and says DONE
    assert log == ["poet", "editor", "critic", "poet", "editor", "critic"]
    assert response.stopped_by and "DONE" in response.status.texts[-1]
    # every member read every earlier reply: the conversation is broadcast, marked by author
    said = [m["content"] for m in team.global_messages if m["role"] == "assistant"]
    assert said == [f"[{n}] {n} line {i}" + (" DONE" if i == 5 else "") for i, n in enumerate(log)]
    assert team.global_messages[0] == {"role": "user", "content": "Write a poem about spring."}
    switches = [(e.agent, e.data["to"]) for e in response.events if e.type is E.AGENT_SWITCH]
    assert switches[:3] == [("poet", "editor"), ("editor", "critic"), ("critic", "poet")]
    assert [a.agent for a in response.activations] == log


def test_terminators_combine_with_and_and_or():
    log: list[str] = []
    a, b = Agent("poet", "poet: write"), Agent("editor", "editor: edit")
    # both must hold: three turns AND a DONE (which nobody says) -> the OR's activation bound ends it
    stop = (MaxTurns(3) & TextMatch("DONE")) | MaxActivations(4)
    team = RoundTeam([a, b], terminator=stop, lm=poet_lm(log))
    response = team.run_sync("go")
    assert log == ["poet", "editor", "poet", "editor"]
    assert response.stopped_by == str(stop)
    log.clear()
    quick = RoundTeam([a, b], terminator=MaxTurns(3) | TextMatch("DONE"), lm=poet_lm(log)).run_sync("go")
    assert log == ["poet", "editor", "poet"] and quick.stopped_by


def test_each_agent_may_have_its_own_lm_and_instruction_args():
    def greet(name: str, style: str, ctx: Context) -> str:
        return f"{name}: you are {name}, {style}, talking to {ctx.get('user', 'someone')}"

    own, shared = [], []
    mike = Agent("mike", greet, instruction_args={"name": "Mike", "style": "terse"}, lm=poet_lm(own))
    anna = Agent("anna", greet, instruction_args={"name": "Anna", "style": "kind"})
    team = RoundTeam([mike, anna], terminator=MaxActivations(2), lm=poet_lm(shared))
    team.run_sync("hi", context_variables={"user": "Li"})
    assert own == ["Mike"] and shared == ["Anna"]  # each call went to that agent's model
    assert mike.instructions({"user": "Li"}) == "Mike: you are Mike, terse, talking to Li"
    with pytest.raises(ContractError, match="does not take"):
        Agent("x", greet, instruction_args={"name": "X", "style": "s", "colour": "red"})
    with pytest.raises(ContractError, match="needs a value for 'style'"):
        Agent("x", greet, instruction_args={"name": "X"})
    with pytest.raises(ContractError, match="no instruction function"):
        Agent("x", "plain text", instruction_args={"name": "X"})


def test_tools_added_after_construction_are_offered_and_host_calls_stop_the_team():
    def lookup(item: str) -> str:
        """Look an item up.

        Args:
            item: The item.
        """
        return f"{item} is in stock"

    seen_tools: list[list[str]] = []

    def reply(request):
        names = [t.name for t in request.tools]
        seen_tools.append(names)
        if "chat" in names:
            return {"name": "chat", "args": {"message": "hello"}}
        if "lookup" in names:
            return {"name": "lookup", "args": {"item": "tea"}}
        return "nothing for me"

    clerk = Agent("clerk", "clerk: look things up")
    host = Agent("host", "host: greet")
    clerk.add_tools(lookup)
    host.add_tools(chat_tool)
    clerk.add_tools(lookup)  # the same function again replaces it (seed 003's examples re-add one)
    assert [t.name for t in clerk.tools] == ["lookup"]

    def other(item: str) -> str:
        """Another lookup.

        Args:
            item: The item.
        """
        return item

    with pytest.raises(ContractError, match="several tools named"):
        clerk.add_tools(function_tool(other, name="lookup"))  # a different tool under a taken name
    assert [t.name for t in clerk.tools] == ["lookup"]
    response = RoundTeam([clerk, host], lm=scripted_lm(reply), tool_choice="required").run_sync("hi")
    assert seen_tools == [["lookup"], ["chat"]]
    # the clerk's function tool ran inside the team; its result is in the shared conversation
    results = [m for m in response.messages if m["role"] == "tool"]
    assert [(m["name"], m["content"]) for m in results] == [("lookup", "tea is in stock")]
    # the host's pipeline tool is handed to the caller, and the run stops there
    assert response.pending == [{"id": response.pending[0]["id"], "name": "chat", "args": {"message": "hello"}}]
    assert response.agent is host and response.activations[-1].outcome == "host_call"


def test_a_team_starts_where_it_is_told_and_refuses_bad_members():
    log: list[str] = []
    a, b, c = (Agent(n, f"{n}: x") for n in ("a", "b", "c"))
    RoundTeam([a, b, c], terminator=MaxActivations(3), lm=poet_lm(log)).run_sync("go", start="b")
    assert log == ["b", "c", "a"]
    with pytest.raises(ContractError):
        RoundTeam([a, Agent("a", "again")])
    with pytest.raises(ContractError):
        RoundTeam([])
    with pytest.raises(ContractError):
        RoundTeam([a, b]).run_sync("go", start="zzz")
    joined = (a | b) | (c | Agent("d", "d: x"))
    assert [m.name for m in joined.agents] == ["a", "b", "c", "d"]
