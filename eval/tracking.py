"""MLflow tracking: one experiment per dataset, one run per (router, LM, dataset, config),
children of a parent run per comparison; per-example table, dataset input and a trace per
example whose tool steps are TOOL spans.

The client API with explicit run ids is used throughout (never the fluent "active run"), so worker
threads can log safely.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import mlflow
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import SpanType

from eval.metrics import SCORE_NAMES, summarize
from eval.result import ExampleResult

__all__ = ["MlflowSink", "flatten_params", "load_runs", "load_examples", "git_commit"]

_RUN_KEY = "routerlab.run_key"


def git_commit() -> str:
    """HEAD of the working tree, or ``unknown``."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def flatten_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"router": {"args": {"t": 1}}}`` -> ``{"router.args.t": "1"}`` (values capped at 500 chars)."""
    out: dict[str, str] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out |= flatten_params(v, f"{key}.")
        else:
            out[key] = (v if isinstance(v, str) else json.dumps(v, default=str))[:500]
    return out


class MlflowSink:
    """Writes runs, metrics, tables and traces to an MLflow tracking store.

    Args:
        tracking_uri: Store URI (``sqlite:///mlflow.db`` by default; MLflow 3.17 refuses the old
            file store).
        traces: Log one trace per example.
    """

    def __init__(self, tracking_uri: str = "sqlite:///mlflow.db", *, traces: bool = True) -> None:
        self.tracking_uri = tracking_uri
        self.traces = traces
        mlflow.set_tracking_uri(tracking_uri)
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self._experiment_id: str | None = None

    def experiment(self, dataset_name: str) -> str:
        """Id of ``routerlab/<dataset>``, created on first use."""
        name = f"routerlab/{dataset_name}"
        exp = self.client.get_experiment_by_name(name)
        self._experiment_id = exp.experiment_id if exp else self.client.create_experiment(name)
        return self._experiment_id

    def find_run(self, run_key: str) -> str | None:
        """The run tagged with ``run_key`` (resume continues it instead of creating a duplicate)."""
        if self._experiment_id is None:
            return None
        runs = self.client.search_runs([self._experiment_id], filter_string=f"tags.`{_RUN_KEY}` = '{run_key}'")
        return runs[0].info.run_id if runs else None

    def start_parent(self, dataset_name: str, run_name: str, params: Mapping[str, Any], *, run_key: str) -> str:
        """The parent run of a comparison."""
        exp_id = self.experiment(dataset_name)
        run = self.client.create_run(exp_id, run_name=run_name,
                                     tags={_RUN_KEY: run_key, "routerlab.kind": "comparison"})
        self.client.log_batch(run.info.run_id, params=[mlflow.entities.Param(k, v)
                                                      for k, v in flatten_params(params).items()])
        return run.info.run_id

    def start_run(self, router: str, lm: str, dataset: Any, params: Mapping[str, Any], *,
                  parent_run_id: str | None, run_key: str, split: str) -> str:
        """One router's run: params (every recorded component argument), tags and the dataset input."""
        exp_id = self.experiment(dataset.name)
        tags = {_RUN_KEY: run_key, "routerlab.kind": "router-run", "routerlab.router": router,
                "routerlab.lm": lm, "routerlab.dataset": dataset.name, "routerlab.status": "RUNNING"}
        if parent_run_id:
            tags["mlflow.parentRunId"] = parent_run_id
        run = self.client.create_run(exp_id, run_name=f"{router} | {lm}", tags=tags)
        rid = run.info.run_id
        flat = flatten_params({**params, "lm": {"spec": lm},
                               "dataset": {"name": dataset.name, "version": dataset.version,
                                           "digest": dataset.digest(), "split": split},
                               "git": {"commit": git_commit()}})
        self.client.log_batch(rid, params=[mlflow.entities.Param(k, v) for k, v in flat.items()])
        frame = pd.DataFrame([{"id": e.id, "question": e.question, "intent": e.intent, "split": e.split,
                               "gold_sql": e.gold_sql or ""} for e in dataset.split(split)])
        ds = mlflow.data.from_pandas(frame, name=dataset.name, digest=dataset.digest()[:16])
        self.client.log_inputs(rid, datasets=[mlflow.entities.DatasetInput(ds._to_mlflow_entity(),
                                              tags=[mlflow.entities.InputTag("mlflow.data.context", split)])])
        return rid

    def log_example(self, run_id: str, result: ExampleResult) -> None:
        """One trace: a root span for the example, an AGENT span per route decision and a TOOL span
        per tool call (status ERROR when the call failed)."""
        if not self.traces or result.trace is None:
            return
        t = result.trace
        root = self.client.start_trace(
            name=f"example {result.example_id}", span_type=SpanType.CHAIN,
            inputs={"example_id": result.example_id, "intent": result.intent},
            tags={"routerlab.example_id": result.example_id, "routerlab.router": result.router},
            experiment_id=self._experiment_id, run_id=run_id,
        )
        trace_id = root.trace_id
        for i, d in enumerate(t.route_decisions):
            s = self.client.start_span(f"route {i}", trace_id, root.span_id, span_type=SpanType.AGENT, inputs={"step": i})
            self.client.end_span(trace_id, s.span_id, outputs=d)
        for c in t.tool_calls:
            s = self.client.start_span(c["name"], trace_id, root.span_id, span_type=SpanType.TOOL,
                                       inputs=c.get("args", {}), attributes={"tool_call_id": c.get("id", "")})
            self.client.end_span(trace_id, s.span_id, outputs={"output": json.dumps(c.get("output"), default=str)[:4000]},
                                 status="OK" if c.get("status") == "success" else "ERROR")
        self.client.end_trace(trace_id, outputs={"answer": t.answer, "sql": t.sql, "error": t.error},
                              status="OK" if result.outcome == "ok" else "ERROR")

    def finish_run(self, run_id: str, results: list[ExampleResult], status: str = "FINISHED") -> None:
        """Metrics (rates with CI bounds, latency percentiles, usage), the per-example table and status."""
        ts = int(time.time() * 1000)
        metrics = [mlflow.entities.Metric(k, v, ts, 0) for k, v in summarize(results).items()]
        for i in range(0, len(metrics), 500):
            self.client.log_batch(run_id, metrics=metrics[i : i + 500])
        rows = [{"example_id": r.example_id, "intent": r.intent, "predicted_intent": r.predicted_intent,
                 "difficulty": r.difficulty, "outcome": r.outcome, "error_class": r.error_class,
                 **{s: r.value(s) for s in SCORE_NAMES}, "latency_s": r.latency_s,
                 "router_tokens": r.router_usage.prompt_tokens + r.router_usage.completion_tokens,
                 "subagent_tokens": r.subagent_usage.prompt_tokens + r.subagent_usage.completion_tokens,
                 "sql": r.trace.sql if r.trace else None} for r in results]
        if rows:
            self.client.log_table(run_id, data=pd.DataFrame(rows), artifact_file="examples.json")
        self.client.set_tag(run_id, "routerlab.status", status)
        self.client.set_terminated(run_id, status=status)

    def finish_parent(self, run_id: str, status: str = "FINISHED") -> None:
        """Close the comparison's parent run."""
        self.client.set_tag(run_id, "routerlab.status", status)
        self.client.set_terminated(run_id, status=status)


def load_runs(tracking_uri: str, experiment: str | None = None, run_ids: list[str] | None = None) -> pd.DataFrame:
    """Runs (params + metrics + tags) as a frame, by experiment name or run ids."""
    mlflow.set_tracking_uri(tracking_uri)
    if run_ids:
        return pd.concat([mlflow.search_runs(filter_string=f"attributes.run_id = '{r}'", search_all_experiments=True)
                          for r in run_ids], ignore_index=True)
    return mlflow.search_runs(experiment_names=[experiment] if experiment else None, search_all_experiments=not experiment)


def load_examples(tracking_uri: str, run_id: str) -> pd.DataFrame:
    """The per-example table logged by :meth:`MlflowSink.finish_run`."""
    mlflow.set_tracking_uri(tracking_uri)
    return mlflow.load_table("examples.json", run_ids=[run_id])
