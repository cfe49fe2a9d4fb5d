"""Aggregates over example results: rates with bootstrap CIs, confusion, latency and cost."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from routerlab.agents.state import INTENTS
from routerlab.eval.conversation_metrics import conversation_summary
from routerlab.eval.rate import Rate, rate
from routerlab.eval.risk import risk_summary
from routerlab.eval.robustness import diversion_of_results
from routerlab.eval.scorers import DEFAULT_SCORERS
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import pass_at_k, pass_hat_k

__all__ = [
    "SCORE_NAMES",
    "cold_cost_summary",
    "cold_latency",
    "confusion_matrix",
    "gold_failure_line",
    "gold_failures",
    "latency_summary",
    "metric_name",
    "pass_k_summary",
    "per_intent",
    "routing_prf",
    "scored_names",
    "summarize",
    "usage_summary",
]

#: every score a summary covers
SCORE_NAMES = DEFAULT_SCORERS


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


def cold_latency(r: ExampleResult) -> float:
    """End-to-end latency of one example at cold cost.

    The time its LM calls took this run is replaced by their cold latency (the time each took
    when first computed): ``latency_s - LM latency + cold LM latency``. Everything else (graph,
    tools, SQL) stays as measured.
    """
    u = r.router_usage.add(r.subagent_usage)
    return r.latency_s - u.latency_s + u.cold_latency_s


def cold_cost_summary(results: Sequence[ExampleResult]) -> dict[str, float]:
    """Cold-cost metrics (``cold.*``): latency percentiles, tokens per example, price, unknown calls.

    Cold cost counts every LM call as it cost when first computed, so these figures are the same
    whichever router ran first or whatever was already cached (docs/metrics.md §3.8).
    """
    n = max(len(results), 1)
    out = {f"cold.latency.end_to_end.{k}_s": v for k, v in _pct([cold_latency(r) for r in results]).items()}
    out |= {
        "cold.router_tokens_per_ex": sum(
            r.router_usage.cold_prompt_tokens + r.router_usage.cold_completion_tokens for r in results
        )
        / n,
        "cold.subagent_tokens_per_ex": sum(
            r.subagent_usage.cold_prompt_tokens + r.subagent_usage.cold_completion_tokens for r in results
        )
        / n,
        "cold.router_lm_latency_per_ex_s": sum(r.router_usage.cold_latency_s for r in results) / n,
        "cold.subagent_lm_latency_per_ex_s": sum(r.subagent_usage.cold_latency_s for r in results) / n,
        "cold.cost_usd": sum(r.router_usage.cold_cost_usd + r.subagent_usage.cold_cost_usd for r in results),
        "cold.unknown_calls": float(sum(r.router_usage.cold_unknown + r.subagent_usage.cold_unknown for r in results)),
    }
    return out


#: a graded score counts as a success at 1 (within float error), as in the paired tests
_SUCCESS = 1 - 1e-9


@dataclass(frozen=True)
class PassK:
    """pass^k and pass@k of one run over its repeated attempts.

    Attributes:
        k: Attempts per example (the most any example has).
        pass_hat_k: Mean over examples of C(c, k) / C(k, k): every one of the k tries succeeded.
        pass_at_k: Mean over examples of 1 - C(k - c, k) / C(k, k): at least one try succeeded.
        n: Examples counted (all k tries scored, none ``None``).
        n_incomplete: Examples left out because they have fewer than k tries (an interrupted run).
        n_not_applicable: Examples left out because a try's score was ``None`` (invalid gold...).
    """

    k: int
    pass_hat_k: float
    pass_at_k: float
    n: int
    n_incomplete: int = 0
    n_not_applicable: int = 0


def pass_k_summary(results: Sequence[ExampleResult], scorer_name: str = "success") -> PassK | None:
    """pass^k and pass@k of ``scorer_name`` (a try succeeds at score 1), or None with one attempt.

    The tries of an example are its results over ``attempt``; ``k`` is the most tries any example
    has, so an example with fewer (an interrupted run) is left out and counted, never scored as if
    it had k tries.
    """
    tries: dict[str, list[float | None]] = {}
    for r in sorted(results, key=lambda r: (r.example_id, r.attempt)):
        tries.setdefault(r.example_id, []).append(r.value(scorer_name))
    k = max((len(v) for v in tries.values()), default=0)
    if k < 2:
        return None
    complete = [v for v in tries.values() if len(v) == k]
    scored = [[x >= _SUCCESS for x in v] for v in complete if all(x is not None for x in v)]  # type: ignore[operator]
    return PassK(
        k=k,
        pass_hat_k=pass_hat_k(scored, k),
        pass_at_k=pass_at_k(scored, k),
        n=len(scored),
        n_incomplete=len(tries) - len(complete),
        n_not_applicable=len(complete) - len(scored),
    )


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


def _pass_k_metrics(results: Sequence[ExampleResult]) -> dict[str, float]:
    """``pass_hat_k.<scorer>``, ``pass_at_k.<scorer>`` and ``pass_k.*`` counts, with 2+ attempts."""
    out: dict[str, float] = {}
    for s in ("success", "ex"):
        pk = pass_k_summary(results, s)
        if pk is None or pk.n == 0:
            continue
        out |= {f"pass_hat_k.{s}": pk.pass_hat_k, f"pass_at_k.{s}": pk.pass_at_k, f"pass_k.{s}_n": float(pk.n)}
        out |= {"pass_k.k": float(pk.k), "pass_k.incomplete": float(pk.n_incomplete)}
    return out


def _routing_prf_metrics(results: Sequence[ExampleResult]) -> dict[str, float]:
    """``routing.<intent>.{precision,recall,f1}`` for the intents that occur (NaN ones left out)."""
    prf = routing_prf(results)
    return {
        f"routing.{intent}.{col}": float(v)
        for intent, row in prf.iterrows()
        if row["support"] or row["precision"] == row["precision"]
        for col, v in row.items()
        if col != "support" and not math.isnan(v)
    }


def scored_names(results: Sequence[ExampleResult], first: Sequence[str] = SCORE_NAMES) -> list[str]:
    """Scorer names to report: ``first`` in its order, then any non-default scorer the results carry.

    A registered custom scorer chosen with ``--scorer`` must reach every table and MLflow without
    being added to a list here, so the names come from the scores themselves; the built-in
    scorers a table leaves out on purpose (``first`` is its choice) stay out.
    """
    extra = sorted({name for r in results for name in r.scores} - set(first) - set(SCORE_NAMES))
    return [*first, *extra]


def _marks_empty(results: Sequence[ExampleResult], scorer_name: str) -> bool:
    """True when the scorer flags empty matches in its verdicts (``ex`` does, ``route`` does not)."""
    return any((s := r.scores.get(scorer_name)) is not None and "empty_match" in s.detail for r in results)


def _empty_metrics(key: str, r: Rate) -> dict[str, float]:
    """``<key>_empty_matches`` (count) and ``<key>_empty_rate`` (share of the scored examples).

    Logged for every scorer that marks empty matches (``ex``), zero included, so a dashboard
    column exists for every run that has the rate; ``<key> - <key>_empty_rate`` is the rate
    without the vacuous matches.
    """
    return {f"{key}_empty_matches": float(r.n_empty), f"{key}_empty_rate": r.n_empty / r.n}


def gold_failures(results: Sequence[ExampleResult], scorer_name: str = "ex") -> tuple[int, str | None]:
    """How many examples' gold SQL could not run for ``scorer_name``, and the first cause.

    Counted in both of EX's ``gold_failure`` modes (scored wrong, or left out), so a report can
    say how many examples the number rests on that no query could have matched.
    """
    causes = [
        str(s.detail["gold_error"])
        for r in results
        if (s := r.scores.get(scorer_name)) is not None and s.detail.get("gold_error")
    ]
    return len(causes), (causes[0] if causes else None)


def gold_failure_line(run_id: str, results: Sequence[ExampleResult], scorer_name: str = "ex") -> str | None:
    """The console line of a run with unrunnable gold SQL (None when every gold ran)."""
    n, first = gold_failures(results, scorer_name)
    if not n:
        return None
    counted = (
        "left out of EX"
        if any((s := r.scores.get(scorer_name)) is not None and s.detail.get("invalid") for r in results)
        else "counted wrong in EX, as the official evaluators count them"
    )
    return (
        f"{run_id}: {n} example(s) have gold SQL that cannot run ({counted}; first: {first}); "
        "fix the dataset's gold queries (docs/metrics.md, 'Gold SQL that cannot run')"
    )


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
    for s in scored_names(results):
        r = rate(results, s)
        out |= r.metrics(s)
        if r.n_invalid:
            out[f"{s}_invalid"] = float(r.n_invalid)
        if r.n and _marks_empty(results, s):
            out |= _empty_metrics(s, r)
        n_gold_failed, _ = gold_failures(results, s)
        if n_gold_failed:
            out[f"{s}_gold_failed"] = float(n_gold_failed)
    for intent, r in per_intent(results, "success").items():
        if r.n:
            out[f"success.{intent}"] = r.value
    for key, pct in latency_summary(results).items():
        for k, v in pct.items():
            if not math.isnan(v):
                out[f"latency.{key}.{k}_s"] = v
    out |= {k: v for k, v in usage_summary(results).items() if not math.isnan(v)}
    out |= {k: v for k, v in cold_cost_summary(results).items() if not math.isnan(v)}
    out |= _pass_k_metrics(results)
    out |= _routing_prf_metrics(results)
    out |= risk_summary(results).metrics()
    out |= diversion_of_results(results).metrics()
    if (conversations := conversation_summary(results)) is not None:
        out |= conversations.metrics()
    return {metric_name(k): float(v) for k, v in out.items()}
