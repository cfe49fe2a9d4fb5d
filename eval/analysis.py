"""Router comparisons for notebooks: load runs, rates with CIs, failure attribution, disagreements.

Every analysis takes results keyed by a router's display label (``{"rules": [...], "oracle
(baseline)": [...]}``): a :class:`RouterResults` loaded with :func:`load_store` (the DuckDB
results store, full traces) or :func:`load_mlflow` (the per-example tables of MLflow runs: no
traces, so no tool names, node timings or router LM time), or any plain mapping of
:class:`~routerlab.eval.result.ExampleResult` lists. Rates and their CIs come from :mod:`routerlab.eval.metrics` (see
``docs/metrics.md`` for the definitions), so they match ``routerlab compare`` and MLflow.

Failure attribution puts every failed result (success below 1, or a timeout or crash) into
exactly one class, checked in this order:

1. ``other``: the example timed out or crashed (its scores say nothing about the router);
2. ``router``: wrong intent or wrong tool (``route`` score 0);
3. ``sql``: right route, but EX 0 or the SQL failed;
4. ``chain``: right route and SQL, but an invalid chain (``chain_valid`` 0);
5. ``other``: none of the above explains the failure (e.g. a chat turn that ended in error).

``routerlab.demo.make_demo_session`` records a small scripted session for the notebook and the tests;
analyses only read what runs stored and never start one.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from routerlab.agents.errors import ConfigError
from routerlab.agents.trace import Trace, Usage
from routerlab.eval.metrics import cold_latency, confusion_matrix, latency_summary, per_intent, rate, usage_summary
from routerlab.eval.result import ExampleResult, Score
from routerlab.eval.scorers import DEFAULT_SCORERS, HEADLINE_SCORERS, SCORER_TITLES
from routerlab.eval.store import DEFAULT_STORE_PATH, ResultsStore

__all__ = [
    "ATTRIBUTION_CLASSES",
    "COST_COLUMNS",
    "RATE_METRICS",
    "ResultsByRouter",
    "RouterResults",
    "attribute_failure",
    "attribution_counts",
    "baseline_labels",
    "best_routers",
    "conclusions",
    "confusion_matrices",
    "cost_basis",
    "disagreement_counts",
    "disagreements",
    "failure_attribution",
    "is_failure",
    "latency_frame",
    "latency_table",
    "load_mlflow",
    "load_store",
    "pareto_front",
    "rates_table",
    "results_frame",
    "router_cost",
    "success_per_intent",
]

ResultsByRouter = Mapping[str, Sequence[ExampleResult]]
"""Results keyed by router label, the input of every analysis here."""

#: the four rates compared, with their display names (both from the one scorer list, eval/scorers)
#: in the default scorers' table order
RATE_METRICS: dict[str, str] = {name: SCORER_TITLES[name] for name in DEFAULT_SCORERS if name in HEADLINE_SCORERS}

#: failure classes, in the order a failure is checked against them
ATTRIBUTION_CLASSES: tuple[str, ...] = ("router", "sql", "chain", "other")

#: the router's own cost per example (columns of :func:`router_cost`), with display names and units
COST_COLUMNS: dict[str, str] = {
    "router_lm_calls_per_ex": "router LM calls per example (calls)",
    "router_tokens_per_ex": "router tokens per example (tokens)",
    "router_lm_s_per_ex": "router LM time per example (s)",
    "route_node_s_per_ex": "route node time per example (s)",
}

#: which cost the cost tables and figures show. Results measure the cost each run observed, and an
#: LM call served from the response cache (often left by an earlier router of the same session)
#: costs nothing there; when results also carry the cost of an uncached run, set this to "cold".
COST_BASIS = "cold"
#: how each cost basis is named on tables and figures
_COST_BASIS_TEXT: dict[str, str] = {
    "observed": "observed cost: as the run measured it, cached LM calls count as free",
    "cold": "cold cost: as if no LM call had been cached",
}

#: outcomes that end an example before its scores can blame a component
_ABORTED = ("timeout", "crash")
#: tools whose failure is a failure of the SQL
_SQL_TOOLS = ("generate_sql", "fix_sql", "execute_sql_and_analyze_result")
#: error classes raised by executing SQL (routerlab.agents.errors)
_SQL_ERRORS = ("sql_error", "query_timeout", "guard_violation")
#: values at least this close to 1 count as a pass (as in routerlab.eval.compare)
_PASS = 1.0 - 1e-9


# -- loading -----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RouterResults(Mapping[str, list[ExampleResult]]):
    """Results of a selection of runs, keyed by router label (a read-only mapping).

    Attributes:
        runs: One row per run: ``label``, ``run_id``, ``router``, ``lm``, ``dataset``, ``split``,
            ``status``, ``n_results`` (plus the source's own columns).
        results: ``label -> results`` in run order.
        source: ``store`` or ``mlflow``.
    """

    runs: pd.DataFrame
    results: dict[str, list[ExampleResult]] = field(default_factory=dict)
    source: str = "store"

    def __getitem__(self, label: str) -> list[ExampleResult]:
        return self.results[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def frame(self) -> pd.DataFrame:
        """One row per result (see :func:`results_frame`)."""
        return results_frame(self.results)


def _labels(routers: Sequence[str], run_ids: Sequence[str]) -> list[str]:
    """Display labels as ``routerlab compare`` prints them; a router run twice gets its run id."""
    # imported here: the routers package pulls in DSPy, which loading results does not need
    from routerlab.routers import label

    counts: dict[str, int] = {}
    for r in routers:
        counts[r] = counts.get(r, 0) + 1
    return [label(r) if counts[r] == 1 else f"{label(r)} ({rid})" for r, rid in zip(routers, run_ids, strict=True)]


def _select(frame: pd.DataFrame, key: str, run_ids: Sequence[str] | None, where: str) -> pd.DataFrame:
    """Rows of ``frame`` whose ``key`` is in ``run_ids``, in that order (all rows when None)."""
    if not run_ids:
        return frame
    ids = list(dict.fromkeys(run_ids))
    known = set(frame[key]) if key in frame else set()
    missing = [r for r in ids if r not in known]
    if missing:
        raise ConfigError(
            f"unknown run(s) {missing} in {where}",
            expected="run ids of that source",
            found=f"{len(known)} runs, e.g. {sorted(known)[-3:]}",
            fix="check the ids, the session or the store / tracking URI",
        )
    return frame.set_index(key).loc[ids].reset_index()


def _no_session(session: str, where: str, sessions: Sequence[str]) -> ConfigError:
    return ConfigError(
        f"no session {session!r} in {where}",
        expected="a session id printed by `routerlab run` (YYYYmmdd-HHMMSS-xxxx)",
        found=f"sessions: {sorted(set(sessions))[-5:]}",
        fix="check the id, or the store path / tracking URI",
    )


def load_store(
    store: ResultsStore | str | Path = DEFAULT_STORE_PATH,
    *,
    session: str | None = None,
    run_ids: Sequence[str] | None = None,
) -> RouterResults:
    """Results of stored runs, with their full traces, from the DuckDB results store.

    Args:
        store: The store or its file.
        session: Only the runs of this session (run ids ``<session>.<router>``).
        run_ids: Only these runs, in this order (wins over ``session``).

    Returns:
        The runs and their results by router label; every run of the store when neither
        ``session`` nor ``run_ids`` is given.

    Raises:
        ConfigError: For an unknown session or run id.
    """
    store = store if isinstance(store, ResultsStore) else ResultsStore(store)
    runs = store.runs()
    if run_ids:
        runs = _select(runs, "run_id", run_ids, str(store.path))
    elif session is not None:
        sessions = [rid.rsplit(".", 1)[0] for rid in runs["run_id"]]
        runs = runs[[s == session for s in sessions]].reset_index(drop=True)
        if runs.empty:
            raise _no_session(session, str(store.path), sessions)
    runs = runs.reset_index(drop=True)
    labels = _labels([str(r) for r in runs["router"]], [str(r) for r in runs["run_id"]])
    results = {lab: store.results(str(rid)) for lab, rid in zip(labels, runs["run_id"], strict=True)}
    runs.insert(0, "label", labels)
    runs["n_results"] = [len(results[lab]) for lab in labels]
    return RouterResults(runs=runs, results=results, source="store")


def _none_if_missing(value: Any) -> Any:
    """``value`` with pandas' missing markers (NaN, NaT, None) turned into None."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _result_from_row(row: Mapping[str, Any], *, router: str, lm: str, dataset: str, split: str) -> ExampleResult:
    """An :class:`ExampleResult` rebuilt from a row of an MLflow ``examples.json`` table."""
    get = {k: _none_if_missing(v) for k, v in row.items()}
    scores = {
        k[len("score_") :]: Score(k[len("score_") :], None if v is None else float(v), reason="from MLflow")
        for k, v in get.items()
        if k.startswith("score_")
    }
    # the table keeps total tokens only; prompt_tokens carries the total so totals stay exact
    router_usage = Usage(
        lm_calls=int(get.get("router_lm_calls") or 0), prompt_tokens=int(get.get("router_tokens") or 0)
    )
    subagent_usage = Usage(
        lm_calls=int(get.get("subagent_lm_calls") or 0), prompt_tokens=int(get.get("subagent_tokens") or 0)
    )
    example_id = str(get["example_id"])
    sql = get.get("sql")
    return ExampleResult(
        example_id=example_id,
        dataset=dataset,
        split=split,
        intent=str(get["intent"]),
        difficulty=get.get("difficulty"),
        router=router,
        lm=lm,
        outcome=str(get.get("outcome") or "ok"),
        error_class=get.get("error_class"),
        predicted_intent=get.get("predicted_intent"),
        scores=scores,
        latency_s=float(get.get("latency_s") or 0.0),
        router_usage=router_usage,
        subagent_usage=subagent_usage,
        # a stub trace keeps the SQL, the one trace field the table has
        trace=Trace(example_id=example_id, sql=sql) if sql is not None else None,
        attempt=int(get.get("attempt") or 0),
    )


def load_mlflow(
    tracking_uri: str | None = None,
    *,
    experiment: str | None = None,
    run_ids: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
    session: str | None = None,
) -> RouterResults:
    """Results of MLflow router runs, rebuilt from their ``examples.json`` tables.

    The tables hold scores, intents, outcomes, latency, LM calls and tokens, and the SQL, so
    rates, confusion matrices, attribution and disagreements work as on the store; traces, node
    timings, error messages and router LM time are not logged there (read the store for those).

    Args:
        tracking_uri: The MLflow store (default as :func:`routerlab.eval.tracking.resolve_tracking_uri`).
        experiment: Only this experiment (``routerlab/<dataset>``).
        run_ids: Only these MLflow run ids, in this order.
        tags: Only runs with these tag values (``routerlab.kind = router-run`` is always added).
        session: Only the runs of this ``routerlab run`` session.

    Returns:
        The runs (``params.*``, ``metrics.*``, ``tags.*`` columns kept) and their results by label.
        Runs without a table (never finished) are skipped with a warning.

    Raises:
        ConfigError: For an unknown experiment, run id or session.
    """
    from routerlab.eval.tracking import TAG_KIND, TAG_RUN_KEY, load_examples, load_runs

    where = f"MLflow {tracking_uri or 'store'}"
    runs = load_runs(tracking_uri, experiment, run_ids, {TAG_KIND: "router-run", **(tags or {})})
    if run_ids:
        runs = _select(runs, "run_id", run_ids, where)
    key_col = f"tags.{TAG_RUN_KEY}"
    if session is not None:
        keys = [str(k) for k in runs.get(key_col, pd.Series(dtype=object)).fillna("")]
        runs = runs[[k.startswith(f"{session}.") for k in keys]]
        if runs.empty:
            raise _no_session(session, where, [k.rsplit(".", 1)[0] for k in keys if k])
    kept, tables = [], []
    for row in runs.to_dict("records"):
        try:
            tables.append(load_examples(str(row["run_id"]), tracking_uri))
            kept.append(row)
        except ConfigError as exc:
            warnings.warn(f"skipping MLflow run {row['run_id']}: {exc}", stacklevel=2)
    frame = pd.DataFrame(kept, columns=runs.columns)
    routers = [str(r.get("tags.routerlab.router") or r.get("params.router.name")) for r in kept]
    labels = _labels(routers, [str(r["run_id"]) for r in kept])
    results: dict[str, list[ExampleResult]] = {}
    for lab, router, row, table in zip(labels, routers, kept, tables, strict=True):
        meta = {
            "router": router,
            "lm": str(row.get("tags.routerlab.lm") or ""),
            "dataset": str(row.get("params.dataset.name") or ""),
            "split": str(row.get("params.dataset.split") or ""),
        }
        results[lab] = [_result_from_row(r, **meta) for r in table.to_dict("records")]
    frame.insert(0, "label", labels)
    frame["router"] = routers
    frame["n_results"] = [len(results[lab]) for lab in labels]
    return RouterResults(runs=frame.reset_index(drop=True), results=results, source="mlflow")


# -- per-example views -------------------------------------------------------------------------


def _question(result: ExampleResult) -> str | None:
    if result.trace is None:
        return None
    return next((str(m.get("content")) for m in result.trace.messages if m.get("role") == "user"), None)


def _tools(result: ExampleResult) -> str:
    return " > ".join(result.trace.tool_names) if result.trace is not None else ""


def results_frame(results: ResultsByRouter) -> pd.DataFrame:
    """One row per result: ids, intents, outcome, every score, latency, router cost, tools, SQL, failure.

    Args:
        results: Results by router label.

    Returns:
        Columns ``router, example_id, attempt, intent, predicted_intent, difficulty, outcome,
        error_class, error, score_<name>..., latency_s, router_lm_calls, router_tokens,
        router_lm_s, subagent_lm_calls, subagent_tokens, tools, sql, failure`` (``failure`` is
        the attribution class, None for a result that did not fail).
    """
    names = list(dict.fromkeys(n for rs in results.values() for r in rs for n in r.scores))
    rows = []
    for label, rs in results.items():
        for r in rs:
            row: dict[str, Any] = {
                "router": label,
                "example_id": r.example_id,
                "attempt": r.attempt,
                "intent": r.intent,
                "predicted_intent": r.predicted_intent,
                "difficulty": r.difficulty,
                "outcome": r.outcome,
                "error_class": r.error_class,
                "error": r.error,
            }
            row |= {f"score_{n}": r.value(n) for n in names}
            row |= {
                "latency_s": r.latency_s,
                "router_lm_calls": r.router_usage.lm_calls,
                "router_tokens": r.router_usage.prompt_tokens + r.router_usage.completion_tokens,
                "router_lm_s": r.router_usage.latency_s,
                "subagent_lm_calls": r.subagent_usage.lm_calls,
                "subagent_tokens": r.subagent_usage.prompt_tokens + r.subagent_usage.completion_tokens,
                "tools": _tools(r),
                "sql": r.trace.sql if r.trace is not None else None,
                "failure": attribute_failure(r),
            }
            rows.append(row)
    return pd.DataFrame(rows)


# -- rates -------------------------------------------------------------------------------------


def rates_table(results: ResultsByRouter, metrics: Sequence[str] = tuple(RATE_METRICS)) -> pd.DataFrame:
    """Per-router rates with 95 % bootstrap CIs (:func:`routerlab.eval.metrics.rate`).

    Args:
        results: Results by router label.
        metrics: Scorer names (default EX, chain validity, routing accuracy, success).

    Returns:
        One row per (router, metric): ``router, metric, value, ci_low, ci_high, n, n_invalid``;
        ``value`` is NaN and ``n`` 0 when the scorer applies to no result.
    """
    rows = []
    for label, rs in results.items():
        for m in metrics:
            r = rate(list(rs), m)
            rows.append(
                {
                    "router": label,
                    "metric": m,
                    "value": r.value,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                    "n": r.n,
                    "n_invalid": r.n_invalid,
                }
            )
    return pd.DataFrame(rows, columns=["router", "metric", "value", "ci_low", "ci_high", "n", "n_invalid"])


def success_per_intent(results: ResultsByRouter) -> pd.DataFrame:
    """End-to-end success within each gold intent, per router (:func:`routerlab.eval.metrics.per_intent`).

    Returns:
        One row per (router, intent present): ``router, intent, value, ci_low, ci_high, n``.
    """
    rows = [
        {"router": label, "intent": intent, "value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "n": r.n}
        for label, rs in results.items()
        for intent, r in per_intent(list(rs), "success").items()
    ]
    return pd.DataFrame(rows, columns=["router", "intent", "value", "ci_low", "ci_high", "n"])


def best_routers(rates: pd.DataFrame) -> pd.DataFrame:
    """The best router per metric of a :func:`rates_table`, and whether it is clearly ahead.

    Returns:
        One row per metric with a value: ``metric, best`` (labels tied at the top, comma
        separated), ``tied`` (more than one best), ``value, ci_low, ci_high, n`` (of the first best), ``runner_up`` and
        ``runner_up_value`` (the best of the others, None when all tie) and ``separated``: True
        when the best's CI lies entirely above the runner-up's (a conservative check; use
        ``routerlab compare`` for paired tests).
    """
    rows = []
    for metric in dict.fromkeys(rates["metric"]):
        sub = rates[(rates["metric"] == metric) & rates["value"].notna()]
        if sub.empty:
            continue
        top = sub["value"].max()
        best = sub[np.isclose(sub["value"], top)]
        rest = sub[~np.isclose(sub["value"], top)]
        first = best.iloc[0]
        runner = rest.loc[rest["value"].idxmax()] if not rest.empty else None
        rows.append(
            {
                "metric": metric,
                "best": ", ".join(best["router"]),
                "tied": len(best) > 1,
                "value": float(first["value"]),
                "ci_low": float(first["ci_low"]),
                "ci_high": float(first["ci_high"]),
                "n": int(first["n"]),
                "runner_up": None if runner is None else str(runner["router"]),
                "runner_up_value": math.nan if runner is None else float(runner["value"]),
                "separated": bool(runner is not None and best["ci_low"].min() > runner["ci_high"]),
            }
        )
    return pd.DataFrame(rows)


# -- failure attribution -----------------------------------------------------------------------


def _below_one(value: float | None) -> bool:
    return value is not None and value < _PASS


def is_failure(result: ExampleResult) -> bool:
    """True for a result that timed out or crashed, or whose success score is below 1.

    Results without a success score (invalid gold SQL) that finished are neither successes nor
    failures, as in the success rate's denominator.
    """
    return result.outcome in _ABORTED or _below_one(result.value("success"))


def _sql_failed(result: ExampleResult) -> bool:
    """EX 0, or the last SQL step of the trace failed, or the turn ended on an SQL error."""
    if _below_one(result.value("ex")):
        return True
    if result.error_class in _SQL_ERRORS:
        return True
    if result.trace is not None:
        sql_calls = [c for c in result.trace.tool_calls if c.get("name") in _SQL_TOOLS]
        return bool(sql_calls) and sql_calls[-1].get("status") == "error"
    return False


def attribute_failure(result: ExampleResult) -> str | None:
    """The failure class of one result (see the module docstring), None when it did not fail.

    Returns:
        ``router``, ``sql``, ``chain`` or ``other`` for a failure, else None.
    """
    if not is_failure(result):
        return None
    if result.outcome in _ABORTED:
        return "other"
    if _below_one(result.value("route")):
        return "router"
    if _sql_failed(result):
        return "sql"
    if _below_one(result.value("chain_valid")):
        return "chain"
    return "other"


def _reason(result: ExampleResult, cls: str) -> str:
    """Why a failure got its class: the deciding scorer's reason, or the error."""
    scorer = {"router": "route", "sql": "ex", "chain": "chain_valid"}.get(cls)
    score = result.scores.get(scorer) if scorer else None
    if score is not None and score.reason and _below_one(score.value):
        return score.reason
    if result.error:
        return result.error
    success = result.scores.get("success")
    return success.reason if success is not None else ""


def failure_attribution(results: ResultsByRouter) -> pd.DataFrame:
    """Every failed result with its class.

    Returns:
        One row per failure: ``router, example_id, attempt, intent, predicted_intent, failure,
        reason``.
    """
    cols = ["router", "example_id", "attempt", "intent", "predicted_intent", "failure", "reason"]
    rows = []
    for label, rs in results.items():
        for r in rs:
            cls = attribute_failure(r)
            if cls is not None:
                rows.append(
                    {
                        "router": label,
                        "example_id": r.example_id,
                        "attempt": r.attempt,
                        "intent": r.intent,
                        "predicted_intent": r.predicted_intent,
                        "failure": cls,
                        "reason": _reason(r, cls),
                    }
                )
    return pd.DataFrame(rows, columns=cols)


def attribution_counts(results: ResultsByRouter) -> pd.DataFrame:
    """Failures per router and class.

    Returns:
        Index: router labels (every router, even without failures); columns
        :data:`ATTRIBUTION_CLASSES` (counts).
    """
    counts = pd.DataFrame(0, index=pd.Index(list(results), name="router"), columns=list(ATTRIBUTION_CLASSES))
    for label, rs in results.items():
        for r in rs:
            cls = attribute_failure(r)
            if cls is not None:
                counts.loc[label, cls] += 1
    return counts


# -- routing -----------------------------------------------------------------------------------


def confusion_matrices(results: ResultsByRouter) -> dict[str, pd.DataFrame]:
    """Gold intent (rows) x predicted intent (columns, plus ``none``) counts per router.

    Uses :func:`routerlab.eval.metrics.confusion_matrix`: every result counts once, so each matrix sums to
    the router's number of results.
    """
    return {label: confusion_matrix(list(rs)) for label, rs in results.items()}


# -- disagreements -----------------------------------------------------------------------------


def _keyed(rs: Sequence[ExampleResult]) -> dict[tuple[str, int], ExampleResult]:
    return {(r.example_id, r.attempt): r for r in rs}


def disagreements(results: ResultsByRouter, a: str, b: str) -> pd.DataFrame:
    """Examples where two routers' success differs, with the key steps of both traces.

    Results are paired by ``(example_id, attempt)``; only examples both routers ran count. A
    success of None (invalid gold) differs from 0 and from 1.

    Args:
        results: Results by router label.
        a: The first router's label.
        b: The second router's label.

    Returns:
        One row per disagreement: ``example_id, attempt, intent, question``, then for each
        router ``<label>.success``, ``.predicted_intent``, ``.tools`` (called tool names, in
        order), ``.sql`` and ``.error``.

    Raises:
        ConfigError: For an unknown label.
    """
    unknown = [x for x in (a, b) if x not in results]
    if unknown:
        raise ConfigError(
            f"unknown router label(s) {unknown}",
            expected=f"one of {list(results)}",
            found=", ".join(unknown),
            fix="use the labels of the loaded results (baselines read 'oracle (baseline)')",
        )
    ka, kb = _keyed(results[a]), _keyed(results[b])
    rows = []
    for key in sorted(ka.keys() & kb.keys()):
        ra, rb = ka[key], kb[key]
        if ra.value("success") == rb.value("success"):
            continue
        row: dict[str, Any] = {
            "example_id": key[0],
            "attempt": key[1],
            "intent": ra.intent,
            "question": _question(ra) or _question(rb),
        }
        for label, r in ((a, ra), (b, rb)):
            row |= {
                f"{label}.success": r.value("success"),
                f"{label}.predicted_intent": r.predicted_intent,
                f"{label}.tools": _tools(r),
                f"{label}.sql": r.trace.sql if r.trace is not None else None,
                f"{label}.error": r.error,
            }
        rows.append(row)
    fields = ("success", "predicted_intent", "tools", "sql", "error")
    cols = ["example_id", "attempt", "intent", "question", *(f"{x}.{f}" for x in (a, b) for f in fields)]
    return pd.DataFrame(rows, columns=cols)


def disagreement_counts(results: ResultsByRouter) -> pd.DataFrame:
    """How many paired examples each pair of routers disagrees on (success), as a symmetric matrix."""
    labels = list(results)
    counts = pd.DataFrame(0, index=pd.Index(labels, name="router"), columns=labels)
    for a, b in itertools.combinations(labels, 2):
        n = len(disagreements(results, a, b))
        counts.loc[a, b] = counts.loc[b, a] = n
    return counts


# -- latency and cost --------------------------------------------------------------------------


def risk_coverage_frame(results: ResultsByRouter) -> pd.DataFrame:
    """Each router's risk-coverage curve (:func:`routerlab.eval.risk.risk_coverage`) in long form.

    Returns:
        One row per point: ``router, threshold, coverage, risk, aurc`` (``aurc`` repeated per
        router, the figure :func:`routerlab.eval.risk.risk_summary` reports). Routers without
        answered data questions have no rows.
    """
    from routerlab.eval.risk import risk_coverage, risk_summary

    rows = []
    for label, rs in results.items():
        aurc = risk_summary(list(rs)).aurc
        rows += [
            {"router": label, "threshold": t, "coverage": c, "risk": k, "aurc": aurc}
            for t, c, k in risk_coverage(list(rs))
        ]
    return pd.DataFrame(rows, columns=["router", "threshold", "coverage", "risk", "aurc"])


def latency_frame(results: ResultsByRouter) -> pd.DataFrame:
    """Latencies in long form for distribution plots.

    Returns:
        One row per (result, stage): ``router, example_id, attempt, stage, seconds``. Stages are
        ``end_to_end`` and ``node.<name>`` for each graph node the example visited; unlike
        :func:`routerlab.eval.metrics.latency_summary`, nodes never visited are left out instead of counted
        as 0 s, so a distribution shows only real visits.
    """
    rows = []
    for label, rs in results.items():
        for r in rs:
            base = {"router": label, "example_id": r.example_id, "attempt": r.attempt}
            end_to_end = max(r.latency_s, cold_latency(r)) if COST_BASIS == "cold" else r.latency_s
            rows.append({**base, "stage": "end_to_end", "seconds": end_to_end})
            rows += [{**base, "stage": f"node.{n}", "seconds": s} for n, s in r.node_latency_s.items()]
    return pd.DataFrame(rows, columns=["router", "example_id", "attempt", "stage", "seconds"])


def latency_table(results: ResultsByRouter) -> pd.DataFrame:
    """Latency percentiles per router and series (:func:`routerlab.eval.metrics.latency_summary`), in seconds.

    Returns:
        Index ``(router, series)`` (``end_to_end``, ``router_lm``, ``subagent_lm``,
        ``node.<name>``); columns ``p50, p95, p99, mean``.
    """
    frames = {
        label: pd.DataFrame(latency_summary(list(rs))).T.rename_axis("series") for label, rs in results.items() if rs
    }
    if not frames:
        return pd.DataFrame(columns=["p50", "p95", "p99", "mean"])
    return pd.concat(frames, names=["router", "series"])


def cost_basis() -> str:
    """The name of the cost the tables and figures show (observed or cold), with what it means."""
    return _COST_BASIS_TEXT[COST_BASIS]


def baseline_labels(results: ResultsByRouter) -> list[str]:
    """Labels whose router is a baseline (:data:`routerlab.routers.BASELINES`): references, not candidates.

    A label's router is the ``router`` of its results; a label without results is judged by its
    first word (labels read ``oracle (baseline)``).
    """
    # imported here: the routers package pulls in DSPy, which the analyses do not need
    from routerlab.routers import BASELINES

    return [
        label
        for label, rs in results.items()
        if (rs[0].router if len(rs) else str(label).split(" ", 1)[0]) in BASELINES
    ]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


# A cold figure is never below the observed one (cache hits only make a run cheaper), so the
# larger of the two is right for results whose cold record is missing (MLflow tables keep totals).
def _router_tokens(r: ExampleResult) -> float:
    u = r.router_usage
    observed = u.prompt_tokens + u.completion_tokens
    return float(max(observed, u.cold_prompt_tokens + u.cold_completion_tokens) if COST_BASIS == "cold" else observed)


def _router_lm_s(r: ExampleResult) -> float:
    u = r.router_usage
    return max(u.latency_s, u.cold_latency_s) if COST_BASIS == "cold" else u.latency_s


def router_cost(results: ResultsByRouter, quality: Sequence[str] = ("route", "success")) -> pd.DataFrame:
    """The router's own cost per example next to its accuracy.

    The costs are those of :data:`COST_BASIS` (see :func:`cost_basis`).

    Args:
        results: Results by router label.
        quality: Rates to put next to the costs.

    Returns:
        Index: router labels; columns :data:`COST_COLUMNS` (router LM calls and tokens from
        :func:`routerlab.eval.metrics.usage_summary`, mean router LM seconds, mean seconds in the ``route``
        node, 0 for a result that never reached it), one column per ``quality`` rate and
        ``baseline`` (True for a baseline, which :func:`pareto_front` leaves out).
    """
    rows = {}
    for label, seq in results.items():
        rs = list(seq)
        usage = usage_summary(rs)
        row: dict[str, float] = {
            "router_lm_calls_per_ex": usage["router_lm_calls_per_ex"],
            "router_tokens_per_ex": _mean([_router_tokens(r) for r in rs]),
            "router_lm_s_per_ex": _mean([_router_lm_s(r) for r in rs]),
            # the route node's time holds the router's LM time: swap in the cold figure there too
            "route_node_s_per_ex": _mean(
                [r.node_latency_s.get("route", 0.0) - r.router_usage.latency_s + _router_lm_s(r) for r in rs]
            ),
        }
        row |= {q: rate(rs, q).value for q in quality}
        rows[label] = row
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("router")
    baselines = set(baseline_labels(results))
    frame["baseline"] = [label in baselines for label in frame.index]
    return frame


def pareto_front(points: pd.DataFrame, cost: str, quality: str) -> list[str]:
    """Index labels of the points no other point beats (cost no higher, quality no lower, one strictly).

    Baselines are references, not candidates: rows whose ``baseline`` column is True neither
    join the front nor push a router off it (an oracle at no cost would otherwise beat them all).

    Args:
        points: One row per router (e.g. :func:`router_cost`).
        cost: The column to minimise.
        quality: The column to maximise.

    Returns:
        The non-dominated labels, cheapest first (points with a NaN are never on the front).
    """
    if "baseline" in points.columns:
        points = points[~points["baseline"].astype(bool)]
    sub = points[[cost, quality]].dropna()
    front = []
    for label, row in sub.iterrows():
        dominated = (
            (sub[cost] <= row[cost])
            & (sub[quality] >= row[quality])
            & ((sub[cost] < row[cost]) | (sub[quality] > row[quality]))
        ).any()
        if not dominated:
            front.append(label)
    return sorted(front, key=lambda lab: (sub.loc[lab, cost], -sub.loc[lab, quality]))


# -- conclusions -------------------------------------------------------------------------------


def _fmt(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.2f}"


def conclusions(results: ResultsByRouter, *, cost: str = "router_tokens_per_ex", quality: str = "success") -> str:
    """Conclusions computed from the results, as text.

    Three sections: ``Best router per metric`` (with its 95 % CI, ties and whether the CI
    clears the runner-up's), ``Dominant failure class per router`` and ``Cost-quality Pareto
    front`` (on ``cost`` against ``quality``, :data:`COST_BASIS` cost). Baselines are references:
    the best router and the front are chosen among the other routers (among all when every
    router is a baseline), and the baselines' own figures follow as references.

    Args:
        results: Results by router label.
        cost: A :data:`COST_COLUMNS` column.
        quality: A rate.
    """
    baselines = baseline_labels(results)
    candidates = {k: v for k, v in results.items() if k not in baselines} or dict(results)
    references = [b for b in baselines if b not in candidates]
    rates = rates_table(results)
    lines = ["Best router per metric (mean [95 % bootstrap CI], n applicable):"]
    best = best_routers(rates[rates["router"].isin(list(candidates))])
    for metric, name in RATE_METRICS.items():
        row = best[best["metric"] == metric] if not best.empty else best
        if row.empty:
            lines.append(f"  {name}: n/a (no router has an applicable example)")
            continue
        b = row.iloc[0]
        tied = " (tied)" if b["tied"] else ""
        text = f"  {name}: {b['best']}{tied} {_fmt(b['value'])} [{_fmt(b['ci_low'])}, {_fmt(b['ci_high'])}], n={b['n']}"
        if pd.isna(b["runner_up"]):
            alone = "; the only router besides the baselines" if references else "; the only router with a value"
            text += "; every router ties" if b["tied"] else alone
        elif b["separated"]:
            text += f"; CI above runner-up {b['runner_up']} ({_fmt(b['runner_up_value'])})"
        else:
            text += f"; CI overlaps runner-up {b['runner_up']} ({_fmt(b['runner_up_value'])}), not a clear win"
        lines.append(text)
    if references:
        by = rates.set_index(["router", "metric"])["value"]
        for ref in references:
            figures = ", ".join(f"{m} {_fmt(by.get((ref, m), math.nan))}" for m in RATE_METRICS)
            lines.append(f"  reference {ref}: {figures}")
    lines.append("Dominant failure class per router:")
    counts = attribution_counts(results)
    for label, row in counts.iterrows():
        total = int(row.sum())
        n = len(results[str(label)])
        if total == 0:
            lines.append(f"  {label}: no failures (of {n} results)")
            continue
        top = [c for c in ATTRIBUTION_CLASSES if row[c] == row.max()]
        lines.append(f"  {label}: {' and '.join(top)} ({int(row.max())} of {total} failures, {n} results)")
    costs = router_cost(results, quality=(quality,))
    # with only baselines there is nothing else to compare: the front is then over them
    front = pareto_front(costs.drop(columns="baseline") if not references else costs, cost, quality)
    lines.append(f"Cost-quality Pareto front ({COST_COLUMNS[cost]} vs {quality}; {cost_basis()}):")
    for label in front:
        lines.append(f"  {label}: cost {costs.loc[label, cost]:.4g}, {quality} {_fmt(costs.loc[label, quality])}")
    if not front:
        lines.append("  n/a (no router has both numbers)")
    for ref in references:
        lines.append(
            f"  reference {ref} (not a candidate): cost {costs.loc[ref, cost]:.4g}, "
            f"{quality} {_fmt(costs.loc[ref, quality])}"
        )
    return "\n".join(lines)
