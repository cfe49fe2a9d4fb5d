"""The seeds' LMs (``Qwen()``, ``OpenAI()``) as scripted LMs: the one substitution besides imports.

The seed examples import their model class (``from course_graph.llm import Qwen``); the
harness maps that import line here. Each call builds a real ``dspy.LM`` driven by a script
that behaves like a cooperative chat model: offered tools and no tool result yet, it calls the
first tool with a value for every required argument; asked for a structured response (the
JSON schema of ``routerlab.agents.prebuilt``'s request), it writes a sample object of that
schema; otherwise it answers in text, quoting the user's last message, so a test can see which
request it answered.
"""

from __future__ import annotations

import json
from typing import Any

from dspy import lm15 as L

from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import text_of
from routerlab.agents.prebuilt import STRUCTURED_RESPONSE_PROMPT

__all__ = ["ARGUMENT_VALUE", "OpenAI", "Qwen", "seed_reply"]

#: the value the script gives every required tool argument (seed 003 asks for Nanjing's weather)
ARGUMENT_VALUE = "南京"


def _schema(tool: Any) -> dict[str, Any]:
    for attr in ("parameters", "input_schema", "schema"):
        value = getattr(tool, attr, None)
        if isinstance(value, dict):
            return value
    return {}


_SAMPLES: dict[str, Any] = {"string": ARGUMENT_VALUE, "integer": 1, "number": 1.0, "boolean": True}


def _structured(system: str) -> str:
    """A JSON object for the schema a structured-response request shows (a sample per field)."""
    schema = json.loads(system.split(STRUCTURED_RESPONSE_PROMPT, 1)[1])
    props = schema.get("properties", {})
    return json.dumps({k: _SAMPLES.get(v.get("type"), ARGUMENT_VALUE) for k, v in props.items()}, ensure_ascii=False)


def seed_reply(request: L.Request) -> str | dict[str, Any]:
    """One reply of the seed LM (see the module docstring); a structured-response request gets JSON."""
    system = request.system if isinstance(request.system, str) else ""
    if STRUCTURED_RESPONSE_PROMPT in system:
        return _structured(system)
    tools = list(request.tools or ())
    answered = any(m.role == "tool" for m in request.messages)
    if tools and not answered:
        schema = _schema(tools[0])
        args = {name: ARGUMENT_VALUE for name in schema.get("required", [])}
        return {"name": tools[0].name, "args": args}
    users = [text_of(m) for m in request.messages if m.role == "user"]
    return f"Answer to: {users[-1] if users else ''}"


def Qwen(*args: Any, **kwargs: Any) -> Any:
    """A scripted stand-in for seed 003's ``course_graph.llm.Qwen`` (arguments ignored)."""
    return scripted_lm(seed_reply, name="seed-qwen")


def OpenAI(*args: Any, **kwargs: Any) -> Any:
    """A scripted stand-in for an OpenAI client model (arguments ignored)."""
    return scripted_lm(seed_reply, name="seed-openai")
