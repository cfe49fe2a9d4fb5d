"""Seed 004's tool classes: ``BaseTool`` (subclassed with ``_run``), ``StructuredTool`` and ``@tool``.

Every tool object has LangChain's ``invoke(input, config=None)`` and ``ainvoke``: ``input`` is
the arguments (a dict, a pydantic object, or a string for a one-parameter tool) or a
:class:`~routerlab.agents.prebuilt_messages.ToolCall` dict, for which the result comes back as a
``ToolMessage``. Parameters annotated ``InjectedState`` / ``InjectedStore`` are hidden from the
schema; ``invoke`` fills them from ``config["configurable"]["__state__"]`` / ``["__store__"]``
(seed 004's ``configurable`` keys), the state as a read-only copy. :meth:`BaseTool.as_tool`
is the same tool as a routerlab :class:`~routerlab.agents.tools.base.Tool`, which
``create_react_agent`` runs.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from langchain_core.messages import ToolMessage
from pydantic import BaseModel, ConfigDict

from routerlab.agents.errors import ContractError
from routerlab.agents.tools.base import Tool, read_only
from routerlab.agents.tools.index import resolve_awaitable
from routerlab.agents.tools.schema import function_schema, injected_states, injected_stores

__all__ = ["ERROR_TEMPLATE", "BaseTool", "StructuredTool", "read_only", "tool", "tool_content"]

#: the content of the tool message of a call that raised (LangGraph's ToolNode wording)
ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."


def tool_content(output: Any) -> str:
    """A tool message's content for a tool's return value: text as is, anything else as JSON."""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _is_tool_call(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") == "tool_call" and "args" in value


class BaseTool(BaseModel):
    """Seed 004's ``BaseTool``: subclass it with ``name``, ``description`` and ``_run`` (``_arun`` optional).

    Attributes:
        name: The name the model calls.
        description: What the tool does, for the model.
        args_schema: A pydantic model of the arguments; None reads them from ``_run``'s signature.
        handle_tool_error: True (the default, as LangGraph's ToolNode): an exception the tool
            raises becomes a tool message with ``status="error"`` that the model reads; False:
            it propagates out of the run.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = ""
    description: str = ""
    args_schema: type[BaseModel] | None = None
    handle_tool_error: bool = True

    #: the method whose signature gives the arguments (a subclass's ``_run``)
    _signature_source: ClassVar[str] = "_run"

    def model_post_init(self, __context: Any) -> None:
        """Fill ``name`` and ``description`` from the class when a subclass left them empty.

        Raises:
            ContractError: For a subclass that defines no ``_run``.
        """
        if type(self)._run is BaseTool._run and not isinstance(self, StructuredTool):
            raise ContractError(
                f"tool class {type(self).__name__} defines no _run",
                expected="def _run(self, ...) -> result",
                found="BaseTool._run",
                fix="define _run (and optionally async _arun) on the subclass",
            )
        if not self.name:
            self.name = type(self).__name__
        if not self.description:
            self.description = inspect.getdoc(type(self)) or self.name.replace("_", " ")

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        """The tool's work (a subclass defines it)."""
        raise NotImplementedError

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        """The async form; by default ``_run`` in a worker thread."""
        return await asyncio.to_thread(self._run, *args, **kwargs)

    def _function(self) -> Callable[..., Any]:
        """The function whose signature describes the arguments."""
        return getattr(self, self._signature_source)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments the model gives."""
        if self.args_schema is not None:
            return self.args_schema.model_json_schema()
        return function_schema(self._function(), strict=False)[1]

    @property
    def states(self) -> tuple[str, ...]:
        """Parameters that receive the state (``Annotated[dict, InjectedState]``)."""
        return injected_states(self._function())

    @property
    def stores(self) -> tuple[str, ...]:
        """Parameters that receive the store (``Annotated[BaseStore, InjectedStore]``)."""
        return injected_stores(self._function())

    def as_tool(self) -> Tool:
        """This tool as a routerlab :class:`Tool` (what ``create_react_agent`` runs)."""
        return Tool(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            fn=self._run,
            injected=(*self.states, *self.stores),
            stores=self.stores,
            states=self.states,
            handle_errors=self.handle_tool_error,
        )

    def _arguments(self, input: Any, config: Mapping[str, Any] | None) -> dict[str, Any]:
        """The validated arguments of ``input`` plus the injected values from ``config``.

        Raises:
            ToolError: For arguments that fail the schema.
            ContractError: For input of no known form, or an injected parameter ``config``
                does not supply.
        """
        if _is_tool_call(input):
            input = input["args"]
        if isinstance(input, BaseModel):
            input = input.model_dump()
        if isinstance(input, str):
            visible = list(self.parameters.get("properties", {}))
            if len(visible) != 1:
                raise ContractError(
                    f"tool {self.name!r} was given a string but takes {len(visible)} arguments",
                    expected="a dict of arguments",
                    found=repr(input)[:80],
                    fix=f"pass {{{', '.join(repr(v) + ': ...' for v in visible)}}}",
                )
            input = {visible[0]: input}
        if not isinstance(input, Mapping):
            raise ContractError(
                f"tool {self.name!r} was given input of no known form",
                expected="a dict of arguments, a pydantic object, a string or a ToolCall",
                found=type(input).__name__,
                fix="pass the arguments as a dict",
            )
        args = self.as_tool().validate_args(input)
        configurable = dict((config or {}).get("configurable") or {})
        for names, key in ((self.states, "__state__"), (self.stores, "__store__")):
            if names and key not in configurable:
                raise ContractError(
                    f"tool {self.name!r} needs {key} for its injected parameters {list(names)}",
                    expected=f"config={{'configurable': {{'{key}': ...}}}}",
                    found=f"configurable keys {sorted(configurable)}",
                    fix="pass the state / store in the config, or run the tool in create_react_agent",
                )
        for n in self.states:
            args[n] = read_only(configurable["__state__"])
        for n in self.stores:
            args[n] = configurable["__store__"]
        return args

    def _message(self, call: Mapping[str, Any], run: Callable[[], Any]) -> ToolMessage:
        try:
            content, status = tool_content(run()), "success"
        except Exception as exc:
            if not self.handle_tool_error:
                raise
            content, status = ERROR_TEMPLATE.format(error=repr(exc)), "error"
        return ToolMessage(content=content, tool_call_id=str(call.get("id") or ""), name=self.name, status=status)

    def invoke(self, input: Any, config: Mapping[str, Any] | None = None) -> Any:
        """Run the tool: its return value, or a ``ToolMessage`` when ``input`` is a ToolCall.

        Raises:
            ToolError: For arguments that fail the schema (a ToolCall's become an error message).
            ContractError: See :meth:`_arguments`.
        """
        if _is_tool_call(input):
            return self._message(input, lambda: self._run(**self._arguments(input, config)))
        return self._run(**self._arguments(input, config))

    async def ainvoke(self, input: Any, config: Mapping[str, Any] | None = None) -> Any:
        """The awaitable :meth:`invoke` (through ``_arun``)."""
        if _is_tool_call(input):
            args = self._arguments(input, config)
            try:
                output, status = tool_content(await self._arun(**args)), "success"
            except Exception as exc:
                if not self.handle_tool_error:
                    raise
                output, status = ERROR_TEMPLATE.format(error=repr(exc)), "error"
            return ToolMessage(content=output, tool_call_id=str(input.get("id") or ""), name=self.name, status=status)
        return await self._arun(**self._arguments(input, config))


class StructuredTool(BaseTool):
    """A tool calling a function (``func``) and/or a coroutine function (``coroutine``).

    Attributes:
        func: The function ``invoke`` calls.
        coroutine: The coroutine function ``ainvoke`` awaits (default: ``func`` in a thread).
    """

    func: Callable[..., Any] | None = None
    coroutine: Callable[..., Any] | None = None

    def _function(self) -> Callable[..., Any]:
        fn = self.func or self.coroutine
        assert fn is not None  # from_function checks it
        return fn

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        if self.func is not None:
            return self.func(*args, **kwargs)
        assert self.coroutine is not None
        return resolve_awaitable(self.coroutine(*args, **kwargs))  # also from inside a running loop

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        if self.coroutine is not None:
            return await self.coroutine(*args, **kwargs)
        return await asyncio.to_thread(self._run, *args, **kwargs)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        args_schema: type[BaseModel] | None = None,
        *,
        coroutine: Callable[..., Any] | None = None,
        handle_tool_error: bool = True,
    ) -> StructuredTool:
        """A tool over ``func`` (or ``coroutine``); its arguments follow ``args_schema`` when given.

        Raises:
            ContractError: When neither ``func`` nor ``coroutine`` is callable.
        """
        if not callable(func) and not callable(coroutine):
            raise ContractError(
                "StructuredTool.from_function needs a function",
                expected="func= a callable (or coroutine= an async function)",
                found=type(func).__name__,
                fix="pass func=the function the tool calls",
            )
        source = func if callable(func) else coroutine
        assert source is not None
        if inspect.iscoroutinefunction(func):  # @tool on an async def: it is the coroutine
            func, coroutine = None, func
        text = description or function_schema(source, strict=False)[0]
        return cls(
            name=name or source.__name__,
            description=text,
            args_schema=args_schema,
            func=func,
            coroutine=coroutine,
            handle_tool_error=handle_tool_error,
        )


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, handle_tool_error: bool = True) -> Any:
    """LangChain's ``@tool`` / ``@tool(name=...)``: a :class:`StructuredTool` from a function.

    Read leniently (LangChain's tools need no per-parameter docs): see
    :func:`~routerlab.agents.tools.schema.function_schema` with ``strict=False``. The pipeline's
    own ``@routerlab.agents.tools.base.tool()`` stays strict.
    """

    def wrap(f: Callable[..., Any]) -> StructuredTool:
        return StructuredTool.from_function(f, name=name, handle_tool_error=handle_tool_error)

    return wrap(fn) if fn is not None else wrap
