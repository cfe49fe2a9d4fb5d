"""The comparison as pandas frames (the Python API) and CSV / Parquet files (``compare --format csv|parquet``).

Frames are read off :class:`~routerlab.eval.analysis.model.SessionComparison`: wide, one row per
router of one part, one column per figure, named by the measures' keys
(:mod:`routerlab.eval.analysis.measures`). The per-example table (:func:`results_frame`) is the
stored results themselves, with each request's text and each decision's reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from routerlab.agents.errors import ConfigError
from routerlab.eval.analysis.build import question_of, reason_of
from routerlab.eval.analysis.model import SessionComparison
from routerlab.eval.scoring import ExampleResult

__all__ = [
    "EXPORTS",
    "disagreements_frame",
    "export",
    "failures_frame",
    "pairs_frame",
    "per_intent_frame",
    "rates_frame",
    "results_frame",
]

#: file formats :func:`export` writes
EXPORTS: tuple[str, ...] = ("csv", "parquet")


def rates_frame(model: SessionComparison, part: str) -> pd.DataFrame:
    """One row per router of ``part``: each measure's rate, interval bounds and n, then cost.

    Columns ``<measure>``, ``<measure>_low``, ``<measure>_high``, ``<measure>_n`` for each of the
    part's measures, then ``p50``, ``p95`` (in ``cost_unit``), ``lm_calls``, ``router_lm`` (in ``cost_unit``),
    ``tokens``, ``baseline``, ``same_as``, ``n``, ``not_run``, ``status``, ``run_id``.
    """
    p = model.part(part)
    rows = []
    for r in p.routers:
        row: dict[str, Any] = {"router": r.router}
        for m in p.measures:
            x = r.rates.get(m)
            row |= {m: None, f"{m}_low": None, f"{m}_high": None, f"{m}_n": None}
            if x is not None and r.same_as is None:
                row |= {m: x.value, f"{m}_low": x.low, f"{m}_high": x.high, f"{m}_n": x.n}
        c = r.cost
        row |= {
            "p50": c.p50,
            "p95": c.p95,
            "cost_unit": c.unit,
            "lm_calls": c.lm_calls,
            "router_lm": c.router_lm,
            "tokens": c.tokens,
            "baseline": r.baseline,
            "same_as": r.same_as or "",
            "n": r.n,
            "not_run": r.not_run,
            "status": r.status,
            "run_id": r.run_id,
        }
        rows.append(row)
    return pd.DataFrame(rows).set_index("router")


def pairs_frame(model: SessionComparison, part: str) -> pd.DataFrame:
    """One row per paired test of ``part`` (``measure, a, b, n, rate_a, rate_b, diff, low, high, test, p, ...``)."""
    from dataclasses import asdict

    p = model.part(part)
    columns = ["measure", "a", "b", "n", "rate_a", "rate_b", "diff", "low", "high", "test", "p"]
    return pd.DataFrame([asdict(t) for t in p.pairs], columns=[*columns, "a_only", "b_only", "mdd", "significant"])


def per_intent_frame(model: SessionComparison, part: str) -> pd.DataFrame:
    """Routers (rows) by gold intent (columns) of the part's verdict measure; ``<intent>_low|_high|_n`` beside."""
    p = model.part(part)
    rows = []
    for r in p.routers:
        if r.same_as is not None:
            continue
        row: dict[str, Any] = {"router": r.router}
        for intent, x in r.per_intent.items():
            row |= {intent: x.value, f"{intent}_low": x.low, f"{intent}_high": x.high, f"{intent}_n": x.n}
        rows.append(row)
    return pd.DataFrame(rows).set_index("router") if rows else pd.DataFrame()


def disagreements_frame(model: SessionComparison, part: str) -> pd.DataFrame:
    """One row per request the part's routers decided differently: its text and each router's decision and reason."""
    p = model.part(part)
    rows = []
    for d in p.disagreements:
        row: dict[str, Any] = {"example_id": d.example_id, "intent": d.intent, "question": d.question}
        for name, dec in d.decisions.items():
            row |= {
                f"{name}.decision": dec.intent,
                f"{name}.method": dec.method,
                f"{name}.confidence": dec.confidence,
                f"{name}.right": dec.correct,
            }
        rows.append(row)
    return pd.DataFrame(rows)


def failures_frame(model: SessionComparison, part: str) -> pd.DataFrame:
    """One row per failure of a router of ``part`` on the verdict measure, with the request's text."""
    from dataclasses import asdict

    p = model.part(part)
    rows = [{"router": r.router, **asdict(f)} for r in p.routers if r.same_as is None for f in r.failures]
    columns = ["router", "example_id", "intent", "decision", "method", "confidence", "question", "reason"]
    return pd.DataFrame(rows, columns=columns)


def results_frame(results: Mapping[str, Sequence[ExampleResult]], parts: Mapping[str, str]) -> pd.DataFrame:
    """One row per stored result: part, router, example, question, gold intent, decision, method, confidence, scores.

    Args:
        results: ``run id -> results``.
        parts: ``run id -> part``.
    """
    rows = []
    for run_id, rs in results.items():
        for r in rs:
            method, confidence = reason_of(r)
            rows.append(
                {
                    "part": parts.get(run_id, ""),
                    "router": r.router,
                    "run_id": run_id,
                    "example_id": r.example_id,
                    "attempt": r.attempt,
                    "question": question_of(r),
                    "intent": r.intent,
                    "decision": r.predicted_intent,
                    "method": method,
                    "confidence": confidence,
                    "outcome": r.outcome,
                    "latency_s": r.latency_s,
                    "conversation": r.conversation,
                    "turn": r.turn,
                    **{name: s.value for name, s in sorted(r.scores.items())},
                }
            )
    return pd.DataFrame(rows)


def export(model: SessionComparison, out_dir: str | Path, fmt: str = "csv") -> list[Path]:
    """Write every part's rates, paired tests, per-intent rates, failures and disagreements as files.

    File names are ``<part>_<table>.<fmt>`` (``routing_rates.csv``, ``end_to_end_pairs.parquet``...);
    empty tables are not written.

    Raises:
        ConfigError: An unknown format.
    """
    if fmt not in EXPORTS:
        raise ConfigError(
            f"unknown export format {fmt!r}",
            expected=" or ".join(EXPORTS),
            found=repr(fmt),
            fix="pass --format csv or --format parquet",
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {
        "rates": lambda p: rates_frame(model, p).reset_index(),
        "pairs": lambda p: pairs_frame(model, p),
        "per_intent": lambda p: per_intent_frame(model, p).reset_index(),
        "failures": lambda p: failures_frame(model, p),
        "disagreements": lambda p: disagreements_frame(model, p),
    }
    written = []
    for p in model.parts:
        for name, make in tables.items():
            frame = make(p.key)
            if frame.empty or (name == "per_intent" and len(frame.columns) <= 1):
                continue
            path = out / f"{p.key}_{name}.{fmt}"
            if fmt == "csv":
                frame.to_csv(path, index=False)
            else:
                frame.to_parquet(path, index=False)
            written.append(path)
    return written
