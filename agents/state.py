"""The shared state every router reads and every sub-agent writes (LangGraph-style, with reducers).

``PipelineState`` is a ``TypedDict`` with reducers, so LangGraph merges node updates:

* ``messages`` uses LangGraph's ``add_messages``;
* ``tool_calls`` maps ``tool_call_id -> ToolCallRecord`` and merges with :func:`merge_records`
  (one ToolCallInfo per call id, with parent links, status and timings);
* ``events`` and ``path`` append;
* ``selected_tool_ids`` merges without duplicates (:func:`add_new`, seed 001).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from typing import Annotated, Any, Literal, TypedDict, TypeGuard, TypeVar, get_args

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from routerlab.agents.turn_history import PendingQuestion, pending_question

__all__ = [
    "INTENTS",
    "Intent",
    "PipelineState",
    "ToolCallRecord",
    "ToolStatus",
    "add_new",
    "append_list",
    "initial_state",
    "is_intent",
    "merge_records",
    "sum_dict",
]

Intent = Literal["sql", "explain", "fix", "chat", "clarify", "refuse", "unanswerable"]
INTENTS: tuple[Intent, ...] = get_args(Intent)


def is_intent(value: object) -> TypeGuard[Intent]:
    """True for one of :data:`INTENTS` (a label read from data or an LM's reply is then an :data:`Intent`)."""
    return value in INTENTS


ToolStatus = Literal["pending", "success", "error"]

H = TypeVar("H", bound=Hashable)


class ToolCallRecord(TypedDict, total=False):
    """One tool call, from the router's request to the tool's result.

    Keys:
        id: The tool_call_id (also the key in ``PipelineState.tool_calls``).
        name: Tool name.
        args: Arguments as the router produced them (injected parameters excluded).
        output: The tool's result payload (JSON-able) once it ran.
        parent: Id of the call this call cites (generate_sql -> data_discovery...), or None.
        status: ``pending`` until it ran, then ``success`` or ``error``.
        error_class: Stable error class when ``status == "error"``.
        step: Order in which the call was requested (0-based).
        started / ended: ``time.time()`` stamps around the tool's execution.
        replayed: The outcome was replayed from an earlier run (``replay``), not computed.
        error_detail: What the failed call was about (its SQL, the rule it broke).
        structured_response: The output validated against the tool's response format.
    """

    id: str
    name: str
    args: dict[str, Any]
    output: Any
    parent: str | None
    status: ToolStatus
    error_class: str | None
    step: int
    started: float
    ended: float
    replayed: bool
    error_detail: dict[str, Any]
    structured_response: Any


def merge_records(
    left: Mapping[str, ToolCallRecord] | None, right: Mapping[str, ToolCallRecord] | None
) -> dict[str, ToolCallRecord]:
    """Reducer for ``tool_calls``: union by id; a later update refines an existing record.

    Fields in ``right`` overwrite those in ``left`` for the same id, other fields are kept, so
    dispatch can write the request and the tool node later writes output and status.
    """
    merged: dict[str, ToolCallRecord] = {k: dict(v) for k, v in (left or {}).items()}  # type: ignore[misc]
    for call_id, record in (right or {}).items():
        merged[call_id] = {**merged.get(call_id, {}), **record}
    return merged


def add_new(left: Sequence[H] | None, right: Sequence[H] | None) -> list[H]:
    """``left`` followed by the items of ``right`` not seen yet (seed 001's ``selected_tool_ids`` reducer).

    Order is first-seen and no item appears twice, even if ``right`` repeats one.
    """
    out = list(dict.fromkeys(left or []))
    seen = set(out)
    for item in right or []:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def append_list(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer that appends (used for events and the execution path)."""
    return [*(left or []), *(right or [])]


class PipelineState(TypedDict, total=False):
    """State of one conversation turn through the dispatch graph.

    Keys:
        messages: Conversation (Human/AI/Tool messages) merged with ``add_messages``.
        question: The user's request as asked.
        database: Path of the database file the turn may query.
        hint: Extra evidence for the question (BIRD's ``evidence``), may be empty.
        agent: An explicit agent request ("fix_sql", ...) that bypasses the router.
        route: The latest route decision summary (strategy, intent, confidence, method).
        tool_calls: Records keyed by tool_call_id.
        sql: The current SQL (latest generated or fixed statement).
        rows: Result rows of the latest execution (capped).
        columns: Column names of ``rows``.
        row_count: Rows the latest execution returned (before the cap of ``rows``).
        summary: The latest execution's one-line result summary.
        error: The error message that ended the turn, if any.
        error_class: Stable class of that error.
        error_detail: What the error is about: ``sql`` (the offending statement) and ``rule``
            (the guard rule that stopped it), when known.
        ask_human: The clarifying question asked of the user, if any.
        user_reply: The user's reply after a clarification.
        answer: The final answer text.
        remaining_steps: Router decisions still allowed this turn.
        deadline: ``time.time()`` after which the turn ends with a timeout.
        has_internal_error / internal_error_message: Seed 000's internal error: a router whose
            own call raised, a sub-agent that crashed, or a tool error that ended the turn (one
            no router may repair, or one the router gave up on); the turn ends with an error answer.
        path: Execution path (node names in order).
        events: Progress events emitted so far.
        router_usage: Per-decision cost of the router itself (LM calls, tokens, latency).
        selected_tool_ids: Tools a retrieving router selected this turn, merged without
            duplicates in first-seen order (:func:`add_new`, seed 001).
        subagent_usage: Per-call LM cost of the sub-agents.
        node_latency: Seconds spent per node (summed over visits).
        executed: True once any SQL ran against the database.
        oracle_intent: The gold intent; set by the benchmark runner, read only by the ``oracle``
            baseline router.
        clarification: The dataset's clarifying question of a ``clarify`` turn (set by the
            benchmark runner from the example's ``meta``): the question the scripted reply
            answers, so it is the one asked and the one SQL generation reads with the reply.
        conversation_id: The thread id of the turn.
        turns: Graph runs the turn took (2 when a clarifying question was answered).
        history: Earlier turns of the conversation, oldest first
            (:class:`routerlab.agents.turn_history.Turn`); empty for a first request.
        pending_question: The question the conversation's last turn left for the user
            (:class:`routerlab.agents.turn_history.PendingQuestion`: the request it was about, the
            question asked, the readings it offered), or None; set from ``history`` by
            :func:`initial_state`. This turn is read as its answer: routers continue the request
            (``routers/support/reply.py``) and SQL generation reads the exchange with the reply.
        store: The conversation's store (seed 004's ``InjectedStore``,
            :class:`routerlab.agents.tools.store.MemoryStore` snapshot); tools write it.
        structured_response: The latest structured response of a tool with a response format
            (seed 004), as JSON.
        run_config: Seed 004's ``RunnableConfig`` fields of the run: ``tags``, ``metadata``,
            ``run_name``.
        confirmation: The question of a tool that asked the user to confirm before going on
            (an output with ``needs_confirmation``, seed 000); the turn ends with it.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    database: str
    hint: str
    agent: str | None
    route: dict[str, Any]
    tool_calls: Annotated[dict[str, ToolCallRecord], merge_records]
    sql: str | None
    rows: list[list[Any]]
    columns: list[str]
    row_count: int
    summary: str | None
    error: str | None
    error_class: str | None
    error_detail: dict[str, Any]
    ask_human: str | None
    user_reply: str | None
    answer: str | None
    remaining_steps: int
    deadline: float
    has_internal_error: bool
    internal_error_message: str | None
    path: Annotated[list[str], append_list]
    events: Annotated[list[dict[str, Any]], append_list]
    router_usage: Annotated[list[dict[str, Any]], append_list]
    selected_tool_ids: Annotated[list[str], add_new]
    subagent_usage: Annotated[list[dict[str, Any]], append_list]
    node_latency: Annotated[dict[str, float], sum_dict]
    executed: bool
    oracle_intent: str | None
    clarification: str | None
    conversation_id: str
    turns: int
    history: list[dict[str, Any]]
    pending_question: PendingQuestion | None
    store: dict[str, dict[str, Any]]
    structured_response: dict[str, Any] | None
    run_config: dict[str, Any]
    confirmation: str | None


def sum_dict(left: Mapping[str, float] | None, right: Mapping[str, float] | None) -> dict[str, float]:
    """Reducer adding per-key values (node latencies accumulate over visits)."""
    out = dict(left or {})
    for k, v in (right or {}).items():
        out[k] = out.get(k, 0.0) + v
    return out


def initial_state(
    question: str,
    database: str,
    *,
    hint: str = "",
    agent: str | None = None,
    max_steps: int = 8,
    timeout_s: float = 120.0,
    oracle_intent: str | None = None,
    history: list[dict[str, Any]] | None = None,
    clarification: str | None = None,
) -> PipelineState:
    """Build the input state for one turn.

    Args:
        question: The user's request.
        database: Path to a DuckDB or SQLite file.
        hint: Optional evidence passed to SQL generation.
        agent: Optional explicit agent (tool) name that bypasses the router.
        max_steps: Router decisions allowed before the turn stops.
        timeout_s: Wall-clock budget of the turn.
        oracle_intent: Gold intent for the ``oracle`` baseline (benchmarks only).
        history: Earlier turns of the conversation, oldest first.
        clarification: The dataset's clarifying question of a ``clarify`` turn (benchmarks only).
    """
    from langchain_core.messages import HumanMessage

    return PipelineState(
        messages=[HumanMessage(content=question)],
        question=question,
        database=database,
        hint=hint,
        agent=agent,
        route={},
        tool_calls={},
        sql=None,
        rows=[],
        columns=[],
        error=None,
        error_class=None,
        ask_human=None,
        user_reply=None,
        answer=None,
        remaining_steps=max_steps,
        deadline=time.time() + timeout_s,
        has_internal_error=False,
        internal_error_message=None,
        path=[],
        events=[],
        router_usage=[],
        selected_tool_ids=[],
        subagent_usage=[],
        node_latency={},
        executed=False,
        oracle_intent=oracle_intent,
        clarification=clarification,
        history=list(history or []),
        pending_question=pending_question(list(history or [])),  # type: ignore[arg-type]
    )
