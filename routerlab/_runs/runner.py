"""The benchmark runner: replay examples through the full dispatch pipeline and score them.

One run = one (router, LM, dataset, config). Several routers given together form a comparison
(an MLflow parent run with one child per router). Results are persisted per example as they
complete, so an interrupted run resumes without duplicates (``--resume``).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

from routerlab.agents.db import engine_scope
from routerlab.agents.errors import ConfigError
from routerlab.agents.faults import FaultInjector, FaultSpec, fault_scope
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import decode_together
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.lm.deadline import deadline_scope
from routerlab.agents.lm.together import together_wanted
from routerlab.agents.registry import component_spec
from routerlab.agents.state import INTENTS
from routerlab.agents.trace import Trace, answered_by_reply
from routerlab.agents.turn_history import Turn, turn_from_trace
from routerlab.benchmarks.example import Example
from routerlab.eval.scorers import DEFAULT_SCORERS
from routerlab.eval.scoring import NOT_RUN, NOT_RUN_ERROR_CLASS, ExampleResult, Score, Scorer, scorer
from routerlab.routers import build_pipeline
from routerlab.routers import router as router_registry

__all__ = [
    "DEADLINE_ERROR_CLASS",
    "DEFAULT_SCORERS",
    "MAX_ATTEMPTS",
    "RouterRun",
    "RunConfig",
    "build_scorers",
    "conversation_units",
    "run_router",
    "score_trace",
]


#: most attempts per example (pass^k is read for k up to a few tens)
MAX_ATTEMPTS = 100

#: error class of an example the run's deadline stopped before it started (outcome ``not_run``)
DEADLINE_ERROR_CLASS = NOT_RUN_ERROR_CLASS


def _setting_error(name: str, value: Any, expected: str, option: str) -> ConfigError:
    return ConfigError(
        f"invalid run setting {name!r}",
        expected=expected,
        found=repr(value),
        fix=f"pass {option}, or {name}: in the --config file",
        details={"option": option, "field": name},
    )


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run besides the router (recorded as MLflow params).

    Attributes:
        dataset: Dataset registry name.
        dataset_args: Loader arguments (path, ...).
        split: Split replayed (``all`` for every split).
        limit: At most this many examples (a stratified subset), None for all.
        lm: LM spec (``local``, ``local:0.5b``, ``openai/...``).
        lm_api_base: API base for OpenAI-compatible servers.
        lm_cache: Use the LM response cache (``--no-cache`` turns it off: every call is computed).
        concurrency: Worker threads: a remote LM answers their calls side by side; the local model
            serialises them, or decodes their greedy calls together with
            ``ROUTERLAB_DECODE_TOGETHER=on``.
        scorers: Scorer names.
        scorer_args: Per-scorer constructor arguments.
        pipeline: Pipeline bounds and tool settings.
        attempts: Times each example runs (pass^k when > 1).
        faults: Faults injected into the LM and the databases (None: none), see ``routerlab.agents.faults``.
        deadline_s: Wall-clock budget of the whole run in seconds (None: none); examples not
            started in time are recorded as ``not_run`` (error class ``run_deadline``), in no rate.
        intents: Replay only requests of these gold intents (None: every intent); a conversation
            counts under the intent of its first turn and is kept or left out whole.

    Raises:
        ConfigError: A negative limit, fewer than one worker or attempt, a deadline that is not
            a positive number or an unknown intent (checked here, so a bad value never starts a
            run). A limit of 0 means every example, as on the command line.
    """

    dataset: str = "builtin"
    dataset_args: dict[str, Any] = field(default_factory=dict)
    split: str = "dev"
    limit: int | None = None
    lm: str = "local"
    lm_api_base: str | None = None
    lm_cache: bool = True
    concurrency: int = 1
    scorers: tuple[str, ...] = DEFAULT_SCORERS
    scorer_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    attempts: int = 1
    faults: FaultSpec | None = None
    deadline_s: float | None = None
    intents: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        def bad_int(v: Any, low: int) -> bool:
            return isinstance(v, bool) or not isinstance(v, int) or v < low

        if self.limit is not None and bad_int(self.limit, 0):
            raise _setting_error("limit", self.limit, "a non-negative integer (0: every example)", "--limit N")
        if self.limit == 0:
            object.__setattr__(self, "limit", None)
        if bad_int(self.concurrency, 1):
            raise _setting_error("concurrency", self.concurrency, "an integer >= 1", "--concurrency N")
        if bad_int(self.attempts, 1) or self.attempts > MAX_ATTEMPTS:
            # each attempt is a stored row per example: 10^9 grew to 15 GB before the kernel killed it
            raise _setting_error("attempts", self.attempts, f"an integer from 1 to {MAX_ATTEMPTS}", "--attempts N")
        d = self.deadline_s
        if d is not None and (isinstance(d, bool) or not isinstance(d, int | float) or not 0 < d < float("inf")):
            raise _setting_error("deadline_s", d, "a positive number of seconds", "--deadline-s SECONDS")
        if self.intents is not None:
            object.__setattr__(self, "intents", _checked_intents(self.intents))
        if self.faults is not None and not isinstance(self.faults, FaultSpec):
            raise _setting_error(
                "faults", self.faults, "a FaultSpec (see routerlab.agents.faults)", "--faults rate=R,seed=S"
            )
        if self.faults is not None and self.pipeline.replay:
            raise ConfigError(
                "faults and replay cannot be combined",
                expected="either --faults or --replay",
                found="both",
                fix="drop --replay: a replayed sub-agent call would skip the fault it should suffer",
                details={"field": "faults"},
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict."""
        return asdict(self)


def _checked_intents(value: Any) -> tuple[str, ...]:
    """``intents`` as a tuple of known intent names, or a ConfigError naming the bad one."""
    import difflib

    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        bad: Any = value
    else:
        bad = next((n for n in names if n not in INTENTS), None)
        if bad is None:
            return tuple(names)
    close = difflib.get_close_matches(str(bad), INTENTS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(
        "invalid run setting 'intents'",
        expected=f"a non-empty list of intents, each one of {', '.join(INTENTS)}",
        found=repr(bad),
        fix=f"{hint}list known intents under `intents:` in the --config file",
        details={"field": "intents"},
    )


def build_scorers(config: RunConfig) -> list[Scorer]:
    """Build the configured scorers through the registry (unknown names fail here, not mid-run)."""
    return [scorer.build(n, **config.scorer_args.get(n, {})) for n in config.scorers]


def score_trace(example: Example, trace: Trace, scorers: Sequence[Scorer]) -> dict[str, Score]:
    """Run every scorer; a scorer that raises yields a 0 with the exception as its reason."""
    scores: dict[str, Score] = {}
    for s in scorers:
        try:
            scores[s.name] = s.score(example, trace)
        except Exception as exc:  # a scorer bug must not lose the example
            scores[s.name] = Score(s.name, 0.0, f"scorer crashed: {type(exc).__name__}: {exc}")
    return scores


def _outcome(trace: Trace) -> str:
    # a router that raised: the pipeline ended the turn itself (has_internal_error) and named it
    # as the runner names an exception that escaped, so it stays a crash in every figure
    if (trace.error_class or "").startswith("crash:"):
        return "crash"
    if trace.error_class == "timeout":
        return "timeout"
    return "error" if trace.error else "ok"


def _clarification(example: Example) -> str | None:
    """The dataset's clarifying question of a ``clarify`` example (CoSQL keeps it in ``meta``), if any."""
    if example.intent != "clarify":
        return None
    return str(example.meta.get("clarifying_question") or "") or None


@dataclass
class RouterRun:
    """One router's run over a list of examples.

    Args:
        router_name: Registry name.
        router_args: Constructor arguments.
        lm: The resolved LM.
        config: The run config.
        scorers: Built scorers.
    """

    router_name: str
    router_args: dict[str, Any]
    lm: Any
    config: RunConfig
    scorers: Sequence[Scorer]

    def __post_init__(self) -> None:
        self.router = router_registry.build(self.router_name, **self.router_args)
        faults = self.config.faults
        #: the run's fault injector (None without ``faults``); tests read its decisions
        self.injector = FaultInjector(faults) if faults is not None else None
        self.pipeline: Pipeline = build_pipeline(
            self.router, self.lm, config=self.config.pipeline, injector=self.injector
        )

    def params(self) -> dict[str, Any]:
        """Recorded arguments of the router and pipeline."""
        return {"router": component_spec(self.router), **{"config": self.config.to_dict()}}

    def _base(self, example: Example, attempt: int) -> dict[str, Any]:
        return dict(
            conversation=example.conversation,
            turn=example.turn,
            turns=example.turns,
            example_id=example.id,
            dataset=example.dataset,
            split=example.split,
            intent=example.intent,
            difficulty=example.difficulty,
            router=self.router_name,
            lm=self.config.lm,
            attempt=attempt,
        )

    def skipped(
        self, example: Example, attempt: int, reason: str, error_class: str = DEADLINE_ERROR_CLASS
    ) -> ExampleResult:
        """The record of an example that never started: ``not_run``, unscored.

        ``error_class`` says why: the run's deadline (``run_deadline``) or a database the run
        was told to leave out (``bad_database``). It has no scores, so no rate or paired test
        counts it; ``--resume`` runs it.
        """
        trace = Trace(example_id=example.id, error=reason, error_class=error_class)
        return ExampleResult(
            **self._base(example, attempt),
            outcome=NOT_RUN,
            error_class=error_class,
            error=reason,
            trace=trace,
        )

    def run_example(self, example: Example, attempt: int = 0, history: Sequence[Turn] | None = None) -> ExampleResult:
        """Run and score one example; never raises (a crash is a scored failure).

        Args:
            example: The example.
            attempt: Its attempt index.
            history: The earlier turns of its conversation as this run answered them.
        """
        # faults are drawn per example and attempt, independent of what ran before
        with fault_scope(f"{example.id}#{attempt}"):
            return self._run_example(example, attempt, list(history or []))

    def _run_example(self, example: Example, attempt: int, history: list[Turn]) -> ExampleResult:
        base = self._base(example, attempt)
        t0 = time.perf_counter()
        try:
            with lm_context(self.pipeline.lm):
                trace = self._turn(example, attempt, history)
        except Exception as exc:
            trace = Trace(
                example_id=example.id,
                error=f"{type(exc).__name__}: {exc}",
                error_class=f"crash:{type(exc).__name__}",
                total_latency_s=time.perf_counter() - t0,
            )
            trace.events.append({"type": "error", "traceback": traceback.format_exc(limit=8)})
            scores = score_trace(example, trace, self.scorers)
            return ExampleResult(
                **base,
                outcome="crash",
                error_class=trace.error_class,
                error=trace.error,
                scores=scores,
                latency_s=trace.total_latency_s,
                trace=trace,
            )
        if trace.error_class == DEADLINE_ERROR_CLASS:
            # the run's deadline cut a model call: the example did not finish, so it is not run
            # (in no rate, rerun by --resume), as one the deadline kept from starting
            return ExampleResult(
                **base,
                outcome=NOT_RUN,
                error_class=DEADLINE_ERROR_CLASS,
                error=trace.error,
                latency_s=trace.total_latency_s,
                trace=trace,
            )
        scores = score_trace(example, trace, self.scorers)
        return ExampleResult(
            **base,
            outcome=_outcome(trace),
            error_class=trace.error_class,
            error=trace.error,
            predicted_intent=trace.intent,
            scores=scores,
            latency_s=trace.total_latency_s,
            node_latency_s=trace.node_latency_s,
            router_usage=trace.router_usage,
            subagent_usage=trace.subagent_usage,
            trace=trace,
        )

    def _turn(self, example: Example, attempt: int, history: list[Turn]) -> Trace:
        """The pipeline's trace of ``example``, with the user's reply when the turn asks back.

        A single request gets the dataset's reply within its turn. A conversation turn that asks
        back ends waiting, and the reply comes back as the user's next turn, with the turn that
        asked as the one before it: the router reads it as the answer to its question
        (``routers/support/reply.py``), as the application reads a user's reply. The example is
        scored on both turns together (:func:`~routerlab.agents.trace.answered_by_reply`); a
        reply turn that asks again is left waiting (the dataset has one reply).
        """
        common: dict[str, Any] = dict(
            example_id=example.id,
            hint=example.hint,
            # seed 004's RunnableConfig: what the run is, on the trace and in MLflow
            tags=["routerlab", self.router_name, example.dataset or "dataset"],
            metadata={"example_id": example.id, "attempt": attempt, "split": example.split},
            run_name=f"{self.router_name} {example.id}",
        )
        in_turn = example.conversation is None
        later: dict[str, Any] = {"history": history} if history else {}  # a conversation's earlier turns
        trace = self.pipeline.run(
            example.question,
            example.db_path,
            reply=(lambda _q: example.user_reply) if in_turn else None,
            oracle_intent=example.intent,
            clarification=_clarification(example),
            **common,
            **later,
        )
        asked = turn_from_trace(example.question, trace)
        if in_turn or not example.user_reply or "asked" not in asked:
            return trace
        after = self.pipeline.run(
            example.user_reply,
            example.db_path,
            # what the dataset expects after the reply: the SQL of the reading it settles
            oracle_intent="sql",
            history=[*history, asked],
            **common,
        )
        return answered_by_reply(trace, example.user_reply, after)


def run_router(
    run: RouterRun,
    examples: Iterable[Example],
    *,
    on_result: Callable[[ExampleResult], None],
    concurrency: int = 1,
    attempts: int = 1,
    stop: threading.Event | None = None,
    deadline: float | None = None,
) -> int:
    """Run ``examples`` (each ``attempts`` times), handing each result to ``on_result`` as it completes.

    Returns how many results were produced.

    ``on_result`` is called from one thread at a time (a lock serialises it), so sinks need no
    locking of their own. ``stop`` ends the run early between examples (Ctrl-C); what it leaves
    out has no result and is run by ``--resume``. ``deadline`` (a ``time.monotonic()`` value)
    is checked as each example starts: one that would start later gets a ``run_deadline``
    result instead, so nothing is dropped silently. It also binds every model call of an
    example already running: a call it cuts ends that example as ``not_run`` too.
    """
    jobs = [(u, a) for u in conversation_units(examples) for a in range(attempts)]
    lock = threading.Lock()
    done = 0

    def deliver(result: ExampleResult) -> None:
        nonlocal done
        with lock:
            on_result(result)
            done += 1

    def start(unit: list[Example], a: int, *, live: bool) -> list[ExampleResult]:
        # a conversation's turns run in order, each seeing the earlier turns as this run answered
        # them (never the gold answers); a single request is a unit of one
        results: list[ExampleResult] = []
        history: list[Turn] = []
        for e in unit:
            if deadline is not None and time.monotonic() >= deadline:
                result = run.skipped(e, a, "not started: the run's deadline had passed")
            else:
                # every model call of the example stops when the run's deadline passes
                with deadline_scope(deadline, "run"):
                    result = run.run_example(e, a, history)
                history.append(turn_from_trace(e.question, result.trace or Trace(example_id=e.id)))
            if live:
                deliver(result)
            results.append(result)
        return results

    def in_worker(unit: list[Example], a: int) -> list[ExampleResult]:
        # each worker's statements run on database engines of its own (issue 62)
        with engine_scope(f"worker:{threading.current_thread().name}"):
            return start(unit, a, live=False)

    if concurrency <= 1:
        for unit, a in jobs:
            if stop is not None and stop.is_set():
                break
            start(unit, a, live=True)
        return done
    # with ROUTERLAB_DECODE_TOGETHER=on the embedded model decodes the workers' greedy calls
    # together, one batch per pass (off by default: slower on 2 cores, see agents/lm/together.py)
    slots = concurrency if together_wanted() else 1
    with decode_together(slots), ThreadPoolExecutor(concurrency, thread_name_prefix="routerlab") as pool:
        futures = {pool.submit(in_worker, u, a): (u, a) for u, a in jobs}
        try:
            for fut in as_completed(futures):
                for result in fut.result():
                    deliver(result)
                if stop is not None and stop.is_set():
                    break
        finally:
            for f in futures:
                f.cancel()
    return done


def conversation_units(examples: Iterable[Example]) -> list[list[Example]]:
    """Examples grouped into what runs as one: a conversation's turns in turn order, else one request.

    Units keep the order in which their first example appears.
    """
    units: list[list[Example]] = []
    by_conversation: dict[str, list[Example]] = {}
    for e in examples:
        if e.conversation is None:
            units.append([e])
        elif e.conversation in by_conversation:
            by_conversation[e.conversation].append(e)
        else:
            by_conversation[e.conversation] = [e]
            units.append(by_conversation[e.conversation])
    for unit in by_conversation.values():
        unit.sort(key=lambda e: e.turn)
    return units
