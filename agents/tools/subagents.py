"""The sub-agents the routers dispatch to. Each is a plain typed function; see ``routerlab.agents.tools.base``.

Outputs are JSON-able dicts; the dispatch graph stores them in the call's record and shows a
compact JSON of them to the router as the ``ToolMessage`` content.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Annotated

from routerlab.agents.db import check_sql
from routerlab.agents.errors import GuardViolation, LMError, ToolError
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.lm.candidates import BatchedReplies, candidate_sampler, sample_candidates
from routerlab.agents.tools.base import tool
from routerlab.agents.tools.context import ToolContext
from routerlab.agents.tools.decline import declined, declining
from routerlab.agents.tools.feedback import Probe, column_notes, feedback_text, probe, value_notes
from routerlab.agents.tools.followup_check import dropped_parts
from routerlab.agents.tools.followup_context import InContext, followup_context
from routerlab.agents.tools.framing import CHAT_MAX_TOKENS, CHAT_PROMPTS, SQL_OUTPUT, Sampling, sql_framing
from routerlab.agents.tools.programs import clean_sql
from routerlab.agents.tools.repair import catalog_of, foreign_keys_of, repair_sql
from routerlab.agents.tools.result_checks import Finding, check_result
from routerlab.agents.tools.schema import INJECTED
from routerlab.agents.tools.schema_linking import link_tables, schema_for
from routerlab.agents.tools.selection import Candidate, Repair, Selection, select, vote
from routerlab.agents.tools.value_linking import value_hits, value_notes_text
from routerlab.agents.tools.views import render_schema
from routerlab.agents.turn_history import history_of, last_data_turn, question_in_context

__all__ = [
    "SQL_PRODUCERS",
    "ask_human",
    "chat",
    "data_discovery",
    "execute_sql_and_analyze_result",
    "explain_sql",
    "fix_sql",
    "generate_sql",
    "refuse",
    "result_summary",
]

#: tools whose successful output carries a ``sql`` the executor may run
SQL_PRODUCERS: tuple[str, ...] = ("generate_sql", "fix_sql")

Ctx = Annotated[ToolContext, INJECTED]

#: seed of the batched candidates call (sequence ``s`` draws from a stream derived from it and ``s``)
_BATCH_SEED = 0


def _schema_for(ctx: ToolContext, question: str) -> str:
    return schema_for(ctx.db, question, ctx.settings)


def _view(ctx: ToolContext, tables: list[str] | None) -> str:
    """The schema text of ``tables`` (None: all) in the settings' schema view."""
    s = ctx.settings
    return render_schema(s.schema_view, ctx.db, tables, foreign_keys=s.foreign_keys, example_values=s.example_values)


def _repaired(ctx: ToolContext, sql: str) -> dict:
    """``{"sql": ...}`` for a model-written query, with deterministic repairs when enabled."""
    if not ctx.settings.repair or not sql:
        return {"sql": check_sql(sql, ctx.db.dialect)}
    tables = ctx.db.tables()
    keys = foreign_keys_of(tables) if ctx.settings.repair_joins else None
    fixed = repair_sql(sql, catalog_of(tables), ctx.db.dialect, keys)
    out: dict = {"sql": check_sql(fixed.sql, ctx.db.dialect)}
    if fixed.changes:
        out["repairs"] = list(fixed.changes)
    if fixed.unresolved:
        out["unresolved"] = list(fixed.unresolved)
    return out


def _question_with_reply(ctx: ToolContext, question: str) -> str:
    reply = ctx.state.get("user_reply")
    asked = ctx.state.get("clarification") or ctx.state.get("ask_human")
    if reply and asked:
        # the reply means little alone ("yes"): it goes to SQL generation with the question it answers
        question = f"{question}\n(The assistant asked: {asked!r} The user replied: {reply!r})"
    elif reply and reply not in question:
        question = f"{question}\n(Clarification from the user: {reply})"
    return question


