"""``routerlab toolscale``: routing when the toolset grows (9, 64, 512 tools).

For each toolset size (the real sub-agents padded with deterministic distractors, see
:func:`routerlab.agents.tools.distractors.tool_registry`) and each router, replay only the *first*
decision on each example, as ``routerlab route`` does (:mod:`routerlab._routing_eval.decisions`), and
measure:

* first-decision intent accuracy with a 95 % bootstrap CI (a call to a distractor implies no
  intent, so it is wrong);
* the router's own prompt and completion tokens, LM calls and wall time per decision;
* for the ``retrieval`` router, recall@k: the gold intent's first tool is among the tools the
  decision retrieved (``recall_at_k``), and among the index's top k for the user's question
  itself (``question_recall_at_k``: the index alone, without the LM's query).

The ``llm`` router is bound to every tool of the set. When its prompt does not fit the model's
context (4096 tokens for the embedded model, exceeded from 64 tools on), the decision is a
scored failure of class ``context_overflow`` and the prompt size the engine refused is kept
(``overflow_prompt_tokens``), never a crashed run.

Results go to a JSON file and to MLflow, one run per size x router in the experiment
``routerlab/toolscale``. :func:`routerlab.eval.toolscale_plots.plot_toolscale` draws them.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from routerlab import routers
from routerlab import routers as registry
from routerlab._routing_eval.decisions import implied_intent
from routerlab.agents.errors import ConfigError
from routerlab.agents.state import initial_state
from routerlab.agents.tools.distractors import is_distractor, tool_registry
from routerlab.benchmarks.example import Example
from routerlab.eval.stats import bootstrap_ci

__all__ = [
    "DEFAULT_ROUTERS",
    "DEFAULT_SIZES",
    "EXPERIMENT",
    "FIRST_TOOL",
    "TABLE_COLUMNS",
    "ScaleDecision",
    "ToolscaleResult",
    "classify_error",
    "log_toolscale",
    "parse_sizes",
    "run_toolscale",
    "scale_decisions",
    "toolscale_json",
    "toolscale_table",
]

DEFAULT_SIZES: tuple[int, ...] = (9, 64, 512)
DEFAULT_ROUTERS: tuple[str, ...] = ("llm", "retrieval")
EXPERIMENT = "routerlab/toolscale"

#: the tool that starts the canonical plan of each intent: what a retrieval must find
FIRST_TOOL: dict[str, str] = {
    "sql": "data_discovery",
    "explain": "explain_sql",
    "fix": "fix_sql",
    "chat": "chat",
    "clarify": "ask_human",
    "refuse": "refuse",
}

TABLE_COLUMNS: tuple[str, ...] = (
    "size",
    "router",
    "n",
    "accuracy",
    "ci_low",
    "ci_high",
    "recall_at_k",
    "question_recall_at_k",
    "distractor_calls",
    "lm_calls",
    "prompt_tokens",
    "completion_tokens",
    "cache_hits",
    "p50_s",
    "mean_s",
    "errors",
    "context_overflow",
    "overflow_prompt_tokens",
)
"""Columns of :func:`toolscale_table`, in order."""

_OVERFLOW = re.compile(
    r"exceed(?:s|ed)? (?:the )?context window|context (?:window|length) (?:exceeded|is too)|maximum context length",
    re.I,
)
_REQUESTED = re.compile(r"Requested tokens \((\d+)\)")


@dataclass(frozen=True)
class ScaleDecision:
    """One router's first decision on one example, with a toolset of ``size`` tools.

    Attributes:
        size: Tools in the set.
        router: Router name.
        example_id: The example.
        gold: Its gold intent.
        predicted: The intent the decision implies (None: no decision, an error or a distractor).
        correct: ``predicted`` is the gold intent or an accepted alternate.
        tool: The tool the decision called, if any.
        distractor: That tool is a distractor.
        retrieved: Tools the decision retrieved (``retrieval`` router only).
        recall: The gold intent's first tool is in ``retrieved`` (None for other routers).
        question_recall: It is in the index's top k for the user's question (None likewise).
        lm_calls: The router's LM calls for this decision.
        prompt_tokens: Prompt tokens the router's LM processed.
        completion_tokens: Completion tokens.
        cache_hits: LM calls answered from the response cache (their latency is near zero).
        seconds: Wall time of the decision.
        error_class: ``context_overflow`` or the exception's class, when deciding raised.
        error: The exception's message (cut).
        overflow_prompt_tokens: For a context overflow, the prompt size the engine refused.
    """

    size: int
    router: str
    example_id: str
    gold: str
    predicted: str | None
    correct: bool
    tool: str | None
    distractor: bool
    retrieved: tuple[str, ...]
    recall: float | None
    question_recall: float | None
    lm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cache_hits: int
    seconds: float
    error_class: str | None = None
    error: str | None = None
    overflow_prompt_tokens: int | None = None


@dataclass
class ToolscaleResult:
    """What :func:`run_toolscale` measured.

    Attributes:
        table: :func:`toolscale_table` of every decision.
        decisions: Every first decision.
        params: The run's settings (sizes, routers, k, index, seed, lm, examples).
        mlflow_run_ids: ``"router@size" -> MLflow run id`` (empty without tracking).
    """

    table: pd.DataFrame
    decisions: list[ScaleDecision]
    params: dict[str, Any]
    mlflow_run_ids: dict[str, str] = field(default_factory=dict)


def parse_sizes(text: str) -> tuple[int, ...]:
    """Parse ``--sizes 9,64,512``.

    Raises:
        ConfigError: For anything but positive integers.
    """
    try:
        sizes = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        sizes = ()
    if not sizes or any(s <= 0 for s in sizes):
        raise ConfigError(
            f"bad --sizes {text!r}",
            expected="comma-separated positive integers such as 9,64,512",
            found=text,
            fix="pass --sizes 9,64,512",
        )
    return sizes


def classify_error(exc: BaseException) -> tuple[str, int | None]:
    """``(error_class, refused prompt tokens)`` of an exception raised while deciding.

    A prompt that does not fit the model's context is ``context_overflow`` whichever layer
    reports it (llama.cpp's ``ValueError`` wrapped by DSPy, or a provider's
    ``ContextWindowExceededError``); anything else is the exception's class name.
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for e in chain:
        if "ContextWindowExceeded" in type(e).__name__ or _OVERFLOW.search(str(e)):
            requested = next((m for c in chain if (m := _REQUESTED.search(str(c)))), None)
            return "context_overflow", int(requested.group(1)) if requested else None
    return type(exc).__name__, None


