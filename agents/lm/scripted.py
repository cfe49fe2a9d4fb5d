"""A scripted LM for unit tests of control flow: a real ``dspy.LM`` whose engine replays replies."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import dspy
from dspy import lm15 as L

from routerlab.agents.lm.usage import UsageCallback

__all__ = ["Reply", "ScriptedEngine", "adapter_reply", "scripted_lm"]

Reply = str | dict[str, Any]
"""Text, a tool call ``{"name", "args"}``, or DSPy output fields ``{"fields": {...}}``."""


def adapter_reply(fields: dict[str, Any]) -> str:
    """Format output fields the way DSPy's ChatAdapter parses them."""
    body = "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items())
    return body + "[[ ## completed ## ]]"


class ScriptedEngine:
    """Replays ``replies`` in order (cycling the last), or calls ``fn(request) -> Reply``.

    Records every request in ``requests``. Token counts are estimated from text length (4
    characters per token) and latency is zero.
    """

    def __init__(self, replies: Sequence[Reply] | Callable[[L.Request], Reply]) -> None:
        self._fn = replies if callable(replies) else None
        self._replies = list(replies) if not callable(replies) else []
        self.requests: list[L.Request] = []

    def complete(self, request: L.Request) -> L.Response:
        """Return the next scripted reply as an lm15 Response."""
        self.requests.append(request)
        if self._fn is not None:
            reply = self._fn(request)
        else:
            i = min(len(self.requests) - 1, len(self._replies) - 1)
            reply = self._replies[i]
        prompt_chars = len(repr(request.messages)) + len(str(request.system or ""))
        if isinstance(reply, dict) and "fields" in reply:
            reply = adapter_reply(reply["fields"])
        if isinstance(reply, dict):
            cid = reply.get("id") or "call_" + hashlib.sha256(f"{len(self.requests)}{reply}".encode()).hexdigest()[:12]
            part: Any = L.ToolCallPart(id=cid, name=reply["name"], input=reply.get("args", {}))
            out_chars, finish = len(json.dumps(reply)), "tool_call"
        else:
            part, out_chars, finish = L.TextPart(text=str(reply)), len(str(reply)), "stop"
        return L.Response(
            id=f"scripted-{len(self.requests)}",
            model=request.model,
            message=L.Message(role="assistant", parts=(part,)),
            finish_reason=finish,
            usage=L.Usage(input_tokens=prompt_chars // 4, output_tokens=max(1, out_chars // 4)),
        )


def scripted_lm(replies: Sequence[Reply] | Callable[[L.Request], Reply], *, name: str = "scripted") -> dspy.LM:
    """A ``dspy.LM`` driven by :class:`ScriptedEngine` (no cache, so every call reaches the script).

    The engine is reachable as ``lm.routerlab_engine`` to inspect the requests it received.
    """
    engine = ScriptedEngine(replies)
    lm = dspy.LM(
        f"scripted/{name}",
        engine=engine,
        cache=False,
        temperature=0.0,
        max_tokens=256,
        callbacks=[UsageCallback()],
    )
    lm.routerlab_engine = engine
    lm.routerlab_spec = f"scripted:{name}"
    return lm