def _in_context(ctx: ToolContext, question: str, *, routed: bool) -> InContext:
    """The request as SQL generation sees it: a follow-up is written from the earlier data turns.

    The routed pipeline's call (``routed``: with a data_discovery call) uses the settings'
    ``followup_context`` mode; the plain call always the parenthesis, so the baseline stays as
    it was whatever the mode.
    """
    question = _question_with_reply(ctx, question)
    history = history_of(ctx.state)
    if not routed:
        return InContext(question_in_context(question, history))
    return followup_context.get(ctx.settings.followup_context)(ctx.lm, question, history)


@tool()
def data_discovery(question: str, ctx: Ctx) -> dict:
    """Find the tables and columns relevant to a data question, with example values.

    Call this first for any question about the data; generate_sql needs its tool_call_id.

    Args:
        question: The user's data question.
    """
    last = last_data_turn(history_of(ctx.state))
    if last is None:
        tables = link_tables(ctx.db, question, ctx.settings)
    else:
        # a follow-up keeps the tables of the turn it follows, and links its own words too
        linked = set(link_tables(ctx.db, f"{last.get('question', '')} {question}", ctx.settings))
        linked |= set(last.get("tables") or [])
        tables = [t.name for t in ctx.db.tables() if t.name in linked]
    if not ctx.settings.value_linking:
        return {"tables": tables, "schema": _view(ctx, tables)}
    hits = value_hits(ctx.db, question)
    # a table holding a value the question names is kept even when linking left it out
    holding = {h.table for h in hits} | set(tables)
    tables = [t.name for t in ctx.db.tables() if t.name in holding]
    notes = list(dict.fromkeys(h.note() for h in hits))
    return {"tables": tables, "schema": _view(ctx, tables), "values": notes}


@tool(refs={"discovery_call_id": ("data_discovery",)})
def generate_sql(question: str, ctx: Ctx, discovery_call_id: str | None = None) -> dict:
    """Write a SQL query answering a data question, using the schema found by data_discovery.

    Args:
        question: The user's data question (with any clarification the user gave).
        discovery_call_id: The tool_call_id of the data_discovery call whose schema to use. Omit
            it only for one plain call: the model then sees the whole schema and its SQL is
            returned as written, without the checks and repairs of the discovery path.
    """
    notes: list[str] = []
    if discovery_call_id is None:
        schema = _view(ctx, None)
    else:
        found = ctx.call_output(discovery_call_id)
        if not isinstance(found, dict) or "schema" not in found:
            raise ToolError(
                f"discovery_call_id {discovery_call_id!r} is not a finished data_discovery call",
                error_class="bad_reference",
            )
        schema, notes = found["schema"], found.get("values") or []
    in_context = _in_context(ctx, question, routed=discovery_call_id is not None)
    question, shown = in_context.question, in_context.record
    # value-linking notes go after the question, not into the schema: the schema stays the
    # prompt prefix every question on the database shares
    hint = _joined(ctx.state.get("hint") or "", value_notes_text(notes))
    batch = _Batch()  # no batched candidates unless the discovery path below asks for them
    if ctx.settings.sql_may_decline:
        with lm_context(ctx.lm):
            pred = declining(ctx.programs.generate)(
                db_schema=schema, dialect=ctx.db.dialect, hint=hint, question=question
            )
        missing = declined(pred.sql)
        if missing is not None:  # the program found nothing in the schema to answer with: no query
            return {"sql": None, "unanswerable": True, "missing": missing, **shown}
        sql = clean_sql(pred.sql or "")
    elif discovery_call_id is None:
        # the plain call: the raw reply is kept so output handling can be compared without the model
        reply = _ask(ctx, schema, question, hint)
        sql = SQL_OUTPUT[ctx.settings.sql_output](reply, ctx.db.dialect)
        return {"sql": check_sql(sql, ctx.db.dialect), "reply": reply}
    else:
        batch = _batch(ctx, schema, question, hint)
        # a batched call's sequence 0 is the greedy reply to the same messages: no separate greedy call
        replies = batch.replies
        greedy = SQL_OUTPUT[ctx.settings.sql_output](replies.texts[0], ctx.db.dialect) if replies else None
        sql = greedy if greedy is not None else _generate(ctx, schema, question, hint)
    if discovery_call_id is None:
        return {"sql": check_sql(sql, ctx.db.dialect)}
    chosen = _select(ctx, schema, question, hint, _repaired(ctx, sql), batch)
    checked = _checked(ctx, schema, question, hint, _with_retry(ctx, schema, question, hint, chosen))
    # the trace shows the standalone question a rewrite wrote (or that it failed)
    return {**_kept_in_context(ctx, schema, question, hint, checked), **shown}


