"""Loading runs for the analyses: results keyed by router label, from the DuckDB store or MLflow.

:func:`load_store` reads the results store (full traces); :func:`load_mlflow` reads the
per-example tables of MLflow runs (no traces, so no tool names, node timings or router LM time).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from routerlab.agents.errors import ConfigError
from routerlab.agents.trace import Trace, Usage
from routerlab.eval.analysis.failures import results_frame
from routerlab.eval.scoring import ExampleResult, Score
from routerlab.eval.store import DEFAULT_STORE_PATH, END_TO_END, ResultsStore, session_of

__all__ = ["RouterResults", "load_mlflow", "load_store"]


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


def _part_labels(runs: pd.DataFrame) -> list[str]:
    """:func:`_labels` within each part of a session; with both parts, a routing run says so.

    The main job runs a router in each part: ``hybrid (routing)`` is its first decisions,
    ``hybrid`` its end-to-end run.
    """
    labels = [""] * len(runs)
    parts = list(dict.fromkeys(runs["part"]))
    for part in parts:
        at = [i for i, p in enumerate(runs["part"]) if p == part]
        mine = _labels([str(runs["router"][i]) for i in at], [str(runs["run_id"][i]) for i in at])
        for i, label in zip(at, mine, strict=True):
            labels[i] = label if part == END_TO_END or len(parts) == 1 else f"{label} ({part})"
    return labels


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
    # read-only: a mistyped path is an error, never a new empty store
    store = store if isinstance(store, ResultsStore) else ResultsStore(store, read_only=True)
    runs = store.runs()
    if run_ids:
        runs = _select(runs, "run_id", run_ids, str(store.path))
    elif session is not None:
        sessions = [session_of(rid) for rid in runs["run_id"]]
        runs = runs[[s == session for s in sessions]].reset_index(drop=True)
        if runs.empty:
            raise _no_session(session, str(store.path), sessions)
    runs = runs.reset_index(drop=True)
    labels = _part_labels(runs)
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
    # imported here: MLflow costs seconds at import, and only this loader reads it
    from routerlab.eval.tracking.layout import TAG_KIND, TAG_RUN_KEY
    from routerlab.eval.tracking.reader import load_examples, load_runs

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
