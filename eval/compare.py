"""``routerlab compare``: stored runs side by side, with confidence intervals and paired tests.

Long because the compare table, its paired tests and its four output formats are one report.

One row per run: router, LM, number of results, each rate with its 95 % bootstrap CI
(``0.62 [0.51, 0.72]``), latency p50/p95, router and sub-agent tokens per example and LM calls
per example. Baseline routers (``oracle``, ``random``) are labelled ``(baseline)`` everywhere.

Paired significance: runs are compared on the examples both of them have, matched by
``(example_id, attempt)`` (the intersection; its size is reported as ``common``). For each rate
and pair of runs, with ``n`` the common examples the scorer applies to in both runs, ONE test
decides "significant" (its name heads the p column):

* McNemar's exact test on per-example correctness for 0/1 rates of single requests;
* for graded rates (``chain_f1``) and for turns of conversations (not independent pairs) the
  paired sign-flip test flipping whole conversations (:func:`routerlab.eval.stats.paired_sign_flip_p`,
  which is McNemar's exact test again for 0/1 scores of single requests).

A paired bootstrap gives only the 95 % interval of the difference (``A - B``, resampling whole
conversations); its own p-value is kept in csv/json (``bootstrap_p``) but decides nothing.

By default each run is paired with the first one given (``pairing="first"``: list the reference
router first); ``pairing="all"`` tests every pair.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from routerlab.agents.errors import ConfigError
from routerlab.eval.confidence_calibration import run_calibration
from routerlab.eval.conversation_metrics import ConversationSummary, conversation_summary, render_conversations
from routerlab.eval.metrics import cold_latency, gold_failures, pass_k_summary, scored_names
from routerlab.eval.outcomes import OutcomeSummary, ServedDiff, outcome_summary, render_outcomes, served_diffs
from routerlab.eval.rate import Rate, cluster_of, empty_note, rate
from routerlab.eval.risk import RiskSummary, render_risk, risk_summary
from routerlab.eval.robustness import Diversion, diversion_of_results
from routerlab.eval.scorers import HEADLINE_SCORERS
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import (
    mcnemar_exact,
    min_detectable_diff,
    n_needed,
    paired_cluster_bootstrap_diff,
    paired_sign_flip_p,
)

__all__ = [
    "ALPHA",
    "COSTS",
    "DEFAULT_COMPARE_SCORERS",
    "FORMATS",
    "TARGET_DIFF",
    "Comparison",
    "PairTest",
    "RunRow",
    "cold_cost_figures",
    "compare_runs",
    "render",
    "verdicts",
]

#: the scorers compared by default: the headline rates of the one scorer list (eval/scorers)
DEFAULT_COMPARE_SCORERS: tuple[str, ...] = HEADLINE_SCORERS
FORMATS: tuple[str, ...] = ("table", "markdown", "csv", "json")
PAIRINGS: tuple[str, ...] = ("first", "all")
#: cost bases of the latency and token columns
COSTS: tuple[str, ...] = ("cold", "observed")
#: the difference whose required sample size each paired test reports (10 points of a rate)
TARGET_DIFF = 0.10
#: the level at which the summary line calls a difference significant
ALPHA = 0.05

#: a value at least this close to 1 counts as correct for McNemar's test
_CORRECT = 1.0 - 1e-9


class _Store(Protocol):
    """What :func:`compare_runs` needs from a results store."""

    def runs(self) -> Any: ...

    def results(self, run_id: str) -> list[ExampleResult]: ...


@dataclass(frozen=True)
class RunRow:
    """One run's summary.

    Attributes:
        run_id / router / lm: The run and its components.
        label: The router's display name (``oracle (baseline)``).
        baseline: True for baseline routers.
        n: Results in the run (examples x attempts).
        rates: ``scorer -> Rate`` (mean over applicable examples, 95 % CI).
        latency_p50_s / latency_p95_s: End-to-end latency percentiles.
        router_tokens_per_ex / subagent_tokens_per_ex: Prompt + completion tokens per example.
        lm_calls_per_ex: LM calls (router and sub-agents) per example.
        cold_*: The same latency and token figures at cold cost (:func:`cold_cost_figures`):
            every LM call counted as it cost when first computed, whichever run cached it.
        cold_unknown_calls: Cache hits whose cold cost was never recorded (then the cold
            figures are a lower bound).
        attempts_k / pass_hat_k / pass_at_k: With repeated attempts (``--attempts k``), pass^k and
            pass@k of ``success`` (:func:`routerlab.eval.metrics.pass_k_summary`); k = 1 and NaN
            otherwise.
        not_run: Stored examples that never started (a deadline); left out of ``n``, every
            rate and every paired test until ``--resume`` runs them.
        gold_failed: Examples whose gold SQL could not run (EX counts them wrong by default,
            docs/metrics.md); ``gold_failed_first`` is the first cause.
        variant: The router's recorded arguments as ``(name, value text)`` pairs; those that
            differ between two runs of one router name them (``hybrid (threshold=0.7)``).
        calibration: ECE, mean confidence and reliability bins of the first route decisions
            (:func:`routerlab.eval.confidence_calibration.run_calibration`).
        diverted: The share of data questions sent away from SQL (chat, refuse, clarify,
            abstain), :mod:`routerlab.eval.robustness`; shown next to the rates.
    """

    run_id: str
    router: str
    label: str
    baseline: bool
    lm: str
    n: int
    rates: dict[str, Rate]
    latency_p50_s: float
    latency_p95_s: float
    router_tokens_per_ex: float
    subagent_tokens_per_ex: float
    lm_calls_per_ex: float
    cold_latency_p50_s: float = math.nan
    cold_latency_p95_s: float = math.nan
    cold_router_tokens_per_ex: float = math.nan
    cold_subagent_tokens_per_ex: float = math.nan
    cold_unknown_calls: int = 0
    attempts_k: int = 1
    pass_hat_k: float = math.nan
    pass_at_k: float = math.nan
    not_run: int = 0
    gold_failed: int = 0
    gold_failed_first: str = ""
    variant: tuple[tuple[str, str], ...] = ()
    calibration: dict[str, Any] = field(default_factory=dict)
    diverted: Diversion = field(default_factory=lambda: diversion_of_results(()))


@dataclass(frozen=True)
class PairTest:
    """A paired comparison of one rate between two runs.

    Attributes:
        run_a / run_b: The reference run and the compared run (``diff = b - a``).
        label_a / label_b: Their routers' display names.
        scorer: The rate compared.
        n_common: Examples (``example_id``, ``attempt``) present in both runs.
        n: Common examples the scorer applies to in both runs (the paired sample).
        rate_a / rate_b: Means over those ``n`` examples.
        diff / diff_low / diff_high: Mean paired difference and its 95 % bootstrap CI.
        bootstrap_p: Two-sided paired-bootstrap p-value (kept for csv/json; it decides nothing: the
            bootstrap is only the interval of the difference).
        mcnemar_p: McNemar's exact two-sided p-value on correct (score 1) vs not.
        b01 / b10: Discordant pairs: a wrong and b right / a right and b wrong.
        mdd: Minimum difference this ``n`` detects with 80 % power at the 5 % level, paired
            (:func:`routerlab.eval.stats.min_detectable_diff`); above 1: none is detectable.
        n_for_target: Pairs needed to detect a difference of :data:`TARGET_DIFF` with that power.
        conversations: Conversations the paired turns belong to (0: single requests). When
            non-zero the bootstrap resamples conversations whole and the sign-flip test flips them
            whole (McNemar assumes independent pairs).
        test: The one test that decides significance: ``McNemar`` (0/1 rates of single requests)
            or ``sign-flip`` (graded rates, turns of conversations).
        p_value: That test's two-sided p-value.
    """

    run_a: str
    run_b: str
    label_a: str
    label_b: str
    scorer: str
    n_common: int
    n: int
    rate_a: float
    rate_b: float
    diff: float
    diff_low: float
    diff_high: float
    bootstrap_p: float
    mcnemar_p: float
    b01: int
    b10: int
    mdd: float = math.nan
    n_for_target: int = 0
    conversations: int = 0
    test: str = "McNemar"
    p_value: float = math.nan


@dataclass
class Comparison:
    """Per-run rows and paired tests, ready to render."""

    runs: list[RunRow] = field(default_factory=list)
    pairs: list[PairTest] = field(default_factory=list)
    scorers: tuple[str, ...] = DEFAULT_COMPARE_SCORERS
    pairing: str = "first"
    cost: str = "cold"
    #: run_id -> answer-or-abstain figures (``routerlab.eval.risk``)
    risk: dict[str, RiskSummary] = field(default_factory=dict)
    #: run_id -> per-turn and per-conversation figures (None: the run has no conversations)
    conversations: dict[str, ConversationSummary | None] = field(default_factory=dict)
    #: run_id -> served rate and asking account (None: the run has no conversations)
    outcomes: dict[str, OutcomeSummary | None] = field(default_factory=dict)
    #: run_id -> served against the comparison's ``always_sql`` run (empty without one)
    served_vs_baseline: dict[str, ServedDiff] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (NaN becomes None)."""
        runs = []
        for r in self.runs:
            d = asdict(r)
            d["rates"] = {s: asdict(v) for s, v in r.rates.items()}
            runs.append(d)
        return _no_nan(
            {
                "scorers": list(self.scorers),
                "pairing": self.pairing,
                "cost": self.cost,
                "runs": runs,
                "pairs": [asdict(p) for p in self.pairs],
                "verdicts": verdicts(self),
                "risk": {r: v.to_dict() for r, v in self.risk.items()},
                "conversations": {r: v.metrics() for r, v in self.conversations.items() if v is not None},
                "outcomes": {r: v.metrics() for r, v in self.outcomes.items() if v is not None},
                "served_vs_baseline": {r: asdict(v) for r, v in self.served_vs_baseline.items()},
            }
        )


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


