"""Build the one model of a session's comparison (:class:`~routerlab.eval.analysis.model.SessionComparison`).

Read from the results store.

Every number a view shows is computed here, once: each part's rates with intervals, one paired
test per pair of distinct routers, the verdicts, failures, disagreements, per-intent rates,
confusion counts and costs. Nothing here depends on which router ran first: results are read in
example order, routers are ordered by their figures (then name), costs are medians and tails,
and a router whose decisions repeat another's example for example is marked ``same_as`` instead
of being tested against it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from routerlab.agents.errors import ConfigError
from routerlab.agents.routing import classifying_decision
from routerlab.eval.analysis.measures import (
    CHAIN_VALID,
    DIVERTED,
    EX,
    MEASURES,
    PIPELINE_ROUTE,
    ROUTING_ACCURACY,
    SERVED,
    SUCCESS,
    Measure,
    measure,
)
from routerlab.eval.analysis.model import (
    Cost,
    Decision,
    Disagreement,
    Failure,
    Interval,
    PairTest,
    Part,
    RouterFigures,
    SessionComparison,
    Verdict,
)
from routerlab.eval.confidence_calibration import calibration_summary, run_calibration
from routerlab.eval.conversation_metrics import conversation_summary
from routerlab.eval.metrics import cold_latency, gold_failures, pass_k_summary
from routerlab.eval.outcomes import outcome_summary, served
from routerlab.eval.rate import cluster_of
from routerlab.eval.risk import risk_summary
from routerlab.eval.robustness import diversion_of_results
from routerlab.eval.scorers import DEFAULT_SCORERS
from routerlab.eval.scoring import ExampleResult, did_run
from routerlab.eval.stats import (
    cluster_bootstrap_ci,
    mcnemar_exact,
    min_detectable_diff,
    paired_cluster_bootstrap_diff,
    paired_sign_flip_p,
)
from routerlab.eval.store import END_TO_END, PARTS, ROUTING, session_of
from routerlab.eval.verdict import ALPHA, axis_verdict

__all__ = ["build_comparison", "expand_run_ids", "question_of", "reason_of"]

#: a value at least this close to 1 counts as right
_RIGHT = 1.0 - 1e-9
#: what one example of each part is
_UNITS = {ROUTING: "first decisions", END_TO_END: "whole turns"}
#: routers that are references, never chosen (the registry's BASELINES, kept here so building
#: a comparison does not import every router and DSPy)
_BASELINES = frozenset({"always_sql", "oracle", "random", "single_call", "single_call_fields"})
_SEED = 0


def _value_of(m: Measure) -> Callable[[ExampleResult], float | None]:
    """How one example's value of ``m`` is read from its stored result."""
    if m is SERVED:
        return served
    scorer = m.scorer
    return lambda r: r.value(scorer)


def _interval(
    results: Sequence[ExampleResult], value: Callable[[ExampleResult], float | None], scorer: str = ""
) -> Interval | None:
    """The rate of ``value`` with its interval; ``scorer``: the score whose empty-equals-empty matches are counted."""
    kept = [(float(v), cluster_of(r)) for r in results if (v := value(r)) is not None]
    if not kept:
        return None
    values = [v for v, _ in kept]
    low, high = cluster_bootstrap_ci(values, [c for _, c in kept], seed=_SEED)
    empty = sum(
        1
        for r in results
        if (v := value(r)) is not None and v >= _RIGHT and (s := r.scores.get(scorer)) and s.detail.get("empty_match")
    )
    return Interval(
        float(np.mean(values)), float(low), float(high), len(values), sum(v >= _RIGHT for v in values), empty
    )


def _diverted(results: Sequence[ExampleResult]) -> Interval | None:
    d = diversion_of_results(results)
    if not d.n:
        return None
    return Interval(float(d.share), float(d.ci_low), float(d.ci_high), d.n, d.diverted)


def _rates(results: Sequence[ExampleResult], measures: Sequence[Measure]) -> dict[str, Interval]:
    out: dict[str, Interval] = {}
    for m in measures:
        r = _diverted(results) if m is DIVERTED else _interval(results, _value_of(m), m.scorer or EX.scorer)
        if r is not None:
            out[m.key] = r
    return out


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def _cost(part: str, results: Sequence[ExampleResult]) -> Cost:
    """Medians and tails of latency (ms per decision, or cold s per request), LM use per example."""
    if part == ROUTING:
        unit, latency = "ms per decision", [1000 * r.latency_s for r in results]
    else:
        unit, latency = "s per request", [cold_latency(r) for r in results]
    n = max(len(results), 1)
    return Cost(
        unit=unit,
        p50=_percentile(latency, 50),
        p95=_percentile(latency, 95),
        lm_calls=sum(r.router_usage.lm_calls + r.subagent_usage.lm_calls for r in results) / n,
        router_lm=sum(r.router_usage.cold_latency_s for r in results) / n * (1000 if part == ROUTING else 1),
        tokens=sum(
            u.cold_prompt_tokens + u.cold_completion_tokens for r in results for u in (r.router_usage, r.subagent_usage)
        )
        / n,
    )


