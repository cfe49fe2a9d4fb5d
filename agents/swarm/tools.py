"""Swarm tools from plain functions, through the pipeline's own function-to-schema code."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_origin, get_type_hints

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm.context import ContextVariables, is_context_hint
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import function_schema

__all__ = ["FunctionTool", "function_tool"]


@dataclass(frozen=True)
class FunctionTool:
    """A function the swarm runs itself (a handoff, a lookup...), with its schema.

    Attributes:
        tool: The pipeline :class:`~routerlab.agents.tools.base.Tool` built from the function: its JSON
            schema, argument validation and docs.
        context_params: Parameters that receive the context variables (hidden from the schema).
    """

    tool: Tool
    context_params: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The name the model calls."""
        return self.tool.name

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI-style function entry shown to the model."""
        return self.tool.openai_schema()

    def invoke(self, args: Mapping[str, Any], context: ContextVariables) -> Any:
        """Validate ``args`` and call the function, injecting ``context``.

        Raises:
            ToolError: For arguments that fail the schema (fed back to the model).
        """
        return self.tool(args, **dict.fromkeys(self.context_params, context))


def function_tool(fn: Callable[..., Any], *, name: str | None = None) -> FunctionTool:
    """Turn a typed, documented function into a :class:`FunctionTool`.

    Parameters annotated :data:`~routerlab.agents.swarm.context.Context` receive the context variables and
    stay out of the schema. Everything is checked here, when the agent is built.

    Args:
        fn: The function (a ``def`` with a docstring and a type hint on every parameter).
        name: Tool name; the function's name by default.

    Raises:
        ContractError: For a function the schema code rejects, a bare ``ContextVariables``
            annotation, or an injected parameter the swarm cannot supply.
    """
    label = getattr(fn, "__name__", repr(fn))
    try:
        hints = get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ContractError(
            f"the type hints of tool {label!r} cannot be resolved",
            expected="hints that name importable types",
            found=str(exc),
            fix="import the types the hints use at module level",
        ) from None
    for param in inspect.signature(fn).parameters:
        hint = hints.get(param)
        if hint is not None and is_context_hint(hint) and get_origin(hint) is not Annotated:
            # without the INJECTED marker the schema code would try (and fail) to expose it
            raise ContractError(
                f"parameter {param!r} of tool {label!r} is annotated ContextVariables",
                expected="Context (Annotated[ContextVariables, INJECTED]) for injected context variables",
                found=repr(hint),
                fix=f"annotate {param} as routerlab.agents.swarm.Context",
            )
    description, parameters, injected = function_schema(fn)
    foreign = [p for p in injected if not is_context_hint(hints[p])]
    if foreign:
        raise ContractError(
            f"tool {label!r} asks for injected values the swarm does not have",
            expected="only Context parameters injected",
            found=f"injected {foreign}",
            fix="take context variables (Context) or make it a pipeline tool the host runs",
        )
    tool = Tool(name=name or label, description=description, parameters=parameters, fn=fn, injected=injected)
    return FunctionTool(tool=tool, context_params=injected)
