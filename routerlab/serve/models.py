"""The request body of the ask endpoints, and how its validation errors are reported."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

__all__ = ["AskRequest", "describe_validation_errors"]

#: conversation ids become LangGraph thread ids and appear in logs: keep them plain
CONVERSATION_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


class AskRequest(BaseModel):
    """One request to the pipeline.

    Attributes:
        question: The user's request.
        router: Router name (default: the server's ``--router``).
        router_args: Constructor arguments of the router (e.g. ``{"threshold": 0.9}`` for hybrid).
        mode: ``auto`` lets the router decide; ``direct`` calls ``agent`` and bypasses the router.
        agent: The sub-agent to call in ``direct`` mode (e.g. ``explain_sql``).
        conversation_id: Thread id of the run (default: a fresh one per request).
        reply: Answer to a clarifying question, if the run asks one.
        hint: Evidence passed to SQL generation.
    """

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=8000)
    router: str | None = Field(default=None, min_length=1, max_length=64)
    router_args: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    mode: Literal["auto", "direct"] = "auto"
    # validated even when left out, so "direct" without an agent is reported on this field
    agent: str | None = Field(default=None, validate_default=True)
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID_PATTERN)
    reply: str | None = Field(default=None, max_length=8000)
    hint: str = Field(default="", max_length=8000)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a question with some non-blank text")
        return value

    @field_validator("agent")
    @classmethod
    def _agent_fits_mode(cls, value: str | None, info: ValidationInfo) -> str | None:
        mode = info.data.get("mode", "auto")
        if mode == "direct" and not value:
            raise ValueError("an agent name when mode is 'direct'")
        if mode == "auto" and value:
            raise ValueError("no agent when mode is 'auto' (set mode to 'direct' to call an agent)")
        return value


def _found(error: dict[str, Any]) -> str:
    if error.get("type") == "missing":
        return "nothing (the field is missing)"
    if error.get("type") == "extra_forbidden":
        return f"an unknown field with value {_short(error.get('input'))}"
    if error.get("type") == "json_invalid":
        return f"malformed JSON ({error.get('ctx', {}).get('error', 'parse error')})"
    value = error.get("input")
    if value is None:
        return "no value (null or left out)"
    return f"{_short(value)} ({type(value).__name__})"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expected(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "missing":
        return "this required field"
    if kind == "extra_forbidden":
        return f"only the fields {', '.join(AskRequest.model_fields)}"
    if kind == "json_invalid":
        return "a JSON object"
    msg = str(error.get("msg", ""))
    for prefix in ("Value error, ", "Input should be "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    return msg


def describe_validation_errors(errors: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Turn pydantic/FastAPI validation errors into ``{"field", "expected", "found"}`` records.

    Args:
        errors: ``RequestValidationError.errors()``.

    Returns:
        One record per problem; ``field`` is the dotted path inside the body (``""`` for the
        body as a whole).
    """
    out = []
    for error in errors:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        if error.get("type") == "json_invalid":
            loc = []  # the location is a character offset, not a field
        out.append({"field": ".".join(loc), "expected": _expected(error), "found": _found(error)})
    return out