# -- computing ---------------------------------------------------------------------------------


def _labels(routers: Sequence[str]) -> dict[str, tuple[str, bool]]:
    # imported here: the routers package pulls in DSPy, which `compare` alone does not need
    # until it runs
    from routerlab.routers import BASELINES, label

    return {r: (label(r), r in BASELINES) for r in routers}


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _run_row(
    run_id: str,
    router: str,
    lm: str,
    label: tuple[str, bool],
    results: list[ExampleResult],
    scorers: Sequence[str],
) -> RunRow:
    latencies = [r.latency_s for r in results]
    pk = pass_k_summary(results, "success")
    pass_k: dict[str, Any] = (
        {} if pk is None else {"attempts_k": pk.k, "pass_hat_k": pk.pass_hat_k, "pass_at_k": pk.pass_at_k}
    )
    return RunRow(
        **cold_cost_figures(results),
        **pass_k,
        run_id=run_id,
        router=router,
        label=label[0],
        baseline=label[1],
        lm=lm,
        n=len(results),
        rates={s: rate(results, s) for s in scorers},
        latency_p50_s=_percentile(latencies, 50),
        latency_p95_s=_percentile(latencies, 95),
        router_tokens_per_ex=_mean([r.router_usage.prompt_tokens + r.router_usage.completion_tokens for r in results]),
        subagent_tokens_per_ex=_mean(
            [r.subagent_usage.prompt_tokens + r.subagent_usage.completion_tokens for r in results]
        ),
        lm_calls_per_ex=_mean([r.router_usage.lm_calls + r.subagent_usage.lm_calls for r in results]),
        calibration=run_calibration(results),
        diverted=diversion_of_results(results),
    )


