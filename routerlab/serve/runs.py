"""Runs of the pipeline in worker threads, bridged to asyncio, cancellable by their client."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from routerlab.agents.db import engine_scope
from routerlab.agents.errors import RouterlabError, RunError
from routerlab.agents.events import make_event
from routerlab.agents.graph import Pipeline
from routerlab.serve.envelope import ErrorCode, ProgressSummary, event_envelope

__all__ = ["ConversationBusyError", "Run", "RunRegistry", "stream_run"]

log = logging.getLogger(__name__)

Outcome = Literal["running", "completed", "error", "cancelled", "crashed"]


class ConversationBusyError(RunError):
    """A request named a conversation that another request is still running."""

    error_class = "conversation_busy"


@dataclass
class Run:
    """One run of the pipeline, as the server tracks it.

    Attributes:
        conversation_id: The thread id of the run.
        router: Name of the router that dispatches it.
        cancel: Set when the client went away; the worker stops at the next node boundary.
        outcome: How the run ended (``running`` until the worker is done).
        events: Events the pipeline produced and the server forwarded.
        started: Wall-clock start (``time.time()``).
        ended: Wall-clock end, once the worker is done.
        done: Set when the worker thread has finished.
    """

    conversation_id: str
    router: str
    cancel: threading.Event = field(default_factory=threading.Event)
    outcome: Outcome = "running"
    events: int = 0
    started: float = field(default_factory=time.time)
    ended: float | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def info(self) -> dict[str, Any]:
        """A JSON-able description (for ``/health`` and tests)."""
        return {
            "conversation_id": self.conversation_id,
            "router": self.router,
            "outcome": self.outcome,
            "events": self.events,
            "cancelled": self.cancel.is_set(),
            "started": self.started,
            "ended": self.ended,
        }


class RunRegistry:
    """Active runs by conversation id, plus a bounded history of finished ones.

    A conversation id is busy until its worker thread ends, even when its client left earlier,
    so two runs never share a LangGraph thread.

    Args:
        history: How many finished runs to remember.
    """

    def __init__(self, history: int = 256) -> None:
        self._lock = threading.Lock()
        self._active: dict[str, Run] = {}
        self._finished: deque[Run] = deque(maxlen=history)

    def start(self, conversation_id: str, router: str) -> Run:
        """Register a new run.

        Raises:
            ConversationBusyError: When the conversation is running already.
        """
        with self._lock:
            if conversation_id in self._active:
                age = time.time() - self._active[conversation_id].started
                raise ConversationBusyError(
                    f"conversation {conversation_id!r} is still running",
                    expected="a conversation id with no run in progress",
                    found=f"{conversation_id!r}, started {age:.1f} s ago",
                    fix="wait for that run to end, or leave conversation_id out to get a fresh one",
                    details={"field": "conversation_id"},
                )
            run = Run(conversation_id=conversation_id, router=router)
            self._active[conversation_id] = run
            return run

    def finish(self, run: Run, outcome: Outcome) -> None:
        """Record the end of ``run``."""
        with self._lock:
            run.outcome = outcome
            run.ended = time.time()
            self._active.pop(run.conversation_id, None)
            self._finished.append(run)
        run.done.set()

    def active(self) -> list[Run]:
        """Runs in progress."""
        with self._lock:
            return list(self._active.values())

    def get(self, conversation_id: str) -> Run | None:
        """The active run of a conversation, else its most recent finished run."""
        with self._lock:
            if conversation_id in self._active:
                return self._active[conversation_id]
            return next((r for r in reversed(self._finished) if r.conversation_id == conversation_id), None)


def _crash_event(exc: BaseException, node: str, conversation_id: str) -> tuple[dict[str, Any], ErrorCode]:
    """The error event of a run the pipeline could not finish itself (it raised)."""
    if isinstance(exc, RunError):
        details, code = exc.what, ErrorCode.RUN_ERROR
        extra: dict[str, Any] = {
            "error_type": exc.error_class,
            "expected": exc.expected,
            "found": exc.found,
            "fix": exc.fix,
        }
    elif isinstance(exc, RouterlabError):
        details, code, extra = str(exc), ErrorCode.RUN_ERROR, {"error_type": exc.error_class}
    else:
        details, code = f"{type(exc).__name__}: {exc}", ErrorCode.INTERNAL_ERROR
        extra = {"error_type": "internal_error"}
    # nothing in the pipeline could handle it: an internal error in seed 000's sense
    extra |= {"has_internal_error": True, "internal_error_message": details}
    return make_event("error", node, details, conversation_id, **extra), code


def _work(
    pipeline: Pipeline,
    run: Run,
    registry: RunRegistry,
    put: Callable[[tuple[str, Any]], None],
    kwargs: dict[str, Any],
    on_end: Callable[[dict[str, Any]], None] | None = None,
    scope: str = "anonymous",
) -> None:
    """Worker thread: iterate ``Pipeline.stream`` and hand each event to the event loop.

    ``on_end`` receives the final state of a run that ended (completed or error), before its
    checkpoints are dropped; a cancelled or crashed run leaves nothing behind. Every statement
    of the run goes to the database engines of ``scope`` (the request's user), never to
    another user's.
    """
    with engine_scope(scope):
        _work_in_scope(pipeline, run, registry, put, kwargs, on_end)


def _work_in_scope(
    pipeline: Pipeline,
    run: Run,
    registry: RunRegistry,
    put: Callable[[tuple[str, Any]], None],
    kwargs: dict[str, Any],
    on_end: Callable[[dict[str, Any]], None] | None,
) -> None:
    outcome: Outcome = "crashed"
    gen = pipeline.stream(conversation_id=run.conversation_id, **kwargs)
    try:
        for event in gen:
            # the graph only runs the next node when asked for the next event, so stopping here
            # stops the run at a node boundary (a model call in flight still finishes)
            if run.cancel.is_set():
                break
            run.events += 1
            put(("event", event))
            if event["type"] in ("completed", "error"):
                outcome = event["type"]
        # a client leaving after the last event does not cancel a run that already ended
        if outcome == "crashed" and run.cancel.is_set():
            outcome = "cancelled"
        if on_end is not None and outcome in ("completed", "error"):
            try:
                on_end(dict(pipeline.final_state(run.conversation_id)))
            except Exception:  # keeping the turn must never fail the run the client already has
                log.exception("run %s: could not keep its turn", run.conversation_id)
    except Exception as exc:
        log.exception("run %s crashed", run.conversation_id)
        put(("raised", exc))
    finally:
        gen.close()
        # checkpoints serve interrupt/resume within one request; drop them so a server stays flat
        with contextlib.suppress(Exception):
            pipeline.graph.checkpointer.delete_thread(run.conversation_id)
        registry.finish(run, outcome)
        put(("end", None))


async def stream_run(
    pipeline: Pipeline,
    run: Run,
    registry: RunRegistry,
    is_disconnected: Callable[[], Awaitable[bool]],
    *,
    poll_s: float = 0.25,
    routing_mode: str = "",
    echo: dict[str, Any] | None = None,
    on_end: Callable[[dict[str, Any]], None] | None = None,
    scope: str = "anonymous",
    **kwargs: Any,
) -> AsyncIterator[dict[str, Any]]:
    """Run the pipeline in a worker thread and yield each event wrapped in the envelope.

    The client is checked between events and, while a node is busy, every ``poll_s``; when it is
    gone (or the consumer stops early) the run's cancel flag is set and nothing more is yielded.

    Args:
        pipeline: The pipeline to run.
        run: The registered run (its conversation id is the thread id).
        registry: Where the run is recorded as finished.
        is_disconnected: ``Request.is_disconnected`` of the client.
        poll_s: How often to check the client while no event arrives.
        routing_mode: The routing mode the run uses (reported in every event's state summary).
        echo: Request fields every event repeats (user id, context type, ignored fields).
        on_end: Receives the final state of a run that completed or ended in error (the
            server keeps the conversation's turn with it).
        scope: The database engine scope of the run (one per user: see
            :func:`routerlab.agents.db.engine_scope`).
        **kwargs: Arguments of :meth:`Pipeline.stream` (question, database, reply, agent, hint).

    Yields:
        Envelopes of the start event (node ``start``), progress events, then one of completed
        or error.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def put(item: tuple[str, Any]) -> None:
        # the loop may be gone when an abandoned worker ends after the server stopped
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, item)

    worker = threading.Thread(
        target=_work,
        args=(pipeline, run, registry, put, kwargs, on_end, scope),
        name=f"routerlab-run-{run.conversation_id}",
    )
    worker.daemon = True
    summary = ProgressSummary(routing_mode=routing_mode)
    finished = False
    # seed 002's first message: the run started (its conversation id, before any node reports).
    # Stamped before the worker starts, so no node's event can carry an earlier timestamp.
    opening = make_event("progress", "start", "run started", run.conversation_id, status="started")
    worker.start()
    try:
        yield event_envelope(opening, summary.add(opening), echo=echo)
        while True:
            try:
                kind, item = await asyncio.wait_for(queue.get(), timeout=poll_s)
            except TimeoutError:
                if await is_disconnected():
                    return
                continue
            if kind == "end":
                finished = True
                return
            if kind == "raised":
                node = summary.execution_path[-1] if summary.execution_path else "pipeline"
                event, code = _crash_event(item, node, run.conversation_id)
                yield event_envelope(event, summary.add(event), code, echo)
                continue
            if summary.repeats_classification(item):
                summary.note(item)  # seed 002: one classify_question per turn
                continue
            yield event_envelope(item, summary.add(item), echo=echo)
            if await is_disconnected():
                return
    finally:
        if not finished:
            run.cancel.set()
