"""Composable stop conditions of a swarm run: ``MaxTurns(8) | Timeout(60) & TextMatch("DONE")``.

Every terminator is a pure predicate over a :class:`RunStatus`, checked before each model call;
``a & b`` stops when both stop, ``a | b`` when either does. ``&`` binds tighter than ``|``, as in
Python.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from routerlab.agents.errors import ConfigError, require_positive

__all__ = [
    "AllOf",
    "AnyOf",
    "MaxActivations",
    "MaxActiveTerminator",
    "MaxTurns",
    "MaxTurnsTerminator",
    "RunStatus",
    "Terminator",
    "TextMatch",
    "TextTerminator",
    "TimeOutTerminator",
    "Timeout",
]


@dataclass(frozen=True)
class RunStatus:
    """What a terminator may look at.

    Attributes:
        turns: Model replies plus tool executions so far.
        activations: Agents activated so far (the first agent counts; every handoff adds one).
        elapsed_s: Seconds since the run started.
        texts: Every text message the agents wrote, in order.
        steps: LangGraph's steps (seed 004): model replies plus replies whose tools ran.
    """

    turns: int = 0
    activations: int = 1
    elapsed_s: float = 0.0
    texts: tuple[str, ...] = ()
    steps: int = 0


class Terminator(ABC):
    """A stop condition; combine them with ``&`` (both) and ``|`` (either)."""

    @abstractmethod
    def should_stop(self, status: RunStatus) -> bool:
        """Whether the run must stop before its next model call."""

    def __and__(self, other: object) -> Terminator:
        if not isinstance(other, Terminator):
            return NotImplemented
        return AllOf((self, other))

    def __or__(self, other: object) -> Terminator:
        if not isinstance(other, Terminator):
            return NotImplemented
        return AnyOf((self, other))


@dataclass(frozen=True)
class MaxTurns(Terminator):
    """Stop once ``max_turns`` turns (model replies and tool executions) were taken.

    Args:
        max_turns: Turns allowed (>= 1).
    """

    max_turns: int

    def __post_init__(self) -> None:
        require_positive("MaxTurns", max_turns=self.max_turns)

    def should_stop(self, status: RunStatus) -> bool:
        """True once ``status.turns`` reaches the limit."""
        return status.turns >= self.max_turns

    def __str__(self) -> str:
        return f"max_turns({self.max_turns})"


@dataclass(frozen=True)
class MaxActivations(Terminator):
    """Let at most ``max_activations`` agent activations run; stop before the next one speaks.

    Args:
        max_activations: Activations allowed (>= 1; 1 forbids every handoff's agent to speak).
    """

    max_activations: int

    def __post_init__(self) -> None:
        require_positive("MaxActivations", max_activations=self.max_activations)

    def should_stop(self, status: RunStatus) -> bool:
        """True once more agents were activated than allowed."""
        return status.activations > self.max_activations

    def __str__(self) -> str:
        return f"max_activations({self.max_activations})"


@dataclass(frozen=True)
class Timeout(Terminator):
    """Stop once the run has lasted ``seconds``.

    Args:
        seconds: Wall-clock budget (> 0), measured by the runner's clock.
    """

    seconds: float

    def __post_init__(self) -> None:
        require_positive("Timeout", seconds=self.seconds)

    def should_stop(self, status: RunStatus) -> bool:
        """True once ``status.elapsed_s`` reaches the budget."""
        return status.elapsed_s >= self.seconds

    def __str__(self) -> str:
        return f"timeout({self.seconds:g}s)"


@dataclass(frozen=True)
class TextMatch(Terminator):
    """Stop once any agent message contains ``text``.

    Args:
        text: The text to look for (non-empty).
        case_sensitive: Compare case-sensitively (default: not).
    """

    text: str
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if not self.text:
            raise ConfigError(
                "TextMatch needs a text to look for",
                expected="a non-empty string",
                found=repr(self.text),
                fix="pass the marker text agents write when they are done",
            )

    def should_stop(self, status: RunStatus) -> bool:
        """True once some agent message contains the text."""
        if self.case_sensitive:
            return any(self.text in t for t in status.texts)
        needle = self.text.casefold()
        return any(needle in t.casefold() for t in status.texts)

    def __str__(self) -> str:
        return f"text({self.text!r})"


def _flatten(parts: tuple[Terminator, ...], kind: type[AllOf | AnyOf]) -> tuple[Terminator, ...]:
    # (a & b) & c reads as one AllOf of three: shorter descriptions, same meaning
    out: list[Terminator] = []
    for p in parts:
        out.extend(p.parts if isinstance(p, kind) else (p,))
    return tuple(out)


def _check_parts(kind: str, parts: tuple[Terminator, ...]) -> None:
    if not parts or not all(isinstance(p, Terminator) for p in parts):
        raise ConfigError(
            f"{kind} combines terminators only",
            expected="one or more Terminator objects",
            found=repr(parts),
            fix="combine terminators with & and |",
        )


@dataclass(frozen=True)
class AllOf(Terminator):
    """Stop when every part stops (``a & b``).

    Args:
        parts: The combined terminators.
    """

    parts: tuple[Terminator, ...]

    def __post_init__(self) -> None:
        _check_parts("AllOf", self.parts)
        object.__setattr__(self, "parts", _flatten(self.parts, AllOf))

    def should_stop(self, status: RunStatus) -> bool:
        """True when all parts are."""
        return all(p.should_stop(status) for p in self.parts)

    def __str__(self) -> str:
        return " & ".join(f"({p})" if isinstance(p, AnyOf) else str(p) for p in self.parts)


@dataclass(frozen=True)
class AnyOf(Terminator):
    """Stop when any part stops (``a | b``).

    Args:
        parts: The combined terminators.
    """

    parts: tuple[Terminator, ...]

    def __post_init__(self) -> None:
        _check_parts("AnyOf", self.parts)
        object.__setattr__(self, "parts", _flatten(self.parts, AnyOf))

    def should_stop(self, status: RunStatus) -> bool:
        """True when any part is."""
        return any(p.should_stop(status) for p in self.parts)

    def __str__(self) -> str:
        return " | ".join(str(p) for p in self.parts)


# Seed 003's names for the same terminators (entry points, not copies).
MaxTurnsTerminator = MaxTurns
MaxActiveTerminator = MaxActivations
TextTerminator = TextMatch
TimeOutTerminator = Timeout
