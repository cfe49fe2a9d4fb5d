"""MLflow tracking: where a comparison's runs, metrics, tables and traces go.

Layout:

* one **experiment** per dataset, ``routerlab/<dataset name>`` (or the name given);
* one **parent run** per comparison (tag ``routerlab.kind = comparison``) and one **child run**
  per (router, LM, dataset, config) (``routerlab.kind = router-run``, nested through the
  ``mlflow.parentRunId`` tag);
* **params**: every recorded component argument flattened (``router.name``,
  ``router.args.threshold``...), ``lm.spec``, ``dataset.{name,version,digest,split}``,
  ``git.commit``, ``routerlab.version`` and ``config.*``;
* the replayed examples as a **dataset input** (``mlflow.data.from_pandas``, context = split);
* **metrics** from :func:`routerlab.eval.metrics.summarize` (rates, CI bounds, latency percentiles...);
* the per-example **table** ``examples.json`` (``mlflow.log_table``);
* one **trace** per example: a root span for the example, a CHAIN span per graph node, a span
  per router decision, an AGENT span per agent activation and a TOOL span per tool call, linked
  to its run. A decision made by one agent (every router but ``handoff``) is one AGENT span; a
  decision that several agents took part in (the ``handoff`` router's ``activations``) is a
  CHAIN span with an AGENT span per activation under it.

Thread safety: the runner logs from worker threads, and MLflow's fluent API keeps the active
run in thread-local state, so everything here goes through :class:`mlflow.MlflowClient` with
explicit run ids. The one process-wide setting is the tracking URI, which MLflow's tracer uses
to export traces: a sink with traces on adopts its URI for the process while it is open and
:meth:`MlflowSink.close` restores the previous one.

Resume: runs carry a ``routerlab.run_key`` tag (``<session>.<router>`` for the runner). Starting
a run with a key that already exists reopens that run instead of creating a duplicate.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import logging
import math
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import mlflow
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Dataset as DatasetEntity
from mlflow.entities import (
    DatasetInput,
    InputTag,
    Metric,
    Param,
    RunTag,
    SpanStatus,
    SpanStatusCode,
    SpanType,
)
from mlflow.exceptions import MlflowException
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT, MLFLOW_PARENT_RUN_ID

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import component_spec
from routerlab.agents.trace import Trace
from routerlab.benchmarks.dataset import Dataset
from routerlab.eval.calibration import calibration_metrics, first_confidence
from routerlab.eval.metrics import metric_name, summarize
from routerlab.eval.result import ExampleResult

__all__ = [
    "DEFAULT_TRACKING_URI",
    "EXAMPLES_TABLE",
    "FINAL_STATUSES",
    "RISK_CURVE",
    "RISK_FIGURE",
    "MlflowSink",
    "check_tracking_store",
    "examples_frame",
    "flatten_params",
    "git_commit",
    "load_examples",
    "load_runs",
    "metric_name",
    "resolve_tracking_uri",
]

_log = logging.getLogger(__name__)

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
EXAMPLES_TABLE = "examples.json"
RISK_CURVE = "risk_coverage.json"
RISK_FIGURE = "risk_coverage.png"
FINAL_STATUSES: tuple[str, ...] = ("FINISHED", "FAILED", "KILLED")

TAG_RUN_KEY = "routerlab.run_key"
TAG_KIND = "routerlab.kind"
TAG_STATUS = "routerlab.status"
TAG_ROUTER = "routerlab.router"
TAG_LM = "routerlab.lm"
TAG_DATASET = "routerlab.dataset"

# MLflow's limits (mlflow.utils.validation): params and tags per batch, entities per batch,
# key and param value lengths.
_PARAMS_PER_BATCH = 100
_METRICS_PER_BATCH = 1000
_MAX_PARAM_VALUE = 6000
#: span payloads larger than this (JSON characters) are cut: tool outputs can hold many rows
_MAX_PAYLOAD_CHARS = 8000


# -- small helpers -----------------------------------------------------------------------------


def resolve_tracking_uri(uri: str | None = None) -> str:
    """The tracking URI to use: ``uri``, else ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``.

    A relative SQLite path is made absolute (against the working directory) so the store does
    not move if the process changes directory later.
    """
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/") and ":memory:" not in uri:
        uri = prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


#: database schemes MLflow's SQLAlchemy store accepts (a ``+driver`` suffix is allowed)
_DB_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
_SQLITE_HEADER = b"SQLite format 3\x00"


def _tracking_error(uri: str, what: str, expected: str, found: str, fix: str) -> ConfigError:
    return ConfigError(
        f"tracking store {uri!r}: {what}",
        expected=expected,
        found=found,
        fix=fix,
        details={"option": "--tracking-uri"},
    )


def check_tracking_store(uri: str, *, timeout_s: float = 5.0) -> None:
    """Check that ``uri`` names a tracking store this process can write, before a run starts.

    A bad store found after runs were created would leave them RUNNING behind a traceback (or,
    for a server that does not answer, a silent hang). Checked: the scheme; for SQLite, that the
    folder exists and is writable and that an existing file is a SQLite database; for an
    ``http(s)://`` server, that its ``/health`` endpoint answers within ``timeout_s``.

    Raises:
        ConfigError: Naming the URI, what was expected, what was found and the fix.
    """
    scheme, sep, rest = uri.partition("://")
    base = scheme.split("+", 1)[0].lower()
    if not sep:
        raise _tracking_error(
            uri,
            "not a URI",
            "sqlite:///PATH, a database URI (postgresql://...) or an http(s):// tracking server",
            "no scheme (a plain path?)",
            f"pass --tracking-uri sqlite:///{uri}" if uri else "pass --tracking-uri sqlite:///mlflow.db",
        )
    if base == "sqlite":
        _check_sqlite_store(uri, rest)
    elif base in ("http", "https"):
        _check_server(uri, timeout_s)
    elif base not in _DB_SCHEMES:
        raise _tracking_error(
            uri,
            f"unknown scheme {scheme!r}",
            f"one of: sqlite, {', '.join(_DB_SCHEMES[1:])} (with an optional +driver), http, https",
            repr(scheme),
            "use sqlite:///mlflow.db for a local store, or http://HOST:PORT for a server",
        )


def _check_sqlite_store(uri: str, rest: str) -> None:
    path_text = rest[1:] if rest.startswith("/") else rest
    if ":memory:" in path_text or not path_text:
        return
    path = Path(path_text)
    if path.is_dir():
        raise _tracking_error(
            uri, "is a folder", "a SQLite file path", f"the folder {path}", f"pass sqlite:///{path / 'mlflow.db'}"
        )
    if path.exists():
        with path.open("rb") as fh:
            header = fh.read(len(_SQLITE_HEADER))
        if header and header != _SQLITE_HEADER:
            raise _tracking_error(
                uri,
                "not a SQLite database",
                "a SQLite file (or a path that does not exist yet)",
                f"a file starting with {header[:8]!r}",
                "point --tracking-uri at an MLflow SQLite store or a new file",
            )
        if not os.access(path, os.W_OK):
            raise _tracking_error(
                uri,
                "not writable",
                "a writable SQLite file",
                "permission denied",
                "fix its permissions or pick another",
            )
        return
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise _tracking_error(
            uri, "its folder does not exist", "an existing folder", str(folder), f"create it: mkdir -p {folder}"
        )
    if not os.access(folder, os.W_OK):
        raise _tracking_error(
            uri,
            "its folder is not writable",
            "a folder this user can write",
            f"{folder} (permission denied)",
            "pick a writable folder",
        )


def _check_server(uri: str, timeout_s: float) -> None:
    import urllib.error
    import urllib.request

    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        raise _tracking_error(
            uri,
            "the server does not answer",
            f"an MLflow tracking server answering {url} within {timeout_s:g} s",
            f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}",
            "start it (routerlab server mlflow) or check the address; --no-mlflow runs without it",
        ) from None
    if status >= 400:
        raise _tracking_error(
            uri,
            f"the server answered HTTP {status}",
            f"HTTP 200 from {url}",
            f"HTTP {status}",
            "check that the address is an MLflow tracking server",
        )


def _default_artifact_root(tracking_uri: str) -> str | None:
    """``mlartifacts`` beside a SQLite store (None: let the server decide)."""
    if tracking_uri.startswith("sqlite:///"):
        return str(Path(tracking_uri[len("sqlite:///") :]).parent / "mlartifacts")
    return None


def git_commit() -> str:
    """The routerlab checkout's ``HEAD`` commit, or ``unknown`` (no git, not a checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _routerlab_version() -> str:
    try:
        return importlib.metadata.version("routerlab")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


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


