"""Hand-built example results, traces and datasets for the eval tests (no model, no pipeline)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from routerlab.agents.trace import Trace, Usage
from routerlab.benchmarks.dataset import Dataset
from routerlab.benchmarks.example import Example
from routerlab.eval.scoring import ExampleResult, Score

#: a plausible successful text-to-SQL chain: discover the schema, write SQL, run it
DEFAULT_TOOL_CALLS: tuple[tuple[str, dict[str, Any], Any, str], ...] = (
    ("data_discovery", {"question": "q"}, {"tables": ["areas"]}, "success"),
    ("generate_sql", {"question": "q"}, {"sql": "SELECT 1"}, "success"),
    ("run_sql", {"sql": "SELECT 1"}, {"columns": ["x"], "rows": [[1]]}, "success"),
)


def _tool_records(calls: Sequence[Any], t0: float) -> list[dict[str, Any]]:
    """Tool-call records (``routerlab.agents.state.ToolCallRecord`` shape) from names or tuples or dicts."""
    records = []
    for step, call in enumerate(calls):
        if isinstance(call, dict):
            record = {"step": step, "id": f"call_{step}", "status": "success", "args": {}, **call}
        else:
            name, args, output, status = (call, {}, None, "success") if isinstance(call, str) else call
            record = {
                "id": f"call_{step}",
                "name": name,
                "args": args,
                "output": output,
                "status": status,
                "step": step,
            }
        record.setdefault("error_class", "tool_error" if record["status"] == "error" else None)
        record.setdefault("parent", None)
        record.setdefault("started", t0 + 0.1 * step)
        record.setdefault("ended", t0 + 0.1 * step + 0.05)
        records.append(record)
    return records


def build_result(
    example_id: str,
    router: str = "rules",
    scores: dict[str, float | None] | None = None,
    intent: str = "sql",
    latency: float = 1.0,
    tool_calls: Sequence[Any] | None = None,
    *,
    lm: str = "scripted",
    outcome: str = "ok",
    predicted_intent: str | None = None,
    difficulty: str | None = "easy",
    attempt: int = 0,
    dataset: str = "toy",
    split: str = "dev",
    router_tokens: tuple[int, int] = (100, 10),
    subagent_tokens: tuple[int, int] = (300, 40),
    lm_calls: tuple[int, int] = (1, 2),
    question: str | None = None,
    with_trace: bool = True,
) -> ExampleResult:
    """One example result with a consistent trace, every field overridable.

    Args:
        example_id: Example id.
        router: Router name.
        scores: ``scorer name -> value`` (None: not applicable); default ``{"ex": 1.0}``.
        intent: Gold intent (also the predicted one unless ``predicted_intent`` is given).
        latency: End-to-end seconds.
        tool_calls: Tool names, ``(name, args, output, status)`` tuples or record dicts;
            default :data:`DEFAULT_TOOL_CALLS`.
    """
    scores = {"ex": 1.0} if scores is None else scores
    calls = DEFAULT_TOOL_CALLS if tool_calls is None else tool_calls
    t0 = 1_700_000_000.0
    records = _tool_records(calls, t0)
    predicted = intent if predicted_intent is None else predicted_intent
    # every call computed in this run: its cold cost is what it cost
    router_usage = Usage(
        lm_calls=lm_calls[0],
        prompt_tokens=router_tokens[0],
        completion_tokens=router_tokens[1],
        latency_s=0.2,
        cold_prompt_tokens=router_tokens[0],
        cold_completion_tokens=router_tokens[1],
        cold_latency_s=0.2,
    )
    subagent_usage = Usage(
        lm_calls=lm_calls[1],
        prompt_tokens=subagent_tokens[0],
        completion_tokens=subagent_tokens[1],
        latency_s=0.5,
        cold_prompt_tokens=subagent_tokens[0],
        cold_completion_tokens=subagent_tokens[1],
        cold_latency_s=0.5,
    )
    decisions = [
        {
            "strategy": router,
            "intent": predicted,
            "confidence": 0.9,
            "method": router,
            "tools": [r["name"] for r in records],
            "answer": False,
        }
    ]
    trace = Trace(
        example_id=example_id,
        answer="There is 1." if outcome == "ok" else None,
        sql="SELECT 1" if records else None,
        columns=["x"],
        rows=[[1]],
        executed=bool(records),
        intent=predicted,
        route_decisions=decisions,
        tool_calls=records,
        messages=[{"role": "user", "content": question or f"question of {example_id}"}],
        path=["route", "dispatch", "tools", "dispatch", "respond"],
        node_latency_s={"route": 0.2, "dispatch": 0.02, "tools": 0.6, "respond": 0.1},
        total_latency_s=latency,
        router_usage=router_usage,
        subagent_usage=subagent_usage,
        error=None if outcome == "ok" else f"{outcome} happened",
        error_class=None if outcome == "ok" else outcome,
        steps=1,
    )
    return ExampleResult(
        example_id=example_id,
        dataset=dataset,
        split=split,
        intent=intent,
        difficulty=difficulty,
        router=router,
        lm=lm,
        outcome=outcome,
        error_class=trace.error_class,
        error=trace.error,
        predicted_intent=predicted,
        scores={k: Score(k, v, reason="hand-made") for k, v in scores.items()},
        latency_s=latency,
        node_latency_s=dict(trace.node_latency_s),
        router_usage=router_usage,
        subagent_usage=subagent_usage,
        trace=trace if with_trace else None,
        attempt=attempt,
    )


def build_dataset(n: int = 4, name: str = "toy", version: str = "1") -> Dataset:
    """A small dataset of ``sql`` examples ``e0..e{n-1}`` (dev split)."""
    examples = [
        Example(
            id=f"e{i}",
            question=f"question of e{i}",
            db_id="sales",
            db_path="/nowhere/sales.duckdb",
            intent="sql",
            gold_sql=f"SELECT {i}",
            expected_chain=("generate_sql", "run_sql"),
            difficulty="easy",
            split="dev",
            dataset=name,
        )
        for i in range(n)
    ]
    return Dataset(name=name, version=version, examples=examples, source="tests")


@pytest.fixture
def make_result() -> Callable[..., ExampleResult]:
    """Factory: ``make_result(example_id, router, scores, intent=..., latency=..., tool_calls=...)``."""
    return build_result


@pytest.fixture
def make_dataset() -> Callable[..., Dataset]:
    """Factory: ``make_dataset(n=4, name="toy", version="1")``."""
    return build_dataset


@pytest.fixture
def toy_dataset() -> Dataset:
    """Four ``sql`` examples ``e0..e3`` on the dev split."""
    return build_dataset()
