"""``Result``: what a swarm tool returns, and how other return values are read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm.context import ContextVariables
from routerlab.agents.swarm.member import Member

__all__ = ["Result", "as_result"]


@dataclass(frozen=True)
class Result:
    """A tool's answer, a handoff and context updates in one value.

    Attributes:
        value: Text the model sees as the tool's result.
        agent: The agent to hand control to, or None to keep the current one.
        context_variables: Updates merged into the context variables (dict ``update``).
        carry_history: With a handoff: True to give the next agent the conversation so far;
            False to start it from the messages the run began with (the request), leaving out
            what earlier agents said and called during the run. Context variables are kept
            either way, so they can carry what the next agent needs.
        message: Seed 003's name for ``carry_history`` (``Result(agent=a, message=False)``);
            given, it overrides ``carry_history``.
        reason: With a handoff: why control passes (a hand-back's reason, say), recorded on the
            next agent's :class:`~routerlab.agents.swarm.runner.Activation` for traces. It is not
            shown to any model: put what the next agent must read in ``context_variables``.

    Raises:
        ContractError: For an ``agent`` that is not an :class:`Agent` or context updates that are
            not a mapping.
    """

    value: str = ""
    agent: Member | None = None
    context_variables: Mapping[str, Any] = field(default_factory=dict)
    carry_history: bool = True
    reason: str = ""
    message: InitVar[bool | None] = None

    def __post_init__(self, message: bool | None) -> None:
        if message is not None:
            object.__setattr__(self, "carry_history", bool(message))
        if self.agent is not None and not isinstance(self.agent, Member):
            raise ContractError(
                "a Result hands off to something that is not an Agent",
                expected="routerlab.agents.swarm.Agent or None",
                found=type(self.agent).__name__,
                fix="return the Agent object to hand off to",
            )
        if not isinstance(self.context_variables, Mapping):
            raise ContractError(
                "a Result's context updates are not a mapping",
                expected="a dict or ContextVariables",
                found=type(self.context_variables).__name__,
                fix="pass context_variables={name: value}",
            )


def as_result(returned: Any) -> Result:
    """Read whatever a tool returned as a :class:`Result` (seed 003's rule).

    A string is the tool's result; an :class:`Agent` is a handoff (keeping the history);
    :class:`~routerlab.agents.swarm.context.ContextVariables` are context updates; a ``Result`` is
    kept. Any other value (None, a number, a dict...) is ignored, as the seed says: such a tool
    is run for its side effects, and the model reads an empty result. (A ``create_react_agent``
    tool's value is shown as JSON instead: seed 004's ToolNode.)
    """
    if isinstance(returned, Result):
        return returned
    if isinstance(returned, Member):
        return Result(value=f"Control passed to agent {returned.name!r}.", agent=returned)
    if isinstance(returned, ContextVariables):
        return Result(value="Context variables updated.", context_variables=returned)
    if isinstance(returned, str):
        return Result(value=returned)
    return Result()