def _capped(value: Any) -> Any:
    """A JSON-able copy of ``value``, replaced by a preview when it is too large for a span."""
    text = json.dumps(value, default=str)
    if len(text) <= _MAX_PAYLOAD_CHARS:
        return json.loads(text)
    return {"truncated": True, "chars": len(text), "preview": text[:_MAX_PAYLOAD_CHARS]}


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


def _check_status(status: str) -> None:
    if status not in FINAL_STATUSES:
        raise ConfigError(
            f"unknown final run status {status!r}",
            expected=", ".join(FINAL_STATUSES),
            found=repr(status),
            fix="FINISHED when every example ran, KILLED when interrupted, FAILED on a crash",
        )


def _quote(value: str) -> str:
    """``value`` as a single-quoted MLflow search literal."""
    if "'" in value:
        raise ConfigError(
            "a run key or tag value contains a single quote",
            expected="ids without quotes",
            found=value,
            fix="use letters, digits, dots, dashes or underscores",
        )
    return f"'{value}'"


# -- traces ------------------------------------------------------------------------------------


def _question(result: ExampleResult, question: str | None) -> str | None:
    if question is not None or result.trace is None:
        return question
    return next((str(m.get("content")) for m in result.trace.messages if m.get("role") == "user"), None)


class _TraceWriter:
    """Writes one example's trace with explicit span ids and reconstructed timing.

    A finished :class:`~routerlab.agents.trace.Trace` keeps per-node *total* latencies, not per-visit
    stamps, so node spans are laid end to end with their totals; tool spans keep their real
    durations. The root span says so (``routerlab.timing = reconstructed``).
    """

    def __init__(self, client: MlflowClient, trace_id: str, root_id: str, start_ns: int) -> None:
        self.client = client
        self.trace_id = trace_id
        self.root_id = root_id
        self.cursor = start_ns

    def span(
        self,
        name: str,
        span_type: str,
        parent: str,
        *,
        inputs: Any = None,
        outputs: Any = None,
        attributes: Mapping[str, Any] | None = None,
        duration_ns: int = 0,
        status: SpanStatus | str = "OK",
    ) -> str:
        """A closed span from the cursor, lasting ``duration_ns``; returns its id."""
        start = self.cursor
        span = self.client.start_span(
            name,
            self.trace_id,
            parent,
            span_type=span_type,
            inputs=inputs,
            attributes=dict(attributes or {}),
            start_time_ns=start,
        )
        self.cursor = start + max(duration_ns, 0)
        self.client.end_span(self.trace_id, span.span_id, outputs=outputs, status=status, end_time_ns=self.cursor)
        return span.span_id

    def open(
        self,
        name: str,
        span_type: str,
        attributes: Mapping[str, Any],
        *,
        parent: str | None = None,
        inputs: Any = None,
    ) -> tuple[str, int]:
        """Start a child of ``parent`` (default: the root) at the cursor; returns its id and start time."""
        start = self.cursor
        span = self.client.start_span(
            name,
            self.trace_id,
            parent or self.root_id,
            span_type=span_type,
            inputs=inputs,
            attributes=dict(attributes),
            start_time_ns=start,
        )
        return span.span_id, start

    def close(
        self, span_id: str, start_ns: int, min_duration_ns: int, outputs: Any = None, status: SpanStatus | str = "OK"
    ) -> None:
        """End a span from :meth:`open`, lasting at least ``min_duration_ns`` and covering its children."""
        self.cursor = max(self.cursor, start_ns + min_duration_ns)
        self.client.end_span(self.trace_id, span_id, outputs=outputs, status=status, end_time_ns=self.cursor)

    def decisions(self, parent: str, decisions: Sequence[Mapping[str, Any]], budget_ns: int) -> None:
        """A span per router decision, sharing ``budget_ns`` evenly (no per-decision stamps).

        A decision without ``activations`` is one AGENT span. One with them is a CHAIN span with
        an AGENT span per activation (:meth:`activations`), lasting at least their real durations.
        """
        each = budget_ns // max(len(decisions), 1)
        for i, d in enumerate(decisions):
            attributes = {k: d.get(k) for k in ("strategy", "intent", "confidence", "method") if k in d}
            activations = d.get("activations") or []
            if not activations:
                self.span(
                    f"decision {i}",
                    SpanType.AGENT,
                    parent,
                    inputs={"step": i},
                    outputs=_capped(dict(d)),
                    attributes=attributes,
                    duration_ns=each,
                )
                continue
            span_id, started = self.open(
                f"decision {i}",
                SpanType.CHAIN,
                {**attributes, "routerlab.agents": [str(a.get("agent")) for a in activations]},
                parent=parent,
                inputs={"step": i},
            )
            self.activations(span_id, activations)
            # the activations are spans of their own: the decision's output leaves them out
            outputs = _capped({k: v for k, v in d.items() if k != "activations"})
            self.close(span_id, started, each, outputs=outputs)

    def activations(self, parent: str, activations: Sequence[Mapping[str, Any]]) -> None:
        """An AGENT span per agent activation (name = agent), with its real duration.

        Attributes say who handed control over and why (``routerlab.source``, ``routerlab.via``,
        ``routerlab.reason``), how it ended, its tokens and the calls it made; a stopped or
        invalid activation has ERROR status.
        """
        for a in activations:
            started, ended = a.get("started"), a.get("ended")
            duration = int((ended - started) * 1e9) if started is not None and ended is not None else 0
            calls = [str(c.get("name")) for c in a.get("calls") or []]
            outcome = str(a.get("outcome") or "")
            attributes = {f"routerlab.{k}": a.get(k) for k in ("index", "source", "via", "reason", "outcome")}
            attributes |= {
                f"routerlab.{k}": a.get(k, 0) for k in ("lm_calls", "prompt_tokens", "completion_tokens", "latency_s")
            }
            attributes |= {"routerlab.calls": calls, "routerlab.started": started, "routerlab.ended": ended}
            failed = outcome in ("stopped", "invalid")
            self.span(
                str(a.get("agent", "agent")),
                SpanType.AGENT,
                parent,
                inputs={"source": a.get("source"), "via": a.get("via"), "reason": a.get("reason")},
                outputs=_capped({"outcome": outcome, "calls": a.get("calls") or []}),
                attributes=attributes,
                duration_ns=duration,
                status=SpanStatus(SpanStatusCode.ERROR, outcome) if failed else "OK",
            )

    def tool_calls(self, parent: str, calls: Sequence[Mapping[str, Any]]) -> None:
        """A TOOL span per call, with its real duration and ERROR status when it failed."""
        for call in calls:
            started, ended = call.get("started"), call.get("ended")
            duration = int((ended - started) * 1e9) if started is not None and ended is not None else 0
            state = call.get("status")
            if state == "error":
                status: SpanStatus | str = SpanStatus(SpanStatusCode.ERROR, str(call.get("error_class") or "error"))
            else:
                status = "OK" if state == "success" else SpanStatus(SpanStatusCode.UNSET)
            attributes = {f"routerlab.{k}": call.get(k) for k in ("id", "step", "parent", "error_class")}
            attributes |= {"routerlab.started": started, "routerlab.ended": ended}
            self.span(
                str(call.get("name", "tool")),
                SpanType.TOOL,
                parent,
                inputs=_capped(call.get("args") or {}),
                outputs=_capped(call.get("output")),
                attributes=attributes,
                duration_ns=duration,
                status=status,
            )