def _key(r: ExampleResult) -> str:
    return r.example_id if r.attempt == 0 else f"{r.example_id}#{r.attempt}"


def question_of(r: ExampleResult) -> str:
    """The request's text: recorded with a first decision, else the trace's first user message."""
    score = r.scores.get(ROUTING_ACCURACY.scorer)
    if score is not None and score.detail.get("question"):
        return str(score.detail["question"])
    if r.trace is not None:
        return next((str(m.get("content")) for m in r.trace.messages if m.get("role") == "user"), "")
    return ""


def reason_of(r: ExampleResult) -> tuple[str, float | None]:
    """How the router decided (method) and how sure it was, as recorded."""
    score = r.scores.get(ROUTING_ACCURACY.scorer)
    if score is not None:
        conf = score.detail.get("confidence")
        return str(score.detail.get("method") or ""), None if conf is None else float(conf)
    if r.trace is not None and r.trace.route_decisions:
        d = classifying_decision(r.trace.route_decisions) or r.trace.route_decisions[0]
        conf = d.get("confidence")
        return str(d.get("method") or ""), None if conf is None else float(conf)
    return "", None


def _failures(results: Sequence[ExampleResult], value: Callable[[ExampleResult], float | None]) -> list[Failure]:
    out = []
    for r in results:
        v = value(r)
        if v is not None and v >= _RIGHT:
            continue
        if v is None and r.outcome == "ok":
            continue  # the measure does not apply to this example
        method, confidence = reason_of(r)
        reasons = [s.reason for s in r.scores.values() if s.value is not None and s.value < _RIGHT and s.reason]
        out.append(
            Failure(
                example_id=_key(r),
                intent=r.intent,
                decision=r.predicted_intent,
                method=method,
                confidence=confidence,
                question=question_of(r),
                reason=r.error_class or (reasons[0] if reasons else r.outcome),
            )
        )
    return out


def _figures(part: str, results: Sequence[ExampleResult]) -> dict[str, float]:
    """The further figures that apply (:attr:`RouterFigures.figures`).

    Calibration and conversations (routing: routing accuracy per turn position and over whole
    conversations); end to end also answer or abstain, gold SQL that cannot run, the asking
    account and pass^k.
    """
    if part == ROUTING:
        # a first decision keeps its confidence with its score (it has no trace)
        pairs = [(conf, v >= _RIGHT) for r in results if (v := r.value(ROUTING_ACCURACY.scorer)) is not None
                 and (conf := reason_of(r)[1]) is not None]  # fmt: skip
        calibration = calibration_summary([c for c, _ in pairs], [h for _, h in pairs])
    else:
        calibration = run_calibration(results)
    out: dict[str, float] = {}
    if calibration.get("n"):
        out |= {"calibration.ece": calibration["ece"], "calibration.n": float(calibration["n"])}
    if part == ROUTING:
        # turns of conversations: routing accuracy per turn position and over whole conversations
        if (c := conversation_summary(results, (ROUTING_ACCURACY.scorer,))) is not None:
            named = {k.replace(ROUTING_ACCURACY.scorer, ROUTING_ACCURACY.key): v for k, v in c.metrics().items()}
            out |= {k: v for k, v in named.items() if not k.startswith("question.")}  # the rate itself
        return {key: float(v) for key, v in sorted(out.items()) if math.isfinite(v)}
    out |= risk_summary(results, seed=_SEED).metrics()
    if (failed := gold_failures(results)[0]) > 0:
        out["gold_failed"] = float(failed)
    if (c := conversation_summary(results)) is not None:
        out |= c.metrics()
    if (o := outcome_summary(results)) is not None:
        out |= o.asking.metrics()
    if (k := pass_k_summary(results, "success")) is not None:
        out |= {"attempts_k": float(k.k), "pass_hat_k": k.pass_hat_k, "pass_at_k": k.pass_at_k}
    return {key: float(v) for key, v in sorted(out.items()) if math.isfinite(v)}


