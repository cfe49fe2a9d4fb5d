"""What the pipeline injects into every tool: database, LM, programs, settings, state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dspy

    from routerlab.agents.db import Database
    from routerlab.agents.tools.programs import SQLPrograms

__all__ = ["ToolContext", "ToolSettings"]


@dataclass(frozen=True)
class ToolSettings:
    """Knobs of the sub-agents (recorded in every run's params).

    Attributes:
        example_values: Example values per column shown to SQL generation.
        max_tables: data_discovery keeps at most this many tables (plus up to two tables they
            reference by foreign key). Prompt tokens dominate the embedded model's latency on a
            CPU: the built-in schema is about 1,400 tokens in full, about half with 4 tables.
        sql_timeout_s: Timeout of one query (really interrupts it).
        max_rows: Row cap of one query result.
        message_rows: Rows of a result repeated in the tool message the router sees.
        fix_attempts: Repair attempts inside one fix_sql call.
    """

    example_values: int = 3
    max_tables: int = 4
    sql_timeout_s: float = 10.0
    max_rows: int = 1000
    message_rows: int = 10
    fix_attempts: int = 2


@dataclass
class ToolContext:
    """Injected into tools as ``ctx: Annotated[ToolContext, INJECTED]``; never in a schema."""

    db: Database
    lm: dspy.LM
    programs: SQLPrograms
    settings: ToolSettings = field(default_factory=ToolSettings)
    state: Mapping[str, Any] = field(default_factory=dict)

    def call_output(self, call_id: str) -> Any:
        """Output of an earlier call, by id (``None`` when unknown)."""
        record = self.state.get("tool_calls", {}).get(call_id)
        return None if record is None else record.get("output")
