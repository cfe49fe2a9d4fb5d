"""Swarm tools from plain functions, through the pipeline's own function-to-schema code."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, get_type_hints

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm.context import ContextVariables, is_context_hint
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import function_schema

__all__ = ["FunctionTool", "ToolSpec", "function_tool", "spec_tool"]


class ToolSpec(TypedDict, total=False):
    """Seed 003's ``Tool`` dict: a function with a hand-written OpenAI schema.

    Attributes:
        function: The function the swarm calls.
        tool: Its ``ChatCompletionToolParam`` (``{"type": "function", "function": {"name",
            "description", "parameters"}}``); empty: the schema comes from the function.
        context_variables_parameter_name: The parameter that receives the context variables.
    """

    function: Callable[..., Any]
    tool: dict[str, Any]
    context_variables_parameter_name: str


@dataclass(frozen=True)
class FunctionTool:
    """A function the swarm runs itself (a handoff, a lookup...), with its schema.

    Attributes:
        tool: The pipeline :class:`~routerlab.agents.tools.base.Tool` built from the function: its JSON
            schema, argument validation and docs.
        context_params: Parameters that receive the context variables (hidden from the schema).
        mcp_server: The MCP server the tool is a tool of (:class:`~routerlab.agents.swarm.mcp.MCPServer`),
            or None for a local function: its calls are traced as ``MCP_TOOL_CALL``.
    """

    tool: Tool
    context_params: tuple[str, ...] = ()
    mcp_server: str | None = None

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


def function_tool(
    fn: Callable[..., Any], *, name: str | None = None, context_params: tuple[str, ...] = ()
) -> FunctionTool:
    """Turn a function into a :class:`FunctionTool`.

    Parameters annotated :data:`~routerlab.agents.swarm.context.Context` or plainly
    ``ContextVariables`` (seed 003), and those named in ``context_params``, receive the context
    variables and stay out of the schema. The schema is read leniently (seed 003's tools may be
    untyped or undocumented; see :func:`~routerlab.agents.tools.schema.function_schema` with
    ``strict=False``). Everything is checked here, when the agent is built.

    Args:
        fn: The function (a ``def``; type hints and a docstring in any supported style help the
            model, but are not required).
        name: Tool name; the function's name by default.
        context_params: Further parameters that receive the context variables.

    Raises:
        ContractError: For a lambda, hints that cannot be resolved, a hint with no JSON form,
            ``*args``/``**kwargs``, or an injected parameter the swarm cannot supply.
    """
    label = getattr(fn, "__name__", repr(fn))
    if label == "<lambda>" and name is None:
        raise ContractError(
            "a tool function is a lambda",
            expected="a def with a name (the model calls the tool by it)",
            found=repr(fn),
            fix="define the tool with def",
        )
    try:
        hints = get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ContractError(
            f"the type hints of tool {label!r} cannot be resolved",
            expected="hints that name importable types",
            found=str(exc),
            fix="import the types the hints use at module level",
        ) from None
    params = inspect.signature(fn).parameters
    unknown = [p for p in context_params if p not in params]
    if unknown:
        raise ContractError(
            f"tool {label!r} has no parameter {unknown} for the context variables",
            expected=f"one of {list(params)}",
            found=str(unknown),
            fix="name the parameter that receives the context variables",
        )
    context = tuple(p for p in params if p in context_params or (p in hints and is_context_hint(hints[p])))
    description, parameters, injected = function_schema(fn, strict=False, injected=context)
    foreign = [p for p in injected if p not in context]
    if foreign:
        raise ContractError(
            f"tool {label!r} asks for injected values the swarm does not have",
            expected="only Context parameters injected",
            found=f"injected {foreign}",
            fix="take context variables (Context) or make it a pipeline tool the host runs",
        )
    # seed 003's tools raise out of the run (handle_errors=False); seed 004's react tools opt in
    tool = Tool(
        name=name or label,
        description=description,
        parameters=parameters,
        fn=fn,
        injected=injected,
        handle_errors=False,
    )
    return FunctionTool(tool=tool, context_params=injected)


def spec_tool(spec: Mapping[str, Any]) -> FunctionTool:
    """A :class:`FunctionTool` from seed 003's :class:`ToolSpec` dict.

    The hand-written schema is what the model sees and what arguments are validated against;
    an empty ``tool`` falls back to the function's own schema.

    Raises:
        ContractError: For a dict without a callable ``function``, or a ``tool`` that is not an
            OpenAI function entry.
    """
    fn = spec.get("function")
    if not callable(fn):
        raise ContractError(
            "a Tool dict has no callable 'function'",
            expected="{'function': fn, 'tool': {...}, 'context_variables_parameter_name': ...}",
            found=f"keys {sorted(spec)}",
            fix="put the function object under 'function'",
        )
    context = (spec["context_variables_parameter_name"],) if spec.get("context_variables_parameter_name") else ()
    entry = spec.get("tool") or {}
    if not entry:
        return function_tool(fn, context_params=context)
    body = entry.get("function") if isinstance(entry, Mapping) else None
    if entry.get("type") != "function" or not isinstance(body, Mapping) or not body.get("name"):
        raise ContractError(
            "a Tool dict's 'tool' is not an OpenAI function entry",
            expected="{'type': 'function', 'function': {'name', 'description', 'parameters'}}",
            found=repr(entry)[:120],
            fix="follow openai.types.chat.ChatCompletionToolParam",
        )
    base = function_tool(fn, name=str(body["name"]), context_params=context)
    parameters = dict(body.get("parameters") or {"type": "object", "properties": {}})
    tool = Tool(
        name=str(body["name"]),
        description=str(body.get("description") or base.tool.description),
        parameters=parameters,
        fn=fn,
        injected=base.context_params,
        handle_errors=False,
    )
    return FunctionTool(tool=tool, context_params=base.context_params)
