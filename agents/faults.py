"""Fault injection: deterministic LM and database failures, to prove a run survives them.

``routerlab run --faults rate=0.2,seed=7[,kinds=lm_error+timeout+...]`` wraps the run's LM and
every database its tools open. Each call draws from a hash of ``(seed, site, scope, call key,
occurrence)``: the same seed gives the same faults on the same calls, whatever the order of the
examples or the number of worker threads, and a retried call (the next occurrence of the same
key) draws afresh, the way a transient provider failure may pass on the next attempt.

Where faults enter:

* **LM** (:func:`faulty_lm`): a custom DSPy engine in front of the wrapped LM, i.e. at the
  provider boundary. Exceptions are DSPy's public LM error classes (``LMRateLimitError``...),
  which DSPy passes through unchanged, so the pipeline sees what a real provider failure
  becomes; bad replies (empty text, an unparsable tool call) go through the same adapters and
  parsers as real ones. The wrapper makes one attempt per call (DSPy's own provider retries stay
  on the wrapped LM for real errors), so the pipeline's ``RetryPolicy`` is what a fault exercises.
  Responses are cached only by the wrapped LM, so a faulty reply never lands in the cache.
* **Database** (:class:`FaultyDatabase`): ``execute`` either runs a genuinely slow query that
  the real timeout interrupts, or fails the way an engine I/O error does.

Kinds are registered in :data:`lm_fault` and :data:`db_fault` (one Protocol and registry per
site). Every decision is kept in :attr:`FaultInjector.calls`, which the reliability tests read.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import dspy
from dspy import lm15 as L
from dspy.utils.exceptions import LMProviderError, LMRateLimitError, LMTimeoutError

from routerlab.agents.db import Database, QueryResult
from routerlab.agents.errors import ConfigError, SQLExecutionError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm.messages import INVALID_MARKER
from routerlab.agents.lm.wrapped import behind_engine
from routerlab.agents.registry import Registry

__all__ = [
    "DB_SITE",
    "LM_SITE",
    "DBFault",
    "FaultCall",
    "FaultInjector",
    "FaultSpec",
    "FaultyDatabase",
    "FaultyEngine",
    "FaultyPipeline",
    "InjectedDatabaseError",
    "InjectedLMError",
    "InjectedLMTimeoutError",
    "InjectedRateLimitError",
    "LMFault",
    "db_fault",
    "fault_kinds",
    "fault_scope",
    "faulty_lm",
    "lm_fault",
    "parse_fault_spec",
    "summarize_calls",
]

LM_SITE = "lm"
DB_SITE = "db"

_SCOPE: contextvars.ContextVar[str] = contextvars.ContextVar("routerlab_fault_scope", default="")


@contextmanager
def fault_scope(name: str) -> Iterator[None]:
    """Key the fault draws of calls made inside the block by ``name`` (the runner: example id).

    Scoping makes the draws of one example independent of every other example, so the same
    seed injects the same faults into an example whatever ran before it.
    """
    token = _SCOPE.set(name)
    try:
        yield
    finally:
        _SCOPE.reset(token)


# -- exceptions ----------------------------------------------------------------------------------


class InjectedLMError(LMProviderError):
    """An injected provider error that retrying does not fix (a rejected request)."""


class InjectedLMTimeoutError(LMTimeoutError):
    """An injected LM timeout (transient)."""


class InjectedRateLimitError(LMRateLimitError):
    """An injected rate-limit error (transient).

    DSPy turns a provider's rate limit (litellm's or openai's ``RateLimitError``) into
    ``LMRateLimitError`` at its engine boundary, so that is the class the pipeline meets, and the
    one injected here.
    """


class InjectedDatabaseError(SQLExecutionError):
    """An injected engine failure while a query runs (what an I/O error becomes: ``sql_error``)."""


# -- fault kinds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultCall:
    """One call seen by the injector and what was decided for it.

    Attributes:
        site: ``lm`` or ``db``.
        scope: The fault scope active during the call (example id and attempt in a run).
        key: Digest of the call's content (request, or database and SQL).
        occurrence: How many times this ``(site, scope, key)`` was seen before (0: first call).
        kind: The injected fault kind, or None when the call went through untouched.
        at: ``time.monotonic()`` of the decision.
    """

    site: str
    scope: str
    key: str
    occurrence: int
    kind: str | None
    at: float


@runtime_checkable
class LMFault(Protocol):
    """An LM fault kind: raises, or returns a reply the caller cannot use."""

    name: str
    #: whether retrying the call may succeed (the pipeline's retry policy must agree)
    transient: bool

    def inject(self, request: L.Request, call: FaultCall) -> L.Response:
        """Fail ``request`` (raise) or answer it badly."""
        ...


@runtime_checkable
class DBFault(Protocol):
    """A database fault kind, applied inside ``Database.execute``."""

    name: str
    transient: bool

    def inject(self, db: Database, sql: str, call: FaultCall, *, timeout_s: float) -> QueryResult:
        """Fail the query (raise), after running for as long as the fault says."""
        ...


lm_fault: Registry[LMFault] = Registry("LM fault")
"""Registry of LM fault kinds."""

db_fault: Registry[DBFault] = Registry("database fault")
"""Registry of database fault kinds."""


def _message(call: FaultCall) -> str:
    return f"injected {call.kind} fault (call {call.key[:8]}#{call.occurrence})"


def _reply(request: L.Request, parts: tuple[Any, ...], **extra: Any) -> L.Response:
    return L.Response(
        id=None,
        model=request.model,
        message=L.Message(role="assistant", parts=parts),
        finish_reason="stop",
        usage=L.Usage(input_tokens=0, output_tokens=0),
        **extra,
    )


@lm_fault("lm_error")
class _LMErrorFault:
    name = "lm_error"
    transient = False

    def inject(self, request: L.Request, call: FaultCall) -> L.Response:
        raise InjectedLMError(_message(call), model=request.model, status=400)


@lm_fault("timeout")
class _TimeoutFault:
    # raised at once: a timeout that has already elapsed (the tests cannot wait for real ones)
    name = "timeout"
    transient = True

    def inject(self, request: L.Request, call: FaultCall) -> L.Response:
        raise InjectedLMTimeoutError(_message(call), model=request.model)


@lm_fault("rate_limit")
class _RateLimitFault:
    name = "rate_limit"
    transient = True

    def inject(self, request: L.Request, call: FaultCall) -> L.Response:
        raise InjectedRateLimitError(_message(call), model=request.model, status=429)


@lm_fault("invalid_tool_call")
class _InvalidToolCallFault:
    """A tool call whose arguments are not JSON; without tools, a half-written call as the text.

    With tools it is reported the way the embedded engine reports output it cannot parse
    (``provider_data[INVALID_MARKER]``); without tools the text reaches the DSPy adapter as is.
    """

    name = "invalid_tool_call"
    transient = False

    def inject(self, request: L.Request, call: FaultCall) -> L.Response:
        raw = '{"name": "generate_sql", "arguments": {"question": '
        if not request.tools:
            return _reply(request, (L.TextPart(text=raw),))
        invalid = [{"id": f"call_fault_{call.key[:8]}", "name": request.tools[0].name, "args": raw}]
        invalid[0]["error"] = _message(call) + ": arguments are not valid JSON"
        return _reply(request, (L.TextPart(text=""),), provider_data={INVALID_MARKER: invalid})


@lm_fault("empty")
class _EmptyFault:
    name = "empty"
    transient = False

    def inject(self, request: L.Request, call: FaultCall) -> L.Response:
        return _reply(request, (L.TextPart(text=""),))


#: queries that run far longer than any timeout, by dialect (plain read-only SELECTs: the guard passes them)
_SLOW_SQL: Mapping[str, str] = {
    "duckdb": "SELECT sum(i % 7) FROM range(1000000000000) AS r(i)",
    "sqlite": (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000000000000) SELECT count(*) FROM c"
    ),
}


@db_fault("slow_sql")
class _SlowSQLFault:
    """Run a real runaway query with the caller's timeout: the real interrupt raises QueryTimeout."""

    name = "slow_sql"
    transient = False

    def inject(self, db: Database, sql: str, call: FaultCall, *, timeout_s: float) -> QueryResult:
        return db.execute(_SLOW_SQL[db.dialect], timeout_s=timeout_s, max_rows=1)


