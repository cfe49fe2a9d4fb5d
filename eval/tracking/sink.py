"""The MLflow writer: :class:`MlflowSink` logs runs, params, metrics, tables and traces.

Also the params helpers it logs with (:func:`flatten_params`) and the per-example table
(:func:`examples_frame`). The layout it writes is described in :mod:`routerlab.eval.tracking`.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import mlflow
import pandas as pd
from mlflow.data.pandas_dataset import from_pandas
from mlflow.entities import Dataset as DatasetEntity
from mlflow.entities import (
    DatasetInput,
    InputTag,
    Metric,
    Param,
    RunTag,
)
from mlflow.exceptions import MlflowException
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT, MLFLOW_PARENT_RUN_ID

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import component_spec
from routerlab.benchmarks.dataset import Dataset
from routerlab.eval.confidence_calibration import first_confidence
from routerlab.eval.metrics import gold_failures, metric_name
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.tracking.address import one_line_store_errors, resolve_tracking_uri
from routerlab.eval.tracking.artifacts import experiment_folder, experiment_location
from routerlab.eval.tracking.client import store_client
from routerlab.eval.tracking.layout import (
    EXAMPLES_TABLE,
    PARAM_ROUTER,
    RISK_CURVE,
    RISK_FIGURE,
    TAG_DATASET,
    TAG_DESCRIPTION,
    TAG_KIND,
    TAG_LM,
    TAG_ROUTER,
    TAG_RUN_KEY,
    TAG_STATUS,
    check_status,
    compare_link,
    search_literal,
)
from routerlab.eval.tracking.provenance import git_commit, routerlab_version
from routerlab.eval.tracking.reader import load_examples, load_runs
from routerlab.eval.tracking.traces import example_question, write_trace

__all__ = ["MlflowSink", "examples_frame", "flatten_params"]

_log = logging.getLogger(__name__)

# MLflow's limits (mlflow.utils.validation): params and tags per batch, entities per batch,
# key and param value lengths.
_PARAMS_PER_BATCH = 100
_METRICS_PER_BATCH = 1000
_MAX_PARAM_VALUE = 6000


def _param_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= _MAX_PARAM_VALUE else text[: _MAX_PARAM_VALUE - 1] + "…"


def flatten_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten nested mappings into dotted MLflow params.

    ``{"router": {"args": {"t": 1}}}`` becomes ``{"router.args.t": "1"}``. Lists and other values
    are JSON-encoded; values are cut at MLflow's 6000-character limit.
    """
    out: dict[str, str] = {}
    for key, value in params.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten_params(value, f"{full}."))
        else:
            out[metric_name(full)] = _param_value(value)
    return out


def _component_params(component: Any) -> dict[str, Any]:
    """A component's recorded spec (``kind``, ``name``, ``args``), or just its name for a string."""
    if isinstance(component, str):
        return {"name": component}
    return dict(component_spec(component))


def _lm_params(lm: Any) -> dict[str, Any]:
    """``spec`` of an LM given as its ``--lm`` string, or what can be read off an LM object."""
    if isinstance(lm, str):
        return {"spec": lm}
    try:
        return {"spec": component_spec(lm)["name"], **_component_params(lm)}
    except ConfigError:
        # LMs resolved from a spec string (dspy.LM) are not registry-built: keep the model name
        return {"spec": str(getattr(lm, "model", type(lm).__name__)), "class": type(lm).__name__}


def _total_tokens(usage: Any) -> int:
    return int(usage.prompt_tokens + usage.completion_tokens)