def _searches_its_own_tools(router_name: str) -> bool:
    """Whether the router sizes its own searched toolset (it takes ``tool_scale``), like ``retrieval``."""
    import inspect

    return "tool_scale" in inspect.signature(routers.router.get(router_name)).parameters


def _build_pipeline(router_name: str, router_args: Mapping[str, Any], size: int, lm: Any, seed: int) -> Any:
    """A pipeline whose router sees ``size`` tools.

    A router that searches its toolset (``tool_scale``) builds it itself; any other router is
    bound to all of them through the pipeline's toolset.
    """
    if _searches_its_own_tools(router_name):
        router = routers.router.build(router_name, **{**router_args, "tool_scale": size, "seed": seed})
        return routers.build_pipeline(router, lm)
    # first decisions only: nothing runs, so the distractors never execute
    return routers.build_pipeline(router_name, lm, router_args=router_args, tools=tool_registry(size, seed=seed))


def scale_decisions(
    router_name: str,
    size: int,
    examples: Sequence[Example],
    lm: Any,
    *,
    router_args: Mapping[str, Any] | None = None,
    seed: int = 0,
    on_done: Callable[[ScaleDecision], None] | None = None,
) -> list[ScaleDecision]:
    """First decision of one router on each example with a toolset of ``size`` tools.

    Args:
        router_name: Registered router name (``llm``, ``retrieval``, ...).
        size: Tools in the set (real sub-agents plus distractors).
        examples: What to replay.
        lm: The router's LM.
        router_args: Constructor arguments (the retrieval router's ``tool_scale`` and ``seed``
            are set from ``size`` and ``seed``).
        seed: Picks and orders the distractors.
        on_done: Called after each example (progress bars).
    """
    pipeline = _build_pipeline(router_name, dict(router_args or {}), size, lm, seed)
    r = pipeline.router
    k = getattr(r, "k", None)
    index = getattr(r, "index", None) if _searches_its_own_tools(router_name) else None
    names = {**pipeline.tools, **getattr(r, "registry", {})}
    out: list[ScaleDecision] = []
    for e in examples:
        gold_tool = FIRST_TOOL[e.intent]
        question_recall = None
        if index is not None and k:
            question_recall = float(gold_tool in {h.name for h in index.search(e.question, k)})
        state = initial_state(e.question, e.db_path, hint=e.hint, oracle_intent=e.intent)
        t0 = time.perf_counter()
        try:
            d = r.decide(state)
        except Exception as exc:  # a crash or an overflow is a scored failure, never a crashed run
            error_class, refused = classify_error(exc)
            sd = ScaleDecision(
                size, router_name, e.id, e.intent, None, False, None, False, (), None if index is None else 0.0,
                question_recall, 0, 0, 0, 0, time.perf_counter() - t0, error_class, str(exc)[:500], refused,
            )  # fmt: skip
        else:
            seconds = time.perf_counter() - t0
            predicted = implied_intent(d)
            tool = d.tool_calls[0]["name"] if d.tool_calls else None
            retrieved = tuple(getattr(d, "retrieved", ()))
            sd = ScaleDecision(
                size=size,
                router=router_name,
                example_id=e.id,
                gold=e.intent,
                predicted=predicted,
                correct=predicted in e.accepted_intents,
                tool=tool,
                distractor=tool is not None and tool in names and is_distractor(names[tool]),
                retrieved=retrieved,
                recall=None if index is None else float(gold_tool in retrieved),
                question_recall=question_recall,
                lm_calls=d.usage.lm_calls,
                prompt_tokens=d.usage.prompt_tokens,
                completion_tokens=d.usage.completion_tokens,
                cache_hits=d.usage.cache_hits,
                seconds=seconds,
            )
        out.append(sd)
        if on_done is not None:
            on_done(sd)
    return out


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


