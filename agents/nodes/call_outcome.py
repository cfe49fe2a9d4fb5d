"""What one tool call came to: the value the tools node's pieces pass along."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from routerlab.agents.trace import Usage

__all__ = ["CallOutcome"]


@dataclass
class CallOutcome:
    """The result of one tool call before it becomes a record, a message and an event.

    Attributes:
        output: The tool's output, or the error text of a failed call.
        status: ``success`` or ``error``.
        error_class: Stable class of the failure (None on success).
        error_detail: The statement and guard rule a tool error is about (when known).
        turn_update: State keys the call sets for the whole turn (a crash or a cut call ends it).
        usage: What the call cost (a replayed call: the stored cost, marked cached).
        replayed: The outcome came from the replay cache, not from running the tool.
        structured: The output validated into the tool's response format, as JSON (seed 004).
    """

    output: Any
    status: Literal["success", "error"] = "success"
    error_class: str | None = None
    error_detail: dict[str, Any] = field(default_factory=dict)
    turn_update: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    replayed: bool = False
    structured: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """The call succeeded."""
        return self.status == "success"

    def failed(self, output: Any, error_class: str, turn_update: Mapping[str, Any] | None = None) -> CallOutcome:
        """This outcome turned into a failure (``turn_update`` added to the turn's)."""
        self.output, self.status, self.error_class = output, "error", error_class
        self.turn_update |= dict(turn_update or {})
        return self