def examples_frame(results: Sequence[ExampleResult]) -> pd.DataFrame:
    """The per-example table logged with each run (one row per example and attempt).

    Columns: example_id, attempt, intent, predicted_intent, confidence (of the first route
    decision), difficulty, outcome, error_class, ``score_<name>`` per scorer, latency_s,
    router/sub-agent LM calls and tokens, sql.
    """
    names = list(dict.fromkeys(n for r in results for n in r.scores))
    rows = []
    for r in results:
        row: dict[str, Any] = {
            "example_id": r.example_id,
            "attempt": r.attempt,
            "intent": r.intent,
            "predicted_intent": r.predicted_intent,
            "confidence": first_confidence(r),
            "difficulty": r.difficulty,
            "outcome": r.outcome,
            "error_class": r.error_class,
        }
        row |= {f"score_{n}": r.value(n) for n in names}
        row |= {
            "latency_s": r.latency_s,
            "router_lm_calls": r.router_usage.lm_calls,
            "router_tokens": _total_tokens(r.router_usage),
            "subagent_lm_calls": r.subagent_usage.lm_calls,
            "subagent_tokens": _total_tokens(r.subagent_usage),
            "sql": r.trace.sql if r.trace is not None else None,
        }
        rows.append(row)
    return pd.DataFrame(rows)