def _write_trace(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    result: ExampleResult,
    t: Trace,
    question: str | None,
) -> str:
    """Log ``result`` (whose trace is ``t``) as one trace linked to ``run_id``; returns the trace id."""
    node_ns = {n: int(s * 1e9) for n, s in t.node_latency_s.items()}
    total_ns = max(int(result.latency_s * 1e9), sum(node_ns.values()))
    start_ns = time.time_ns() - total_ns
    tags = {
        "routerlab.run_id": run_id,
        "routerlab.example_id": result.example_id,
        "routerlab.attempt": str(result.attempt),
        TAG_ROUTER: result.router,
        TAG_LM: result.lm,
        "routerlab.intent": result.intent,
        "routerlab.outcome": result.outcome,
    }
    # scores as tags make failing examples findable: tags.`routerlab.score.ex` = '0.0'
    tags |= {f"routerlab.score.{metric_name(k)}": str(s.value) for k, s in result.scores.items() if s.value is not None}
    root = client.start_trace(
        f"example {result.example_id}",
        span_type=SpanType.CHAIN,
        inputs={"question": question, "example_id": result.example_id, "intent": result.intent},
        attributes={
            "routerlab.timing": "reconstructed",
            "routerlab.latency_s": result.latency_s,
            "routerlab.scores": {k: s.value for k, s in result.scores.items()},
        },
        tags=tags,
        experiment_id=experiment_id,
        start_time_ns=start_ns,
        run_id=run_id,
    )
    writer = _TraceWriter(client, root.trace_id, root.span_id, start_ns)
    status: SpanStatus | str = "OK"
    try:
        nodes = list(dict.fromkeys([*t.path, *t.node_latency_s]))
        placed_decisions = placed_tools = False
        for node in nodes:
            span_id, started = writer.open(
                node,
                SpanType.CHAIN,
                {
                    "routerlab.visits": t.path.count(node),
                    "routerlab.latency_s": t.node_latency_s.get(node, 0.0),
                },
            )
            if node == "route" and t.route_decisions:
                writer.decisions(span_id, t.route_decisions, node_ns.get(node, 0))
                placed_decisions = True
            elif node == "tools" and t.tool_calls:
                writer.tool_calls(span_id, t.tool_calls)
                placed_tools = True
            writer.close(span_id, started, node_ns.get(node, 0))
        # a trace without graph nodes (an early crash, a hand-made result) still shows its steps
        if not placed_decisions:
            writer.decisions(root.span_id, t.route_decisions, 0)
        if not placed_tools:
            writer.tool_calls(root.span_id, t.tool_calls)
        if result.outcome != "ok":
            status = SpanStatus(SpanStatusCode.ERROR, str(result.error_class or result.outcome))
    finally:
        client.end_trace(
            root.trace_id,
            outputs={"answer": t.answer, "sql": t.sql, "error": t.error},
            status=status,
            end_time_ns=max(writer.cursor, start_ns + total_ns),
        )
    return root.trace_id


