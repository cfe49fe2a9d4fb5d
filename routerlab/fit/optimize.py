"""Compile the ``dspy`` router's program on a dataset's train split (``routerlab optimize``).

The train split is divided, stratified by intent and deterministically from the seed, into a
*fit* part the optimizer learns from and a *held-out* part it chooses among its candidates on.
Dev is never touched by a compile: :func:`score_program` scores a saved program on dev once,
after the choice, and adds the figures to its provenance. Every figure is the routing score of
``docs/metrics.md`` §9 with plain accuracy and recall per intent next to it.

On an LM that scores labels (the embedded engine) every program call of the optimizer and of the
evaluation is one forward pass after the program's cached prompt prefix
(:class:`~routerlab.routers.dspy_router.IntentPredict`); ``one_pass=False`` generates instead.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from routerlab._routing_eval.decisions import gold_turn
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.registry import component_spec
from routerlab.agents.routing import RouterEnv
from routerlab.agents.turn_history import history_text
from routerlab.benchmarks.example import Example
from routerlab.fit.objective import RoutingObjective, intent_correct, routing_score
from routerlab.fit.optimizers import optimizer as optimizer_registry
from routerlab.routers.dspy_router import RouteProgram, load_program, program_path, request_evidence, save_meta
from routerlab.routers.support.history_window import DEFAULT_WINDOW, check_window, history_window
from routerlab.routers.support.neighbours import Neighbours
from routerlab.routers.support.schema_outline import check_view, schema_view
from routerlab.routers.support.turns import without_pleasantries

if TYPE_CHECKING:
    from routerlab.agents.routing import RouterEnv
    from routerlab.agents.turn_history import Turn

__all__ = [
    "Figures",
    "OptimizeReport",
    "holdout_split",
    "new_program",
    "optimize_router",
    "report_json",
    "route_set",
    "schema_texts",
    "score_program",
    "score_set",
    "to_dspy_examples",
]


@dataclass(frozen=True)
class Figures:
    """How a program routed one set of examples.

    Attributes:
        n: Examples scored.
        score: Routing score (docs/metrics.md §9).
        accuracy: Fraction whose predicted intent was accepted.
        recall: Gold intent -> accuracy over its examples.
        seconds: Wall time of the scoring.
        uncalibrated: For a calibrated program, the same calls' decisions before its offsets
            (``{score, accuracy, recall}``, no extra call); None otherwise.
    """

    n: int
    score: float
    accuracy: float
    recall: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    uncalibrated: dict[str, Any] | None = None


@dataclass
class OptimizeReport:
    """What a compile produced (also written next to the program as ``.meta.json``).

    Attributes:
        optimizer: Registered optimizer name.
        optimizer_args: Its recorded settings (demos, candidates, trials, metric calls, seed).
        seed: Seed of the fit / held-out division and of the fit order.
        lm: The LM spec the program was compiled on (and should route with).
        one_pass: Whether program calls read intents in one pass.
        schema: What the program's ``tables`` input shows of the database (``tables``, ``columns``).
        checks: The checks whose findings the program reads as its ``evidence`` input.
        heldout_fraction: Share of each intent's train examples held out.
        safety: The clarify / refuse multiplier of the objective.
        zero_shot_heldout: The uncompiled program on the held-out part (None when skipped: it is
            the same for every compile with this seed).
        fit: The compiled program on the fit part (None when skipped).
        heldout: The compiled program on the held-out part (what the choice is made on).
        dev: The compiled program on dev, once, when :func:`score_program` was run for it.
        compile_seconds: Wall time of the optimizer's ``compile``.
        seconds: Wall time of everything (the zero-shot and compiled scorings included).
        calibration: The program's per-intent log-prior offsets (empty: uncalibrated).
        calibration_weights: The matrix of its affine calibration map (empty: offsets alone).
        optimizer_notes: What the optimizer reported about its compile (``notes``; the
            calibrated optimizer: the fit distributions' score before and after its offsets).
    """

    optimizer: str
    optimizer_args: dict[str, Any]
    seed: int
    dataset: str
    dataset_digest: str
    lm: str
    one_pass: bool
    fit_size: int
    heldout_size: int
    heldout_fraction: float
    safety: float
    zero_shot_heldout: Figures | None
    fit: Figures | None
    heldout: Figures
    compile_seconds: float
    seconds: float
    date: str
    dspy_version: str
    program_file: str
    demos: int
    dev: Figures | None = None
    schema: str = "tables"
    checks: list[str] = field(default_factory=list)
    calibration: dict[str, float] = field(default_factory=dict)
    calibration_weights: dict[str, dict[str, float]] = field(default_factory=dict)
    optimizer_notes: dict[str, Any] = field(default_factory=dict)


def to_dspy_examples(
    examples: Sequence[Example],
    tables_of: dict[str, str],
    checks: tuple[str, ...] = (),
    neighbours: Neighbours | None = None,
    context: Sequence[Example] | None = None,
    history: str = DEFAULT_WINDOW,
) -> list[dspy.Example]:
    """DSPy examples ``(tables, conversation, request, evidence) -> intent`` (``accepted`` for scoring).

    Each example is shown as the ``dspy`` router with the same ``history`` window shows its turn
    (``routerlab route --history gold``): the request without the pleasantries around it, and a
    turn of a conversation with the window's earlier turns as ``conversation``, each as the
    assistant keeps it after answering it right (:func:`~routerlab._routing_eval.decisions.gold_turn`); the
    default is the router's default window (``last_k``). A window that needs the model
    (``rewrite``) cannot build training data and is refused. Earlier turns are looked up in
    ``context`` (default: ``examples``), so a sample of a conversation's turns still sees all the
    turns before it. ``evidence`` holds the findings of ``checks`` about each request, read on its
    database as the router reads them (no such field without checks); the ``neighbours`` check
    reads the ``neighbours`` pool, in which an example is never its own neighbour.
    """
    inputs = ("tables", "conversation", "request", *(("evidence",) if checks else ()))
    env = _check_env() if checks else None
    histories = _gold_histories(examples, context if context is not None else examples)
    window = history_window.get(check_window("dspy", history))
    shown = {e.id: window(e.question, histories.get(e.id, []), None) for e in examples}
    return [
        dspy.Example(
            tables=tables_of.get(e.db_path, ""),
            conversation=history_text(shown[e.id].turns, max_turns=len(shown[e.id].turns)),
            # the router strips greetings and thanks around a request before the program reads it
            request=without_pleasantries(shown[e.id].request or e.question),
            # without checks the examples (and so the demos a program saves) have no evidence field
            **({"evidence": _evidence(env, e, checks, neighbours, histories.get(e.id, []))} if checks else {}),
            intent=e.intent,
            accepted=list(e.accepted_intents),
        ).with_inputs(*inputs)
        for e in examples
    ]


def _gold_histories(examples: Sequence[Example], context: Sequence[Example]) -> dict[str, list[Turn]]:
    """Example id -> the gold turns before it in its conversation (only for examples that have some)."""
    later = [e for e in examples if e.conversation and e.turn > 1]
    if not later:
        return {}
    wanted = {e.conversation for e in later}
    by_conversation: dict[str, list[Example]] = defaultdict(list)
    for e in context:
        if e.conversation in wanted:
            by_conversation[str(e.conversation)].append(e)
    turns: dict[str, Turn] = {}  # each earlier turn's query runs once
    out: dict[str, list[Turn]] = {}
    for e in later:
        earlier = sorted((c for c in by_conversation[str(e.conversation)] if c.turn < e.turn), key=lambda c: c.turn)
        out[e.id] = [turns.setdefault(c.id, gold_turn(c)) for c in earlier]
    return out


def _check_env() -> RouterEnv:
    """What the checks read a database through: the router's read-only opener, no tools."""
    return RouterEnv(tools=[], open_db=open_database)


def _evidence(
    env: RouterEnv | None,
    example: Example,
    checks: tuple[str, ...],
    neighbours: Neighbours | None,
    history: list[Turn] | None = None,
) -> str:
    """The checks' findings about ``example``'s request on its database (what the router adds)."""
    state = {"database": example.db_path, "question": example.question, "history": list(history or [])}
    return request_evidence(env, state, checks, neighbours)  # type: ignore[arg-type]


def holdout_split(examples: Sequence[Example], fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """Divide ``examples`` into (fit, held-out), stratified by intent, deterministic per seed.

    The unit is a conversation (all its turns on one side: a held-out turn's history must not
    be a fit turn's demo) or a single request. A unit's stratum is its rarest intent (fewest
    examples in ``examples``, ties by name), so a conversation holding a clarification is divided
    with the clarifications. Each stratum's units are shuffled with ``seed`` and ``round(fraction
    * n)`` of them are held out (at least one when the stratum has two or more units, none when it
    has one). Both parts keep the input order. With single requests only, a unit is an example
    and its stratum its intent.

    Raises:
        ConfigError: ``fraction`` is not in [0, 1).
    """
    if not 0 <= fraction < 1:
        raise ConfigError(
            f"held-out fraction {fraction} out of range",
            expected="a fraction in [0, 1)",
            found=str(fraction),
            fix="pass --heldout 0.33, say",
        )
    counts = Counter(e.intent for e in examples)
    units: dict[str, list[int]] = {}  # unit key -> example indices, in input order of first turn
    for i, e in enumerate(examples):
        units.setdefault(f"c:{e.conversation}" if e.conversation else f"e:{i}", []).append(i)
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for key, idx in units.items():
        by_stratum[min((counts[examples[i].intent], examples[i].intent) for i in idx)[1]].append(key)
    held: set[int] = set()
    for stratum in sorted(by_stratum):
        keys = list(by_stratum[stratum])
        random.Random(f"{seed}:{stratum}").shuffle(keys)
        k = round(fraction * len(keys))
        if fraction > 0 and len(keys) >= 2:
            k = min(max(k, 1), len(keys) - 1)
        for key in keys[:k]:
            held.update(units[key])
    fit = [e for i, e in enumerate(examples) if i not in held]
    return fit, [e for i, e in enumerate(examples) if i in held]


def _summary(gold: list[str], correct: list[bool], safety: float) -> dict[str, Any]:
    recall: dict[str, float] = {}
    for intent in sorted(set(gold)):
        hits = [c for g, c in zip(gold, correct, strict=True) if g == intent]
        recall[intent] = round(sum(hits) / len(hits), 4)
    n = len(gold)
    return {
        "score": round(routing_score(gold, correct, safety=safety), 4) if n else float("nan"),
        "accuracy": round(sum(correct) / n, 4) if n else float("nan"),
        "recall": recall,
    }


def _route_one(program: dspy.Module, ex: dspy.Example) -> tuple[str | None, str | None]:
    """``(intent, intent before the calibration)`` of one example; ``(None, None)`` for a failed call."""
    try:
        pred = program(**ex.inputs())
    except (AdapterParseError, ValueError, RuntimeError):
        return None, None  # a failed prediction is a wrong decision, never a crashed compile
    before = getattr(pred, "_uncalibrated", None)
    return str(getattr(pred, "intent", "")).strip(), None if before is None else str(before)


def route_set(program: dspy.Module, data: Sequence[dspy.Example], *, progress: str | None = None) -> list[str | None]:
    """The intent ``program`` decides for each example of ``data`` (None: the call failed).

    Args:
        program: The routing program.
        data: The examples, as the program reads them.
        progress: A label: with one, a progress bar on stderr counts the decisions (a set of a
            few hundred takes minutes on the embedded model).
    """
    if progress is None:
        return [_route_one(program, ex)[0] for ex in data]
    from rich.console import Console
    from rich.progress import track

    return [_route_one(program, ex)[0] for ex in track(data, description=progress, console=Console(stderr=True))]


def score_set(program: dspy.Module, data: Sequence[dspy.Example], *, safety: float = 2.0) -> Figures:
    """Route every example of ``data`` with ``program`` once; an unparsable or failed call is wrong.

    For a calibrated program scored in one pass, the figures also hold the same calls' decisions
    before the offsets (``uncalibrated``), so the offsets' effect costs no second scoring.
    """
    t0 = time.perf_counter()
    gold: list[str] = []
    correct: list[bool] = []
    raw: list[bool | None] = []
    for ex in data:
        intent, before = _route_one(program, ex)
        ok = intent is not None and intent_correct(ex, dspy.Prediction(intent=intent))
        if intent is None:
            raw.append(False)
        else:
            raw.append(None if before is None else intent_correct(ex, dspy.Prediction(intent=before)))
        gold.append(ex.intent)
        correct.append(ok)
    route = getattr(program, "route", None)
    calibrated = bool(getattr(route, "calibration", None) or getattr(route, "calibration_weights", None))
    uncalibrated = _summary(gold, [bool(r) for r in raw], safety) if calibrated and gold and None not in raw else None
    return Figures(
        n=len(gold),
        **_summary(gold, correct, safety),
        seconds=round(time.perf_counter() - t0, 1),
        uncalibrated=uncalibrated,
    )


def schema_texts(examples: Sequence[Example], schema: str = "tables") -> dict[str, str]:
    """Each database of ``examples`` as the program's ``tables`` input shows it (the router's view)."""
    view = check_view("dspy", schema)
    env = RouterEnv(tools=[], open_db=open_database)
    out = {}
    for path in {e.db_path for e in examples}:
        open_database(path)  # a database that cannot be opened fails the compile, not a silent empty view
        out[path] = schema_view(env, {"database": path}, view)
    return out


def new_program(one_pass: bool, schema: str, checks: tuple[str, ...], pool: Neighbours | None) -> RouteProgram:
    """An uncompiled program with its evidence checks and the neighbours pool they read."""
    program = RouteProgram(one_pass=one_pass, schema=schema, checks=checks)
    program.route.neighbours = pool
    return program


def optimize_router(
    dataset: Any,
    lm: Any,
    *,
    lm_spec: str,
    optimizer: str = "bootstrap",
    optimizer_args: dict[str, Any] | None = None,
    seed: int = 0,
    heldout_fraction: float = 1 / 3,
    safety: float = 2.0,
    one_pass: bool = True,
    schema: str = "tables",
    checks: tuple[str, ...] = (),
    train_limit: int | None = None,
    out: Path | None = None,
    zero_shot: bool = True,
    score_fit: bool = True,
) -> OptimizeReport:
    """Compile :class:`RouteProgram` on the fit part of train, choose on the held-out part, save it.

    Args:
        dataset: A loaded :class:`~routerlab.benchmarks.dataset.Dataset`.
        lm: The LM the program will run on (optimize on the model you route with).
        lm_spec: Its spec, recorded in the provenance.
        optimizer: A name in :data:`routerlab.fit.optimizers.optimizer`.
        optimizer_args: The optimizer's settings (its ``seed`` defaults to ``seed``).
        seed: Division of train into fit / held-out, and the order the optimizer walks fit in:
            bootstrapping keeps the first demonstrations that pass, so a split stored intent by
            intent would otherwise give demonstrations of one intent only.
        heldout_fraction: Share of each intent's train examples held out.
        safety: Clarify / refuse multiplier of the objective (docs/metrics.md §9).
        one_pass: Program calls read intents in one pass when the LM can score labels.
        schema: What the program sees of the database: ``tables`` (names) or ``columns`` (tables
            with their columns); saved in the program, so the router shows it the same view.
        checks: Deterministic checks whose findings the program reads as its ``evidence`` input
            (:data:`~routerlab.routers.dspy_router.CHECKS`); saved in the program.
        train_limit: Cap on the train examples used before the division (None: all).
        out: Program file (default ``routers/programs/dspy_router_<dataset>.json``).
        zero_shot: Also score the uncompiled program on the held-out part.
        score_fit: Also score the compiled program on the fit part.

    Raises:
        UnknownComponentError: An unknown optimizer.
        ConfigError: Bad optimizer settings, or a held-out fraction out of range.
    """
    args = dict(optimizer_args or {})
    args.setdefault("seed", seed)
    opt = optimizer_registry.build(optimizer, **args)
    recorded = dict(component_spec(opt)["args"])
    train_ex = dataset.split("train")[: train_limit or None]
    fit_ex, held_ex = holdout_split(train_ex, heldout_fraction, seed)
    random.Random(seed).shuffle(fit_ex)
    tables_of = schema_texts(train_ex, schema)
    # the neighbours check retrieves from the fit part only: held-out requests stay unseen
    pool = Neighbours([e.question for e in fit_ex], [e.intent for e in fit_ex]) if "neighbours" in checks else None
    fit = to_dspy_examples(fit_ex, tables_of, checks, pool)
    held = to_dspy_examples(held_ex, tables_of, checks, pool)
    objective = RoutingObjective.from_intents([e.intent for e in train_ex], safety=safety)
    t0 = time.perf_counter()
    with lm_context(lm), dspy.context(num_threads=1):
        zero = score_set(new_program(one_pass, schema, checks, pool), held, safety=safety) if zero_shot else None
        t1 = time.perf_counter()
        student = new_program(one_pass, schema, checks, pool)
        compiled = opt.compile(student, trainset=fit, valset=held, metric=objective, lm=lm)
        compile_seconds = time.perf_counter() - t1
        fit_fig = score_set(compiled, fit, safety=safety) if score_fit else None
        held_fig = score_set(compiled, held, safety=safety)
    path = out or program_path(dataset.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    compiled.save(str(path))
    report = OptimizeReport(
        optimizer=optimizer,
        optimizer_args=recorded,
        seed=seed,
        dataset=dataset.name,
        dataset_digest=dataset.digest(),
        lm=lm_spec,
        one_pass=one_pass,
        fit_size=len(fit),
        heldout_size=len(held),
        heldout_fraction=round(heldout_fraction, 4),
        safety=safety,
        zero_shot_heldout=zero,
        fit=fit_fig,
        heldout=held_fig,
        compile_seconds=round(compile_seconds, 1),
        seconds=round(time.perf_counter() - t0, 1),
        date=_dt.date.today().isoformat(),
        dspy_version=dspy.__version__,
        program_file=path.name,
        demos=len(compiled.route.demos),
        schema=compiled.route.schema,
        checks=list(compiled.route.checks),
        calibration=dict(compiled.route.calibration),
        calibration_weights={k: dict(row) for k, row in compiled.route.calibration_weights.items()},
        optimizer_notes=dict(getattr(opt, "notes", None) or {}),
    )
    save_meta(path, asdict(report))
    return report


def score_program(
    path: Path,
    dataset: Any,
    lm: Any,
    *,
    on: str = "dev",
    seed: int | None = None,
    heldout_fraction: float | None = None,
    safety: float | None = None,
    one_pass: bool = True,
) -> Figures:
    """Score a saved program on ``dev`` or on a part of train and add the figures to its provenance.

    Run this on dev once, for the program chosen on the held-out part. ``heldout`` and ``fit``
    rebuild the division of train from the program's recorded seed and fraction (or the ones
    given, for a program saved without them).

    Raises:
        ConfigError: ``path`` is missing, or ``on`` is neither ``dev`` nor ``heldout``.
    """
    if on not in ("dev", "heldout", "fit"):
        raise ConfigError(
            f"cannot score a program on {on!r}",
            expected="dev, heldout or fit",
            found=repr(on),
            fix="pass --on dev (once, for the chosen program), --on heldout or --on fit",
        )
    program, file = load_program(str(path), one_pass=one_pass)
    assert file is not None  # load_program raises for a missing .json path
    meta_path = file.with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    seed = seed if seed is not None else int(meta.get("seed", 0))
    fraction = heldout_fraction if heldout_fraction is not None else float(meta.get("heldout_fraction", 1 / 3))
    safety = safety if safety is not None else float(meta.get("safety", 2.0))
    if on == "dev":
        examples = dataset.split("dev")
    else:
        fit_ex, held_ex = holdout_split(dataset.split("train"), fraction, seed)
        examples = held_ex if on == "heldout" else fit_ex
    route = program.route
    data = to_dspy_examples(examples, schema_texts(examples, route.schema), route.checks, route.neighbours)
    with lm_context(lm), dspy.context(num_threads=1):
        figures = score_set(program, data, safety=safety)
    meta[on] = asdict(figures)
    if on != "dev":
        meta.update(seed=seed, heldout_fraction=round(fraction, 4))
    save_meta(file, meta)
    return figures


def report_json(report: OptimizeReport | Figures) -> str:
    """A report or figures as pretty JSON."""
    return json.dumps(asdict(report), indent=2)
