"""``chat``: the one call routers make to any LM, with tools, returning structured tool calls."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import dspy
import jsonschema
from dspy import lm15 as L

from routerlab.agents.lm.messages import INVALID_MARKER, text_of, to_request
from routerlab.agents.lm.usage import usage_scope
from routerlab.agents.trace import Usage

__all__ = ["ChatResult", "chat"]


@dataclass
class ChatResult:
    """One LM reply.

    Attributes:
        text: Text content (empty when the reply is a tool call).
        tool_calls: ``{"id", "name", "args": dict}`` per valid call.
        invalid_tool_calls: ``{"id", "name", "args": raw str, "error"}`` per call that could not be
            parsed or failed its tool's schema (LangGraph's ``invalid_tool_calls``).
        usage: Tokens, latency and cache hit of this call.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    invalid_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def _check_args(name: str, args: Any, schemas: dict[str, dict[str, Any]]) -> str | None:
    if name not in schemas:
        return f"unknown tool {name!r}"
    if not isinstance(args, dict):
        return "arguments are not a JSON object"
    errors = sorted(jsonschema.Draft202012Validator(schemas[name]).iter_errors(args), key=lambda e: list(e.path))
    return "; ".join(e.message for e in errors) or None


def chat(
    lm: dspy.LM,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    tool_choice: str = "auto",
    max_tokens: int | None = None,
    temperature: float | None = None,
    seed: int | None = None,
) -> ChatResult:
    """Send OpenAI-style ``messages`` (and tool schemas) to ``lm`` and parse the reply.

    Works the same for the embedded engine and any LiteLLM provider: the request goes through
    ``lm(Request)``, DSPy's non-deprecated path, so it is cached and counted like module calls.

    Args:
        lm: A DSPy LM (see :func:`routerlab.agents.lm.resolve_lm`).
        messages: Chat messages; tool results carry ``tool_call_id``.
        tools: OpenAI-style function schemas.
        tool_choice: ``auto``, ``required``, ``none`` or a tool name.
        max_tokens: Completion budget (default: the LM's).
        temperature: Sampling temperature (default: the LM's, greedy unless it says otherwise).
        seed: Sampling seed (default: the engine's). Sampled candidates of one prompt differ by
            seed, which keeps each reproducible and a distinct response-cache entry.
    """
    request = to_request(
        lm.model,
        messages,
        tools,
        tool_choice=tool_choice,
        max_tokens=max_tokens or lm.kwargs.get("max_tokens"),
        temperature=lm.kwargs.get("temperature", 0.0) if temperature is None else temperature,
        seed=seed,
    )
    t0 = time.perf_counter()
    with usage_scope() as log:
        response: L.Response = lm(request)
    usage = log.total()
    if usage.lm_calls == 0:  # an LM without routerlab's callback: read the response itself
        u = response.usage
        usage = Usage.computed(u.input_tokens or 0, u.output_tokens or 0, time.perf_counter() - t0)
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools or ()}
    result = ChatResult(text=text_of(response.message), usage=usage)
    for p in response.message.parts:
        if not isinstance(p, L.ToolCallPart):
            continue
        args: Any = p.input
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        problem = _check_args(p.name, args, schemas)
        if problem:
            raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            result.invalid_tool_calls.append({"id": p.id, "name": p.name, "args": raw, "error": problem})
        else:
            result.tool_calls.append({"id": p.id or f"call_{len(result.tool_calls)}", "name": p.name, "args": args})
    invalid = (response.provider_data or {}).get(INVALID_MARKER) if isinstance(response.provider_data, dict) else None
    result.invalid_tool_calls.extend(invalid or [])
    if result.tool_calls or result.invalid_tool_calls:
        result.text = "" if not invalid else result.text
    return result
