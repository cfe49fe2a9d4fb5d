"""A request to ``ask``: the body of the HTTP API's ask endpoints and ``routerlab ask``'s options, checked alike.

How its validation errors are reported is here too; the server (:mod:`routerlab.serve`) and
:mod:`routerlab.app.ask` both read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

__all__ = ["ROUTING_MODES", "AskRequest", "describe_body_error", "describe_validation_errors"]

#: conversation ids become LangGraph thread ids and appear in logs: keep them plain
CONVERSATION_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


#: seed 002's routing modes and the router each one runs (``auto``: the server's ``--router``)
ROUTING_MODES: dict[str, str | None] = {"rule": "rules", "llm": "llm", "hybrid": "hybrid", "auto": None}


class AskRequest(BaseModel):
    """One request to the pipeline, as seed 002's clients send it plus routerlab's optional fields.

    Fields this model does not know are kept aside (``ignored_fields``) and reported in a logged
    warning, never refused, so a client written against another version keeps working.

    Attributes:
        question: The user's request.
        user_id: Who asks (seed 002); recorded with the conversation and echoed in every event.
        routing_mode: Seed 002's routing mode: ``rule``, ``llm``, ``hybrid`` or ``auto`` (the
            server's default router); see :data:`ROUTING_MODES`.
        context_type: Seed 002's context type; accepted and echoed, not interpreted.
        router: Router name (default: the server's ``--router``).
        router_args: Constructor arguments of the router (e.g. ``{"threshold": 0.9}`` for hybrid).
        mode: ``auto`` lets the router decide; ``direct`` calls ``agent`` and bypasses the router.
        agent: The sub-agent to call in ``direct`` mode (e.g. ``explain_sql``).
        conversation_id: Thread id of the run (default: a fresh one per request).
        reply: Answer to a clarifying question, if the run asks one.
        hint: Evidence passed to SQL generation.
    """

    model_config = ConfigDict(extra="allow")

    question: str = Field(min_length=1, max_length=8000)
    user_id: str | None = Field(default=None, max_length=128)
    routing_mode: Literal["rule", "llm", "hybrid", "auto"] | None = None
    context_type: str | None = Field(default=None, max_length=64)
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

    @field_validator("router")
    @classmethod
    def _router_fits_routing_mode(cls, value: str | None, info: ValidationInfo) -> str | None:
        wanted = ROUTING_MODES.get(info.data.get("routing_mode") or "auto")
        if value and wanted and value != wanted:
            mode = info.data.get("routing_mode")
            raise ValueError(f"router {wanted!r} (routing_mode {mode!r} runs it), or leave one of the two out")
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

    @property
    def ignored_fields(self) -> list[str]:
        """Names of the fields of the body this model does not know (sorted)."""
        return sorted(self.model_extra or {})

    def router_name(self, default: str) -> str:
        """The router that runs this request: ``router``, else the routing mode's, else ``default``."""
        return self.router or ROUTING_MODES.get(self.routing_mode or "auto") or default


def _found(error: Mapping[str, Any]) -> str:
    if error.get("type") == "missing":
        return "nothing (the field is missing)"
    if error.get("type") == "json_invalid":
        return f"malformed JSON ({error.get('ctx', {}).get('error', 'parse error')})"
    value = error.get("input")
    if value is None:
        return "no value (null or left out)"
    return f"{_short(value)} ({type(value).__name__})"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expected(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    if kind == "missing":
        return "this required field"
    if kind == "json_invalid":
        return "a JSON object"
    msg = str(error.get("msg", ""))
    for prefix in ("Value error, ", "Input should be "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    return msg


def describe_validation_errors(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
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


def describe_body_error(cause: BaseException | None) -> dict[str, str] | None:
    """What was wrong with a body the JSON parser could not read, as ``field/expected/found/fix``.

    FastAPI answers a body that is not UTF-8, holds an integer past Python's 4,300-digit limit, or
    nests too deep for the parser with a bare "There was an error parsing the body"; the cause
    it chains says which of these it was.

    Args:
        cause: The exception FastAPI chained to its parse error (None: none).

    Returns:
        The record, or None when ``cause`` is not one of these parse failures.
    """
    if isinstance(cause, UnicodeDecodeError):
        return {
            "field": "body",
            "expected": "a JSON object encoded as UTF-8",
            "found": f"a byte that is not UTF-8 at offset {cause.start} ({cause.reason})",
            "fix": "encode the body as UTF-8 (Content-Type: application/json; charset=utf-8)",
        }
    if isinstance(cause, RecursionError):
        return {
            "field": "body",
            "expected": "JSON nested a few levels deep (an object of strings, numbers and small objects)",
            "found": "arrays or objects nested deeper than the parser's limit",
            "fix": "send the documented request shape (GET /docs); nothing in it nests deeply",
        }
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return {
            "field": "body",
            "expected": "numbers of at most 4,300 digits (every numeric field has a far smaller bound)",
            "found": f"an integer too long to read ({str(cause).splitlines()[0][:120]})",
            "fix": "send the number within its field's documented range (GET /docs)",
        }
    return None