@db_fault("db_error")
class _DBErrorFault:
    name = "db_error"
    transient = False

    def inject(self, db: Database, sql: str, call: FaultCall, *, timeout_s: float) -> QueryResult:
        raise InjectedDatabaseError(f"IO Error: {_message(call)}: could not read block of {db.db_id}", sql)


def fault_kinds() -> dict[str, str]:
    """Every registered fault kind and its site (``lm`` or ``db``), LM kinds first."""
    return {**dict.fromkeys(lm_fault.names(), LM_SITE), **dict.fromkeys(db_fault.names(), DB_SITE)}


# -- the spec ------------------------------------------------------------------------------------


def _spec_error(option: str, problem: str, *, expected: str, found: str) -> ConfigError:
    return ConfigError(
        f"bad {option} value: {problem}",
        expected=expected,
        found=found,
        fix=f"e.g. {option} rate=0.2,seed=7,kinds=lm_error+timeout (kinds: {'+'.join(fault_kinds())})",
        details={"option": option, "field": "faults"},
    )


@dataclass(frozen=True)
class FaultSpec:
    """What to inject: a probability per call, a seed, and the kinds to draw from.

    Attributes:
        rate: Probability that one LM or database call fails, in [0, 1].
        seed: Seed of the draws.
        kinds: Fault kinds (default: every registered kind); a call draws one among the kinds of
            its site.

    Raises:
        ConfigError: An out-of-range rate, a non-integer seed, or an unknown or repeated kind.
    """

    rate: float
    seed: int = 0
    kinds: tuple[str, ...] = field(default_factory=lambda: tuple(fault_kinds()))

    def __post_init__(self) -> None:
        option = "faults"
        if isinstance(self.rate, bool) or not isinstance(self.rate, int | float) or not 0.0 <= self.rate <= 1.0:
            raise _spec_error(option, "rate", expected="a number between 0 and 1", found=repr(self.rate))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise _spec_error(option, "seed", expected="an integer", found=repr(self.seed))
        known = fault_kinds()
        kinds = tuple(self.kinds) if isinstance(self.kinds, list | tuple) else None
        if not kinds or not all(isinstance(k, str) for k in kinds):
            raise _spec_error(option, "kinds", expected="one or more fault kinds", found=repr(self.kinds))
        unknown = [k for k in kinds if k not in known]
        if unknown or len(set(kinds)) != len(kinds):
            raise _spec_error(
                option,
                "kinds",
                expected=f"distinct kinds among {', '.join(known)}",
                found=", ".join(unknown) if unknown else f"a repeated kind in {'+'.join(kinds)}",
            )
        object.__setattr__(self, "kinds", kinds)

    def to_text(self) -> str:
        """The ``--faults`` form of this spec."""
        return f"rate={self.rate:g},seed={self.seed},kinds={'+'.join(self.kinds)}"