# -- the sink ----------------------------------------------------------------------------------


class MlflowSink:
    """Writes runs, params, metrics, tables and traces to an MLflow tracking store.

    Args:
        tracking_uri: Store URI; None reads ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``
            (MLflow 3.17 refuses the old file store).
        experiment: Experiment name for every run; None means ``routerlab/<dataset name>``.
        traces: Log one trace per example (turn off for very large runs).
        artifact_location: Artifact root of experiments this sink creates; by default
            ``mlartifacts/`` beside a SQLite store.

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
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        self._artifact_root = artifact_location or _default_artifact_root(self.tracking_uri)
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
            mlflow.set_tracking_uri(self._previous_uri)  # type: ignore[arg-type]  (None unsets it)
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
        location = None
        if self._artifact_root is not None:
            location = str(Path(self._artifact_root) / re.sub(r"[^\w.-]+", "_", name))
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
        query = f"tags.`{TAG_RUN_KEY}` = {_quote(run_key)}"
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
                "routerlab": {"version": _routerlab_version()},
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
            "routerlab": {"version": _routerlab_version()},
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
        ds = mlflow.data.from_pandas(frame, name=f"{dataset.name}/{split}", digest=dataset.digest()[:10])
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
            return _write_trace(self.client, experiment_id, run_id, result, result.trace, _question(result, question))
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
        """Log a run's metrics and per-example table, then close it with ``status``.

        Args:
            run_id: The MLflow run.
            results: Every result of the run (resumed ones included).
            status: ``FINISHED``, ``FAILED`` or ``KILLED``; also the ``routerlab.status`` tag.
            error: Why the run failed, kept as the ``routerlab.error`` tag.

        The run is closed with ``status`` even if logging fails half-way (then as FAILED), so a
        broken run never shows as running or successful.
        """
        _check_status(status)
        final = status
        try:
            self.flush()
            if results:
                metrics = {metric_name(k): float(v) for k, v in summarize(list(results)).items()}
                metrics |= {metric_name(k): v for k, v in calibration_metrics(results).items()}
                stamp = int(time.time() * 1000)
                # NaN (no applicable example) is left out: MLflow would chart it as a value
                items = [Metric(k, v, stamp, 0) for k, v in metrics.items() if math.isfinite(v)]
                for i in range(0, len(items), _METRICS_PER_BATCH):
                    self.client.log_batch(run_id, metrics=items[i : i + _METRICS_PER_BATCH])
                self._log_examples_table(run_id, examples_frame(results))
                self._log_risk_coverage(run_id, results)
        except Exception:
            final = "FAILED"
            raise
        finally:
            tags = {TAG_STATUS: final, "routerlab.n_results": str(len(results))}
            if error:
                tags["routerlab.error"] = error[:5000]
            self._set_tags(run_id, tags)
            self.client.set_terminated(run_id, status=final)

    def _log_risk_coverage(self, run_id: str, results: Sequence[ExampleResult]) -> None:
        """``risk_coverage.json`` (the curve's points) and its figure, when the run answered data questions."""
        from routerlab.eval.plots import plot_risk_coverage
        from routerlab.eval.risk import risk_coverage, risk_summary

        points = risk_coverage(list(results))
        if not points:
            return
        aurc = risk_summary(list(results)).aurc
        rows = [{"threshold": t, "coverage": c, "risk": k} for t, c, k in points]
        self.client.log_dict(run_id, {"aurc": aurc if math.isfinite(aurc) else None, "points": rows}, RISK_CURVE)
        label = results[0].router
        frame = pd.DataFrame([{**r, "router": label, "aurc": aurc} for r in rows])
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

    def finish_parent(self, run_id: str, status: str = "FINISHED", *, table: pd.DataFrame | None = None) -> None:
        """Close a comparison's parent run, optionally with its summary table (``comparison.json``)."""
        _check_status(status)
        try:
            if table is not None and not table.empty:
                self.client.log_table(run_id, data=table, artifact_file="comparison.json")
        finally:
            self._set_tags(run_id, {TAG_STATUS: status})
            self.client.set_terminated(run_id, status=status)

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


# -- read back ---------------------------------------------------------------------------------


def _ms(value: int | None) -> pd.Timestamp | None:
    return None if value is None else pd.Timestamp(value, unit="ms", tz="UTC")


def load_runs(
    tracking_uri: str | None = None,
    experiment: str | None = None,
    run_ids: Sequence[str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Runs as a frame: one row per run with ``params.*``, ``metrics.*`` and ``tags.*`` columns.

    Args:
        tracking_uri: The store (default as :func:`resolve_tracking_uri`).
        experiment: Only this experiment (e.g. ``routerlab/builtin``); default: every one.
        run_ids: Only these runs.
        tags: Only runs with these tag values (e.g. ``{"routerlab.kind": "router-run"}``).

    Raises:
        ConfigError: For an unknown experiment.
    """
    client = MlflowClient(tracking_uri=resolve_tracking_uri(tracking_uri))
    if experiment is not None:
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            known = [e.name for e in client.search_experiments()]
            raise ConfigError(
                f"no MLflow experiment {experiment!r}",
                expected=f"one of {known}",
                found=experiment,
                fix="check the name (routerlab/<dataset>) and --tracking-uri",
            )
        experiment_ids = [exp.experiment_id]
    else:
        experiment_ids = [e.experiment_id for e in client.search_experiments()]
    clauses = [f"tags.`{k}` = {_quote(v)}" for k, v in (tags or {}).items()]
    if run_ids:
        clauses.append(f"attributes.run_id IN ({', '.join(_quote(r) for r in run_ids)})")
    runs, token = [], None
    while experiment_ids:
        page = client.search_runs(
            experiment_ids,
            filter_string=" and ".join(clauses),
            page_token=token,
            order_by=["attributes.start_time ASC"],
        )
        runs.extend(page)
        token = page.token
        if not token:
            break
    rows = []
    for run in runs:
        info, data = run.info, run.data
        row: dict[str, Any] = {
            "run_id": info.run_id,
            "run_name": info.run_name,
            "experiment_id": info.experiment_id,
            "status": info.status,
            "start_time": _ms(info.start_time),
            "end_time": _ms(info.end_time),
            "parent_run_id": data.tags.get(MLFLOW_PARENT_RUN_ID),
        }
        row |= {f"params.{k}": v for k, v in data.params.items()}
        row |= {f"metrics.{k}": v for k, v in data.metrics.items()}
        row |= {f"tags.{k}": v for k, v in data.tags.items()}
        rows.append(row)
    return pd.DataFrame(rows)


def load_examples(run_id: str, tracking_uri: str | None = None) -> pd.DataFrame:
    """The per-example table logged by :meth:`MlflowSink.finish_run`.

    Raises:
        ConfigError: When the run has no table (it was never finished).
    """
    # MlflowClient.load_table searches runs through the process-wide tracking URI, not the
    # client's, so the artifact is read directly.
    client = MlflowClient(tracking_uri=resolve_tracking_uri(tracking_uri))
    if not any(f.path == EXAMPLES_TABLE for f in client.list_artifacts(run_id)):
        raise ConfigError(
            f"MLflow run {run_id} has no {EXAMPLES_TABLE}",
            expected="a run closed by MlflowSink.finish_run",
            found="no table artifact",
            fix="finish (or resume and finish) the run first",
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run_id, EXAMPLES_TABLE, dst_path=tmp)
        return pd.read_json(path, orient="split")
