"""``Swarm``: runs agents that pass control to each other until one answers or a host tool is due."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.lm.chat import chat
from routerlab.agents.swarm.context import ContextVariables
from routerlab.agents.swarm.events import SwarmEvent, SwarmEventType, call_event
from routerlab.agents.swarm.member import Member
from routerlab.agents.swarm.result import Result, as_result
from routerlab.agents.swarm.terminators import MaxTurns, RunStatus, Terminator
from routerlab.agents.swarm.tools import FunctionTool
from routerlab.agents.trace import Usage

__all__ = ["DEFAULT_TERMINATOR", "NEED_MORE_STEPS", "TOOL_ERROR_TEMPLATE", "Activation", "Swarm", "SwarmResponse"]

#: used when no terminator is given: handoffs between agents could otherwise loop forever
DEFAULT_TERMINATOR: Terminator = MaxTurns(16)
#: the answer when a reply asks for tools with fewer than 2 steps left (seed 004; LangGraph's text)
NEED_MORE_STEPS = "Sorry, need more steps to process this request."
#: the tool message of a call that raised, for a tool with ``handle_errors`` (LangGraph's ToolNode)
TOOL_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."

_TOOL_CHOICES = ("auto", "required", "none")


@dataclass
class Activation:
    """One agent's time in control during a run: from the handoff that activated it to the next.

    Attributes:
        agent: The agent's name.
        index: Position in the run (0: the agent the run started with).
        source: The agent that handed control to it (None for the first activation).
        via: The tool whose result made the handoff (None for the first activation).
        reason: The handoff's :attr:`Result.reason <routerlab.agents.swarm.result.Result.reason>`.
        started: ``time.time()`` when it got control.
        ended: ``time.time()`` when it lost control or the run ended (None while it runs).
        outcome: How it ended: ``handoff`` (passed control on), ``host_call`` (made calls the
            host runs), ``answer`` (a text reply), ``invalid`` (no usable call), ``stopped``
            (the terminator stopped the run while it was in control; it may never have spoken).
        usage: LM cost of its own model calls.
        calls: Every call it made, ``{"id", "name", "args", "host"}``, in order.
    """

    agent: str
    index: int = 0
    source: str | None = None
    via: str | None = None
    reason: str = ""
    started: float = field(default_factory=time.time)
    ended: float | None = None
    outcome: str = ""
    usage: Usage = field(default_factory=Usage)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: the fields, ``usage`` as its observed figures."""
        u = self.usage
        return {
            "agent": self.agent,
            "index": self.index,
            "source": self.source,
            "via": self.via,
            "reason": self.reason,
            "started": self.started,
            "ended": self.ended,
            "outcome": self.outcome,
            "lm_calls": u.lm_calls,
            "cache_hits": u.cache_hits,
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "latency_s": u.latency_s,
            "calls": [dict(c) for c in self.calls],
        }


@dataclass
class SwarmResponse:
    """How a run ended.

    Attributes:
        agent: The agent active at the end.
        messages: The conversation as ``agent`` sees it (OpenAI-style dicts, no system message).
        context_variables: The context variables at the end.
        events: Every trace event, in order.
        pending: Calls to host tools the model made (``{"id", "name", "args"}``), not run: the
            host runs them. The run stops after the reply that made them.
        invalid_tool_calls: Calls the model made that could not be parsed or validated, when a
            reply had no valid call.
        answer: The final text when the run ended with an agent's text reply.
        stopped_by: The terminator (as text) when it ended the run.
        status: Turns, activations, elapsed time and texts at the end.
        usage: LM cost of the run's model calls.
        activations: Every agent activation, in order (the last one is :attr:`agent`'s).
    """

    agent: Member
    messages: list[dict[str, Any]] = field(default_factory=list)
    context_variables: ContextVariables = field(default_factory=ContextVariables)
    events: list[SwarmEvent] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    invalid_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None
    stopped_by: str | None = None
    status: RunStatus = field(default_factory=RunStatus)
    usage: Usage = field(default_factory=Usage)
    activations: list[Activation] = field(default_factory=list)

    def switches(self) -> list[tuple[str, str]]:
        """``(from, to)`` agent names of every handoff, in order."""
        return [(e.agent, str(e.data["to"])) for e in self.events if e.type is SwarmEventType.AGENT_SWITCH]


