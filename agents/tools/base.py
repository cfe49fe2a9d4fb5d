"""The Tool type and the ``@tool`` registry: sub-agents are plain functions."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import jsonschema

from routerlab.agents.errors import ContractError, ToolError
from routerlab.agents.registry import Registry
from routerlab.agents.tools.schema import function_schema, injected_states, injected_stores

__all__ = ["Tool", "read_only", "tool", "tools"]


def read_only(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of ``state`` for an ``InjectedState`` parameter (seed 004: "只读").

    A deep copy behind a mapping proxy: assigning a key raises ``TypeError``, and changing a
    nested value changes only the copy, so a tool never alters the run's state.
    """
    return MappingProxyType(copy.deepcopy(dict(state)))


@dataclass(frozen=True)
class Tool:
    """A sub-agent the router can call.

    Attributes:
        name: Tool name the model uses.
        description: What it does (first paragraph of the docstring).
        parameters: JSON schema of the visible parameters.
        fn: The function itself.
        injected: Names of parameters the pipeline supplies (never in the schema).
        refs: ``parameter -> tool names it may cite``: arguments holding a tool_call_id of an
            earlier call (generate_sql cites data_discovery). The cited call must exist, come
            earlier and be of one of these kinds.
        terminal: A successful call ends the turn.
        interrupts: The call ends the turn waiting for the user (ask_human).
        stores: Injected parameters that receive the conversation's store
            (``Annotated[MemoryStore, InjectedStore]``, seed 004); the others receive the tool
            context.
        states: Injected parameters that receive the run's state
            (``Annotated[dict, InjectedState]``, seed 004).
        executes_sql: The call runs SQL against the database: a call that ran (or failed
            running) marks the turn ``executed``, and its output's ``sql`` is the statement it
            ran (another call's), so it does not become the turn's current SQL.
        handle_errors: Where a runner turns any exception the tool raises into an error tool
            message the model reads (seed 004's ToolNode: ``create_react_agent``); False opts
            out, the exception propagates. The pipeline classifies every error itself.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    injected: tuple[str, ...] = ()
    refs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    terminal: bool = False
    interrupts: bool = False
    stores: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    executes_sql: bool = False
    handle_errors: bool = True

    def injections(self, context: Any, store: Any, state: Mapping[str, Any]) -> dict[str, Any]:
        """The value of every injected parameter: the store, the state (read-only), else the tool context."""
        values = {n: store if n in self.stores else context for n in self.injected if n not in self.states}
        return values | {n: read_only(state) for n in self.states}

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI-style ``{"type": "function", "function": {...}}`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def validate_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``args`` against the schema.

        Raises:
            ToolError: Naming every invalid or missing argument (fed back to the model).
        """
        validator = jsonschema.Draft202012Validator(self.parameters)
        problems = sorted(validator.iter_errors(dict(args)), key=lambda e: list(e.path))
        if problems:
            text = "; ".join(f"{'/'.join(map(str, p.path)) or '(args)'}: {p.message}" for p in problems)
            raise ToolError(f"invalid arguments for {self.name}: {text}", error_class="invalid_tool_args")
        return dict(args)

    def __call__(self, args: Mapping[str, Any], **injected: Any) -> Any:
        """Validate ``args`` and call the function with the injected values."""
        return self.fn(**self.validate_args(args), **{k: injected[k] for k in self.injected})


tools: Registry[Tool] = Registry("tool")
"""Registry of every known tool by name."""


def tool(
    *,
    name: str | None = None,
    refs: Mapping[str, tuple[str, ...]] | None = None,
    terminal: bool = False,
    interrupts: bool = False,
    executes_sql: bool = False,
) -> Callable[[Callable[..., Any]], Tool]:
    """Decorator turning a typed, documented function into a registered :class:`Tool`.

    The contract (hints, docstring, refs naming real parameters) is checked here, at import time,
    not when a model first calls the tool.

    Args:
        name: Tool name (defaults to the function name).
        refs: ``parameter -> allowed cited tool names``.
        terminal: A successful call ends the turn.
        interrupts: The call ends the turn waiting for the user.
        executes_sql: The call runs SQL against the database (see :class:`Tool`).
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        description, params, injected = function_schema(fn)
        ref_map = dict(refs or {})
        unknown = [p for p in ref_map if p not in params["properties"]]
        if unknown:
            raise ContractError(
                f"tool {fn.__name__!r} declares refs on unknown parameters {unknown}",
                expected=f"parameters among {sorted(params['properties'])}",
                found=str(unknown),
                fix="name the parameter that holds the cited tool_call_id",
            )
        t = Tool(
            name=name or fn.__name__,
            description=description,
            parameters=params,
            fn=fn,
            injected=injected,
            refs=ref_map,
            terminal=terminal,
            interrupts=interrupts,
            stores=injected_stores(fn),
            states=injected_states(fn),
            executes_sql=executes_sql,
        )
        tools(t.name)(lambda t=t: t)
        return t

    return wrap
