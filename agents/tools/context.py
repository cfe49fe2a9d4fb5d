"""What the pipeline injects into every tool: database, LM, programs, settings, state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from routerlab.agents.errors import ConfigError
from routerlab.agents.tools.result_checks import result_check
from routerlab.agents.tools.schema_linking import LINKING_MODES
from routerlab.agents.tools.views import schema_view

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
        linking: Which tables the SQL sub-agents see: ``auto`` (all of them while the schema
            text fits ``schema_budget_chars``, else ``overlap``), ``full`` or ``overlap`` (see
            ``routerlab.agents.tools.schema_linking``).
        schema_budget_chars: Largest schema text ``auto`` linking shows whole. A whole schema
            is the same prompt prefix for every question on a database, which the local model
            reuses from its KV cache.
        repair: Resolve the identifiers of generated SQL against the schema and rewrite the
            unknown or mis-cased ones to the closest real ones before the query runs
            (``routerlab.agents.tools.repair``); only what stays unresolved costs a fix_sql call.
        repair_joins: With ``repair``, rewrite a suspect join condition (a rewritten or unknown
            column, both sides on one table, or unrelated columns of two tables a foreign key
            links) to the one foreign key between the joined tables.
        retry_empty: Execution-guided correction: a discovery-path query that runs but returns
            nothing (no rows, or one row of NULLs and zeros) and has a condition that explains
            it (a string literal its column lacks, a join no pair of rows meets) gets ONE more
            ``generate_sql`` call with that feedback (``routerlab.agents.tools.feedback``). The
            retry is kept only when it returns rows.
        retry_error: The same for a query that still fails after ``repair``: one more call with
            the database's exact error and the tables that have a missing column, kept only
            when it runs; otherwise the plan's fix_sql follows as before. Off by default: on
            the spider-dev-a subset it fixed none of its retries (README, SQL quality). Both
            retries reuse generate_sql's prompt (the schema prefix is shared, so llama.cpp does
            not prefill it again).
        sql_may_decline: ``generate_sql`` may answer that the schema cannot answer the question
            instead of writing a query (``routerlab.agents.tools.decline``); the plan then abstains.
            The declining request is always the field format's (its extra instruction is written
            for the DSPy signature), whatever ``sql_framing`` says.
        schema_view: How the SQL sub-agents see the tables: a view registered in
            ``routerlab.agents.tools.views`` (``create_values``, ``create``, ``create_rows``,
            ``compact``). Used by ``data_discovery`` and by ``generate_sql``'s plain call.
        foreign_keys: The schema view shows the foreign keys.
        sql_framing: How ``generate_sql`` asks for the query: ``chat`` (one plain chat exchange,
            the default), ``fields`` (the DSPy signature's field format) or ``program`` (the
            compiled program ``sql_program``); see ``routerlab.agents.tools.framing``.
        sql_program: The compiled ``generate_sql`` program the ``program`` framing runs: a
            committed program's name (``routers/programs/generate_sql_<name>.json``) or a
            ``.json`` path (``routerlab.agents.tools.sql_program``). Checked whenever it is set;
            the other framings do not read it (so a baseline that fixes its own framing still
            runs under a config that names a program).
        sql_output: How the query is read out of the reply: ``extract`` (the default: fences, a
            label, prose before and after the statement, a reply cut off at the token budget) or
            ``clean`` (fences, a label, a trailing semicolon only).
        value_linking: data_discovery looks the values the question names (quoted, capitalised,
            numbers) up in the database's text columns and generate_sql reads where each is stored
            ("'Asia' is a value of country.Continent.") after the question; with ``overlap``
            linking the tables holding them are kept too (``routerlab.agents.tools.value_linking``).
        candidates: Execution-guided selection: candidate queries per discovery-path
            generate_sql, the greedy one included (1: the greedy query only, no selection). The
            others are sampled, all are executed and the result most agree on wins
            (``routerlab.agents.tools.selection``).
        candidate_temperature: Sampling temperature of the candidates after the greedy one.
        selection_budget_s: Seconds the one-by-one sampling of candidates may take; no sample
            starts after. Candidates decoded together in one batched call (an engine that offers
            it, the ``chat`` framing) are bounded by the turn's deadline instead.
        candidate_repair: Corrective self-consistency: with ``candidates`` > 1, a candidate whose
            query fails on execution gets fix_sql's repair once (one model attempt) before the
            vote, and counts with the repaired query's result; a repair that does not run leaves
            it out. Does nothing with ``candidates`` == 1.
        result_checks: Checks of a discovery-path query's result against the question
            (registry ``routerlab.agents.tools.result_checks.result_check``: ``empty``,
            ``count_for_list``, ``list_for_count``, ``duplicates``); a failed one triggers one
            more generate_sql call with the finding as feedback, kept only if it fails fewer.
        followup_check: The follow-up structural check (``routerlab.agents.tools.followup_check``):
            a follow-up's discovery-path query that silently drops the previous query's tables or
            filters gets ONE more generate_sql call naming what it dropped, kept only when it runs
            and drops less. Off by default until measured (issue 51).
        followup_context: How the routed pipeline's generate_sql (with a data_discovery call)
            sees a follow-up: a mode registered in ``routerlab.agents.tools.followup_context``:
            ``edit`` (the default, chosen by measurement: the previous query as the base and the
            request as an edit instruction), ``parenthesis`` (the request, then the last data
            turn's question and SQL in a parenthesis, the behaviour before the setting) or
            ``rewrite`` (one LM call writes a standalone question, ``routerlab.agents.rewrite``,
            which generation sees as a first turn). The
            plain call (``single_call``) always uses ``parenthesis``, so the baseline is unchanged.
    """

    example_values: int = 3
    max_tables: int = 4
    sql_timeout_s: float = 10.0
    max_rows: int = 1000
    message_rows: int = 10
    fix_attempts: int = 2
    linking: str = "auto"
    schema_budget_chars: int = 8000
    repair: bool = True
    repair_joins: bool = True
    retry_empty: bool = True
    retry_error: bool = False
    sql_may_decline: bool = False
    schema_view: str = "create_values"
    foreign_keys: bool = True
    # the plain call's framing and output handling, so the pipeline's first request is the
    # baseline's (0.72 vs fields' 0.71 on all 382 spider-dev-a questions, p=0.88)
    sql_framing: str = "chat"
    sql_program: str = ""
    sql_output: str = "extract"
    value_linking: bool = False
    candidates: int = 1
    candidate_temperature: float = 0.7
    selection_budget_s: float = 6.0
    candidate_repair: bool = True
    result_checks: tuple[str, ...] = ()
    followup_check: bool = False
    # ``edit`` won the follow-up study on sparc's tune databases by the rule written before it
    # (docs/results/2026-11-28-followups.md): follow-up EX 0.57 against 0.49, 12 won / 6 lost
    followup_context: str = "edit"

    def __post_init__(self) -> None:
        # checked when the settings are built, not when the first question reaches a tool;
        # imported here: framing and sql_program import DSPy (seconds), which building settings
        # from a config file (or just importing them) needs not
        from routerlab.agents.tools.followup_context import followup_context
        from routerlab.agents.tools.framing import PROGRAM_FRAMINGS, SQL_OUTPUT, sql_framing
        from routerlab.agents.tools.sql_program import resolve_sql_program

        for registry, value in (
            (schema_view, self.schema_view),
            (sql_framing, self.sql_framing),
            (followup_context, self.followup_context),
        ):
            registry.get(value)  # UnknownComponentError: the known names and the closest one
        if self.sql_program or self.sql_framing in PROGRAM_FRAMINGS:
            resolve_sql_program(self.sql_program)  # ConfigError: empty, unknown name, missing file
        if self.sql_output not in SQL_OUTPUT:
            raise ConfigError(
                f"unknown SQL output handling {self.sql_output!r}",
                expected=f"one of {', '.join(SQL_OUTPUT)}",
                found=repr(self.sql_output),
                fix="set pipeline.tools.sql_output (or the router's output argument) to clean or extract",
            )

        # a config file writes the checks as a list (or one name): kept as a tuple, hashable and frozen
        checks = (self.result_checks,) if isinstance(self.result_checks, str) else tuple(self.result_checks)
        object.__setattr__(self, "result_checks", checks)
        for name in checks:
            result_check.get(name)  # UnknownComponentError: the known names and the closest one
        if self.candidates < 1 or self.candidate_temperature < 0 or self.selection_budget_s < 0:
            raise ConfigError(
                "bad execution-guided selection settings",
                expected="candidates >= 1, candidate_temperature >= 0, selection_budget_s >= 0",
                found=(
                    f"candidates={self.candidates}, candidate_temperature={self.candidate_temperature}, "
                    f"selection_budget_s={self.selection_budget_s}"
                ),
                fix="set pipeline.tools.candidates (1 turns selection off) and the other two to non-negative numbers",
            )

        if self.linking not in LINKING_MODES:
            raise ConfigError(
                f"unknown schema linking mode {self.linking!r}",
                expected=f"one of {', '.join(LINKING_MODES)}",
                found=repr(self.linking),
                fix="set pipeline.tools.linking to auto, full or overlap",
            )


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