def _kept_in_context(ctx: ToolContext, schema: str, question: str, hint: str, out: dict) -> dict:
    """A follow-up's query that drops the previous query's tables or filters gets ONE more call.

    The structural diff (``routerlab.agents.tools.followup_check``) names what was dropped; the
    new query replaces ``out`` only when it runs and drops less. Off unless ``followup_check``.
    """
    last = last_data_turn(history_of(ctx.state))
    if not ctx.settings.followup_check or last is None or not out.get("sql"):
        return out
    dropped = dropped_parts(str(last.get("sql") or ""), out["sql"], ctx.db.dialect)
    if not dropped:
        return out
    feedback = dropped.feedback()
    try:
        second = _repaired(ctx, _generate(ctx, schema, question, _joined(hint, feedback)))
        ctx.db.execute(second["sql"], timeout_s=ctx.settings.sql_timeout_s, max_rows=ctx.settings.max_rows)
    except ToolError:  # a regeneration that writes, does not parse or fails is dropped
        second = {"sql": ""}
    after = dropped_parts(str(last.get("sql") or ""), second["sql"], ctx.db.dialect) if second["sql"] else None
    better = after is not None and len(after.tables) + len(after.filters) < len(dropped.tables) + len(dropped.filters)
    record = {"dropped": dropped.to_dict(), "feedback": feedback, "sql": second["sql"], "kept": better}
    if better:
        return {**second, "followup_check": {**record, "replaced": out["sql"]}}
    return {**out, "followup_check": record}


