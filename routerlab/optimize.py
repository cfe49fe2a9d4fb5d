"""Compile the ``dspy`` router's program on a dataset's train split (``routerlab optimize``)."""

from __future__ import annotations

import datetime as _dt
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.adapter import lm_context
from routerlab.benchmarks.example import Example
from routerlab.routers.dspy_router import RouteProgram, program_path, save_meta, schema_summary

__all__ = ["OPTIMIZERS", "OptimizeReport", "intent_metric", "optimize_router", "to_dspy_examples"]

#: optimizer name -> (factory(metric, lm, budget) -> teleprompter); data, not an if/elif chain
OPTIMIZERS: dict[str, Any] = {
    "bootstrap": lambda metric, lm, budget: dspy.BootstrapFewShot(
        metric=metric, max_bootstrapped_demos=budget, max_labeled_demos=2 * budget, max_rounds=1
    ),
    "mipro": lambda metric, lm, budget: dspy.MIPROv2(
        metric=metric, auto="light", max_bootstrapped_demos=budget, max_labeled_demos=budget, num_threads=1
    ),
    "gepa": lambda metric, lm, budget: dspy.GEPA(
        metric=lambda gold, pred, trace=None, pred_name=None, pred_trace=None: intent_metric(gold, pred),
        auto="light",
        reflection_lm=lm,
        num_threads=1,
    ),
}


@dataclass
class OptimizeReport:
    """What an optimization produced (also written next to the program as ``.meta.json``)."""

    optimizer: str
    budget: int
    seed: int
    dataset: str
    dataset_digest: str
    lm: str
    train_size: int
    dev_size: int
    dev_accuracy_before: float
    dev_accuracy_after: float
    train_accuracy_after: float
    seconds: float
    date: str
    program_file: str


def intent_metric(gold: dspy.Example, pred: dspy.Prediction, trace: Any = None) -> float:
    """1.0 when the predicted intent is the gold intent or an accepted alternate."""
    return float(str(getattr(pred, "intent", "")).strip() in gold.accepted)


def to_dspy_examples(examples: list[Example], tables_of: dict[str, str]) -> list[dspy.Example]:
    """DSPy examples ``(tables, conversation, request) -> intent``."""
    return [
        dspy.Example(
            tables=tables_of.get(e.db_path, ""),
            conversation="",
            request=e.question,
            intent=e.intent,
            accepted=list(e.accepted_intents),
        ).with_inputs("tables", "conversation", "request")
        for e in examples
    ]


def _accuracy(program: dspy.Module, data: list[dspy.Example]) -> float:
    if not data:
        return float("nan")
    hits = 0.0
    for ex in data:
        try:
            hits += intent_metric(ex, program(**ex.inputs()))
        except (AdapterParseError, ValueError, RuntimeError):
            pass  # an unparsable prediction counts as wrong
    return hits / len(data)


def optimize_router(
    dataset: Any,
    lm: dspy.LM,
    *,
    lm_spec: str,
    optimizer: str = "bootstrap",
    budget: int = 4,
    train_limit: int | None = None,
    dev_limit: int | None = None,
    out: Path | None = None,
    seed: int = 0,
) -> OptimizeReport:
    """Compile :class:`RouteProgram` on the train split, evaluate on dev, save program + provenance.

    Args:
        dataset: A loaded :class:`~routerlab.benchmarks.dataset.Dataset`.
        lm: The LM the program will run on (optimize on the model you route with).
        lm_spec: Its spec, recorded in the provenance.
        optimizer: ``bootstrap``, ``mipro`` or ``gepa``.
        budget: Max demonstrations (bootstrap/mipro).
        train_limit: Cap on the train examples used (None: all).
        dev_limit: Cap on the dev examples used (None: all).
        out: Program file (default ``routers/programs/dspy_router_<dataset>.json``).
        seed: Order of the train examples the optimizer walks. Bootstrapping keeps the first
            demonstrations that pass, so a split stored intent by intent would otherwise give
            demonstrations of one intent only.
    """
    from routerlab.agents.db import open_database

    if optimizer not in OPTIMIZERS:
        raise ConfigError(
            f"unknown optimizer {optimizer!r}",
            expected=f"one of {', '.join(OPTIMIZERS)}",
            found=repr(optimizer),
            fix="pass --optimizer bootstrap, mipro or gepa",
        )
    train_ex = dataset.split("train")
    random.Random(seed).shuffle(train_ex)
    train_ex = train_ex[: train_limit or None]
    dev_ex = dataset.split("dev")[: dev_limit or None]
    tables_of = {
        p: schema_summary([t.name for t in open_database(p).tables()]) for p in {e.db_path for e in train_ex + dev_ex}
    }
    train, dev = to_dspy_examples(train_ex, tables_of), to_dspy_examples(dev_ex, tables_of)
    t0 = time.perf_counter()
    with lm_context(lm):
        base = RouteProgram()
        before = _accuracy(base, dev)
        compiled = OPTIMIZERS[optimizer](intent_metric, lm, budget).compile(RouteProgram(), trainset=train)
        after = _accuracy(compiled, dev)
        train_after = _accuracy(compiled, train)
    path = out or program_path(dataset.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    compiled.save(str(path))
    report = OptimizeReport(
        optimizer=optimizer,
        budget=budget,
        seed=seed,
        dataset=dataset.name,
        dataset_digest=dataset.digest(),
        lm=lm_spec,
        train_size=len(train),
        dev_size=len(dev),
        dev_accuracy_before=before,
        dev_accuracy_after=after,
        train_accuracy_after=train_after,
        seconds=round(time.perf_counter() - t0, 1),
        date=_dt.date.today().isoformat(),
        program_file=path.name,
    )
    save_meta(path, asdict(report))
    return report


def report_json(report: OptimizeReport) -> str:
    """The report as pretty JSON."""
    return json.dumps(asdict(report), indent=2)