def toolscale_table(decisions: Sequence[ScaleDecision]) -> pd.DataFrame:
    """One row per (size, router), columns :data:`TABLE_COLUMNS`.

    Cost columns (``lm_calls``, ``prompt_tokens``, ``completion_tokens``, ``cache_hits``) are
    means over the decisions that ran (NaN when none did: every prompt overflowed);
    ``p50_s``/``mean_s`` are over all decisions; ``recall_at_k`` and ``question_recall_at_k``
    are NaN for routers that retrieve nothing; ``overflow_prompt_tokens`` is the mean prompt
    size the engine refused.
    """
    groups: dict[tuple[int, str], list[ScaleDecision]] = {}
    for d in decisions:
        groups.setdefault((d.size, d.router), []).append(d)
    rows = []
    for (size, router_name), ds in groups.items():
        hits = [float(d.correct) for d in ds]
        lo, hi = bootstrap_ci(hits)
        ran = [d for d in ds if d.error_class is None]
        seconds = sorted(d.seconds for d in ds)
        refused = [float(d.overflow_prompt_tokens) for d in ds if d.overflow_prompt_tokens is not None]
        rows.append(
            {
                "size": size,
                "router": router_name,
                "n": len(ds),
                "accuracy": _mean(hits),
                "ci_low": lo,
                "ci_high": hi,
                "recall_at_k": _mean([d.recall for d in ds if d.recall is not None]),
                "question_recall_at_k": _mean([d.question_recall for d in ds if d.question_recall is not None]),
                "distractor_calls": sum(d.distractor for d in ds),
                "lm_calls": _mean([d.lm_calls for d in ran]),
                "prompt_tokens": _mean([d.prompt_tokens for d in ran]),
                "completion_tokens": _mean([d.completion_tokens for d in ran]),
                "cache_hits": _mean([d.cache_hits for d in ran]),
                "p50_s": float(pd.Series(seconds).median()) if seconds else math.nan,
                "mean_s": _mean(seconds),
                "errors": sum(d.error_class is not None for d in ds),
                "context_overflow": sum(d.error_class == "context_overflow" for d in ds),
                "overflow_prompt_tokens": _mean(refused),
            }
        )
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return table.sort_values(["size", "router"], kind="stable").reset_index(drop=True)


