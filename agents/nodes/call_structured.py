"""Structured-output validation (seed 004): a tool's output validated into its response format."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ValidationError

from routerlab.agents.nodes.call_outcome import CallOutcome
from routerlab.agents.tools import Tool

__all__ = ["validate_structured"]


def validate_structured(outcome: CallOutcome, tool: Tool, formats: Mapping[str, type[BaseModel]]) -> CallOutcome:
    """``outcome`` with its output validated into ``tool``'s response format, if it has one.

    A successful output that does not validate makes the call a failure the router sees
    (``invalid_structured_response``): the output is not what the caller asked for.
    """
    model = formats.get(tool.name)
    if model is None or not outcome.ok:
        return outcome
    try:
        outcome.structured = model.model_validate(outcome.output).model_dump(mode="json")
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(output)'}: {e['msg']}" for e in exc.errors())
        outcome.failed(f"{tool.name} output does not fit {model.__name__}: {problems}", "invalid_structured_response")
    return outcome
