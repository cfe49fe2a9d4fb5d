"""Deadlines that bind model calls: every call's timeout is the time its turn (or run) has left, capped.

A turn's deadline used to be checked only between graph nodes, so one model call that never
returned (a server that accepts and never answers, a model generating past its budget) outlived
every deadline. Here a call asks :func:`call_budget` how long it may take:

* the **run** deadline (``routerlab run --deadline-s``), set by the runner around each example;
* the **turn** deadline (``pipeline.timeout_s``), set by the pipeline around each turn;
* the per-call **cap** (``pipeline.call_timeout_s``), so one call cannot take a whole turn.

The smallest wins, and it is named, because what happens next depends on it: a call cut by the
run's deadline never finished its example, which is stored as ``not_run`` (error class
``run_deadline``, in no rate, rerun by ``--resume``); a call cut by the turn's deadline or the
cap is the turn's failure (error class ``timeout``).

Each kind of LM enforces the budget its own way: the embedded engine stops generating (checked
per token and, during the prompt, per batch: :mod:`routerlab.agents.lm.local`); a provider call
runs under :class:`BoundedEngine`, which stops waiting when the budget is spent and gives the
abandoned request its own request timeout so it cannot linger past the cap either.

A cut call raises :class:`CallDeadlineExceeded` and records itself in the scope, so the pipeline
ends the turn with a deadline failure even when a router or sub-agent caught the exception.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import dspy
from dspy import lm15 as L
from dspy.utils.exceptions import LMError as DSPyLMError

from routerlab.agents.errors import RouterlabError
from routerlab.agents.lm.wrapped import behind_engine

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "BoundedEngine",
    "CallBudget",
    "CallDeadlineExceeded",
    "DeadlineScope",
    "bounded_lm",
    "call_budget",
    "deadline_cut",
    "deadline_scope",
    "run_within",
    "within",
]

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT_S = 600.0
"""Cap of one model call outside any pipeline (``pipeline.call_timeout_s`` overrides it inside)."""

#: error class of a call the run's deadline cut (the example did not finish: ``not_run``)
RUN_DEADLINE_CLASS = "run_deadline"
#: error class of a call the turn's deadline or the per-call cap cut (the turn's failure)
TURN_TIMEOUT_CLASS = "timeout"


class CallDeadlineExceeded(RouterlabError, DSPyLMError):
    """A model call stopped because its deadline passed.

    Not a ``TimeoutError`` and not transient on purpose: retrying a call whose turn has no time
    left would only spend the next example's time. It is a DSPy ``LMError`` so that DSPy passes
    it through its engine boundary unchanged (it wraps any other exception as "unexpected").

    Args:
        bound: What set the deadline: ``run``, ``turn`` or ``call`` (the per-call cap).
        seconds: The budget the call had.
        where: Which LM (for the message).
    """

    default_code = "deadline"

    def __init__(self, bound: str, seconds: float, where: str = "model call") -> None:
        self.bound = bound
        self.seconds = seconds
        what = {"run": "the run's --deadline-s", "turn": "the turn's timeout_s", "call": "the per-call cap"}
        super().__init__(f"{where} stopped after {seconds:.1f} s: {what.get(bound, bound)} passed")

    @property
    def error_class(self) -> str:  # type: ignore[override]
        """``run_deadline`` when the run's deadline cut it, else ``timeout``."""
        return RUN_DEADLINE_CLASS if self.bound == "run" else TURN_TIMEOUT_CLASS

    def turn_update(self) -> dict[str, Any]:
        """The pipeline-state update that ends the turn with this deadline failure.

        ``run_deadline`` (the run's ``--deadline-s``) makes the example ``not_run``; ``timeout``
        (the turn's ``timeout_s`` or the per-call cap) is the turn's failure, as a turn that runs
        past its deadline between nodes is.
        """
        return {"error": str(self), "error_class": self.error_class}


@dataclass
class DeadlineScope:
    """One deadline (a ``time.monotonic()`` value) and the first call it cut.

    Attributes:
        at: When it passes.
        bound: ``run`` or ``turn``.
        cap_s: Per-call cap inside this scope (None: the enclosing one's).
        cut: The first call this scope's calls lost to a deadline (None while none did).
    """

    at: float
    bound: str
    cap_s: float | None = None
    cut: CallDeadlineExceeded | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


_SCOPES: ContextVar[tuple[DeadlineScope, ...]] = ContextVar("routerlab_deadline_scopes", default=())


