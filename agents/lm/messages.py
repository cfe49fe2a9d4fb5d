"""Conversions between OpenAI-style chat dicts and DSPy's lm15 Request/Response types."""

from __future__ import annotations

import json
from typing import Any

from dspy import lm15 as L

__all__ = ["INVALID_MARKER", "request_to_chat", "text_of", "to_request"]

#: provider_data key under which an engine reports tool calls it could not parse
INVALID_MARKER = "routerlab_invalid_tool_calls"


def _parts_text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    out = []
    for p in parts or ():
        if isinstance(p, L.TextPart):
            out.append(p.text)
        elif isinstance(p, L.ToolResultPart):
            out.append(_parts_text(p.content))
    return "\n".join(out)


def text_of(message: L.Message) -> str:
    """The text parts of a message, joined."""
    return _parts_text(message.parts)


def to_request(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    tool_choice: str = "auto",
    max_tokens: int | None = None,
    temperature: float | None = 0.0,
    seed: int | None = None,
) -> L.Request:
    """Build an lm15 ``Request`` from OpenAI-style messages and tool schemas.

    Args:
        model: Model id (the LM's own ``model`` string).
        messages: ``{"role", "content", "tool_calls"?, "tool_call_id"?}`` dicts; a system message
            becomes the request's ``system``.
        tools: ``{"type": "function", "function": {name, description, parameters}}`` entries.
        tool_choice: ``auto``, ``required``, ``none`` or a tool name (forces that tool).
        max_tokens: Completion budget.
        temperature: Sampling temperature.
        seed: Sampling seed (None: the engine's own); part of the request, so of its cache key.
    """
    system_parts = [str(m.get("content") or "") for m in messages if m["role"] == "system"]
    out: list[L.Message] = []
    for m in messages:
        role = m["role"]
        if role == "system":
            continue
        if role == "tool":
            out.append(
                L.Message(
                    role="tool",
                    parts=(
                        L.ToolResultPart(
                            id=str(m.get("tool_call_id") or ""),
                            content=(L.TextPart(text=str(m.get("content") or "")),),
                            name=m.get("name"),
                        ),
                    ),
                )
            )
            continue
        parts: list[Any] = []
        if m.get("content"):
            parts.append(L.TextPart(text=str(m["content"])))
        for c in m.get("tool_calls") or ():
            fn = c.get("function", c)
            args = fn.get("arguments", fn.get("args", {}))
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError:
                    args = {"_raw": args}
            parts.append(L.ToolCallPart(id=str(c.get("id") or ""), name=fn["name"], input=args))
        out.append(L.Message(role=role, parts=tuple(parts) or (L.TextPart(text=""),)))
    fn_tools = tuple(
        L.FunctionTool(
            name=t["function"]["name"],
            description=t["function"].get("description"),
            parameters=t["function"].get("parameters", {"type": "object", "properties": {}}),
        )
        for t in tools or ()
    )
    choice = None
    if fn_tools:
        if tool_choice in ("auto", "required", "none"):
            choice = L.ToolChoice(mode=tool_choice)
        else:
            choice = L.ToolChoice(mode="required", allowed=(tool_choice,))
    return L.Request(
        model=model,
        messages=tuple(out),
        system="\n\n".join(system_parts) or None,
        tools=fn_tools,
        config=L.Config(max_tokens=max_tokens, temperature=temperature, tool_choice=choice, seed=seed),
    )


def request_to_chat(request: L.Request) -> list[dict[str, Any]]:
    """OpenAI-style chat messages for a local chat template.

    Tool calls become assistant text (the JSON the model would write) and tool results ``tool``
    messages, which Qwen's template renders as ``<tool_response>`` blocks.
    """
    msgs: list[dict[str, Any]] = []
    if request.system:
        msgs.append({"role": "system", "content": _parts_text(request.system)})
    for m in request.messages:
        if m.role == "tool":
            for p in m.parts:
                if isinstance(p, L.ToolResultPart):
                    msgs.append({"role": "tool", "content": _parts_text(p.content)})
            continue
        texts = [p.text for p in m.parts if isinstance(p, L.TextPart) and p.text]
        calls = [
            json.dumps({"name": p.name, "arguments": p.input}, ensure_ascii=False)
            for p in m.parts
            if isinstance(p, L.ToolCallPart)
        ]
        role = "system" if m.role == "developer" else m.role
        msgs.append({"role": role, "content": "\n".join(texts + calls)})
    return msgs