def parse_fault_spec(text: str, *, option: str = "--faults") -> FaultSpec:
    """Parse ``rate=0.2,seed=7[,kinds=lm_error+timeout]`` into a :class:`FaultSpec`.

    Args:
        text: The option's value.
        option: The option's name, for the error message.

    Raises:
        ConfigError: Naming the option, what was expected and what was found.
    """
    fields: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in ("rate", "seed", "kinds") or not value:
            raise _spec_error(
                option, f"{item!r}", expected="comma-separated rate=..., seed=..., kinds=a+b", found=repr(text)
            )
        if key in fields:
            raise _spec_error(option, f"{key} given twice", expected=f"one {key}=", found=repr(text))
        fields[key] = value
    if "rate" not in fields:
        raise _spec_error(option, "no rate", expected="rate=<probability per call>", found=repr(text))
    try:
        rate = float(fields["rate"])
    except ValueError:
        raise _spec_error(option, "rate", expected="a number between 0 and 1", found=fields["rate"]) from None
    try:
        seed = int(fields.get("seed", "0"))
    except ValueError:
        raise _spec_error(option, "seed", expected="an integer", found=fields["seed"]) from None
    kinds = tuple(k.strip() for k in fields["kinds"].split("+")) if "kinds" in fields else tuple(fault_kinds())
    try:
        return FaultSpec(rate=rate, seed=seed, kinds=kinds)
    except ConfigError as exc:
        raise _spec_error(option, exc.what.rsplit(": ", 1)[-1], expected=exc.expected, found=exc.found) from None


# -- the injector --------------------------------------------------------------------------------


class FaultInjector:
    """Decides, deterministically, which calls fail and how; records every decision.

    Args:
        spec: What to inject.
    """

    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec
        sites = fault_kinds()
        self.lm_faults: dict[str, LMFault] = {k: lm_fault.build(k) for k in spec.kinds if sites[k] == LM_SITE}
        self.db_faults: dict[str, DBFault] = {k: db_fault.build(k) for k in spec.kinds if sites[k] == DB_SITE}
        self._seen: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()
        self.calls: list[FaultCall] = []

    def decide(self, site: str, key: str) -> FaultCall:
        """Draw for one call at ``site`` with content digest ``key``, and record it."""
        scope = _SCOPE.get()
        with self._lock:
            occurrence = self._seen.get((site, scope, key), 0)
            self._seen[(site, scope, key)] = occurrence + 1
        kinds = sorted(self.lm_faults if site == LM_SITE else self.db_faults)
        h = hashlib.sha256(f"{self.spec.seed}\0{site}\0{scope}\0{key}\0{occurrence}".encode()).digest()
        draw = int.from_bytes(h[:8], "big") / 2**64
        kind = kinds[int.from_bytes(h[8:16], "big") % len(kinds)] if kinds and draw < self.spec.rate else None
        call = FaultCall(site, scope, key, occurrence, kind, time.monotonic())
        with self._lock:
            self.calls.append(call)
        return call

    def injected(self) -> list[FaultCall]:
        """The calls that got a fault, in decision order."""
        with self._lock:
            return [c for c in self.calls if c.kind is not None]

    def transient(self, kind: str) -> bool:
        """Whether fault ``kind`` is declared transient."""
        fault = self.lm_faults.get(kind) or self.db_faults.get(kind)
        return bool(fault and fault.transient)


