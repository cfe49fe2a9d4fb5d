"""``Controller``: seed 003's entry point to :class:`~routerlab.agents.swarm.runner.Swarm`.

The seed starts agents through a controller that holds the turn limit, the context variables
and a trace callback, and returns the last agent, its message and the turns taken. This module
maps that onto the swarm runner; the loop itself is :meth:`Swarm.run`, never a second copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm.agent import Agent
from routerlab.agents.swarm.context import ContextVariables
from routerlab.agents.swarm.events import SwarmEvent
from routerlab.agents.swarm.member import Member
from routerlab.agents.swarm.runner import Swarm, SwarmResponse
from routerlab.agents.swarm.terminators import MaxTurns

__all__ = ["Controller", "ControllerResponse"]


@dataclass(frozen=True)
class ControllerResponse:
    """Seed 003's ``ControllerResponse``.

    Attributes:
        agent: The agent that answered last.
        message: Its last reply (the answer; the last text it wrote when the run stopped
            otherwise, "" when it wrote none).
        turns: Turns taken (model replies and tool executions).
        swarm: The full :class:`SwarmResponse` (events, usage, activations, pending calls).
    """

    agent: Member
    message: str
    turns: int
    swarm: SwarmResponse


class Controller:
    """Runs an agent on a message, keeping the context variables between runs (seed 003).

    Args:
        max_turns: Turns a run may take (:class:`MaxTurns`); None: the swarm's default.
        context_variables: Initial context variables; every run's updates are kept for the next.
        trace_callback: Called with every trace event (a :class:`SwarmEvent`).
        lm: The LM of agents without their own (``Agent(llm=...)``).

    Raises:
        ContractError: For a ``trace_callback`` that is not callable.
    """

    def __init__(
        self,
        max_turns: int | None = None,
        context_variables: Mapping[str, Any] | None = None,
        trace_callback: Callable[[SwarmEvent], Any] | None = None,
        *,
        lm: Any = None,
    ) -> None:
        if trace_callback is not None and not callable(trace_callback):
            raise ContractError(
                "the controller's trace_callback is not callable",
                expected="a function taking one trace event",
                found=type(trace_callback).__name__,
                fix="pass a function (print, pprint, list.append...)",
            )
        self.terminator = MaxTurns(max_turns) if max_turns is not None else None
        self.context_variables = ContextVariables(context_variables or {})
        self.trace_callback = trace_callback
        self.lm = lm

    def run_sync(self, agent: Agent, message: str | Sequence[Mapping[str, Any]]) -> ControllerResponse:
        """Run ``agent`` on ``message`` until it answers or the turn limit stops it.

        Raises:
            ContractError: When neither the agent nor the controller has an LM.
        """
        lm = self.lm if self.lm is not None else agent.lm
        if lm is None:
            raise ContractError(
                f"agent {agent.name!r} has no LM and the controller none either",
                expected="Agent(llm=...) or Controller(lm=...)",
                found="None",
                fix="give the agent its model",
            )
        swarm = Swarm(lm, terminator=self.terminator, on_event=self.trace_callback)
        resp = swarm.run(agent, message, context_variables=self.context_variables)
        self.context_variables = ContextVariables(resp.context_variables)
        texts = resp.status.texts
        text = resp.answer if resp.answer is not None else (texts[-1] if texts else "")
        return ControllerResponse(agent=resp.agent, message=text, turns=resp.status.turns, swarm=resp)

    async def run(self, agent: Agent, message: str | Sequence[Mapping[str, Any]]) -> ControllerResponse:
        """The awaitable form of :meth:`run_sync` (model calls run in a worker thread)."""
        return await asyncio.to_thread(self.run_sync, agent, message)