def _jsonable(value: Any) -> Any:
    """NaN becomes null (JSON has no NaN); numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def toolscale_json(result: ToolscaleResult) -> str:
    """The result as a JSON document: ``params``, ``table`` (records), ``decisions``, ``mlflow_run_ids``."""
    doc = {
        "params": result.params,
        "table": result.table.to_dict(orient="records"),
        "decisions": [asdict(d) for d in result.decisions],
        "mlflow_run_ids": result.mlflow_run_ids,
    }
    return json.dumps(_jsonable(doc), indent=2, allow_nan=False)


def log_toolscale(result: ToolscaleResult, tracking_uri: str, *, experiment: str = EXPERIMENT) -> dict[str, str]:
    """Log one MLflow run per (size, router): parameters, the table row as metrics, decisions as JSON.

    Through a trace-less :class:`~routerlab.eval.tracking.MlflowSink`, so the experiment is created
    (or restored) as a run's is and the process's MLflow tracking URI is left as it was.

    Args:
        result: What :func:`run_toolscale` measured.
        tracking_uri: MLflow store.
        experiment: Experiment name.

    Returns:
        ``"router@size" -> run id``.
    """
    # imported here: MLflow costs seconds at import, and a run without MLflow never loads it
    from routerlab.eval.tracking import MlflowSink

    sink = MlflowSink(tracking_uri, experiment, traces=False)
    client = sink.client
    experiment_id = sink.experiment(experiment)
    session = str(result.params.get("session", ""))
    common = {k: v for k, v in result.params.items() if k not in ("sizes", "routers", "example_ids")}
    ids: dict[str, str] = {}
    for row in result.table.to_dict(orient="records"):
        size, router_name = int(row["size"]), str(row["router"])
        key = f"{router_name}@{size}"
        run = client.create_run(
            experiment_id, run_name=key, tags={"routerlab._runs.session": session, "routerlab.kind": "toolscale"}
        )
        run_id = run.info.run_id
        try:
            params = {**common, "router": router_name, "size": size, "n_examples": int(row["n"])}
            for name, value in params.items():
                client.log_param(run_id, name, json.dumps(value) if isinstance(value, list | dict) else value)
            # an empty measure (no retrieval, no overflow: NaN) is left out rather than a fake 0
            sink.log_metrics(run_id, {col: row[col] for col in TABLE_COLUMNS[2:] if row[col] is not None})
            mine = [asdict(d) for d in result.decisions if d.size == size and d.router == router_name]
            client.log_dict(run_id, _jsonable(mine), "decisions.json")
        except Exception as exc:
            sink.close_run(run_id, "FAILED", error=f"{type(exc).__name__}: {exc}")
            raise
        sink.close_run(run_id, "FINISHED")
        ids[key] = run_id
    return ids


def run_toolscale(
    examples: Sequence[Example],
    lm: Any,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    routers: Sequence[str] = DEFAULT_ROUTERS,
    k: int = 5,
    index: str = "embedding",
    seed: int = 0,
    max_tokens: int | None = None,
    lm_spec: str = "",
    tracking_uri: str | None = None,
    out: Path | None = None,
    on_done: Callable[[ScaleDecision], None] | None = None,
) -> ToolscaleResult:
    """Measure every router at every size on ``examples``; log to MLflow and write JSON.

    Args:
        examples: What to replay (first decisions only).
        lm: The routers' LM.
        sizes: Toolset sizes.
        routers: Router names.
        k: Tools one retrieval returns (``retrieval`` router).
        index: ``embedding`` or ``bm25`` (``retrieval`` router).
        seed: Picks and orders the distractors.
        max_tokens: Completion budget of every router LM call (default: each router's own).
        lm_spec: The LM's spec, recorded.
        tracking_uri: MLflow store (None: no MLflow).
        out: Where to write the JSON (None: not written).
        on_done: Called after each decision.

    Raises:
        ConfigError: For an unknown router, index or an impossible size (before anything runs).
    """
    for name in routers:
        registry.router.get(name)  # an unknown name fails before the first LM call
    for size in sizes:
        tool_registry(size, seed=seed)
    extra: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
    searching = {name for name in routers if _searches_its_own_tools(name)}
    args = {name: ({"k": k, "index": index, **extra} if name in searching else dict(extra)) for name in routers}
    for name in searching:
        registry.router.build(name, **args[name])  # validates k and index up front
    decisions: list[ScaleDecision] = []
    for size in sizes:
        for name in routers:
            decisions += scale_decisions(name, size, examples, lm, router_args=args[name], seed=seed, on_done=on_done)
    params = {
        "session": uuid.uuid4().hex[:12],
        "sizes": list(sizes),
        "routers": list(routers),
        "k": k,
        "index": index,
        "seed": seed,
        "max_tokens": max_tokens,
        "lm": lm_spec or str(getattr(lm, "model", "")),
        "example_ids": [e.id for e in examples],
    }
    result = ToolscaleResult(toolscale_table(decisions), decisions, params)
    if tracking_uri:
        result.mlflow_run_ids = log_toolscale(result, tracking_uri)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(toolscale_json(result))
    return result
