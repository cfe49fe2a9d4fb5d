"""``RoundTeam``: seed 003's round-robin team: agents take turns on one shared message list.

``RoundTeam([a, b, c])`` (or ``a | b | c``) activates its agents in order, round after round.
Every agent reads the same broadcast conversation (the task, then every agent's replies and tool
results, each reply marked with its author) under its own instruction, and answers once per
activation: a text reply, function tools the team runs (their results join the shared list), or
calls to host tools (pipeline tools), which stop the run for the host to execute, as
:class:`~routerlab.agents.swarm.runner.Swarm` does. A :class:`Terminator` (``MaxTurns``,
``MaxActivations``, ``TextMatch``, ``Timeout``, combined with ``&`` and ``|``) is checked before
every activation; a run without one stops after :data:`DEFAULT_ROUNDS` rounds.

Trace events are the swarm's (``USER_MESSAGE``, ``AGENT_MESSAGE``, ``AGENT_SWITCH`` when the
turn passes, ``TOOL_CALL``, ``TOOL_RESULT``, ``CONTEXT_UPDATE``), and the result is a
:class:`~routerlab.agents.swarm.runner.SwarmResponse`, so a router reads a team's run the way it
reads a swarm's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.lm.chat import chat
from routerlab.agents.swarm.context import ContextVariables
from routerlab.agents.swarm.events import SwarmEvent, SwarmEventType, call_event
from routerlab.agents.swarm.member import Member
from routerlab.agents.swarm.result import as_result
from routerlab.agents.swarm.runner import Activation, SwarmResponse
from routerlab.agents.swarm.terminators import MaxActivations, RunStatus, Terminator
from routerlab.agents.swarm.tools import FunctionTool
from routerlab.agents.trace import Usage

__all__ = ["DEFAULT_ROUNDS", "RoundTeam"]

#: rounds a team without a terminator runs (every agent speaks this many times at most)
DEFAULT_ROUNDS = 2


class RoundTeam:
    """Agents that take turns, in order, on one shared conversation (seed 003's ``RoundTeam``).

    Args:
        agents: The members, in speaking order (unique names).
        terminator: When to stop (checked before every activation); default: after
            :data:`DEFAULT_ROUNDS` rounds (``MaxActivations(DEFAULT_ROUNDS * len(agents))``).
        lm: The LM of every member without its own ``Agent.lm``.
        tool_choice: ``auto``, ``required`` or ``none`` for every model call that has tools.
        max_tokens: Completion budget of one model call.
        clock: Seconds for timeouts.
        on_event: Called with every trace event as it happens.

    Raises:
        ContractError: For an empty team, two members with one name, or a terminator that is
            not a :class:`Terminator`.
    """

    def __init__(
        self,
        agents: Iterable[Member],
        *,
        terminator: Terminator | None = None,
        lm: Any = None,
        tool_choice: str = "auto",
        max_tokens: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_event: Callable[[SwarmEvent], None] | None = None,
    ) -> None:
        members = list(agents)
        names = [a.name for a in members]
        if not members or len(set(names)) != len(names):
            raise ContractError(
                "a team needs agents with distinct names",
                expected="one or more agents, no two with one name",
                found=str(names),
                fix="name every member differently",
            )
        if terminator is not None and not isinstance(terminator, Terminator):
            raise ContractError(
                "the team's terminator is not a Terminator",
                expected="MaxTurns, MaxActivations, Timeout, TextMatch or a & / | combination",
                found=type(terminator).__name__,
                fix="build it from routerlab.agents.swarm terminators",
            )
        self.agents: list[Member] = members
        self.terminator = terminator
        self.lm = lm
        self.tool_choice = tool_choice
        self.max_tokens = max_tokens
        self.clock = clock
        self.on_event = on_event
        self.tasks: list[str] = []
        #: the shared conversation of the last run (seed 003's ``global_messages``)
        self.global_messages: list[dict[str, Any]] = []

    def __or__(self, other: object) -> RoundTeam:
        """``team | agent`` adds a member at the end; ``team | team`` joins both, in order."""
        if isinstance(other, Member):
            added = [other]
        elif isinstance(other, RoundTeam):
            added = list(other.agents)
        else:
            return NotImplemented
        return RoundTeam(
            [*self.agents, *added],
            terminator=self.terminator,
            lm=self.lm,
            tool_choice=self.tool_choice,
            max_tokens=self.max_tokens,
            clock=self.clock,
            on_event=self.on_event,
        )

    def add_trace_callback(self, callback: Callable[[SwarmEvent], None]) -> None:
        """Also call ``callback`` with every trace event (seed 003's ``add_trace_callback``)."""
        previous = self.on_event

        def both(event: SwarmEvent) -> None:
            if previous is not None:
                previous(event)
            callback(event)

        self.on_event = both

    async def run(
        self,
        messages: str | Sequence[Mapping[str, Any]] = (),
        *,
        start: str | None = None,
        context_variables: Mapping[str, Any] | None = None,
    ) -> SwarmResponse:
        """Seed 003's ``await team.run()``: :meth:`run_sync` with the model calls in a worker thread."""
        return await asyncio.to_thread(self.run_sync, messages, start=start, context_variables=context_variables)

    def add_task(self, task: str) -> None:
        """A task every member works on (seed 003's ``add_task``); the next run starts with it."""
        self.tasks.append(task)

    def member(self, name: str) -> Member:
        """The member called ``name``.

        Raises:
            ContractError: When no member has that name.
        """
        found = next((a for a in self.agents if a.name == name), None)
        if found is None:
            raise ContractError(
                f"no team member named {name!r}",
                expected=f"one of {[a.name for a in self.agents]}",
                found=repr(name),
                fix="name a member of the team",
            )
        return found

    def run_sync(
        self,
        messages: str | Sequence[Mapping[str, Any]] = (),
        *,
        start: str | None = None,
        context_variables: Mapping[str, Any] | None = None,
    ) -> SwarmResponse:
        """Take turns until a host call, the terminator, or an unusable reply (seed 003's ``team.run_sync()``).

        Args:
            messages: The user's message or a conversation (OpenAI-style dicts, no system
                message); the tasks added with :meth:`add_task` come first.
            start: The member that speaks first (the order then continues from it); default the
                first member.
            context_variables: Initial context variables (copied).

        Returns:
            The swarm's response type: ``pending`` host calls (the run stopped for the host),
            ``stopped_by`` the terminator, or ``invalid_tool_calls``; ``agent`` is the member
            that spoke last, ``messages`` the shared conversation.
        """
        base: list[dict[str, Any]] = [{"role": "user", "content": t} for t in self.tasks]
        base += [{"role": "user", "content": messages}] if isinstance(messages, str) else [dict(m) for m in messages]
        self.global_messages = history = list(base)
        context = ContextVariables(context_variables or {})
        order = self._order(start)
        events: list[SwarmEvent] = []
        usage = Usage()
        texts: list[str] = []
        turns = 0
        started = self.clock()
        log: list[Activation] = []
        terminator = self.terminator or MaxActivations(DEFAULT_ROUNDS * len(self.agents))

        def emit(agent: Member, type_: SwarmEventType, **data: Any) -> None:
            event = SwarmEvent(type_, agent.name, data)
            events.append(event)
            if self.on_event is not None:
                self.on_event(event)

        def status() -> RunStatus:
            return RunStatus(turns, max(len(log), 1), self.clock() - started, tuple(texts))

        def response(agent: Member, outcome: str, **kw: Any) -> SwarmResponse:
            if log:
                log[-1].ended, log[-1].outcome = time.time(), outcome
            return SwarmResponse(
                agent=agent,
                messages=history,
                context_variables=context,
                events=events,
                status=status(),
                usage=usage,
                activations=log,
                **kw,
            )

        if history and history[-1].get("role") == "user":
            emit(order[0], SwarmEventType.USER_MESSAGE, text=str(history[-1].get("content") or ""))
        i = 0
        while True:
            agent = order[i % len(order)]
            # the next activation counts: MaxActivations(n) lets exactly n members speak
            if terminator.should_stop(RunStatus(turns, len(log) + 1, self.clock() - started, tuple(texts))):
                return response(order[(i - 1) % len(order)] if log else agent, "stopped", stopped_by=str(terminator))
            if log:
                emit(order[(i - 1) % len(order)], SwarmEventType.AGENT_SWITCH, to=agent.name, carry_history=True)
                log[-1].ended, log[-1].outcome = time.time(), log[-1].outcome or "passed"
            source = log[-1].agent if log else None
            log.append(Activation(agent.name, len(log), source, "round_robin" if log else None, "its turn"))
            system = agent.instructions(context)
            schemas = agent.schemas()
            reply = chat(
                agent.lm or self.lm,
                ([{"role": "system", "content": system}] if system else []) + history,
                tools=schemas or None,
                tool_choice=self.tool_choice if schemas else "auto",
                max_tokens=self.max_tokens,
            )
            usage = usage.add(reply.usage)
            log[-1].usage = log[-1].usage.add(reply.usage)
            turns += 1
            if reply.text:
                texts.append(reply.text)
                emit(agent, SwarmEventType.AGENT_MESSAGE, text=reply.text)
            if not reply.tool_calls:
                if reply.invalid_tool_calls:
                    return response(agent, "invalid", invalid_tool_calls=list(reply.invalid_tool_calls))
                # broadcast: the next member reads who said what
                history.append({"role": "assistant", "content": f"[{agent.name}] {reply.text}"})
                log[-1].outcome = "answer"
                i += 1
                continue
            history.append(
                {
                    "role": "assistant",
                    "content": f"[{agent.name}] {reply.text}".strip(),
                    "tool_calls": [
                        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                        for c in reply.tool_calls
                    ],
                }
            )
            pending: list[dict[str, Any]] = []
            for call in reply.tool_calls:
                target = agent.get_tool(call["name"])
                host = not isinstance(target, FunctionTool)
                kind, via = call_event(target.mcp_server if isinstance(target, FunctionTool) else None)
                emit(agent, kind, id=call["id"], name=call["name"], args=call["args"], host=host, **via)
                log[-1].calls.append({"id": call["id"], "name": call["name"], "args": dict(call["args"]), "host": host})
                if isinstance(target, FunctionTool):
                    turns += 1
                    self._execute(agent, target, call, context, history, emit)
                else:
                    pending.append({"id": call["id"], "name": call["name"], "args": dict(call["args"])})
            if pending:
                return response(agent, "host_call", pending=pending)
            log[-1].outcome = "passed"
            i += 1

    def _order(self, start: str | None) -> list[Member]:
        """The members in speaking order, beginning with ``start``."""
        if start is None:
            return list(self.agents)
        first = self.agents.index(self.member(start))
        return [*self.agents[first:], *self.agents[:first]]

    @staticmethod
    def _execute(
        agent: Member,
        fn: FunctionTool,
        call: Mapping[str, Any],
        context: ContextVariables,
        history: list[dict[str, Any]],
        emit: Callable[..., None],
    ) -> None:
        """Run a function tool; its result (or its error, for the model to read) joins the shared list."""
        try:
            result, status = as_result(fn.invoke(call["args"], context)), "success"
        except ToolError as exc:
            result, status = as_result(f"ERROR [{exc.error_class}]: {exc}"), "error"
        history.append(
            {"role": "tool", "tool_call_id": call["id"], "name": fn.name, "content": result.value, "status": status}
        )
        emit(agent, SwarmEventType.TOOL_RESULT, id=call["id"], name=fn.name, value=result.value, status=status)
        if result.context_variables:
            context.update(result.context_variables)
            emit(agent, SwarmEventType.CONTEXT_UPDATE, updates=dict(result.context_variables))
