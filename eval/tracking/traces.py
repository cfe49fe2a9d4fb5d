"""One MLflow trace per example: spans for graph nodes, router decisions, agent activations, tool calls.

Written with explicit span ids and reconstructed timing (:class:`_TraceWriter`), because the
runner logs from worker threads and MLflow's fluent tracing keeps thread-local state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import (
    SpanStatus,
    SpanStatusCode,
    SpanType,
)

from routerlab.agents.trace import Trace
from routerlab.eval.metrics import metric_name
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.tracking.layout import (
    TAG_LM,
    TAG_ROUTER,
)

__all__ = ["example_question", "write_trace"]

#: span payloads larger than this (JSON characters) are cut: tool outputs can hold many rows
_MAX_PAYLOAD_CHARS = 8000


def _capped(value: Any) -> Any:
    """A JSON-able copy of ``value``, replaced by a preview when it is too large for a span."""
    text = json.dumps(value, default=str)
    if len(text) <= _MAX_PAYLOAD_CHARS:
        return json.loads(text)
    return {"truncated": True, "chars": len(text), "preview": text[:_MAX_PAYLOAD_CHARS]}


def example_question(result: ExampleResult, question: str | None) -> str | None:
    """The question a trace shows: ``question`` when given, else the trace's first user message."""
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


def write_trace(
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
    # seed 004's RunnableConfig: its tags (one string), metadata (a tag each) and run name (the trace's)
    run_config = t.run_config or {}
    if run_config.get("tags"):
        tags["routerlab.tags"] = ",".join(map(str, run_config["tags"]))
    tags |= {f"routerlab.meta.{metric_name(k)}": str(v)[:5000] for k, v in (run_config.get("metadata") or {}).items()}
    # span attributes are any JSON value (MLflow serialises them), though start_trace's hint says str
    attributes: dict[str, Any] = {
        "routerlab.timing": "reconstructed",
        "routerlab.latency_s": result.latency_s,
        "routerlab.scores": {k: s.value for k, s in result.scores.items()},
    }
    root = client.start_trace(
        run_config.get("run_name") or f"example {result.example_id}",
        span_type=SpanType.CHAIN,
        inputs={"question": question, "example_id": result.example_id, "intent": result.intent},
        attributes=attributes,
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