def _request_key(request: L.Request) -> str:
    tools = tuple(t.name for t in request.tools)
    text = repr((request.system, request.messages, tools))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- LM ------------------------------------------------------------------------------------------


class FaultyEngine:
    """A DSPy engine that injects faults in front of a real LM (which answers the other calls).

    Args:
        inner: The wrapped LM; it gets the request itself (``lm(Request)``), with its own cache
            and provider retries.
        injector: Decides which calls fail.
    """

    def __init__(self, inner: dspy.LM, injector: FaultInjector) -> None:
        self.inner = inner
        self.injector = injector

    def complete(self, request: L.Request) -> L.Response:
        """Answer ``request`` through the wrapped LM, unless the draw says fail."""
        call = self.injector.decide(LM_SITE, _request_key(request))
        if call.kind is None:
            return self.inner(request)
        return self.injector.lm_faults[call.kind].inject(request, call)


def faulty_lm(lm: dspy.LM, injector: FaultInjector) -> dspy.LM:
    """``lm`` behind a :class:`FaultyEngine`: same model string, settings and callbacks.

    The wrapped copy has no callbacks (usage is counted once, by the outer LM); the outer LM has
    no cache (a faulty reply must never be cached) and makes one attempt per call.

    Args:
        lm: Any ``dspy.LM`` (embedded, LiteLLM provider, scripted).
        injector: Decides which calls fail.
    """
    inner = lm.copy(callbacks=[])
    return behind_engine(lm, FaultyEngine(inner, injector))


# -- database ------------------------------------------------------------------------------------


class FaultyDatabase:
    """A :class:`~routerlab.agents.db.Database` whose ``execute`` may fail; everything else is the real one.

    Args:
        db: The real database.
        injector: Decides which queries fail.
    """

    def __init__(self, db: Database, injector: FaultInjector) -> None:
        self._db = db
        self._injector = injector

    def __getattr__(self, name: str) -> Any:
        # introspection (tables, schema_text, dialect, path...) is the real database's
        return getattr(self._db, name)

    def __repr__(self) -> str:
        return f"FaultyDatabase({self._db!r})"

    def execute(
        self, sql: str, *, timeout_s: float = 10.0, max_rows: int = 1000, max_cell_chars: int = 2000
    ) -> QueryResult:
        """:meth:`Database.execute`, unless the draw says fail (see :data:`db_fault`)."""
        key = hashlib.sha256(f"{self._db.path}\0{sql}".encode()).hexdigest()[:16]
        call = self._injector.decide(DB_SITE, key)
        if call.kind is None:
            return self._db.execute(sql, timeout_s=timeout_s, max_rows=max_rows, max_cell_chars=max_cell_chars)
        return self._injector.db_faults[call.kind].inject(self._db, sql, call, timeout_s=timeout_s)


class FaultyPipeline(Pipeline):
    """The dispatch pipeline with its LM and databases behind one :class:`FaultInjector`.

    Args:
        router: The router.
        lm: The real LM (None for LM-free pipelines).
        injector: Decides which calls fail.
        **kwargs: As :class:`~routerlab.agents.graph.Pipeline` (tools, config, programs).
    """

    def __init__(self, router: Any, lm: Any, *, injector: FaultInjector, **kwargs: Any) -> None:
        self.injector = injector
        self._faulty_dbs: dict[str, FaultyDatabase] = {}
        super().__init__(router, None if lm is None else faulty_lm(lm, injector), **kwargs)

    def database(self, path: str) -> Database:
        """The read-only database at ``path``, behind the injector."""
        db = super().database(path)
        with self._db_lock:
            wrapped = self._faulty_dbs.setdefault(path, FaultyDatabase(db, self.injector))
        return wrapped  # type: ignore[return-value]


def summarize_calls(calls: Sequence[FaultCall]) -> dict[str, int]:
    """Counts of injected faults by kind (for reports)."""
    out: dict[str, int] = {}
    for c in calls:
        if c.kind is not None:
            out[c.kind] = out.get(c.kind, 0) + 1
    return out
