"""Aggregates over example results: rates with bootstrap CIs, confusion, latency and cost."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from routerlab.agents.state import INTENTS
from routerlab.eval.result import ExampleResult, did_run
from routerlab.eval.scorers import DEFAULT_SCORERS
from routerlab.eval.stats import bootstrap_ci

__all__ = [
    "SCORE_NAMES",
    "Rate",
    "confusion_matrix",
    "latency_summary",
    "metric_name",
    "per_intent",
    "rate",
    "routing_prf",
    "summarize",
    "usage_summary",
]

#: every score a summary covers
SCORE_NAMES = DEFAULT_SCORERS


@dataclass(frozen=True)
class Rate:
    """A mean over the applicable examples with its 95 % bootstrap CI.

    Attributes:
        value: Mean of the non-None score values (nan when none apply).
        n: Examples counted (value not None).
        ci_low / ci_high: Percentile bootstrap bounds.
        n_invalid: Examples excluded as invalid (e.g. their gold SQL failed).
    """

    value: float
    n: int
    ci_low: float
    ci_high: float
    n_invalid: int = 0

    def fmt(self) -> str:
        """``0.62 [0.51, 0.72]``."""
        if self.n == 0:
            return "n/a"
        return f"{self.value:.2f} [{self.ci_low:.2f}, {self.ci_high:.2f}]"


def rate(results: Sequence[ExampleResult], scorer_name: str) -> Rate:
    """Mean of one scorer over the examples it applies to (None values excluded)."""
    values = [r.value(scorer_name) for r in results]
    vals = [v for v in values if v is not None]
    invalid = sum(1 for r in results if (s := r.scores.get(scorer_name)) and s.detail.get("invalid"))
    if not vals:
        return Rate(math.nan, 0, math.nan, math.nan, invalid)
    low, high = bootstrap_ci(vals)
    return Rate(float(np.mean(vals)), len(vals), low, high, invalid)


def per_intent(results: Sequence[ExampleResult], scorer_name: str) -> dict[str, Rate]:
    """The rate of one scorer within each gold intent."""
    return {
        i: rate([r for r in results if r.intent == i], scorer_name)
        for i in INTENTS
        if any(r.intent == i for r in results)
    }


def confusion_matrix(results: Sequence[ExampleResult]) -> pd.DataFrame:
    """Gold intent (rows) x predicted intent (columns, ``none`` when the router gave none)."""
    cols = [*INTENTS, "none"]
    m = pd.DataFrame(0, index=list(INTENTS), columns=cols)
    for r in results:
        m.loc[r.intent, r.predicted_intent if r.predicted_intent in INTENTS else "none"] += 1
    return m


def routing_prf(results: Sequence[ExampleResult]) -> pd.DataFrame:
    """Per-intent precision, recall and F1 of the router's intent (exact intent, no alternates)."""
    rows = []
    for i in INTENTS:
        tp = sum(1 for r in results if r.intent == i and r.predicted_intent == i)
        fp = sum(1 for r in results if r.intent != i and r.predicted_intent == i)
        fn = sum(1 for r in results if r.intent == i and r.predicted_intent != i)
        p = tp / (tp + fp) if tp + fp else math.nan
        rc = tp / (tp + fn) if tp + fn else math.nan
        f = 2 * p * rc / (p + rc) if p + rc and not math.isnan(p + rc) else math.nan
        rows.append({"intent": i, "precision": p, "recall": rc, "f1": f, "support": tp + fn})
    return pd.DataFrame(rows).set_index("intent")


def _pct(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": math.nan, "p95": math.nan, "p99": math.nan, "mean": math.nan}
    a = np.asarray(values)
    return {
        "p50": float(np.percentile(a, 50)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
    }


def latency_summary(results: Sequence[ExampleResult]) -> dict[str, dict[str, float]]:
    """Percentiles of end-to-end latency, per node, and of the router's own LM time."""
    out = {
        "end_to_end": _pct([r.latency_s for r in results]),
        "router_lm": _pct([r.router_usage.latency_s for r in results]),
        "subagent_lm": _pct([r.subagent_usage.latency_s for r in results]),
    }
    nodes = sorted({n for r in results for n in r.node_latency_s})
    for n in nodes:
        out[f"node.{n}"] = _pct([r.node_latency_s.get(n, 0.0) for r in results])
    return out


def usage_summary(results: Sequence[ExampleResult]) -> dict[str, float]:
    """Per-example LM calls and tokens, router apart from sub-agents, cache hit rate, cost."""
    n = max(len(results), 1)
    calls = sum(r.router_usage.lm_calls + r.subagent_usage.lm_calls for r in results)
    hits = sum(r.router_usage.cache_hits + r.subagent_usage.cache_hits for r in results)
    return {
        "router_lm_calls_per_ex": sum(r.router_usage.lm_calls for r in results) / n,
        "router_tokens_per_ex": sum(r.router_usage.prompt_tokens + r.router_usage.completion_tokens for r in results)
        / n,
        "subagent_lm_calls_per_ex": sum(r.subagent_usage.lm_calls for r in results) / n,
        "subagent_tokens_per_ex": sum(
            r.subagent_usage.prompt_tokens + r.subagent_usage.completion_tokens for r in results
        )
        / n,
        "cache_hit_rate": hits / calls if calls else math.nan,
        "cost_usd": sum(r.router_usage.cost_usd + r.subagent_usage.cost_usd for r in results),
    }


#: MLflow's longest metric/param key
_MAX_KEY = 250


def metric_name(name: str) -> str:
    """``name`` reduced to MLflow's key charset (alphanumerics, ``_ - . / space``), 250 chars max.

    Colons are allowed by MLflow except on Windows; they are replaced too so a store stays
    readable everywhere.
    """
    key = re.sub(r"[^\w.\- /]", "_", name)
    key = re.sub(r"/{2,}", "/", key).strip("/")  # MLflow rejects keys that are not normalised paths
    key = re.sub(r"(^|/)\.\.?(?=/|$)", r"\1_", key)
    return key[:_MAX_KEY] or "_"


def summarize(results: Sequence[ExampleResult]) -> dict[str, float]:
    """Flat metric dict for MLflow: every rate with CI bounds, per-intent success, latency, usage.

    Examples that never started are counted in ``not_run`` and left out of everything else.
    """
    ran = [r for r in results if did_run(r)]
    out: dict[str, float] = {"not_run": float(len(results) - len(ran))}
    results = ran
    out |= {
        "n_examples": float(len(results)),
        "crashes": float(sum(r.outcome == "crash" for r in results)),
    }
    for s in SCORE_NAMES:
        r = rate(results, s)
        if r.n:
            out |= {s: r.value, f"{s}_ci_low": r.ci_low, f"{s}_ci_high": r.ci_high, f"{s}_n": float(r.n)}
        if r.n_invalid:
            out[f"{s}_invalid"] = float(r.n_invalid)
    for intent, r in per_intent(results, "success").items():
        if r.n:
            out[f"success.{intent}"] = r.value
    for key, pct in latency_summary(results).items():
        for k, v in pct.items():
            if not math.isnan(v):
                out[f"latency.{key}.{k}_s"] = v
    out |= {k: v for k, v in usage_summary(results).items() if not math.isnan(v)}
    return {metric_name(k): float(v) for k, v in out.items()}
