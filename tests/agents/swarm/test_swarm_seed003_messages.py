"""Seed 003's ``add_assistant_message``, ignored return values and ``await team.run()``, on real runs.

A handoff that carries no history (``Result(agent=b, message=False)``) passes information by
``b.add_assistant_message(...)``: the next agent's model reads it, once. A tool's return value
that is not text, an agent, context variables or a ``Result`` is ignored (the model reads an
empty result). ``await team.run()`` runs a team from async code.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from routerlab.agents.errors import ContractError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.swarm import Agent, Controller, MaxTurns, Result, RoundTeam, SwarmEventType


def _seen(log: list[list[tuple[str, str]]]) -> Any:
    """A model that records every request's (role, text) and calls the first tool once."""

    def reply(request: Any) -> Any:
        log.append([(m.role, text_of(m)) for m in request.messages])
        if request.tools and not any(m.role == "tool" for m in request.messages):
            return {"name": request.tools[0].name, "args": {}}
        return "done"

    return scripted_lm(reply)


def test_add_assistant_message_carries_a_note_across_a_handoff_without_history() -> None:
    log: list[list[tuple[str, str]]] = []
    lm = _seen(log)
    billing = Agent("billing", "You handle invoices.", lm=lm)

    def to_billing() -> Result:
        """Hand the request to billing."""
        billing.add_assistant_message("Note from triage: the customer is Ann, invoice 42.")
        return Result(agent=billing, message=False)

    triage = Agent("triage", "Route the request.", [to_billing], lm=lm)
    resp = Controller().run_sync(triage, "My invoice is wrong.")
    assert resp.agent is billing and resp.message == "done"
    billing_request = log[-1]
    # no history carried (no triage call in it), but the note is there, after the request
    assert billing_request == [
        ("user", "My invoice is wrong."),
        ("assistant", "Note from triage: the customer is Ann, invoice 42."),
    ]
    again = Controller().run_sync(billing, "Thanks")
    assert again.message == "done"
    assert ("assistant", "Note from triage: the customer is Ann, invoice 42.") not in log[-1]  # delivered once
    with pytest.raises(ContractError, match="add_assistant_message"):
        billing.add_assistant_message({"text": "not a string"})  # type: ignore[arg-type]


def test_a_return_value_that_is_not_text_is_ignored() -> None:
    stored: list[str] = []

    def save(item: str = "tea") -> dict[str, Any]:
        """Save an item; returns a receipt nobody reads.

        Args:
            item: The item.
        """
        stored.append(item)
        return {"saved": item, "count": len(stored)}

    log: list[list[tuple[str, str]]] = []
    resp = Controller().run_sync(Agent("clerk", "Save things.", [save], lm=_seen(log)), "save tea")
    result = next(e for e in resp.swarm.events if e.type is SwarmEventType.TOOL_RESULT)
    assert stored == ["tea"] and result.data["value"] == "" and result.data["status"] == "success"
    assert ("tool", "") in log[-1]  # the model read an empty result, not the dict


def test_a_team_runs_with_await() -> None:
    log: list[list[tuple[str, str]]] = []
    team = RoundTeam([Agent("a", "Write a line."), Agent("b", "Write a line.")], lm=_seen(log))
    team.terminator = MaxTurns(3)
    team.add_task("A poem about spring.")
    response = asyncio.run(team.run())
    said = [m["content"] for m in team.global_messages if m["role"] == "assistant"]
    assert said == ["[a] done", "[b] done", "[a] done"] and response.stopped_by
    assert log[0] == [("user", "A poem about spring.")]