@contextmanager
def deadline_scope(at: float | None, bound: str, *, cap_s: float | None = None) -> Iterator[DeadlineScope | None]:
    """Bind every model call made inside to ``at`` (a monotonic time; None: no deadline, only the cap).

    Scopes nest: a call gets the earliest deadline of all enclosing scopes and the innermost cap.
    """
    if at is None and cap_s is None:
        yield None
        return
    scope = DeadlineScope(at=float("inf") if at is None else at, bound=bound, cap_s=cap_s)
    with within(scope):
        yield scope


@contextmanager
def within(scope: DeadlineScope) -> Iterator[DeadlineScope]:
    """Enter an existing scope again (a turn that is resumed, or streamed one step at a time)."""
    token = _SCOPES.set((*_SCOPES.get(), scope))
    try:
        yield scope
    finally:
        _SCOPES.reset(token)


@dataclass(frozen=True)
class CallBudget:
    """How long one call may take and what limits it (``run``, ``turn`` or ``call``)."""

    seconds: float
    bound: str
    started: float

    def expired(self) -> bool:
        """Whether the budget is spent."""
        return time.monotonic() - self.started >= self.seconds

    def exceeded(self, where: str = "model call") -> CallDeadlineExceeded:
        """The exception of a call cut by this budget, recorded in every enclosing scope."""
        exc = CallDeadlineExceeded(self.bound, self.seconds, where)
        for scope in _SCOPES.get():
            with scope.lock:
                if scope.cut is None:
                    scope.cut = exc
        return exc


def call_budget(where: str = "model call") -> CallBudget:
    """The budget of a call starting now.

    Raises:
        CallDeadlineExceeded: No time is left (the call must not start).
    """
    now = time.monotonic()
    scopes = _SCOPES.get()
    cap = next((s.cap_s for s in reversed(scopes) if s.cap_s is not None), DEFAULT_CALL_TIMEOUT_S)
    seconds, bound = cap, "call"
    for scope in scopes:
        left = scope.at - now
        if left < seconds:
            seconds, bound = left, scope.bound
    budget = CallBudget(seconds=max(seconds, 0.0), bound=bound, started=now)
    if seconds <= 0:
        raise budget.exceeded(where)
    return budget


def deadline_cut() -> CallDeadlineExceeded | None:
    """The first call the innermost scope lost to a deadline (None: none, or no scope)."""
    scopes = _SCOPES.get()
    return scopes[-1].cut if scopes else None


class BoundedEngine:
    """A DSPy engine that stops waiting for a provider call when the call's budget is spent.

    The request runs on a daemon thread; the caller waits at most :func:`call_budget` seconds
    and then raises :class:`CallDeadlineExceeded`. The wrapped LM carries a request timeout of
    ``request_timeout_s`` (the per-call cap), so an abandoned request ends by itself too.

    Args:
        inner: The provider LM (with its own cache and provider retries).
    """

    def __init__(self, inner: dspy.LM) -> None:
        self.inner = inner

    def complete(self, request: L.Request) -> L.Response:
        """Answer ``request`` through the wrapped LM within the call's budget."""
        where = f"{self.inner.model} call"
        return run_within(call_budget(where), lambda: self.inner(request), where)


def run_within(budget: CallBudget, work: Callable[[], T], where: str = "model call") -> T:
    """Run ``work`` and wait for it at most ``budget.seconds``: the one deadline of a whole call.

    Whatever ``work`` does inside (a client's own retries, a reconnect) counts against the same
    budget, so a call can never take more than one budget, however its client retries.

    Raises:
        CallDeadlineExceeded: The budget was spent before ``work`` returned (it is abandoned on
            a daemon thread; its own request timeout ends it).
    """
    box: dict[str, Any] = {}

    def _work() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=_work, name="routerlab-lm-call", daemon=True)
    worker.start()
    worker.join(max(budget.seconds - (time.monotonic() - budget.started), 0.0))
    if worker.is_alive():
        raise budget.exceeded(where)
    if "error" in box:
        raise box["error"]
    return box["value"]


def bounded_lm(lm: dspy.LM, *, request_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> dspy.LM:
    """``lm`` behind a :class:`BoundedEngine`: same model, settings and callbacks.

    The wrapped copy has no callbacks (usage is counted once, by the outer LM) and keeps the
    cache and provider retries; the outer LM has no cache (the inner one answers repeats) and
    makes one attempt (a retry there would restart the clock).

    Args:
        lm: A provider ``dspy.LM`` (not a custom-engine one: those own their connection).
        request_timeout_s: Request timeout of the wrapped LM, so an abandoned request ends.
    """
    inner = lm.copy(callbacks=[], timeout=request_timeout_s)
    return behind_engine(lm, BoundedEngine(inner))