def _confusion(results: Sequence[ExampleResult]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in results:
        row = out.setdefault(r.intent, {})
        decided = r.predicted_intent or "none"
        row[decided] = row.get(decided, 0) + 1
    return {g: dict(sorted(row.items())) for g, row in sorted(out.items())}


def _per_intent(
    results: Sequence[ExampleResult], value: Callable[[ExampleResult], float | None]
) -> dict[str, Interval]:
    intents = sorted({r.intent for r in results})
    out = {}
    for intent in intents:
        r = _interval([x for x in results if x.intent == intent], value)
        if r is not None:
            out[intent] = r
    return out


def _signature(results: Sequence[ExampleResult], measures: Sequence[Measure]) -> tuple[Any, ...]:
    """What a router did, example for example: its decisions and every measure's value."""
    values = [_value_of(m) for m in measures if m is not DIVERTED]
    return tuple((_key(r), r.predicted_intent, *(v(r) for v in values)) for r in results)


def _pair(
    measure: Measure, a: str, b: str, res_a: Sequence[ExampleResult], res_b: Sequence[ExampleResult]
) -> PairTest | None:
    value = _value_of(measure)
    by_b = {_key(r): r for r in res_b}
    rows = [
        (float(x), float(y), cluster_of(r))
        for r in res_a
        if (o := by_b.get(_key(r))) is not None and (x := value(r)) is not None and (y := value(o)) is not None
    ]
    if not rows:
        return None
    va, vb, clusters = [x[0] for x in rows], [x[1] for x in rows], [x[2] for x in rows]
    if np.mean(va) < np.mean(vb) or (np.mean(va) == np.mean(vb) and b < a):
        a, b, va, vb = b, a, vb, va  # the higher rate first: the difference reads as a gain
    # the bootstrap's difference is its second sample minus its first: a - b
    diff, low, high, _ = paired_cluster_bootstrap_diff(vb, va, clusters, seed=_SEED)
    clustered = any(r.conversation for r in res_a)
    binary = all(v in (0.0, 1.0) for v in [*va, *vb])
    mc = mcnemar_exact([v >= _RIGHT for v in va], [v >= _RIGHT for v in vb])
    if binary and not clustered:
        test, p = "McNemar", mc.p_value
    else:
        test, p = "sign-flip", paired_sign_flip_p(va, vb, clusters, seed=_SEED)
    mdd = min_detectable_diff(va, vb).mdd
    return PairTest(
        measure=measure.key,
        a=a,
        b=b,
        n=len(rows),
        rate_a=float(np.mean(va)),
        rate_b=float(np.mean(vb)),
        diff=float(diff),
        low=float(low),
        high=float(high),
        test=test,
        p=float(p),
        a_only=sum(x >= _RIGHT and y < _RIGHT for x, y in zip(va, vb, strict=True)),
        b_only=sum(y >= _RIGHT and x < _RIGHT for x, y in zip(va, vb, strict=True)),
        mdd=float(mdd),
        significant=bool(p < ALPHA),
    )


def _verdict(
    measure: Measure,
    results: Mapping[str, Sequence[ExampleResult]],
    costs: Mapping[str, Cost],
    baselines: Sequence[str],
) -> Verdict | None:
    value = _value_of(measure)
    outcomes = {
        name: {_key(r): x >= _RIGHT for r in rs if (x := value(r)) is not None} for name, rs in sorted(results.items())
    }
    clusters = {_key(r): r.conversation for rs in results.values() for r in rs if r.conversation}
    v = axis_verdict(
        measure.name,
        outcomes,
        {n: c.p50 for n, c in costs.items()},
        cost_label="",
        baselines=tuple(baselines),
        seed=_SEED,
        tails={n: c.p95 for n, c in costs.items()},
        clusters=clusters,
    )
    if v is None:
        return None
    mdd = v.mdd if math.isfinite(v.mdd) else 99.0
    return Verdict(
        measure=measure.key,
        n=v.n,
        smoke=v.smoke,
        best=v.best,
        value=v.value,
        low=v.ci[0],
        high=v.ci[1],
        better_than=dict(v.better_than),
        not_told_apart=dict(v.not_told_apart),
        mdd=float(mdd),
        cheapest=v.cheapest,
        references=dict(sorted(v.references.items())),
    )


def _disagreements(
    results: Mapping[str, Sequence[ExampleResult]], value: Callable[[ExampleResult], float | None]
) -> list[Disagreement]:
    """Examples the routers of ``results`` decided differently, each with every router's decision and reason."""
    if len(results) < 2:
        return []
    by_router = {name: {_key(r): r for r in rs} for name, rs in results.items()}
    common = sorted(set.intersection(*(set(d) for d in by_router.values())))
    out = []
    for key in common:
        rows = {name: d[key] for name, d in by_router.items()}
        if len({r.predicted_intent for r in rows.values()}) < 2:
            continue
        first = next(iter(rows.values()))
        decisions = {}
        for name, r in rows.items():
            method, confidence = reason_of(r)
            v = value(r)
            decisions[name] = Decision(r.predicted_intent, method, confidence, v is not None and v >= _RIGHT)
        out.append(Disagreement(key, first.intent, question_of(first), decisions))
    return out


def _measures(part: str, results: Mapping[str, Sequence[ExampleResult]]) -> tuple[list[Measure], list[Measure]]:
    """The measures that apply to a part (some router has a value), and the ones its verdict judges."""
    every = [r for rs in results.values() for r in rs]

    def applies(m: Measure) -> bool:
        if m is DIVERTED:
            return diversion_of_results(every).n > 0
        value = _value_of(m)
        return any(value(r) is not None for r in every)

    if part == ROUTING:
        judged = [ROUTING_ACCURACY]
        others = [DIVERTED]
    else:
        # what the user got: where some turn expects a question, served counts asking back or
        # answering correctly; otherwise success is that measure
        asks = any(r.intent == "clarify" for r in every)
        judged = [SERVED, EX] if asks else [SUCCESS, EX]
        others = [SUCCESS, PIPELINE_ROUTE, CHAIN_VALID, DIVERTED]
    judged = [m for m in judged if applies(m)]
    # a scorer added with `run --scorer` gets a column of its own
    known = {m.scorer for m in MEASURES} | set(DEFAULT_SCORERS)
    custom = sorted({name for r in every for name in r.scores if name not in known}) if part != ROUTING else []
    others += [measure(name) for name in custom]
    return judged + [m for m in others if m not in judged and applies(m)], judged


def _arguments(run: Mapping[str, Any]) -> dict[str, str]:
    """A run's recorded router arguments as text (``{"threshold": "0.7"}``)."""
    try:
        params = json.loads(run.get("params") or "{}")
    except (TypeError, ValueError):
        return {}
    args = params.get("router", {}).get("args", {}) if isinstance(params, dict) else {}
    return {str(k): str(v) for k, v in sorted(args.items())} if isinstance(args, dict) else {}


def _names(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Router names of one part's runs; a router run twice is named by the arguments that differ (else its run id)."""
    routers = [str(r["router"]) for r in runs]
    args = [_arguments(r) for r in runs]
    names = []
    for i, (name, run) in enumerate(zip(routers, runs, strict=True)):
        if routers.count(name) == 1:
            names.append(name)
            continue
        group = [args[j] for j, other in enumerate(routers) if other == name]
        differ = [k for k in sorted({k for a in group for k in a}) if len({a.get(k) for a in group}) > 1]
        names.append(f"{name} ({', '.join(f'{k}={args[i][k]}' for k in differ if k in args[i]) or run['run_id']})")
    # two runs with the same arguments (seeds, LMs) still need their run ids
    return [n if names.count(n) == 1 else f"{routers[i]} ({runs[i]['run_id']})" for i, n in enumerate(names)]


def _build_part(part: str, runs: Sequence[Mapping[str, Any]], results: Mapping[str, list[ExampleResult]]) -> Part:
    names = _names(runs)
    by_name = {
        n: sorted((x for x in results[r["run_id"]] if did_run(x)), key=_key) for n, r in zip(names, runs, strict=True)
    }
    stored = {n: len(results[r["run_id"]]) for n, r in zip(names, runs, strict=True)}
    measures, judged = _measures(part, by_name)
    headline = judged[0] if judged else (measures[0] if measures else ROUTING_ACCURACY)
    value = _value_of(headline)
    costs = {n: _cost(part, rs) for n, rs in by_name.items()}
    baseline = {n: str(r["router"]) in _BASELINES for n, r in zip(names, runs, strict=True)}
    # a baseline repeating another router's decisions and scores is shown once, never tested
    # against it; a candidate router is always shown (and judged) itself
    signatures = {n: _signature(rs, measures) for n, rs in by_name.items()}
    same_as: dict[str, str | None] = {}
    for n in names:
        twins = sorted(
            (m for m in names if signatures[m] == signatures[n]), key=lambda m: (baseline[m], costs[m].lm_calls, m)
        )
        same_as[n] = twins[0] if baseline[n] and twins[0] != n else None
    distinct = [n for n in names if same_as[n] is None]
    rates = {n: _rates(by_name[n], measures) for n in names}

    def order(n: str) -> tuple[Any, ...]:
        r = rates[n].get(headline.key)
        return (same_as[n] is not None, -(r.value if r else -1.0), n)

    figures = [
        RouterFigures(
            router=n,
            run_id=str(r["run_id"]),
            baseline=baseline[n],
            same_as=same_as[n],
            status=str(r.get("status") or ""),
            n=len(by_name[n]),
            not_run=stored[n] - len(by_name[n]),
            rates=rates[n],
            per_intent=_per_intent(by_name[n], value),
            confusion=_confusion(by_name[n]),
            cost=costs[n],
            failures=_failures(by_name[n], value),
            figures=_figures(part, by_name[n]),
        )
        for n, r in zip(names, runs, strict=True)
    ]
    figures.sort(key=lambda f: order(f.router))
    ordered = [f.router for f in figures if f.same_as is None]
    pairs = [
        t
        for m in judged
        for a, b in combinations(ordered, 2)
        if (t := _pair(m, a, b, by_name[a], by_name[b])) is not None
    ]
    candidates = {n: by_name[n] for n in distinct}
    verdicts = [
        v for m in judged if (v := _verdict(m, candidates, costs, [n for n in distinct if baseline[n]])) is not None
    ]
    real = {n: by_name[n] for n in ordered if not baseline[n]}
    return Part(
        key=part,
        unit=_UNITS.get(part, part),
        measures=[m.key for m in measures],
        verdict_measures=[m.key for m in judged],
        routers=figures,
        pairs=pairs,
        verdicts=verdicts,
        disagreements=_disagreements(real, value),
    )


def expand_run_ids(known: Sequence[str], ids: Sequence[str]) -> list[str]:
    """Run ids as given, with each session id replaced by its runs (both parts)."""
    out: list[str] = []
    for rid in ids:
        out += [rid] if rid in known else [k for k in known if k.startswith(f"{rid}.")] or [rid]
    return list(dict.fromkeys(out))


def _notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    notes = []
    for r in runs:
        status = str(r.get("status") or "")
        if status in ("KILLED", "RUNNING"):
            how = "was interrupted or cut off" if status == "KILLED" else "is still running, or its process was killed"
            notes.append(
                f"run {r['run_id']} {how} ({status}): its figures cover only the examples it finished; "
                f"finish it with routerlab run --resume {session_of(str(r['run_id']))}"
            )
        elif status == "FAILED":
            notes.append(
                f"run {r['run_id']} FAILED (an error stopped it, or most of its examples crashed): "
                "its figures are not a measure of the router"
            )
    return notes


def build_comparison(store: Any, ids: str | Sequence[str]) -> SessionComparison:
    """The comparison of a session (or of stored runs), every figure any view shows.

    Args:
        store: A :class:`~routerlab.eval.store.ResultsStore` (anything with ``runs()`` and ``results(run_id)``).
        ids: A session id, or run ids / session ids.

    Raises:
        ConfigError: No such session or run in the store.
    """
    wanted = [ids] if isinstance(ids, str) else list(ids)
    frame = store.runs()
    rows = {str(r["run_id"]): r for r in frame.to_dict("records")} if len(frame) else {}
    run_ids = expand_run_ids(list(rows), wanted)
    missing = [r for r in run_ids if r not in rows]
    if not wanted or missing:
        sessions = list(dict.fromkeys(session_of(r) for r in rows))
        raise ConfigError(
            (f"no session {wanted[0]!r}" if len(wanted) == 1 else f"no session or run {missing or wanted}")
            + f" in {getattr(store, 'path', 'the results store')}",
            expected="a session id printed by `routerlab run` or `routerlab route`, or run ids SESSION.ROUTER",
            found=f"{len(sessions)} session(s), newest last: {', '.join(sessions[-5:]) or 'none'}",
            fix="pass one of those ids, or the --store the session was recorded in",
        )
    runs = [rows[r] for r in run_ids]
    results = {r: store.results(r) for r in run_ids}
    parts = []
    for part in PARTS:
        mine = [r for r in runs if (r.get("part") or END_TO_END) == part]
        if mine:
            parts.append(_build_part(part, mine, results))
    first = runs[0]
    return SessionComparison(
        session=session_of(run_ids[0]) if len({session_of(r) for r in run_ids}) == 1 else ", ".join(wanted),
        dataset=str(first.get("dataset") or ""),
        split=str(first.get("split") or ""),
        lm=str(first.get("lm") or ""),
        parts=parts,
        notes=_notes(sorted(runs, key=lambda r: str(r["run_id"]))),
    )