def cold_cost_figures(results: Sequence[ExampleResult]) -> dict[str, Any]:
    """Cold latency percentiles and tokens per example of one run (``cold_*`` fields of :class:`RunRow`).

    An example's cold latency is its end-to-end latency with the time its LM calls took replaced
    by their cold latency (``latency_s - LM latency + cold LM latency``, :func:`cold_latency`).
    """
    cold = [cold_latency(r) for r in results]
    return {
        "cold_latency_p50_s": _percentile(cold, 50),
        "cold_latency_p95_s": _percentile(cold, 95),
        "cold_router_tokens_per_ex": _mean(
            [r.router_usage.cold_prompt_tokens + r.router_usage.cold_completion_tokens for r in results]
        ),
        "cold_subagent_tokens_per_ex": _mean(
            [r.subagent_usage.cold_prompt_tokens + r.subagent_usage.cold_completion_tokens for r in results]
        ),
        "cold_unknown_calls": sum(r.router_usage.cold_unknown + r.subagent_usage.cold_unknown for r in results),
    }


def _variant(meta: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A run's router arguments as sorted ``(name, value text)`` pairs, from its recorded params."""
    try:
        params = json.loads(meta.get("params") or "{}")
    except (TypeError, ValueError):
        return ()
    args = params.get("router", {}).get("args", {}) if isinstance(params, dict) else {}
    return tuple((k, str(v)) for k, v in sorted(args.items())) if isinstance(args, dict) else ()


def _differing(runs: Sequence[RunRow]) -> list[str]:
    """The arguments whose values differ among ``runs`` (one router's variants), as ``k=v`` text."""
    keys = sorted({k for r in runs for k, _ in r.variant})
    values = [dict(r.variant) for r in runs]
    return [
        ", ".join(f"{k}={v[k]}" for k in keys if k in v and len({str(x.get(k)) for x in values}) > 1) for v in values
    ]


def _ran_results(store: _Store, ids: Sequence[str]) -> tuple[dict[str, list[ExampleResult]], dict[str, int]]:
    """Each run's results that actually ran, and how many stored examples never started.

    An example the deadline kept from starting says nothing about its router: counting it as a
    failure would turn a cut-off into a difference between routers.
    """
    results: dict[str, list[ExampleResult]] = {}
    not_run: dict[str, int] = {}
    for r in ids:
        stored = store.results(r)
        results[r] = [x for x in stored if did_run(x)]
        not_run[r] = len(stored) - len(results[r])
    return results, not_run


def _pair_tests(
    a: RunRow,
    b: RunRow,
    res_a: list[ExampleResult],
    res_b: list[ExampleResult],
    scorers: Sequence[str],
    n_resamples: int,
    seed: int,
) -> list[PairTest]:
    by_a = {(r.example_id, r.attempt): r for r in res_a}
    by_b = {(r.example_id, r.attempt): r for r in res_b}
    common = sorted(by_a.keys() & by_b.keys())
    tests = []
    for s in scorers:
        keys = [k for k in common if by_a[k].value(s) is not None and by_b[k].value(s) is not None]
        va = [float(by_a[k].value(s)) for k in keys]  # type: ignore[arg-type]
        vb = [float(by_b[k].value(s)) for k in keys]  # type: ignore[arg-type]
        power = _power_figures(va, vb)
        # turns of one conversation are resampled together (a single request is its own cluster)
        clusters = [cluster_of(by_a[k]) for k in keys]
        conversations = len({c for k, c in zip(keys, clusters, strict=True) if by_a[k].conversation})
        if keys:
            mc = mcnemar_exact([v >= _CORRECT for v in va], [v >= _CORRECT for v in vb])
            diff, low, high, p_boot = paired_cluster_bootstrap_diff(
                va, vb, clusters, n_resamples=n_resamples, seed=seed
            )
            mc_p, b01, b10 = mc.p_value, mc.b01, mc.b10
        else:
            diff = low = high = p_boot = mc_p = math.nan
            b01 = b10 = 0
        binary = all(v in (0.0, 1.0) for v in [*va, *vb])
        if binary and not conversations:
            test, p_value = "McNemar", mc_p
        else:
            test = "sign-flip"
            p_value = paired_sign_flip_p(va, vb, clusters, seed=seed) if keys else math.nan
        tests.append(
            PairTest(
                run_a=a.run_id,
                run_b=b.run_id,
                label_a=a.label,
                label_b=b.label,
                scorer=s,
                n_common=len(common),
                n=len(keys),
                rate_a=_mean(va),
                rate_b=_mean(vb),
                diff=float(diff),
                diff_low=float(low),
                diff_high=float(high),
                bootstrap_p=float(p_boot),
                mcnemar_p=float(mc_p),
                b01=b01,
                b10=b10,
                **power,
                conversations=conversations,
                test=test,
                p_value=float(p_value),
            )
        )
    return tests


def _power_figures(va: Sequence[float], vb: Sequence[float]) -> dict[str, Any]:
    """``mdd`` and ``n_for_target`` of one paired sample (empty: NaN and 0)."""
    if not va:
        return {}
    det = min_detectable_diff(va, vb)
    return {"mdd": det.mdd, "n_for_target": n_needed(TARGET_DIFF, det.sd)}


def _deciding_p(t: PairTest) -> float:
    """The p-value that decides a pair: its one test's (:attr:`PairTest.test`)."""
    return t.p_value


def _significant(t: PairTest) -> bool:
    """The pair's one test (McNemar for 0/1 rates of single requests, else sign-flip) gives p < ALPHA."""
    p = _deciding_p(t)
    return t.n > 0 and math.isfinite(p) and p < ALPHA


def verdicts(c: Comparison) -> list[str]:
    """One plain-words line per rate: which pairs differ significantly, which cannot be told apart.

    A pair is significant when its test's p < :data:`ALPHA`; otherwise the line gives the smallest
    difference this sample could have detected (80 % power) and the pairs a difference of
    :data:`TARGET_DIFF` would need, so "no significant difference" is not read as "equal".
    """
    names = dict(zip([r.run_id for r in c.runs], _run_names(c), strict=True))
    lines = []
    for s in c.scorers:
        tests = [t for t in c.pairs if t.scorer == s and t.n > 0]
        if not tests:
            continue
        sig = [t for t in tests if _significant(t)]
        same = [t for t in tests if not _significant(t)]
        parts = [
            f"{names[t.run_b]} {'better' if t.diff > 0 else 'worse'} than {names[t.run_a]} "
            f"({t.diff:+.2f}, p={_fmt_p(_deciding_p(t))})"
            for t in sig
        ]
        if same:
            worst = max(t.mdd for t in same)
            pairs = ", ".join(f"{names[t.run_b]} vs {names[t.run_a]} ({t.diff:+.2f})" for t in same)
            detect = "no difference at all" if worst > 1 else f"only differences of {worst:.2f} or more"
            parts.append(
                f"cannot tell apart {pairs}: with n={max(t.n for t in same)} this detects {detect} "
                f"(80% power, paired); {TARGET_DIFF:.2f} would need n={max(t.n_for_target for t in same)}"
            )
        lines.append(f"{s}: " + "; ".join(parts) + ".")
    return lines


def compare_runs(
    store: _Store,
    run_ids: Sequence[str],
    *,
    scorers: Sequence[str] = DEFAULT_COMPARE_SCORERS,
    pairing: str = "first",
    n_resamples: int = 2000,
    seed: int = 0,
    cost: str = "cold",
) -> Comparison:
    """Compare stored runs: rates with CIs, latency and cost per run, paired tests between runs.

    Args:
        store: A :class:`~routerlab.eval.store.ResultsStore` (anything with ``runs()`` and ``results()``).
        run_ids: Runs to compare, in display order; the first is the reference for pairing.
        scorers: Rates to show and test.
        pairing: ``first`` (each run against the first) or ``all`` (every pair).
        n_resamples: Paired-bootstrap resamples.
        seed: Bootstrap seed (the same input always gives the same CIs).
        cost: Which latency and tokens the table shows: ``cold`` (default; each LM call as it
            cost when first computed, so a router's figures do not depend on which router ran
            first) or ``observed`` (what this run paid, cache hits free). Both are in the rows.

    Raises:
        ConfigError: For no run ids, an unknown run, an unknown pairing or cost basis.
    """
    if cost not in COSTS:
        raise ConfigError(
            f"unknown cost basis {cost!r}",
            expected=" or ".join(COSTS),
            found=repr(cost),
            fix="pass --cost cold (as first computed) or --cost observed (what this run paid)",
        )
    if pairing not in PAIRINGS:
        raise ConfigError(
            f"unknown pairing {pairing!r}",
            expected=" or ".join(PAIRINGS),
            found=repr(pairing),
            fix="pairing='first' tests each run against the first; 'all' tests every pair",
        )
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        raise ConfigError(
            "nothing to compare",
            expected="one or more run ids",
            found="none",
            fix="pass run ids (SESSION.ROUTER) or a session id",
        )
    known = store.runs()
    meta = {row["run_id"]: row for row in known.to_dict("records")} if len(known) else {}
    missing = [r for r in ids if r not in meta]
    if missing:
        raise ConfigError(
            f"unknown run(s) {missing}",
            expected="run ids from the results store",
            found=f"latest runs: {list(meta)[-5:]}",
            fix="check the ids (routerlab compare SESSION lists a whole session) or the --store path",
        )
    labels = _labels([str(meta[r]["router"]) for r in ids])
    results, not_run = _ran_results(store, ids)
    # custom scorers a run was scored with (run --scorer) join the default columns
    scorers = scored_names([x for rs in results.values() for x in rs], first=scorers)
    rows = [
        replace(
            _run_row(
                r, str(meta[r]["router"]), str(meta[r]["lm"]), labels[str(meta[r]["router"])], results[r], scorers
            ),
            not_run=not_run[r],
            gold_failed=gold_failures(results[r])[0],
            gold_failed_first=gold_failures(results[r])[1] or "",
            variant=_variant(meta[r]),
        )
        for r in ids
    ]
    if pairing == "first":
        pairs = [(rows[0], other) for other in rows[1:]]
    else:
        pairs = list(itertools.combinations(rows, 2))
    tests = [
        t for a, b in pairs for t in _pair_tests(a, b, results[a.run_id], results[b.run_id], scorers, n_resamples, seed)
    ]
    risk = {r: risk_summary(results[r], seed=seed) for r in ids}
    conversations = {r: conversation_summary(results[r]) for r in ids}
    outcomes = {r: outcome_summary(results[r]) for r in ids}
    routers = {r: str(meta[r]["router"]) for r in ids}
    with_turns = {r: results[r] for r in ids if outcomes[r] is not None}
    return Comparison(
        outcomes=outcomes,
        served_vs_baseline=served_diffs(with_turns, routers, seed=seed),
        runs=rows,
        pairs=tests,
        scorers=tuple(scorers),
        pairing=pairing,
        cost=cost,
        risk=risk,
        conversations=conversations,
    )


# -- rendering ---------------------------------------------------------------------------------


def _fmt_rate(r: Rate) -> str:
    if r.n == 0 or not math.isfinite(r.value):
        return "n/a"
    return f"{r.value:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]" + empty_note(r)


def _fmt_num(value: float, digits: int = 2) -> str:
    return "-" if not math.isfinite(value) else f"{value:.{digits}f}"


def _fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _fmt_diff(t: PairTest) -> str:
    if t.n == 0:
        return "n/a"
    return f"{t.diff:+.2f} [{t.diff_low:+.2f}, {t.diff_high:+.2f}]"


def _run_names(c: Comparison) -> list[str]:
    """Display names of the runs: the label, plus the run id when two runs share a router."""
    labels = [r.label for r in c.runs]
    variants: dict[str, str] = {}
    for label in set(labels):
        group = [r for r in c.runs if r.label == label]
        variants |= dict(zip([r.run_id for r in group], _differing(group), strict=True))
    names = [r.label if labels.count(r.label) == 1 else f"{r.label} ({variants[r.run_id] or r.run_id})" for r in c.runs]
    # two variants with the same arguments (seeds, LMs) still need their run ids
    return [n if names.count(n) == 1 else f"{r.label} ({r.run_id})" for n, r in zip(names, c.runs, strict=True)]


def _display_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    # short headers keep the table inside a terminal; the note below the table spells them out
    header = ["router", "lm", "n", *c.scorers, "diverted", "p50 s", "p95 s", "router tok", "agent tok", "LM calls"]
    k = max((r.attempts_k for r in c.runs), default=1)
    if k > 1:
        header += [f"pass^{k}", f"pass@{k}"]
    cold = c.cost == "cold"
    body = [
        [
            name,
            r.lm,
            str(r.n),
            *[_fmt_rate(r.rates[s]) for s in c.scorers],
            r.diverted.fmt(),
            _fmt_num(r.cold_latency_p50_s if cold else r.latency_p50_s),
            _fmt_num(r.cold_latency_p95_s if cold else r.latency_p95_s),
            _fmt_num(r.cold_router_tokens_per_ex if cold else r.router_tokens_per_ex, 0),
            _fmt_num(r.cold_subagent_tokens_per_ex if cold else r.subagent_tokens_per_ex, 0),
            _fmt_num(r.lm_calls_per_ex, 1),
            *([_fmt_num(r.pass_hat_k), _fmt_num(r.pass_at_k)] if k > 1 else []),
        ]
        for name, r in zip(_run_names(c), c.runs, strict=True)
    ]
    return _with_not_run(c, header, body)


def _with_not_run(c: Comparison, header: list[str], body: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Add a "not run" column after ``n`` when any run has examples that never started."""
    if not any(r.not_run for r in c.runs):
        return header, body
    at = header.index("n") + 1
    return (
        [*header[:at], "not run", *header[at:]],
        [[*row[:at], str(r.not_run), *row[at:]] for row, r in zip(body, c.runs, strict=True)],
    )


def _test_names(c: Comparison) -> str:
    """The deciding test(s) of the pairs, for the p column's header (``McNemar``)."""
    return " / ".join(dict.fromkeys(t.test for t in c.pairs if t.n)) or "McNemar"


def _display_pairs(c: Comparison) -> tuple[list[str], list[list[str]]]:
    names = dict(zip([r.run_id for r in c.runs], _run_names(c), strict=True))
    mixed = len({t.test for t in c.pairs if t.n}) > 1
    header = [
        "compared (A vs B)",
        "rate",
        "common",
        "n",
        "A",
        "B",
        "A - B [95% CI]",
        f"{_test_names(c)} p",
        *(["test"] if mixed else []),
        "A/B right alone",
        "MDD",
        f"n for {TARGET_DIFF:.2f}",
    ]
    body = [
        [
            f"{names[t.run_b]} vs {names[t.run_a]}",
            t.scorer,
            str(t.n_common),
            str(t.n),
            f"{names[t.run_b]} {_fmt_num(t.rate_b)}",
            f"{names[t.run_a]} {_fmt_num(t.rate_a)}",
            _fmt_diff(t),
            _fmt_p(t.p_value),
            *([t.test] if mixed else []),
            f"{t.b01}/{t.b10}",
            _fmt_mdd(t.mdd),
            str(t.n_for_target) if t.n else "-",
        ]
        for t in c.pairs
    ]
    return header, body


def _pairs_note(c: Comparison) -> str:
    ref = "each router (A) vs the first (B)" if c.pairing == "first" else "every pair of runs"
    return (
        f"Paired on the examples both runs have ({ref}; 'common' counts them, 'n' those the rate applies "
        "to). A and B: each router's rate over those n. One test decides significance (p < 0.05): McNemar's "
        "exact test on per-example correctness (score = 1) for 0/1 rates of single requests; the paired "
        "sign-flip test, flipping whole conversations, for graded rates and turns of conversations. "
        "A - B: the difference with a 95% paired-bootstrap interval (the interval only; too narrow at small n). "
        "A/B right alone: examples only A got right / only B. MDD: the smallest difference this n detects "
        f"with 80% power (paired, 5% level); n for {TARGET_DIFF:.2f}: pairs needed to detect {TARGET_DIFF:.2f}."
        + (
            " MDD assumes independent pairs: optimistic for turns of conversations."
            if any(t.conversations for t in c.pairs)
            else ""
        )
    )


def _fmt_mdd(mdd: float) -> str:
    if not math.isfinite(mdd):
        return "-"
    return ">1" if mdd > 1 else f"{mdd:.2f}"


_RUNS_NOTE = (
    "Rates with 95% bootstrap CIs; diverted: share of data questions (gold sql) the router sent to "
    "chat, refuse, clarify or abstain, lower is better (sent away/data questions); "
    "p50/p95: end-to-end latency in seconds; router tok, agent tok "
    "(sub-agents) and LM calls are per example. 'not run': examples that never started (left out "
    "of n, every rate and every paired test; --resume runs them)."
)

#: what the latency and token columns mean, per cost basis
_COST_NOTE = {
    "cold": "Latency and tokens at cold cost: every LM call as it cost when first computed, so they do "
    "not depend on which router ran first or what was cached (--cost observed: what this run paid).",
    "observed": "Latency and tokens as observed: cached LM calls were free, so a router that ran after "
    "another may look cheaper (--cost cold: as first computed).",
}


def _runs_note(c: Comparison) -> str:
    k = max((r.attempts_k for r in c.runs), default=1)
    passes = (
        f" pass^{k}: share of examples whose {k} attempts all succeeded (success = 1); pass@{k}: at least one did."
        if k > 1
        else ""
    )
    unknown = sum(r.cold_unknown_calls for r in c.runs)
    extra = (
        f" {unknown} cached call(s) have no recorded cold cost (cached before cold costs were kept): "
        "cold figures are a lower bound."
        if c.cost == "cold" and unknown
        else ""
    )
    return f"{_RUNS_NOTE} {_COST_NOTE[c.cost]}{extra}{passes}{_gold_note(c)}"


def _gold_note(c: Comparison) -> str:
    """Runs with examples whose gold SQL cannot run: how many, the first cause (never silent)."""
    return "".join(
        f" {r.label}: {r.gold_failed} example(s) have gold SQL that cannot run, EX counts them "
        f"as docs/metrics.md says (first: {r.gold_failed_first})."
        for r in c.runs
        if r.gold_failed
    )


def _markdown_table(header: list[str], body: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    align = ["---" if i < 2 else "---:" for i in range(len(header))]
    return "\n".join([line(header), "| " + " | ".join(align) + " |", *(line(b) for b in body)])


def _render_markdown(c: Comparison) -> str:
    header, body = _display_rows(c)
    parts = [_runs_note(c), "", _markdown_table(header, body)]
    if c.pairs:
        p_header, p_body = _display_pairs(c)
        parts += ["", _pairs_note(c), "", _markdown_table(p_header, p_body)]
        parts += ["", *(f"- {line}" for line in verdicts(c))]
    return "\n".join(parts) + "\n"


def _render_table(c: Comparison, width: int | None, pairs: bool = True) -> str:
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width or shutil.get_terminal_size((160, 24)).columns,
        force_terminal=False,
        color_system=None,
    )
    header, body = _display_rows(c)
    # the router label and a rate with its CI read as one value: never cut or split them
    keep_whole = {"router", "diverted", *c.scorers}

    def build(cols: list[int], caption: str) -> Table:
        # plain Text, never markup: a note quoting the guard ("[only_select]") must print as written
        table = Table(title="Router comparison", caption=Text(caption))
        for i in cols:
            col = header[i]
            table.add_column(
                col,
                justify="left" if i < 2 else "right",
                no_wrap=col in keep_whole or col == "n",
                min_width=max(len(row[i]) for row in body) if (col in keep_whole or col == "n") and body else None,
            )
        for row in body:
            table.add_row(*(Text(row[i]) for i in cols))
        return table

    # Rich squeezes columns it cannot fit down to nothing (a blank "n" column reads as missing
    # data): leave out whole columns instead, cheapest to lose first, and say which
    cols = list(range(len(header)))
    droppable = [i for i in reversed(cols) if header[i] not in keep_whole and header[i] not in ("n", "lm")]
    if "lm" in header:
        droppable.append(header.index("lm"))
    # then the rates from the right; the router, n and the first (headline) rate always stay
    rates = [i for i in cols if header[i] in keep_whole and header[i] != "router"]
    droppable += list(reversed(rates[1:]))
    left_out: list[str] = []
    table = build(cols, _runs_note(c))

    def too_wide(t: Table) -> bool:
        # measured unbounded: Rich clamps a table's measurement to the width it is given
        return Measurement.get(console, console.options.update_width(10_000), t).minimum > console.width

    while droppable and too_wide(table):
        i = droppable.pop(0)
        cols.remove(i)
        left_out.insert(0, header[i])
        note = (
            f"{_runs_note(c)} Left out to fit {console.width} columns: {', '.join(left_out)}"
            " (--format markdown shows every column)."
        )
        table = build(cols, note)
    console.print(table)
    if c.pairs and pairs:
        p_header, p_body = _display_pairs(c)
        pair_table = Table(title="Paired differences", caption=Text(_pairs_note(c)))
        for i, col in enumerate(p_header):
            pair_table.add_column(col, justify="left" if i < 2 else "right")
        for row in p_body:
            pair_table.add_row(*(Text(cell) for cell in row))
        console.print(pair_table)
        for line in verdicts(c):
            console.print(line, highlight=False, markup=False)
    return buf.getvalue()


def _render_csv(c: Comparison) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    rate_cols = [f"{s}{suffix}" for s in c.scorers for suffix in ("", "_ci_low", "_ci_high", "_n")]
    writer.writerow(
        [
            "run_id",
            "router",
            "label",
            "baseline",
            "lm",
            "n",
            *rate_cols,
            "diverted",
            "diverted_ci_low",
            "diverted_ci_high",
            "diverted_n",
            "latency_p50_s",
            "latency_p95_s",
            "router_tokens_per_ex",
            "subagent_tokens_per_ex",
            "lm_calls_per_ex",
            "cold_latency_p50_s",
            "cold_latency_p95_s",
            "cold_router_tokens_per_ex",
            "cold_subagent_tokens_per_ex",
            "cold_unknown_calls",
            "attempts_k",
            "pass_hat_k",
            "pass_at_k",
            "not_run",
        ]
    )
    for r in c.runs:
        rates = [v for s in c.scorers for v in (r.rates[s].value, r.rates[s].ci_low, r.rates[s].ci_high, r.rates[s].n)]
        writer.writerow(
            _no_nan(
                [
                    r.run_id,
                    r.router,
                    r.label,
                    r.baseline,
                    r.lm,
                    r.n,
                    *rates,
                    r.diverted.share,
                    r.diverted.ci_low,
                    r.diverted.ci_high,
                    r.diverted.n,
                    r.latency_p50_s,
                    r.latency_p95_s,
                    r.router_tokens_per_ex,
                    r.subagent_tokens_per_ex,
                    r.lm_calls_per_ex,
                    r.cold_latency_p50_s,
                    r.cold_latency_p95_s,
                    r.cold_router_tokens_per_ex,
                    r.cold_subagent_tokens_per_ex,
                    r.cold_unknown_calls,
                    r.attempts_k,
                    r.pass_hat_k,
                    r.pass_at_k,
                    r.not_run,
                ]
            )
        )
    if c.pairs:
        # a second table after a blank line: read each with pandas.read_csv(..., nrows=/skiprows=)
        buf.write("\n")
        names = list(asdict(c.pairs[0]))
        writer.writerow(names)
        for t in c.pairs:
            writer.writerow(_no_nan(list(asdict(t).values())))
    return buf.getvalue()


def csv_tables(comparison: Comparison) -> dict[str, str]:
    """The comparison as separate CSV texts, one header each: ``runs`` and, with pairs, ``pairs``.

    Each reads back with a plain ``pandas.read_csv`` (one stream holding both tables would make
    the second header a data row).
    """
    tables = {"runs": _render_csv(replace(comparison, pairs=[]))}
    if comparison.pairs:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(list(asdict(comparison.pairs[0])))
        for t in comparison.pairs:
            writer.writerow(_no_nan(list(asdict(t).values())))
        tables["pairs"] = buf.getvalue()
    return tables


def render(comparison: Comparison, fmt: str = "table", *, width: int | None = None, pairs: bool = True) -> str:
    """Render a comparison.

    Args:
        comparison: From :func:`compare_runs`.
        fmt: ``table`` (rich, for terminals), ``markdown``, ``csv`` (the runs table, then a blank
            line and the pairs table, numbers unformatted) or ``json`` (everything, NaN as null).
        width: Terminal width for ``table`` (default: the current terminal's).
        pairs: With ``table``: also the paired-differences table and its summary lines (a caller
            that prints its own verdict leaves them to ``routerlab compare``).

    Raises:
        ConfigError: For an unknown format.
    """
    if fmt == "json":
        return json.dumps(comparison.to_dict(), indent=2)
    if fmt == "csv":
        return _render_csv(comparison)
    labels = {r.run_id: r.label for r in comparison.runs}
    if fmt == "markdown":
        return (
            _render_markdown(comparison)
            + render_risk(labels, comparison.risk, "markdown")
            + render_conversations(labels, comparison.conversations, "markdown")
            + render_outcomes(labels, comparison.outcomes, comparison.served_vs_baseline, "markdown")
        )
    if fmt == "table":
        return (
            _render_table(comparison, width, pairs)
            + render_risk(labels, comparison.risk, "table")
            + render_conversations(labels, comparison.conversations, "table")
            + render_outcomes(labels, comparison.outcomes, comparison.served_vs_baseline, "table")
        )
    raise ConfigError(
        f"unknown format {fmt!r}",
        expected=", ".join(FORMATS),
        found=repr(fmt),
        fix="pass --format table, markdown, csv or json",
    )