class _Run:
    """The mutable bookkeeping of one :meth:`Swarm.run` (one instance per run, never shared)."""

    def __init__(self, swarm: Swarm, agent: Member, base: list[dict[str, Any]], context: ContextVariables) -> None:
        self.swarm = swarm
        self.agent = agent
        self.base = base
        self.history = list(base)
        self.context = context
        self.events: list[SwarmEvent] = []
        self.turns = 0
        self.steps = 0
        self.activations = 1
        self.texts: list[str] = []
        self.usage = Usage()
        self.started = swarm.clock()
        self.log: list[Activation] = [Activation(agent.name)]

    def emit(self, type_: SwarmEventType, **data: Any) -> None:
        event = SwarmEvent(type_, self.agent.name, data)
        self.events.append(event)
        if self.swarm.on_event is not None:
            self.swarm.on_event(event)

    def status(self) -> RunStatus:
        return RunStatus(
            self.turns, self.activations, self.swarm.clock() - self.started, tuple(self.texts), steps=self.steps
        )

    def response(self, outcome: str, **kw: Any) -> SwarmResponse:
        self.log[-1].ended, self.log[-1].outcome = time.time(), outcome
        return SwarmResponse(
            agent=self.agent,
            messages=self.history,
            context_variables=self.context,
            events=self.events,
            status=self.status(),
            usage=self.usage,
            activations=self.log,
            **kw,
        )

    def execute(self, fn: FunctionTool, call: Mapping[str, Any]) -> Result:
        try:
            result, status = as_result(fn.invoke(call["args"], self.context)), "success"
        except ToolError as exc:
            # the model made the mistake, so the model gets to read it and try again
            result, status = Result(value=f"ERROR [{exc.error_class}]: {exc}"), "error"
        except Exception as exc:
            if not fn.tool.handle_errors:
                raise
            # seed 004's ToolNode: the exception is the model's to read, as an error tool message
            result, status = Result(value=TOOL_ERROR_TEMPLATE.format(error=repr(exc))), "error"
        self.turns += 1
        self.history.append(
            {"role": "tool", "tool_call_id": call["id"], "name": fn.name, "content": result.value, "status": status}
        )
        self.emit(SwarmEventType.TOOL_RESULT, id=call["id"], name=fn.name, value=result.value, status=status)
        if result.context_variables:
            self.context.update(result.context_variables)
            self.emit(SwarmEventType.CONTEXT_UPDATE, updates=dict(result.context_variables))
        return result

    def switch(self, to: Member, handoff: Result, via: str) -> None:
        carry_history = handoff.carry_history
        self.emit(SwarmEventType.AGENT_SWITCH, to=to.name, carry_history=carry_history)
        self.log[-1].ended, self.log[-1].outcome = time.time(), "handoff"
        self.log.append(Activation(to.name, len(self.log), self.agent.name, via, handoff.reason))
        self.agent = to
        self.activations += 1
        if not carry_history:
            self.history = list(self.base)
        self.history.extend(to.take_messages())


