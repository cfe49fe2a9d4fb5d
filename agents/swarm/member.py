"""``Member``: a name, an instruction and the tools one swarm member may call.

What a swarm runs, hands off to and puts in a team. Users build the subclass
:class:`~routerlab.agents.swarm.agent.Agent`, which adds ``a | b`` (a round-robin team): the team
module builds on this one, so the operator lives above both and the two do not import each other.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from routerlab.agents.errors import ContractError
from routerlab.agents.swarm.context import ContextVariables, is_context_hint
from routerlab.agents.swarm.tools import FunctionTool, function_tool, spec_tool
from routerlab.agents.tools.base import Tool

__all__ = ["DEFAULT_AGENT_NAME", "Instruction", "Member"]

Instruction = str | os.PathLike[str] | Callable[..., str]
"""Literal text, a path to a text file, or a function returning the text."""

#: the name of an agent built without one (seed 003's second example omits it)
DEFAULT_AGENT_NAME = "agent"

ToolLike = Callable[..., Any] | Tool | FunctionTool | Mapping[str, Any]


def _build_tool(t: ToolLike) -> FunctionTool | Tool:
    """A tool as the agent keeps it: pipeline and function tools as given, dicts and functions built."""
    if isinstance(t, Tool | FunctionTool):
        return t
    if isinstance(t, Mapping):
        return spec_tool(t)
    return function_tool(t)


def _instruction_file(text: str) -> Path | None:
    """The file a one-line instruction string names, when it names an existing file (seed 003)."""
    if not text or "\n" in text or len(text) > 4096:
        return None
    try:
        path = Path(text).expanduser()
        return path if path.is_file() else None
    except OSError:  # a long or odd string is text, not a path
        return None


def _from_mcp(t: FunctionTool | Tool) -> bool:
    return isinstance(t, FunctionTool) and t.mcp_server is not None


def _redefines(old: FunctionTool | Tool, new: FunctionTool | Tool) -> bool:
    """Whether ``new`` is the same function as ``old`` or a redefinition of it (same module and name)."""
    a = old.tool.fn if isinstance(old, FunctionTool) else old.fn
    b = new.tool.fn if isinstance(new, FunctionTool) else new.fn
    key = (getattr(a, "__module__", None), getattr(a, "__qualname__", None))
    return a is b or (key[1] is not None and key == (getattr(b, "__module__", None), getattr(b, "__qualname__", None)))


def _context_params(fn: Callable[..., str], agent: str, given: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Parameters of an instruction function that receive the context variables.

    Args:
        fn: The instruction function.
        agent: The agent's name, for messages.
        given: ``instruction_args``: parameters given once, when the agent is built.

    Raises:
        ContractError: For a parameter that is neither context-annotated, given nor defaulted,
            or an ``instruction_args`` name the function does not take.
    """
    try:
        params = inspect.signature(fn, eval_str=True).parameters
    except (NameError, TypeError, ValueError) as exc:
        raise ContractError(
            f"the instruction function of agent {agent!r} has an unreadable signature",
            expected="a function whose hints name importable types",
            found=str(exc),
            fix="import the types its hints use at module level",
        ) from None
    given = dict(given or {})
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = sorted(set(given) - set(params)) if not takes_kwargs else []
    if unknown:
        raise ContractError(
            f"instruction_args of agent {agent!r} name parameters its instruction does not take",
            expected=f"names among {sorted(params)}",
            found=str(unknown),
            fix="drop them, or add the parameters to the instruction function",
        )
    context: list[str] = []
    for name, p in params.items():
        if is_context_hint(p.annotation):
            context.append(name)
        elif name in given:
            continue
        elif p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ContractError(
                f"the instruction function of agent {agent!r} needs a value for {name!r}",
                expected="parameters annotated Context, given in instruction_args, or with defaults",
                found=f"{name}: {p.annotation!r}",
                fix=f"annotate {name} as routerlab.agents.swarm.Context, give it in instruction_args or a default",
            )
    return tuple(context)


