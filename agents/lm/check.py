"""``routerlab lm check``: load an LM, make one completion and one tool call, report timings."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from routerlab.agents.lm.chat import chat
from routerlab.agents.lm.resolve import resolve_lm

__all__ = ["LMCheckReport", "format_report", "lm_check", "string_tools"]


def string_tools(specs: Sequence[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """OpenAI tool schemas of one required string argument each, from ``(name, description, argument)``.

    What a quick tool-calling check offers a model (``lm check``, the real-model tests): the
    sub-agents' names and purposes without the pipeline around them.
    """
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": d,
                "parameters": {
                    "type": "object",
                    "properties": {a: {"type": "string", "description": a}},
                    "required": [a],
                },
            },
        }
        for n, d, a in specs
    ]


_TOOLS = string_tools(
    [
        ("data_discovery", "Find the tables relevant to a question about the data.", "question"),
        ("explain_sql", "Explain what a given SQL query does.", "sql"),
        ("fix_sql", "Repair a SQL query that failed, given its error.", "sql"),
        ("chat", "Reply to greetings and small talk that need no data.", "message"),
    ]
)


@dataclass
class LMCheckReport:
    """What ``lm check`` measured."""

    spec: str
    model: str
    load_s: float
    completion: str
    completion_s: float
    completion_tokens: int
    tool_call: dict[str, Any] = field(default_factory=dict)
    tool_call_s: float = 0.0
    invalid_tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        """Completion tokens per second of the plain completion."""
        return self.completion_tokens / self.completion_s if self.completion_s else 0.0


def lm_check(spec: str = "local", api_base: str | None = None) -> LMCheckReport:
    """Load ``spec`` (uncached, so the numbers are real), complete once, call a tool once."""
    t0 = time.perf_counter()
    lm = resolve_lm(spec, api_base=api_base, cache=False, max_tokens=96)
    load = getattr(getattr(lm, "_engine_spec", None), "llama", None)
    if load is not None:
        load()  # load now, so the load time is not counted as latency
    load_s = time.perf_counter() - t0
    r = chat(
        lm,
        [
            {
                "role": "system",
                "content": "Write one SQL query, SQL only.\n"
                "CREATE TABLE areas (id INTEGER, name TEXT, has_ev BOOLEAN);",
            },
            {"role": "user", "content": "How many areas have EV charging?"},
        ],
    )
    t = chat(
        lm,
        [
            {"role": "system", "content": "Route the request to exactly one tool."},
            {"role": "user", "content": "How many service areas opened in 2015?"},
        ],
        _TOOLS,
        tool_choice="required",
    )
    return LMCheckReport(
        spec=spec,
        model=lm.model,
        load_s=load_s,
        completion=r.text.strip(),
        completion_s=r.usage.latency_s,
        completion_tokens=r.usage.completion_tokens,
        tool_call=t.tool_calls[0] if t.tool_calls else {},
        tool_call_s=t.usage.latency_s,
        invalid_tool_calls=t.invalid_tool_calls,
    )


def format_report(r: LMCheckReport) -> str:
    """Human-readable report."""
    call = r.tool_call or {"invalid": r.invalid_tool_calls}
    return "\n".join(
        [
            f"model:       {r.model}  (--lm {r.spec})",
            f"load:        {r.load_s:.2f} s",
            f"completion:  {r.completion_s:.2f} s, {r.completion_tokens} tokens, {r.tokens_per_s:.1f} tokens/s",
            f"             {r.completion[:200]}",
            f"tool call:   {r.tool_call_s:.2f} s  {call}",
        ]
    )
