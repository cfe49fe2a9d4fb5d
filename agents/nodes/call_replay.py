"""Replay of sub-agent outcomes for the tools node: the key of a call, its lookup and its store."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from routerlab.agents.replay import (
    OutcomeCache,
    ReplayedOutcome,
    lm_identity,
    outcome_key,
    programs_digest,
    settings_dict,
)
from routerlab.agents.tools import SQLPrograms, Tool, ToolSettings
from routerlab.agents.tools.sql_program import sql_program_record
from routerlab.agents.trace import Usage

__all__ = ["CallReplay"]


@dataclass(frozen=True)
class CallReplay:
    """The outcome cache of one pipeline and what every key of it shares.

    Attributes:
        outcomes: The cache (None: replay is off; every method then does nothing).
        fixed: What keys a call besides the call itself: the LM's identity and the context
            (programs digest, tool settings, a compiled SQL program's record).
    """

    outcomes: OutcomeCache | None
    fixed: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, replay: bool | str, lm: Any, programs: SQLPrograms, settings: ToolSettings) -> CallReplay:
        """The replay of a pipeline: ``replay`` as :class:`PipelineConfig` holds it."""
        outcomes = None if replay is False else OutcomeCache(None if replay is True else replay)
        fixed = {
            "lm": lm_identity(lm),
            "context": {
                "programs": programs_digest(programs),
                "tools": settings_dict(settings),
                # a compiled generate_sql program refit under the same name is a new key
                **({"sql_program": sql_program_record(p)} if (p := settings.sql_program) else {}),
            },
        }
        return cls(outcomes, fixed)

    def key(self, tool: Tool, args: Mapping[str, Any], state: Mapping[str, Any]) -> str | None:
        """The replay key of a call (None when replay is off or the call cannot be keyed)."""
        if self.outcomes is None or tool.interrupts:
            return None
        return outcome_key(tool.name, args, tool.refs, state, **self.fixed)

    def lookup(self, key: str | None) -> ReplayedOutcome | None:
        """The stored outcome of ``key`` (None: none stored, or no key)."""
        return self.outcomes.get(key) if self.outcomes is not None and key is not None else None

    def store(self, key: str | None, tool: Tool, output: Any, usage: Usage) -> None:
        """Keep a successful call's outcome for later runs (nothing without a key)."""
        if key is not None and self.outcomes is not None:
            self.outcomes.put(key, tool.name, output, usage)
