"""Choose the ``dspy`` router's default program on real data, by a rule fixed before the search.

What ``scripts/choose_dspy_program.py`` runs (the plan, its rule and its budget are written in
docs/results/2026-11-26-dspy-real-data.md before any search). A *choice file* (YAML, e.g.
``docs/configs/dspy_real_choice.yaml``) names:

* ``blend``: a blend file (:mod:`routerlab.benchmarks.loaders.blend`): its tune part (split
  ``train``) is all the search reads; its report part (split ``dev``) is routed once, at the end.
* ``selection``: how the tune part is divided into *fit* (what candidates learn from) and
  *selection* (what the rule compares programs on): per source, :func:`~routerlab.fit.optimize.holdout_split`
  with ``fraction`` and ``seed`` (a conversation stays whole; on the built-in train split this is
  exactly the default program's own fit / held-out division, so none of its demos or calibration
  examples is a selection example), then at most ``fit_cap[source]`` / ``selection_cap[source]``
  examples of each source (0: all), drawn per intent in proportion, in an order hashed from the
  seed and the id (:func:`capped`).
* ``default``: the committed program to beat (``builtin``), and ``target``, the name a winner is
  written under (``routers/programs/dspy_router_<target>.json``; ``builtin`` replaces the default).
* ``candidates``: each an optimizer with its settings and the program's ``schema`` and ``checks``.
* ``rule``: :class:`ReplacementRule`.

Every program sees each example as the router shows it (history of gold earlier turns, request
without pleasantries: :func:`~routerlab.fit.optimize.to_dspy_examples`).
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import math
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

import routerlab.benchmarks.loaders  # noqa: F401  (registers blend and the sources' loaders)
from routerlab._routing_eval.decisions import first_decisions, summary_table
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.adapter import lm_context
from routerlab.benchmarks.dataset import dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.selection import schedule
from routerlab.eval.robustness import diversion
from routerlab.eval.stats import paired_cluster_bootstrap_diff
from routerlab.fit.objective import RoutingObjective, intent_weights, routing_score
from routerlab.fit.optimize import holdout_split, new_program, route_set, schema_texts, to_dspy_examples
from routerlab.fit.optimizers import optimizer
from routerlab.routers.dspy_router import check_checks, load_program, program_path, save_meta
from routerlab.routers.support.neighbours import Neighbours
from routerlab.routers.support.schema_outline import check_view

__all__ = [
    "Candidate",
    "ChoiceConfig",
    "Decision",
    "ReplacementRule",
    "SelectionTable",
    "capped",
    "decide",
    "load_choice_config",
    "run_choice",
]


@dataclass(frozen=True)
class Candidate:
    """One program to compile: an optimizer, its settings, and what the program reads.

    Attributes:
        name: The candidate's name (its files are ``<work dir>/candidates/<name>.json``).
        optimizer: A name in :data:`routerlab.fit.optimizers.optimizer`.
        args: The optimizer's settings (its ``seed`` defaults to the selection seed).
        schema: The program's ``tables`` view (``tables`` or ``columns``).
        checks: Checks whose findings the program reads (:data:`~routerlab.routers.dspy_router.CHECKS`).
    """

    name: str
    optimizer: str
    args: dict[str, Any] = field(default_factory=dict)
    schema: str = "tables"
    checks: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplacementRule:
    """When a candidate replaces the default program (fixed before the search).

    A candidate is *eligible* when it sends at most ``max_diversion`` of the selection set's data
    questions away from SQL (:func:`~routerlab.eval.robustness.diversion`). The eligible candidate
    with the highest selection routing score (ties: the first listed) replaces the default when
    the paired bootstrap interval of its score minus the default's, resampling conversations
    whole, lies above 0. The interval's level is ``confidence`` shared over the candidates
    (Bonferroni: ``1 - (1 - confidence) / k`` for ``k`` candidates), because the best of several
    is compared on the same set it was picked on. Otherwise the default is kept.

    Attributes:
        confidence: Family-wise level of the interval.
        max_diversion: Highest share of data questions sent away from SQL.
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.
    """

    confidence: float = 0.95
    max_diversion: float = 0.05
    resamples: int = 2000
    seed: int = 0


@dataclass(frozen=True)
class SelectionTable:
    """The selection set and each program's decisions on it (what :func:`decide` reads).

    Attributes:
        gold: Each example's gold intent.
        accepted: Each example's accepted intents.
        clusters: Each example's conversation (or its own id): the bootstrap's unit.
        decisions: Program name -> the intent it decided per example (None: a failed call).
    """

    gold: list[str]
    accepted: list[list[str]]
    clusters: list[str]
    decisions: dict[str, list[str | None]]


@dataclass(frozen=True)
class Decision:
    """What the rule decided.

    Attributes:
        outcome: ``replace`` or ``keep``.
        chosen: The candidate that replaces the default (None: kept).
        tested: The eligible candidate with the best selection score (None: none eligible).
        reason: One sentence saying why.
        figures: Program -> ``{score, accuracy, diverted, n}`` on the selection set.
        difference: ``{mean, low, high, p, level}`` of the tested candidate's score minus the default's.
        rule: The rule's settings.
    """

    outcome: str
    chosen: str | None
    tested: str | None
    reason: str
    figures: dict[str, dict[str, float]]
    difference: dict[str, float]
    rule: dict[str, Any]


def _correct(table: SelectionTable, name: str) -> list[bool]:
    return [p is not None and p in a for p, a in zip(table.decisions[name], table.accepted, strict=True)]


def _contributions(gold: Sequence[str], correct: Sequence[bool], safety: float) -> list[float]:
    """Per-example terms whose mean is :func:`routing_score` (weights from ``gold``, docs/metrics.md §9)."""
    weight = intent_weights(gold, safety=safety)
    return [weight[g] * float(c) for g, c in zip(gold, correct, strict=True)]


def _figures(table: SelectionTable, name: str, safety: float) -> dict[str, float]:
    correct = _correct(table, name)
    away = diversion(zip(table.gold, table.decisions[name], correct, strict=True))
    return {
        "n": float(len(correct)),
        "score": round(routing_score(table.gold, correct, safety=safety), 4),
        "accuracy": round(sum(correct) / len(correct), 4) if correct else math.nan,
        "diverted": away.share,
        "diverted_n": float(away.diverted),
    }


def decide(
    table: SelectionTable, default: str, candidates: Sequence[str], rule: ReplacementRule, *, safety: float
) -> Decision:
    """Apply ``rule`` to the default's and the candidates' decisions on the selection set.

    Args:
        table: The selection set's gold intents and every program's decisions.
        default: The default program's name in ``table.decisions``.
        candidates: The candidates' names, in the order they were listed.
        rule: The replacement rule.
        safety: The routing score's clarify / refuse multiplier.

    Raises:
        ConfigError: A program with no decisions in ``table``, or no candidate.
    """
    missing = [n for n in (default, *candidates) if n not in table.decisions]
    if missing or not candidates:
        raise ConfigError(
            "the rule needs the default's and every candidate's decisions",
            expected="decisions for " + ", ".join([default, *candidates]),
            found="missing: " + (", ".join(missing) if missing else "no candidate"),
            fix="score every program on the selection set first",
        )
    figures = {n: _figures(table, n, safety) for n in (default, *candidates)}
    settings = asdict(rule)
    eligible = [c for c in candidates if not figures[c]["diverted"] > rule.max_diversion]  # NaN: no data question
    if not eligible:
        reason = f"no candidate sends at most {rule.max_diversion:.0%} of data questions away from SQL"
        return Decision("keep", None, None, reason, figures, {}, settings)
    best = max(eligible, key=lambda c: (figures[c]["score"], -candidates.index(c)))
    level = 1 - (1 - rule.confidence) / len(candidates)
    base = _contributions(table.gold, _correct(table, default), safety)
    mine = _contributions(table.gold, _correct(table, best), safety)
    mean, low, high, p = paired_cluster_bootstrap_diff(
        base, mine, table.clusters, n_resamples=rule.resamples, seed=rule.seed, confidence=level
    )
    difference = {"mean": round(mean, 4), "low": round(low, 4), "high": round(high, 4), "p": p, "level": level}
    if low > 0:
        interval = f"its {level:.3f} paired interval [{low:+.3f}, {high:+.3f}] above 0"
        reason = f"{best} beats the default by {mean:+.3f}, {interval}"
        return Decision("replace", best, best, reason, figures, difference, settings)
    interval = f"interval [{low:+.3f}, {high:+.3f}] not above 0"
    reason = f"{best} (the best eligible) differs from the default by {mean:+.3f}, {interval}"
    return Decision("keep", None, best, reason, figures, difference, settings)


def capped(examples: Sequence[Example], n: int, seed: int) -> list[Example]:
    """At most ``n`` of ``examples`` (0: all), each intent in proportion, in input order.

    Each intent gets ``round(n * share)`` (at least one while ``n`` allows), the largest
    remainders first when the rounding overshoots; within an intent, examples are taken in the
    order of ``sha256(f"{seed}:{id}")``, so the draw does not depend on the other examples.
    """
    if not n or n >= len(examples):
        return list(examples)
    by_intent: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by_intent[e.intent].append(e)
    quota = {k: max(1, round(n * len(v) / len(examples))) for k, v in by_intent.items()}
    while sum(quota.values()) > n:  # the floor of one per intent may overshoot: trim the largest
        top = max(quota, key=lambda k: (quota[k], k))
        quota[top] -= 1
    keep: set[str] = set()
    for k, pool in by_intent.items():
        ordered = sorted(pool, key=lambda e: hashlib.sha256(f"{seed}:{e.id}".encode()).hexdigest())
        keep.update(e.id for e in ordered[: quota[k]])
    return [e for e in examples if e.id in keep]


@dataclass(frozen=True)
class ChoiceConfig:
    """A choice file, validated (layout in the module docstring)."""

    blend: str
    seed: int
    fraction: float
    fit_cap: dict[str, int]
    selection_cap: dict[str, int]
    default: str
    target: str
    safety: float
    candidates: tuple[Candidate, ...]
    rule: ReplacementRule
    file: str = ""


def _bad(file: str, field_name: str, problem: str, *, expected: str, found: Any, fix: str) -> ConfigError:
    return ConfigError(
        f"{file}: {field_name}: {problem}",
        expected=expected,
        found=repr(found)[:200],
        fix=fix,
        details={"file": file, "field": field_name},
    )


def load_choice_config(path: str | Path) -> ChoiceConfig:
    """Read and check a choice file; optimizers and checks are validated before any model loads.

    Raises:
        ConfigError: A missing file, an unknown key, optimizer, check or schema view, bad settings.
    """
    file = Path(path)
    if not file.is_file():
        raise ConfigError(
            f"choice file not found: {file}",
            expected="a YAML choice file",
            found="no such file",
            fix="pass --config docs/configs/dspy_real_choice.yaml",
            details={"file": str(file)},
        )
    raw = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    name = str(file)
    keys = {"blend", "selection", "default", "target", "safety", "candidates", "rule"}
    if not isinstance(raw, dict) or set(raw) - keys:
        raise _bad(
            name, "-", "unknown keys", expected=", ".join(sorted(keys)), found=raw, fix="see the module docstring"
        )
    sel = raw.get("selection") or {}
    caps = {k: dict(sel.get(k) or {}) for k in ("fit_cap", "selection_cap")}
    fraction = float(sel.get("fraction", 1 / 3))
    if not 0 < fraction < 1:
        raise _bad(
            name, "selection.fraction", "out of range", expected="a fraction in (0, 1)", found=fraction, fix="1/3"
        )
    rule_raw = raw.get("rule") or {}
    unknown_rule = set(rule_raw) - set(ReplacementRule.__dataclass_fields__)
    if unknown_rule:
        raise _bad(
            name,
            "rule",
            "unknown keys",
            expected="confidence, max_diversion, resamples, seed",
            found=sorted(unknown_rule),
            fix="remove them",
        )
    rule = ReplacementRule(**rule_raw)
    if not 0 < rule.confidence < 1 or not 0 <= rule.max_diversion <= 1:
        raise _bad(
            name,
            "rule",
            "out of range",
            expected="0 < confidence < 1, 0 <= max_diversion <= 1",
            found=rule_raw,
            fix="e.g. confidence: 0.95, max_diversion: 0.05",
        )
    seed = int(sel.get("seed", 0))
    candidates: list[Candidate] = []
    for i, c in enumerate(raw.get("candidates") or []):
        label = f"candidates[{i}]"
        if not isinstance(c, dict) or not c.get("name") or not c.get("optimizer"):
            raise _bad(
                name,
                label,
                "needs a name and an optimizer",
                expected="{name, optimizer, args, schema, checks}",
                found=c,
                fix="add them",
            )
        if c["name"] in {x.name for x in candidates}:
            raise _bad(name, label, "repeated name", expected="a unique name", found=c["name"], fix="rename it")
        cand = Candidate(
            str(c["name"]),
            str(c["optimizer"]),
            dict(c.get("args") or {}),
            str(c.get("schema", "tables")),
            check_checks(c.get("checks") or ()),
        )
        optimizer.build(cand.optimizer, **{"seed": seed, **cand.args})  # an unknown optimizer or setting fails here
        check_view("dspy", cand.schema)
        candidates.append(cand)
    if not candidates:
        raise _bad(
            name,
            "candidates",
            "no candidate",
            expected="at least one candidate",
            found=[],
            fix="list the candidates to try",
        )
    return ChoiceConfig(
        blend=str(raw.get("blend") or ""),
        seed=seed,
        fraction=fraction,
        fit_cap={str(k): int(v) for k, v in caps["fit_cap"].items()},
        selection_cap={str(k): int(v) for k, v in caps["selection_cap"].items()},
        default=str(raw.get("default", "builtin")),
        target=str(raw.get("target", "builtin")),
        safety=float(raw.get("safety", 2.0)),
        candidates=tuple(candidates),
        rule=rule,
        file=name,
    )


def divide(tune: Sequence[Example], cfg: ChoiceConfig) -> tuple[list[Example], list[Example]]:
    """``(fit, selection)`` of the tune part: per source, held out then capped (module docstring)."""
    by_source: dict[str, list[Example]] = defaultdict(list)
    for e in tune:
        by_source[e.dataset].append(e)
    fit: list[Example] = []
    selection: list[Example] = []
    for source, examples in by_source.items():
        f, s = holdout_split(examples, cfg.fraction, cfg.seed)
        fit.extend(capped(f, cfg.fit_cap.get(source, 0), cfg.seed))
        selection.extend(capped(s, cfg.selection_cap.get(source, 0), cfg.seed))
    return fit, selection


def _inputs(program: Any, examples: Sequence[Example], context: Sequence[Example]) -> list[Any]:
    """``examples`` as ``program`` reads them (its schema view and checks)."""
    route = program.route
    return to_dspy_examples(examples, schema_texts(examples, route.schema), route.checks, route.neighbours, context)


def _report(program: str, examples: Sequence[Example], lm: Any) -> dict[str, dict[str, float]]:
    """The router with ``program`` on each source of the report part (first decisions, gold history)."""
    out: dict[str, dict[str, float]] = {}
    by_source: dict[str, list[Example]] = defaultdict(list)
    for e in examples:
        by_source[e.dataset].append(e)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True)) as bar:
        decided = {}
        for source, part in sorted(by_source.items()):
            task = bar.add_task(f"report {source}", total=len(part))
            decided[source] = first_decisions(
                "dspy",
                {"program": program},
                schedule(list(part)),
                lm,
                on_done=functools.partial(lambda t, _d: bar.advance(t), task),
            )
    for source, decisions in decided.items():
        row = summary_table({source: decisions}).iloc[0]
        keep = {
            k: v
            for k, v in row.items()
            if k in ("n", "accuracy", "ci_low", "ci_high", "diverted", "macro_recall")
            or str(k).startswith(("recall_", "acc_", "n_"))
        }
        # an intent absent from the source has no recall (NaN): left out, so choice.json stays JSON
        out[source] = {str(k): float(v) for k, v in keep.items() if not math.isnan(float(v))}
    return out


def run_choice(
    cfg: ChoiceConfig,
    lm: Any,
    *,
    lm_spec: str,
    work_dir: Path,
    programs_dir: Path,
    report: bool = True,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Compile every candidate on fit, score all programs on selection, apply the rule, then report once.

    Writes ``<work_dir>/candidates/<name>.json`` and ``.meta.json`` for every candidate (the meta
    holds the rule's outcome) and ``<work_dir>/choice.json``; only when the rule says replace,
    the chosen program and its meta go to ``<programs_dir>/dspy_router_<target>.json``. The
    report part is routed once, after the decision, by the ``dspy`` router with the program the
    rule left in place (the default's committed file when kept).

    Returns:
        What ``choice.json`` holds: the sets' sizes, every program's selection figures, the
        decision and (with ``report``) the report figures per source.
    """
    # long because the rule's steps share one LM context and one set of paths: compile, select, decide, report
    import dspy

    blend = dataset.build("blend", path=cfg.blend)
    tune, held_back = blend.split("train"), blend.split("dev")
    fit, selection = divide(tune, cfg)
    sizes = {"fit": dict(Counter(e.dataset for e in fit)), "selection": dict(Counter(e.dataset for e in selection))}
    sizes["report"] = dict(Counter(e.dataset for e in held_back))
    say(
        f"fit {len(fit)} {sizes['fit']}; selection {len(selection)} {sizes['selection']}; "
        f"report {len(held_back)} (after the choice)"
    )
    candidates_dir = work_dir / "candidates"
    candidates_dir.mkdir(parents=True, exist_ok=True)
    default_program, default_file = load_program(cfg.default)
    decisions: dict[str, list[str | None]] = {}
    metas: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with lm_context(lm), dspy.context(num_threads=1):
        decisions["default"] = route_set(
            default_program, _inputs(default_program, selection, tune), progress=f"{cfg.default} on selection"
        )
        say(f"default ({cfg.default}) scored on selection: {time.perf_counter() - t0:.0f} s")
        objective = RoutingObjective.from_intents([e.intent for e in fit], safety=cfg.safety)
        for cand in cfg.candidates:
            t1 = time.perf_counter()
            say(f"candidate {cand.name}: compiling ({cand.optimizer}) on the {len(fit)} fit examples")
            pool = (
                Neighbours([e.question for e in fit], [e.intent for e in fit]) if "neighbours" in cand.checks else None
            )
            student = new_program(True, cand.schema, cand.checks, pool)
            data = _inputs(student, fit, tune)
            opt = optimizer.build(cand.optimizer, **{"seed": cfg.seed, **cand.args})
            # the selection set is the rule's alone: an optimizer that chooses internally does so on fit
            compiled = opt.compile(student, trainset=data, valset=data, metric=objective, lm=lm)
            compile_seconds = time.perf_counter() - t1
            decisions[cand.name] = route_set(
                compiled, _inputs(compiled, selection, tune), progress=f"{cand.name} on selection"
            )
            path = candidates_dir / f"{cand.name}.json"
            compiled.save(str(path))
            notes = {k: v for k, v in (getattr(opt, "notes", None) or {}).items() if k != "calibration_data"}
            metas[cand.name] = {
                "candidate": asdict(cand),
                "optimizer": cand.optimizer,
                "optimizer_args": {"seed": cfg.seed, **cand.args},
                "dataset": "blend",
                "dataset_digest": blend.digest(),
                "blend": cfg.blend,
                "choice_file": cfg.file,
                "lm": lm_spec,
                "one_pass": True,
                "schema": compiled.route.schema,
                "checks": list(compiled.route.checks),
                "fit_size": len(fit),
                "selection_size": len(selection),
                "demos": len(compiled.route.demos),
                "calibration": dict(compiled.route.calibration),
                "optimizer_notes": notes,
                "compile_seconds": round(compile_seconds, 1),
                "seconds": round(time.perf_counter() - t1, 1),
                "date": _dt.date.today().isoformat(),
                "dspy_version": dspy.__version__,
                "program_file": path.name,
            }
            say(f"candidate {cand.name}: compiled and scored in {time.perf_counter() - t1:.0f} s")
    table = SelectionTable(
        gold=[e.intent for e in selection],
        accepted=[list(e.accepted_intents) for e in selection],
        clusters=[e.conversation or e.id for e in selection],
        decisions=decisions,
    )
    decision = decide(table, "default", [c.name for c in cfg.candidates], cfg.rule, safety=cfg.safety)
    outcome = asdict(decision)
    say(f"rule: {decision.outcome}: {decision.reason}")
    for name, meta in metas.items():
        meta["selection"] = decision.figures[name]
        meta["choice"] = {**outcome, "this_candidate": name}
        save_meta(candidates_dir / f"{name}.json", meta)
    result: dict[str, Any] = {
        "choice_file": cfg.file,
        "lm": lm_spec,
        "sizes": sizes,
        "default": cfg.default,
        "default_file": str(default_file) if default_file else None,
        "decision": outcome,
        "search_seconds": round(time.perf_counter() - t0, 1),
    }
    routed = cfg.default
    if decision.chosen is not None:
        target = programs_dir / program_path(cfg.target).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(candidates_dir / f"{decision.chosen}.json", target)
        meta = {**metas[decision.chosen], "program_file": target.name, "replaced": result["default_file"]}
        save_meta(target, meta)
        result["written"] = str(target)
        routed = str(target)
        say(f"wrote {target} and its .meta.json")
    if report:
        t2 = time.perf_counter()
        result["report"] = _report(routed, held_back, lm)
        result["report_program"] = routed
        result["report_seconds"] = round(time.perf_counter() - t2, 1)
        if decision.chosen is not None:
            target = Path(result["written"])
            meta = json.loads(target.with_suffix(".meta.json").read_text())
            save_meta(target, {**meta, "report": result["report"]})
    (work_dir / "choice.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")
    return result