def _joined(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def _ask(ctx: ToolContext, schema: str, question: str, hint: str, sampling: Sampling | None = None) -> str:
    """The model's raw reply under the settings' framing (greedy unless ``sampling``)."""
    framing = sql_framing.get(ctx.settings.sql_framing)
    return framing(
        ctx.lm,
        ctx.programs,
        schema=schema,
        dialect=ctx.db.dialect,
        hint=hint,
        question=question,
        sampling=sampling,
        program=ctx.settings.sql_program,
    )


def _generate(ctx: ToolContext, schema: str, question: str, hint: str, sampling: Sampling | None = None) -> str:
    return SQL_OUTPUT[ctx.settings.sql_output](_ask(ctx, schema, question, hint, sampling), ctx.db.dialect)


@dataclass(frozen=True)
class _Batch:
    """The batched candidates call of one generate_sql, or why there was none.

    Attributes:
        replies: Its replies (None: not offered, or refused).
        refused: The engine's refusal (a prompt and budget beyond its context), if any.
        started: ``time.monotonic()`` when it started.
    """

    replies: BatchedReplies | None = None
    refused: str | None = None
    started: float = 0.0


def _batch(ctx: ToolContext, schema: str, question: str, hint: str) -> _Batch:
    """All ``candidates`` replies from ONE call, when selection is on and the LM can decode them together.

    Offered when the framing sends a plain chat exchange (:data:`CHAT_PROMPTS`) and the LM's
    engine decodes several sequences in one call (``routerlab.agents.lm.candidates``). The
    messages are the greedy call's exact ones; sequence 0 is decoded greedily, so it is the
    greedy reply, and the others are the samples.
    """
    s = ctx.settings
    prompt = CHAT_PROMPTS.get(s.sql_framing)
    if s.candidates <= 1 or prompt is None or candidate_sampler(ctx.lm) is None:
        return _Batch()
    messages = prompt(schema=schema, dialect=ctx.db.dialect, hint=hint, question=question)
    started = time.monotonic()
    try:
        replies = sample_candidates(
            ctx.lm,
            messages,
            s.candidates,
            temperature=s.candidate_temperature,
            seed=_BATCH_SEED,
            max_tokens=CHAT_MAX_TOKENS,
        )
    except LMError as exc:  # the engine refused the batch: the greedy call and one-by-one samples
        return _Batch(refused=str(exc), started=started)
    return _Batch(replies=replies, started=started)


def _select(ctx: ToolContext, schema: str, question: str, hint: str, first: dict, batch: _Batch) -> dict:
    """Execution-guided selection among ``candidates`` queries (``routerlab.agents.tools.selection``).

    With a batched call (:func:`_batch`) its sequence 0 is ``first`` and its other sequences are
    the samples. Otherwise each sample is its own call over the greedy call's prompt (llama.cpp
    reuses all of it and each costs only its own tokens). Every candidate passes the guard and the
    deterministic repairs like the greedy one; with ``candidate_repair`` one that fails on
    execution gets fix_sql's repair once before the vote.
    """
    s = ctx.settings
    if s.candidates <= 1 or not first.get("sql"):
        return first

    def run(sql: str) -> list[list]:
        return ctx.db.execute(sql, timeout_s=s.sql_timeout_s, max_rows=s.max_rows).rows

    repair = _candidate_repair(ctx) if s.candidate_repair else None
    if batch.replies is not None:
        candidates = [Candidate(first["sql"], output=first), *_sampled(ctx, batch.replies.texts[1:])]
        chosen = vote(candidates, run, repair=repair)
        extra = {"batch": _batch_record(batch.replies)}
        selection = Selection(candidates, chosen, time.monotonic() - batch.started, sampling="batched", extra=extra)
    else:

        def sample(seed: int) -> dict:
            return _repaired(ctx, _generate(ctx, schema, question, hint, Sampling(s.candidate_temperature, seed)))

        selection = select(first, sample, run, k=s.candidates, budget_s=s.selection_budget_s, repair=repair)
        if batch.refused is not None:
            selection.extra["batch_refused"] = batch.refused
    return {**selection.candidates[selection.chosen].output, "selection": selection.record()}


def _sampled(ctx: ToolContext, texts: tuple[str, ...]) -> list[Candidate]:
    """The candidates of a batch's sampled sequences (1, 2, ...), guarded and repaired like the greedy one."""
    out: list[Candidate] = []
    for seq, text in enumerate(texts, start=1):
        try:
            written = _repaired(ctx, SQL_OUTPUT[ctx.settings.sql_output](text, ctx.db.dialect))
            out.append(Candidate(written["sql"], seed=seq, output=written))
        except ToolError as exc:  # a refused or unparsable sample is dropped, as one by one
            out.append(Candidate("", seed=seq, error=f"{exc.error_class}: {exc}"))
    return out


def _batch_record(replies: BatchedReplies) -> dict:
    """What the selection record says about the batched call (its cost as first computed)."""
    return {
        "n": len(replies.texts),
        "seed": _BATCH_SEED,
        "cached": replies.cached,
        "prompt_tokens": replies.usage.cold_prompt_tokens,
        "completion_tokens": replies.usage.cold_completion_tokens,
        "seconds": round(replies.usage.cold_latency_s, 3),
    }


def _candidate_repair(ctx: ToolContext) -> Repair:
    """Corrective self-consistency's repair: fix_sql's path, one model attempt."""
    once = replace(ctx, settings=replace(ctx.settings, fix_attempts=1))

    def repair(sql: str, error: str) -> dict:
        return _fix_sql(sql, error, once)

    return repair


def _findings(ctx: ToolContext, question: str, sql: str) -> list[Finding] | None:
    """The result checks' findings on ``sql`` (None: it does not run, which is the retry's and fix_sql's case)."""
    s = ctx.settings
    try:
        result = ctx.db.execute(sql, timeout_s=s.sql_timeout_s, max_rows=s.max_rows)
    except ToolError:
        return None
    return check_result(s.result_checks, question, sql, result, ctx.db.dialect)


def _checked(ctx: ToolContext, schema: str, question: str, hint: str, out: dict) -> dict:
    """Checks of a result that runs against the question; a failed one gets ONE more call.

    The finding is fed back as the execution-feedback retry's is (after the question, the query
    left out); the new query replaces ``out`` only when it runs and fails fewer checks.
    """
    if not ctx.settings.result_checks or not out.get("sql"):
        return out
    found = _findings(ctx, question, out["sql"])
    if not found:
        return out
    acted = found
    if (out.get("retry") or {}).get("reason") == "empty":
        acted = [f for f in found if f.check != "empty"]  # the empty retry already acted on that evidence
    if not acted:
        return out
    feedback = "A first answer ran but does not fit the question:\n" + "\n".join(f.text for f in acted)
    try:
        second = _repaired(ctx, _generate(ctx, schema, question, _joined(hint, feedback)))
    except ToolError:  # a regeneration that writes or does not parse is dropped, as the retry's is
        second = {"sql": ""}
    after = _findings(ctx, question, second["sql"]) if second["sql"] else None
    better = after is not None and len(after) < len(found)
    check = {
        "findings": [f.check for f in found],
        "feedback": feedback,
        "sql": second["sql"],
        "after": None if after is None else [f.check for f in after],
        "kept": better,
    }
    return {**second, "check": check} if better else {**out, "check": check}


def _with_retry(ctx: ToolContext, schema: str, question: str, hint: str, first: dict) -> dict:
    """Execution-guided correction: one more generate_sql call when ``first`` fails or comes back empty.

    The retry sees the same schema (the prompt prefix llama.cpp already holds) and, in the hint
    field, what running the first query showed: the exact error and the tables that have a
    missing column, or for an empty result the conditions that match nothing and what would.
    An empty result with no such condition is not retried. The retry replaces ``first`` only
    when it does better: runs where ``first`` failed, returns rows where ``first`` returned none.
    """
    s = ctx.settings
    if not (s.retry_empty or s.retry_error):
        return first
    found = probe(ctx.db, first["sql"], s.sql_timeout_s)
    if not {"empty": s.retry_empty, "error": s.retry_error}.get(found.reason or "", False):
        return first
    notes = value_notes(ctx.db, first["sql"]) if found.error is None else column_notes(ctx.db, found.error)
    if found.error is None and not notes:
        return first  # an empty result nothing explains: the same prompt would bring the same query back
    feedback = feedback_text(found, notes)
    try:
        second = _repaired(ctx, _generate(ctx, schema, question, _joined(hint, feedback)))
    except ToolError:  # a retry that writes or does not parse is dropped, not reported
        second = {"sql": ""}
    after = probe(ctx.db, second["sql"], s.sql_timeout_s) if second["sql"] else Probe(error="no SQL")
    better = after.error is None and (found.error is not None or not after.empty)
    retry = {"reason": found.reason, "feedback": feedback, "sql": second["sql"], "kept": better}
    return {**second, "retry": retry} if better else {**first, "retry": retry}


@tool(refs={"failed_call_id": ("execute_sql_and_analyze_result", "generate_sql", "fix_sql")})
def fix_sql(sql: str, error: str, ctx: Ctx, failed_call_id: str | None = None) -> dict:
    """Repair a SQL query that failed, given the database's error message.

    Args:
        sql: The failing SQL query.
        error: The error message the database returned.
        failed_call_id: The tool_call_id of the call that failed, if the failure happened in this
            conversation; omit it when the user supplied the query and the error.
    """
    refused = _refusal_of(sql, ctx.db.dialect)
    if refused is not None:
        # a statement the guard refuses (a DROP a user pasted, say) is not repaired: a new
        # read-only query is written, and the output says so instead of passing it off as a fix
        out = _fix_sql(sql, error, ctx)
        note = (
            f"The input statement was refused by the guard ({refused.rule}: {refused}); "
            "it was not run or repaired. A new read-only query was written instead"
        )
        return {
            **out,
            "input_refused": {"rule": refused.rule, "reason": str(refused)},
            "answer": f"{note}: {out['sql']}",
        }
    return _fix_sql(sql, error, ctx)


def _refusal_of(sql: str, dialect: str) -> GuardViolation | None:
    """The guard's refusal of ``sql`` (None: it is a read-only statement, or no statement)."""
    try:
        check_sql(sql, dialect)
    except GuardViolation as exc:
        return None if exc.rule in ("empty", "parse_error") else exc
    return None


def _fix_sql(sql: str, error: str, ctx: ToolContext) -> dict:
    if ctx.settings.repair:
        # the cheap path first: a query that fails only on identifiers is rewritten, not re-asked
        try:
            cheap = _repaired(ctx, sql)
        except ToolError:  # not a read-only query: the LM path below reports it as before
            cheap = {}
        if cheap.get("repairs") and _runs(ctx, cheap["sql"]) is None:
            return {**cheap, "attempts": 0}
    schema = _schema_for(ctx, f"{sql} {ctx.state.get('question', '')}")
    attempts = 0
    current, current_error = sql, error
    while True:
        attempts += 1
        with lm_context(ctx.lm):
            pred = ctx.programs.fix(db_schema=schema, dialect=ctx.db.dialect, sql=current, error=current_error)
        fixed = _repaired(ctx, clean_sql(pred.fixed_sql or ""))
        if attempts >= ctx.settings.fix_attempts:
            return {**fixed, "attempts": attempts}
        failure = _runs(ctx, fixed["sql"])
        if failure is None:
            return {**fixed, "attempts": attempts}
        current, current_error = fixed["sql"], failure


def _runs(ctx: ToolContext, sql: str) -> str | None:
    """None when ``sql`` executes (first row only), else the database's exact error."""
    try:
        ctx.db.execute(sql, timeout_s=ctx.settings.sql_timeout_s, max_rows=1)
    except ToolError as exc:
        return str(exc)
    return None


def result_summary(columns: list[str], rows: list[list], row_count: int, truncated: bool) -> str:
    """The one-line summary of a query result that a turn keeps (and routers see in its history)."""
    if row_count == 0:
        return "The query returned no rows."
    head = ", ".join(f"{c}={v!r}" for c, v in zip(columns, rows[0], strict=False))
    more = " (truncated at the row cap)" if truncated else ""
    return f"{row_count} row(s){more}; columns: {', '.join(columns)}; first row: {head}."


@tool(refs={"sql_call_id": SQL_PRODUCERS}, terminal=True, executes_sql=True)
def execute_sql_and_analyze_result(sql_call_id: str, ctx: Ctx) -> dict:
    """Run the SQL produced by generate_sql or fix_sql read-only and summarise the result.

    Args:
        sql_call_id: The tool_call_id of the generate_sql or fix_sql call whose SQL to run.
    """
    produced = ctx.call_output(sql_call_id)
    if not isinstance(produced, dict) or not produced.get("sql"):
        raise ToolError(f"sql_call_id {sql_call_id!r} did not produce SQL", error_class="bad_reference")
    s = ctx.settings
    result = ctx.db.execute(produced["sql"], timeout_s=s.sql_timeout_s, max_rows=s.max_rows)
    return {
        "sql": produced["sql"],
        "columns": result.columns,
        "rows": result.rows,
        "row_count": result.row_count,
        "truncated": result.truncated,
        "summary": result_summary(result.columns, result.rows, result.row_count, result.truncated),
    }


@tool(terminal=True)
def explain_sql(sql: str, ctx: Ctx) -> dict:
    """Explain in plain language what a SQL query does. It does not run the query.

    Args:
        sql: The SQL query to explain.
    """
    schema = _schema_for(ctx, sql)
    with lm_context(ctx.lm):
        pred = ctx.programs.explain(db_schema=schema, sql=sql)
    return {"explanation": (pred.explanation or "").strip()}


@tool(terminal=True)
def chat(message: str, ctx: Ctx) -> dict:
    """Answer a message that needs no data: greetings, thanks, questions about the assistant or SQL.

    Args:
        message: The user's message.
    """
    with lm_context(ctx.lm):
        pred = ctx.programs.chat(message=message)
    return {"answer": (pred.reply or "").strip()}


@tool(interrupts=True)
def ask_human(question: str) -> dict:
    """Ask the user one clarifying question when the request is ambiguous; waits for the reply.

    Args:
        question: The clarifying question to ask.
    """
    return {"question": question}


@tool(terminal=True)
def refuse(reason: str) -> dict:
    """Decline a request that would change data or that the assistant must not do.

    Args:
        reason: Why the request is declined, in one sentence.
    """
    return {"answer": f"I can't help with that: {reason}"}