class Member:
    """One member of a swarm (built as its subclass :class:`~routerlab.agents.swarm.agent.Agent`).

    Args:
        name: Unique, human-readable name (shown in traces and agent switches); default
            :data:`DEFAULT_AGENT_NAME`.
        instruction: The system message: literal text, a path (``os.PathLike``, or a one-line
            string naming an existing file, seed 003) to a UTF-8 text file read once here, or a
            function returning the text; the function receives the context variables in every
            parameter annotated ``Context`` or ``ContextVariables``.
        tools: Plain typed functions (run by the swarm; their schemas come from
            :func:`routerlab.agents.tools.schema.function_schema`) and pipeline
            :class:`~routerlab.agents.tools.base.Tool` objects (host tools: a call to one is handed to the
            host, for example the dispatch graph, instead of being run by the swarm). A function
            returning an ``Agent`` hands control to it. More can be added later (:meth:`add_tools`).
        instruction_args: Arguments an instruction function receives every time, besides the
            context variables (seed 003's ``instruction_args``: ``Agent("a", greet,
            instruction_args={"name": "Mike"})`` calls ``greet(name="Mike")``).
        lm: This agent's own LM (a DSPy LM); None uses the runner's (a swarm's or a team's).
        llm: Seed 003's name for ``lm``.
        functions: Seed 003's name for ``tools`` (added after them).
        mcp_server: Connected :class:`~routerlab.agents.swarm.mcp.MCPServer` objects (seed
            003): their tools are added after the local ones, and a local tool of the same
            name wins.

    Raises:
        ContractError: For an empty name, a missing instruction file, an instruction function
            with parameters it cannot be given, ``instruction_args`` without an instruction
            function or naming parameters it lacks, a tool the schema code rejects, or two
            tools with one name.
    """

    def __init__(
        self,
        name: str = DEFAULT_AGENT_NAME,
        instruction: Instruction = "",
        tools: Sequence[ToolLike] = (),
        *,
        instruction_args: Mapping[str, Any] | None = None,
        lm: Any = None,
        llm: Any = None,
        functions: Sequence[ToolLike] = (),
        mcp_server: Sequence[Any] = (),
    ) -> None:
        if lm is not None and llm is not None and lm is not llm:
            raise ContractError(
                f"agent {name!r} was given two LMs",
                expected="lm= or its seed-003 name llm=, not both",
                found="lm and llm",
                fix="pass one of them",
            )
        lm = lm if lm is not None else llm
        if not name or not name.strip():
            raise ContractError(
                "an agent needs a name",
                expected="a non-empty name",
                found=repr(name),
                fix="name the agent (names appear in traces and agent switches)",
            )
        self.name = name
        self.lm = lm
        self._text: str | None = None
        self._fn: Callable[..., str] | None = None
        self._fn_context: tuple[str, ...] = ()
        self._fn_args: dict[str, Any] = dict(instruction_args or {})
        if self._fn_args and not callable(instruction):
            raise ContractError(
                f"agent {name!r} has instruction_args but no instruction function",
                expected="an instruction function that takes them",
                found=type(instruction).__name__,
                fix="pass the instruction as a function, or drop instruction_args",
            )
        if isinstance(instruction, os.PathLike):
            path = Path(instruction)
            if not path.is_file():
                raise ContractError(
                    f"the instruction file of agent {name!r} does not exist",
                    expected="a readable UTF-8 text file",
                    found=str(path),
                    fix="create the file or pass the instruction text itself",
                )
            self._text = path.read_text(encoding="utf-8")
        elif isinstance(instruction, str):
            named = _instruction_file(instruction)
            self._text = named.read_text(encoding="utf-8") if named is not None else instruction
        elif callable(instruction):
            self._fn = instruction
            self._fn_context = _context_params(instruction, name, self._fn_args)
        else:
            raise ContractError(
                f"agent {name!r} has an instruction of an unknown kind",
                expected="str, os.PathLike or a function returning str",
                found=type(instruction).__name__,
                fix="pass text, a pathlib.Path or a function",
            )
        self.tools: tuple[FunctionTool | Tool, ...] = ()
        self._inbox: list[dict[str, Any]] = []
        self.add_tools(*tools, *functions)
        for server in mcp_server:
            self.add_mcp_server(server)

    def add_mcp_server(self, server: Any) -> Self:
        """Add a connected MCP server's tools (those whose names no local tool has).

        Raises:
            ContractError: For a server that is not connected (outside its ``async with``).
        """
        if not getattr(server, "connected", False):
            raise ContractError(
                f"agent {self.name!r} was given an MCP server that is not connected",
                expected="an MCPServer entered with `async with`",
                found=repr(server)[:80],
                fix="build the agent inside `async with MCPServer(...) as server:`",
            )
        local = {t.name for t in self.tools}
        self.tools = (*self.tools, *(t for t in server.tools if t.name not in local))
        return self

    def add_assistant_message(self, message: str) -> Self:
        """Seed 003's ``add_assistant_message``: a message this agent reads as its own next time it runs.

        The way to pass information along a handoff that carries no history
        (``Result(agent=b, message=False)``): a transfer function calls
        ``b.add_assistant_message("the user wants ...")``. The swarm appends the queued messages
        to the conversation when the agent gets control (or a run starts with it), once.

        Raises:
            ContractError: For a message that is not text.
        """
        if not isinstance(message, str):
            raise ContractError(
                f"add_assistant_message on agent {self.name!r} was given {type(message).__name__}",
                expected="the message text",
                found=repr(message)[:80],
                fix="pass a string",
            )
        self._inbox.append({"role": "assistant", "content": message})
        return self

    def take_messages(self) -> list[dict[str, Any]]:
        """The messages queued by :meth:`add_assistant_message`, removed from the queue."""
        taken, self._inbox = self._inbox, []
        return taken

    def add_tools(self, *tools: ToolLike) -> Self:
        """Add tools after the agent was built (seed 003's ``add_tools``); returns the agent.

        A tool is a function, a pipeline :class:`~routerlab.agents.tools.base.Tool` or seed 003's
        ``Tool`` dict (:class:`~routerlab.agents.swarm.tools.ToolSpec`). Adding the same function
        again, or a redefinition of it (same module and qualified name, as when a notebook cell
        runs twice), replaces the tool; a different tool under a name the agent has is refused.

        Raises:
            ContractError: For a tool the schema code rejects, or a different tool with a name
                the agent already has.
        """
        built = [_build_tool(t) for t in tools]
        # a local tool replaces a redefinition of itself, and an MCP tool of its name (seed 003)
        kept = [
            t for t in self.tools if not any(t.name == b.name and (_redefines(t, b) or _from_mcp(t)) for b in built)
        ]
        names = [t.name for t in (*kept, *built)]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ContractError(
                f"agent {self.name!r} has several tools named {duplicates}",
                expected="unique tool names",
                found=str(names),
                fix="rename or drop the duplicates",
            )
        self.tools = (*kept, *built)
        return self

    def add_tool_functions(self, *functions: Callable[..., Any]) -> Self:
        """Seed 003's ``add_tool_functions``: :meth:`add_tools` for plain functions."""
        return self.add_tools(*functions)

    def tool(self, *, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Seed 003's ``@agent.tool()``: a decorator adding the function as a tool.

        Args:
            name: Tool name; the function's name by default.

        Returns:
            The decorator; it returns the function unchanged, so it stays callable.
        """

        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tools(function_tool(fn, name=name))
            return fn

        return add

    def instructions(self, context: Mapping[str, Any] | None = None) -> str:
        """The system message for the current context variables.

        Raises:
            ContractError: When an instruction function returns something other than a string.
        """
        if self._fn is None:
            return self._text or ""
        ctx = context if isinstance(context, ContextVariables) else ContextVariables(context or {})
        text = self._fn(**self._fn_args, **dict.fromkeys(self._fn_context, ctx))
        if not isinstance(text, str):
            raise ContractError(
                f"the instruction function of agent {self.name!r} returned {type(text).__name__}",
                expected="a string",
                found=repr(text)[:80],
                fix="return the instruction text",
            )
        return text

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style schemas of every tool, in the order given."""
        return [t.openai_schema() for t in self.tools]

    def get_tool(self, name: str) -> FunctionTool | Tool | None:
        """The tool called ``name``, or None."""
        return next((t for t in self.tools if t.name == name), None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, tools={[t.name for t in self.tools]})"