class Swarm:
    """Runs agents that pass control to each other.

    The active agent's model replies; its function tools run here; a function returning an
    :class:`Agent` (or a ``Result`` with one) passes control to that agent.

    Args:
        lm: The DSPy LM of every agent without its own ``Agent.lm`` (see
            :func:`routerlab.agents.lm.resolve_lm`).
        terminator: When to stop (checked before every model call); default
            :data:`DEFAULT_TERMINATOR`.
        tool_choice: ``auto``, ``required`` or ``none``, for every model call.
        max_tokens: Completion budget of one model call (default: the LM's).
        clock: Seconds for timeouts (``time.monotonic``; tests pass a fake clock).
        on_event: Called with every trace event as it happens.
        step_limit: LangGraph's ``recursion_limit`` (seed 004's ``remaining_steps``): a model
            reply and a reply's batch of tool runs are one step each; no step starts past the
            limit, and a reply asking for tools with fewer than 2 steps left ends the run with
            :data:`NEED_MORE_STEPS` instead of running them. With it and no ``terminator``,
            it is the only bound.

    Raises:
        ContractError: For a missing LM, an unknown tool_choice or a terminator that is not one.
    """

    def __init__(
        self,
        lm: Any,
        *,
        terminator: Terminator | None = None,
        tool_choice: str = "auto",
        max_tokens: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_event: Callable[[SwarmEvent], None] | None = None,
        step_limit: int | None = None,
    ) -> None:
        if lm is None:
            raise ContractError(
                "a swarm needs a language model",
                expected="a DSPy LM",
                found="None",
                fix="pass routerlab.agents.lm.resolve_lm(...) or a scripted LM",
            )
        if tool_choice not in _TOOL_CHOICES:
            raise ContractError(
                f"unknown tool_choice {tool_choice!r}",
                expected=f"one of {list(_TOOL_CHOICES)}",
                found=repr(tool_choice),
                fix="pick one of the listed modes",
            )
        if terminator is not None and not isinstance(terminator, Terminator):
            raise ContractError(
                "the swarm's terminator is not a Terminator",
                expected="MaxTurns, MaxActivations, Timeout, TextMatch or a & / | combination",
                found=type(terminator).__name__,
                fix="build it from routerlab.agents.swarm terminators",
            )
        if step_limit is not None and step_limit < 1:
            raise ContractError(
                f"a step limit of {step_limit}",
                expected="recursion_limit >= 1",
                found=str(step_limit),
                fix="pass a positive recursion_limit",
            )
        self.lm = lm
        self.step_limit = step_limit
        self.terminator = terminator or (MaxTurns(10**9) if step_limit is not None else DEFAULT_TERMINATOR)
        self.tool_choice = tool_choice
        self.max_tokens = max_tokens
        self.clock = clock
        self.on_event = on_event

    def run(
        self,
        agent: Member,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        context_variables: Mapping[str, Any] | None = None,
    ) -> SwarmResponse:
        """Run from ``agent`` until an answer, a host call, an unusable reply or the terminator.

        Args:
            agent: The agent that starts.
            messages: The user's message, or a conversation of OpenAI-style dicts (no system
                message: each agent's instruction is its system message).
            context_variables: Initial context variables (copied, never mutated).
        """
        base = [{"role": "user", "content": messages}] if isinstance(messages, str) else [dict(m) for m in messages]
        run = _Run(self, agent, base, ContextVariables(context_variables or {}))
        if base and base[-1].get("role") == "user":
            run.emit(SwarmEventType.USER_MESSAGE, text=str(base[-1].get("content") or ""))
        run.history.extend(agent.take_messages())
        while True:
            if self.terminator.should_stop(run.status()):
                return run.response("stopped", stopped_by=str(self.terminator))
            remaining = None if self.step_limit is None else self.step_limit - run.steps
            if remaining is not None and remaining <= 0:
                return run.response("stopped", stopped_by=f"recursion_limit={self.step_limit}")
            system = run.agent.instructions(run.context)
            schemas = run.agent.schemas()
            reply = chat(
                run.agent.lm or self.lm,  # an agent's own model, else the swarm's (seed 003)
                ([{"role": "system", "content": system}] if system else []) + run.history,
                tools=schemas or None,
                tool_choice=self.tool_choice if schemas else "auto",
                max_tokens=self.max_tokens,
            )
            run.usage = run.usage.add(reply.usage)
            run.log[-1].usage = run.log[-1].usage.add(reply.usage)
            run.turns += 1
            run.steps += 1
            if reply.tool_calls and remaining is not None and remaining < 2:
                # seed 004: fewer than 2 steps left cannot run the tools and answer after them
                run.texts.append(NEED_MORE_STEPS)
                run.emit(SwarmEventType.AGENT_MESSAGE, text=NEED_MORE_STEPS)
                run.history.append({"role": "assistant", "content": NEED_MORE_STEPS})
                return run.response("answer", answer=NEED_MORE_STEPS, stopped_by="remaining_steps")
            if reply.text:
                run.texts.append(reply.text)
                run.emit(SwarmEventType.AGENT_MESSAGE, text=reply.text)
            if not reply.tool_calls:
                if reply.invalid_tool_calls:
                    return run.response("invalid", invalid_tool_calls=list(reply.invalid_tool_calls))
                run.history.append({"role": "assistant", "content": reply.text})
                return run.response("answer", answer=reply.text)
            run.history.append(
                {
                    "role": "assistant",
                    "content": reply.text,
                    "tool_calls": [
                        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                        for c in reply.tool_calls
                    ],
                }
            )
            pending: list[dict[str, Any]] = []
            handoff: tuple[Result, str] | None = None
            run.steps += 1  # the reply's tool runs are one step (LangGraph's tools node)
            for call in reply.tool_calls:
                target = run.agent.get_tool(call["name"])
                host = not isinstance(target, FunctionTool)
                kind, via = call_event(target.mcp_server if isinstance(target, FunctionTool) else None)
                run.emit(kind, id=call["id"], name=call["name"], args=call["args"], host=host, **via)
                made = {"id": call["id"], "name": call["name"], "args": dict(call["args"]), "host": host}
                run.log[-1].calls.append(made)
                if isinstance(target, FunctionTool):
                    result = run.execute(target, call)
                    handoff = (result, call["name"]) if result.agent is not None else handoff
                else:
                    pending.append({"id": call["id"], "name": call["name"], "args": dict(call["args"])})
            if handoff is not None and handoff[0].agent is not None:
                # the last handoff of a reply wins: the model asked for it last
                run.switch(handoff[0].agent, *handoff)
            if pending:
                return run.response("host_call", pending=pending)