class MlflowSink:
    """Writes runs, params, metrics, tables and traces to an MLflow tracking store.

    Args:
        tracking_uri: Store URI; None reads ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``
            (MLflow 3.17 refuses the old file store).
        experiment: Experiment name for every run; None means ``routerlab/<dataset name>``.
        traces: Log one trace per example (turn off for very large runs).
        artifact_location: Artifact root of experiments this sink creates; by default
            ``mlflow-artifacts:`` for a SQLite store, which this package resolves to
            ``mlartifacts/`` beside the database wherever the store folder is
            (:mod:`routerlab.eval.tracking.artifacts`).

    Use it as a context manager, or call :meth:`close`, to flush pending traces and give the
    process its previous tracking URI back.
    """

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str | None = None,
        *,
        traces: bool = True,
        artifact_location: str | None = None,
    ) -> None:
        self.tracking_uri = resolve_tracking_uri(tracking_uri)
        self.experiment_name = experiment
        self.traces = traces
        self.client = store_client(self.tracking_uri)
        one_line_store_errors()  # a store fault is the session's one clear message, not pages of traceback
        self._artifact_root = artifact_location
        self._experiments: dict[str, str] = {}
        self._run_experiment: dict[str, str] = {}
        self._current: str | None = None
        self._lock = threading.Lock()
        self._previous_uri: str | None = None
        self._adopted = False
        if traces:
            # MLflow exports traces to the process-wide tracking URI, not to a client's
            self._previous_uri = mlflow.get_tracking_uri() if mlflow.tracking.is_tracking_uri_set() else None
            mlflow.set_tracking_uri(self.tracking_uri)
            self._adopted = True

    # -- lifecycle --------------------------------------------------------------------------

    def flush(self) -> None:
        """Wait until every trace logged so far is written (traces are exported in the background)."""
        if self.traces:
            mlflow.flush_trace_async_logging()

    def close(self) -> None:
        """Flush traces and restore the process's previous tracking URI."""
        self.flush()
        if self._adopted:
            # None unsets it
            mlflow.set_tracking_uri(self._previous_uri)  # type: ignore[arg-type]
            self._adopted = False

    def __enter__(self) -> MlflowSink:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- experiments ------------------------------------------------------------------------

    def experiment(self, dataset_name: str) -> str:
        """Select (creating it if needed) the experiment of a dataset; returns its id."""
        name = self.experiment_name or f"routerlab/{dataset_name}"
        with self._lock:
            if name not in self._experiments:
                self._experiments[name] = self._get_or_create_experiment(name)
            self._current = self._experiments[name]
            return self._current

    def _get_or_create_experiment(self, name: str) -> str:
        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            if exp.lifecycle_stage == "deleted":
                self.client.restore_experiment(exp.experiment_id)
            return exp.experiment_id
        if self._artifact_root is not None:
            location: str | None = str(Path(self._artifact_root) / experiment_folder(name))
        else:
            # relative to a SQLite store: a copied or moved store folder keeps its artifacts
            location = experiment_location(self.tracking_uri, name)
        try:
            return self.client.create_experiment(name, artifact_location=location)
        except MlflowException:
            # another process created it in the meantime
            exp = self.client.get_experiment_by_name(name)
            if exp is None:
                raise
            return exp.experiment_id

    def _experiment_of(self, dataset: Dataset | str | None) -> str:
        if dataset is not None:
            return self.experiment(dataset if isinstance(dataset, str) else dataset.name)
        if self._current is not None:
            return self._current
        if self.experiment_name is not None:
            return self.experiment("")
        raise ConfigError(
            "no MLflow experiment selected",
            expected="a dataset (its experiment is routerlab/<dataset>) or an experiment name",
            found="neither",
            fix="pass dataset=..., call sink.experiment(dataset_name) first, or MlflowSink(experiment=...)",
        )

    # -- runs -------------------------------------------------------------------------------

    def find_run(self, run_key: str, *, unfinished_only: bool = False) -> str | None:
        """The newest run tagged ``routerlab.run_key = run_key``, or None.

        Searches the selected experiment, or every experiment when none is selected. Finished
        runs are found too unless ``unfinished_only``: a resumed session must not duplicate a
        router that had already completed.
        """
        with self._lock:
            current = self._current
        if current is not None:
            experiment_ids = [current]
        else:
            experiment_ids = [e.experiment_id for e in self.client.search_experiments()]
        query = f"tags.`{TAG_RUN_KEY}` = {search_literal(run_key)}"
        if unfinished_only:
            query += " and attributes.status != 'FINISHED'"
        runs = self.client.search_runs(
            experiment_ids, filter_string=query, max_results=1, order_by=["attributes.start_time DESC"]
        )
        return runs[0].info.run_id if runs else None

    def resume_run(self, run_id: str) -> str:
        """Reopen a run (status RUNNING again) so a resumed session keeps logging into it."""
        self.client.update_run(run_id, status="RUNNING")
        self._set_tags(run_id, {TAG_STATUS: "RUNNING", "routerlab.resumed_at": _dt.datetime.now(_dt.UTC).isoformat()})
        return run_id

    def start_parent(
        self,
        run_name: str,
        params: Mapping[str, Any] | None = None,
        *,
        dataset: Dataset | str | None = None,
        run_key: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Start (or, with a known ``run_key``, reopen) the parent run of a comparison.

        Args:
            run_name: Display name (``compare <session>``).
            params: Comparison-level params (session, routers...), flattened.
            dataset: The dataset compared (selects the experiment); default: the selected one.
            run_key: Resume key (the session id).
            tags: Extra tags.

        Returns:
            The MLflow run id.
        """
        experiment_id = self._experiment_of(dataset)
        if run_key is not None and (found := self.find_run(run_key)) is not None:
            return self.resume_run(found)
        run_tags = {TAG_KIND: "comparison", TAG_STATUS: "RUNNING", **(tags or {})}
        if run_key is not None:
            run_tags[TAG_RUN_KEY] = run_key
        if isinstance(dataset, Dataset):
            run_tags[TAG_DATASET] = dataset.name
        run = self.client.create_run(experiment_id, run_name=run_name, tags=run_tags)
        run_id = run.info.run_id
        self._log_params(
            run_id,
            {
                **dict(params or {}),
                "git": {"commit": git_commit()},
                "routerlab": {"version": routerlab_version()},
            },
        )
        return run_id

    def start_run(
        self,
        router: Any,
        lm: Any,
        dataset: Dataset,
        config: Mapping[str, Any] | None = None,
        parent_run_id: str | None = None,
        *,
        split: str | None = None,
        run_key: str | None = None,
        run_name: str | None = None,
        components: Iterable[Any] = (),
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Start (or, with a known ``run_key``, reopen) the run of one (router, LM, dataset, config).

        Args:
            router: The built router (its recorded args become ``router.args.*``) or its name.
            lm: The ``--lm`` spec string (or an LM object).
            dataset: The dataset replayed (name, version, digest; examples logged as an input).
            config: Run settings, logged as ``config.*`` params.
            parent_run_id: The comparison's parent run, making this run its child.
            split: Split replayed (default ``config["split"]``, else ``all``).
            run_key: Resume key (``<session>.<router>``): an existing run with it is reopened.
            run_name: Display name (default ``<router> | <lm>``).
            components: Other registry-built components (scorers...), logged as
                ``<kind>.<name>.args.*``.
            tags: Extra tags.

        Returns:
            The MLflow run id.
        """
        config = dict(config or {})
        experiment_id = self.experiment(dataset.name)
        if run_key is not None and (found := self.find_run(run_key)) is not None:
            return self.resume_run(found)
        router_params = _component_params(router)
        lm_params = _lm_params(lm)
        split = split or str(config.get("split") or "all")
        run_tags = {
            TAG_KIND: "router-run",
            TAG_STATUS: "RUNNING",
            TAG_ROUTER: str(router_params["name"]),
            TAG_LM: str(lm_params["spec"]),
            TAG_DATASET: dataset.name,
            **(tags or {}),
        }
        if run_key is not None:
            run_tags[TAG_RUN_KEY] = run_key
        if parent_run_id is not None:
            run_tags[MLFLOW_PARENT_RUN_ID] = parent_run_id
        name = run_name or f"{router_params['name']} | {lm_params['spec']}"
        run = self.client.create_run(experiment_id, run_name=name, tags=run_tags)
        run_id = run.info.run_id
        params: dict[str, Any] = {
            PARAM_ROUTER: str(router_params["name"]),
            "router": router_params,
            "lm": lm_params,
            "dataset": {
                "name": dataset.name,
                "version": dataset.version,
                "digest": dataset.digest(),
                "split": split,
                "source": dataset.source,
            },
            "git": {"commit": git_commit()},
            "routerlab": {"version": routerlab_version()},
            "config": config,
        }
        for component in components:
            spec = _component_params(component)
            params[f"{spec.get('kind', 'component')}.{spec['name']}"] = {"args": spec.get("args", {})}
        self._log_params(run_id, params)
        self._log_dataset_input(run_id, dataset, split)
        return run_id

    def _log_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        flat = flatten_params(params)
        items = [Param(k, v) for k, v in flat.items()]
        for i in range(0, len(items), _PARAMS_PER_BATCH):
            self.client.log_batch(run_id, params=items[i : i + _PARAMS_PER_BATCH])

    def _set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def _log_dataset_input(self, run_id: str, dataset: Dataset, split: str) -> None:
        examples = dataset.split(split)
        frame = pd.DataFrame(
            [
                {
                    "id": e.id,
                    "question": e.question,
                    "intent": e.intent,
                    "alt_intents": ",".join(e.alt_intents),
                    "db_id": e.db_id,
                    "difficulty": e.difficulty or "",
                    "split": e.split,
                    "gold_sql": e.gold_sql or "",
                    "expected_chain": " > ".join(e.expected_chain),
                }
                for e in examples
            ],
            columns=[
                "id",
                "question",
                "intent",
                "alt_intents",
                "db_id",
                "difficulty",
                "split",
                "gold_sql",
                "expected_chain",
            ],
        )
        # The name carries the split and the digest is the whole dataset's: together they
        # identify exactly what was replayed (MLflow recommends digests of at most 10 chars).
        ds = from_pandas(frame, name=f"{dataset.name}/{split}", digest=dataset.digest()[:10])
        entity = DatasetEntity(**ds.to_dict())
        # the fluent mlflow.log_input needs a thread-local active run; the client takes the id
        self.client.log_inputs(run_id, datasets=[DatasetInput(entity, tags=[InputTag(MLFLOW_DATASET_CONTEXT, split)])])

    # -- examples ---------------------------------------------------------------------------

    def log_example(self, run_id: str, result: ExampleResult, *, question: str | None = None) -> str | None:
        """Log one example as a trace linked to ``run_id`` (safe from worker threads).

        The root span is the example (inputs: question; outputs: answer, sql, error); under it a
        CHAIN span per graph node, a span per router decision (under ``route``: an AGENT span, or
        for a decision with agent ``activations`` a CHAIN span with an AGENT span per activation,
        name = agent) and a TOOL span per tool call (under ``tools``; name = tool, inputs = args,
        outputs = output, status ERROR when the call failed). Tags: ``routerlab.run_id``, ``routerlab.example_id``,
        ``routerlab.attempt``, router, LM, outcome and ``routerlab.score.<name>``.

        Args:
            run_id: The MLflow run.
            result: The example's result (nothing is logged without a trace).
            question: The request text (default: the first user message of the trace).

        Returns:
            The trace id, or None when traces are off, the result has no trace, or tracing
            failed (a warning is logged: a trace is never worth losing the run for).
        """
        if not self.traces or result.trace is None:
            return None
        try:
            experiment_id = self._experiment_of_run(run_id)
            return write_trace(
                self.client, experiment_id, run_id, result, result.trace, example_question(result, question)
            )
        except Exception as exc:
            _log.warning("could not log the trace of example %s: %s", result.example_id, exc)
            return None

    def _experiment_of_run(self, run_id: str) -> str:
        with self._lock:
            known = self._run_experiment.get(run_id)
        if known is None:
            known = self.client.get_run(run_id).info.experiment_id
            with self._lock:
                self._run_experiment[run_id] = known
        return known

    def finish_run(
        self,
        run_id: str,
        results: Sequence[ExampleResult],
        status: str = "FINISHED",
        *,
        error: str | None = None,
    ) -> None:
        """Log a run's per-example table and risk curve, then close it with ``status``.

        Its metrics are the comparison model's figures for the router, logged by whoever builds
        the model (:func:`routerlab.eval.analysis.tracked.child_metrics`), never computed here.

        Args:
            run_id: The MLflow run.
            results: Every result of the run (resumed ones included).
            status: ``FINISHED``, ``FAILED`` or ``KILLED``; also the ``routerlab.status`` tag.
            error: Why the run failed, kept as the ``routerlab.error`` tag.

        The run is closed with ``status`` even if logging fails half-way (then as FAILED), so a
        broken run never shows as running or successful.
        """
        check_status(status)
        final = status
        try:
            self.flush()
            if results:
                self._log_examples_table(run_id, examples_frame(results))
                self._log_risk_coverage(run_id, results)
        except Exception:
            final = "FAILED"
            raise
        finally:
            tags = {"routerlab.n_results": str(len(results))}
            n_gold_failed, first = gold_failures(list(results))
            if n_gold_failed:
                # the count is the ex_gold_failed metric; the cause is text, kept as a tag
                tags["routerlab.ex_gold_failed_first"] = str(first)[:5000]
            self.close_run(run_id, final, error=error, tags=tags)

    def log_metrics(self, run_id: str, metrics: Mapping[str, float]) -> None:
        """Log ``metrics`` at step 0, names reduced by :func:`metric_name`, non-finite values left out.

        NaN means "no applicable example" (no data question, no follow-up): MLflow would chart
        it as a value, so it is not logged at all.
        """
        stamp = int(time.time() * 1000)
        items = [Metric(metric_name(k), float(v), stamp, 0) for k, v in metrics.items() if math.isfinite(float(v))]
        for i in range(0, len(items), _METRICS_PER_BATCH):
            self.client.log_batch(run_id, metrics=items[i : i + _METRICS_PER_BATCH])

    def log_texts(self, run_id: str, texts: Mapping[str, str]) -> None:
        """Write each text as an artifact of ``run_id`` under its file name (``decisions.csv``, ``comparison.md``)."""
        for name, text in texts.items():
            self.client.log_text(run_id, text, name)

    def close_run(
        self,
        run_id: str,
        status: str = "FINISHED",
        *,
        error: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """End a run with ``status`` (also its ``routerlab.status`` tag), keeping ``error`` as ``routerlab.error``.

        For runs without an example table, which :meth:`finish_run` writes (``routerlab route``
        logs first decisions, not example results).
        """
        check_status(status)
        run_tags = {TAG_STATUS: status, **(tags or {})}
        if error:
            run_tags["routerlab.error"] = error[:5000]
        self._set_tags(run_id, run_tags)
        self.client.set_terminated(run_id, status=status)

    def _log_risk_coverage(self, run_id: str, results: Sequence[ExampleResult]) -> None:
        """``risk_coverage.json`` (the curve's points) and its figure, when the run answered data questions."""
        # imported here: matplotlib costs seconds at import and only a run with a risk curve draws one
        from routerlab.eval.risk_figure import plot_risk_coverage, risk_coverage_frame

        frame = risk_coverage_frame({results[0].router: results} if results else {})
        if frame.empty:
            return
        aurc = float(frame["aurc"].iloc[0])
        rows = frame[["threshold", "coverage", "risk"]].to_dict("records")
        self.client.log_dict(run_id, {"aurc": aurc if math.isfinite(aurc) else None, "points": rows}, RISK_CURVE)
        self.client.log_figure(run_id, plot_risk_coverage(frame), RISK_FIGURE)

    def _log_examples_table(self, run_id: str, frame: pd.DataFrame) -> None:
        """Write ``examples.json``, replacing an earlier copy.

        ``log_table`` appends to an existing table, which would duplicate every example when a
        resumed run is finished again; so the first write goes through ``log_table`` (which also
        registers the artifact as a table) and later ones overwrite the file in the same format.
        """
        if any(f.path == EXAMPLES_TABLE for f in self.client.list_artifacts(run_id)):
            text = frame.to_json(orient="split", index=False, date_format="iso")
            self.client.log_text(run_id, text, EXAMPLES_TABLE)
        else:
            self.client.log_table(run_id, data=frame, artifact_file=EXAMPLES_TABLE)

    def finish_parent(
        self,
        run_id: str,
        status: str = "FINISHED",
        *,
        table: pd.DataFrame | None = None,
        metrics: Mapping[str, float] | None = None,
        texts: Mapping[str, str] | None = None,
        figures: Mapping[str, Any] | None = None,
        children: Sequence[str] = (),
    ) -> None:
        """Close a comparison's parent run with what its dashboard shows.

        Args:
            run_id: The parent run.
            status: Its final status.
            table: The summary table (``comparison.json``).
            metrics: Each router's headline metrics (``<router>.<metric>``), so the runs table and
                the parent's page show which router is best without opening a child.
            texts: Text artifacts by file name (the comparison as Markdown, the verdict).
            figures: Matplotlib figures by file name (``rates.png``).
            children: The MLflow ids of the comparison's router runs: the run's description (the
                Description section of its page) links to their compare page, under the verdict.
        """
        check_status(status)
        try:
            if table is not None and not table.empty:
                self.client.log_table(run_id, data=table, artifact_file="comparison.json")
            if metrics:
                self.log_metrics(run_id, metrics)
            self.log_texts(run_id, texts or {})
            for name, fig in (figures or {}).items():
                self.client.log_figure(run_id, fig, name)
            if children:
                experiments = [self.client.get_run(c).info.experiment_id for c in children]
                verdict = (texts or {}).get("verdict.md", "")
                link = f"[Compare the {len(children)} router runs]({compare_link(list(children), experiments)})"
                self._set_tags(run_id, {TAG_DESCRIPTION: f"{verdict.strip()}\n\n{link}".strip()})
        finally:
            self.close_run(run_id, status)

    # -- read back --------------------------------------------------------------------------

    def load_runs(
        self,
        experiment: str | None = None,
        run_ids: Sequence[str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> pd.DataFrame:
        """:func:`load_runs` on this sink's store."""
        return load_runs(self.tracking_uri, experiment, run_ids, tags)

    def load_examples(self, run_id: str) -> pd.DataFrame:
        """:func:`load_examples` on this sink's store."""
        return load_examples(run_id, self.tracking_uri)
