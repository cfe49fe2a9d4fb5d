"""Tools from plain functions : one function gives schema, validation and docs.

A tool is a typed Python function with a docstring. :func:`function_schema` reads the signature
and the docstring (Google, NumPy and reST styles) and returns the JSON schema an LLM router sees.
Parameters annotated ``Annotated[T, INJECTED]`` are supplied by the pipeline (state, database,
LM) and never appear in the schema (LangGraph's InjectedState).
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from routerlab.agents.errors import ContractError

__all__ = [
    "INJECTED",
    "InjectedState",
    "InjectedStore",
    "function_schema",
    "injected_states",
    "injected_stores",
    "json_type",
    "parse_docstring",
]


class _Injected:
    """Marker for parameters the pipeline injects; see :data:`INJECTED`."""

    def __repr__(self) -> str:
        return "INJECTED"


INJECTED = _Injected()
"""Use as ``ctx: Annotated[ToolContext, INJECTED]`` to hide a parameter from the schema."""


class _InjectedStore(_Injected):
    """Marker for the conversation's store (seed 004's ``InjectedStore``)."""

    def __repr__(self) -> str:
        return "InjectedStore"

    def __call__(self) -> _InjectedStore:
        """``InjectedStore()`` (LangGraph's spelling) is the marker itself."""
        return self


class _InjectedState(_Injected):
    """Marker for the run's state (seed 004's ``InjectedState``)."""

    def __repr__(self) -> str:
        return "InjectedState"

    def __call__(self) -> _InjectedState:
        """``InjectedState()`` is the marker itself."""
        return self


InjectedStore = _InjectedStore()
"""Use as ``store: Annotated[MemoryStore, InjectedStore]``: the pipeline passes the conversation's
store (:class:`routerlab.agents.tools.store.MemoryStore`); hidden from the schema like ``INJECTED``."""

InjectedState = _InjectedState()
"""Use as ``state: Annotated[dict, InjectedState]``: the tool receives the run's state (read-only
use intended); hidden from the schema like ``INJECTED``."""

_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}


def json_type(tp: Any) -> dict[str, Any]:
    """JSON schema of a Python type hint.

    Raises:
        ContractError: For a hint with no JSON equivalent.
    """
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Annotated:
        return json_type(args[0])
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            return json_type(non_null[0])
        return {"anyOf": [json_type(a) for a in args]}
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
        item = args[0] if args else Any
        return {"type": "array", "items": json_type(item)}
    if origin is dict or tp is dict:
        return {"type": "object"}
    raise ContractError(
        f"type hint {tp!r} has no JSON-schema equivalent",
        expected="str, int, float, bool, Literal, Optional, list[...] or dict",
        found=repr(tp),
        fix="use a JSON-representable type for tool parameters",
    )


_GOOGLE_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")
_NUMPY_HEADER = re.compile(r"^\s*(Parameters|Returns|Raises|Yields|Examples?|Notes?)\s*$")
_REST_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+):\s*(.*)$")
_EPYDOC_PARAM = re.compile(r"^\s*@param\s+(\w+):\s*(.*)$")
_EPYDOC_OTHER = re.compile(r"^\s*@(type|returns?|rtype|raises?|keyword)\b")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Understands Google (``Args:``), NumPy (``Parameters`` + dashes), reST (``:param x:``) and
    Epydoc (``@param x:``, seed 003).

    Returns:
        ``(description, {param: description})``.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _NUMPY_HEADER.match(line) and re.match(r"^\s*-{3,}\s*$", nxt):
            section, current = "numpy-" + line.strip().lower(), None
            i += 2
            continue
        m = _GOOGLE_SECTION.match(line)
        if m:
            section, current = m.group(1).lower(), None
            i += 1
            continue
        rm = _REST_PARAM.match(line) or _EPYDOC_PARAM.match(line)
        if rm:
            current = rm.group(1)
            params[current] = rm.group(2).strip()
            section = "rest"
            i += 1
            continue
        if re.match(r"^\s*:(returns?|raises?|rtype)\b", line) or _EPYDOC_OTHER.match(line):
            section, current = "rest-other", None
            i += 1
            continue
        if section is None:
            desc.append(line)
        elif section in ("args", "arguments", "parameters"):
            gm = re.match(r"^\s{0,4}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$", line)
            if gm and not line.startswith("        "):
                current = gm.group(1)
                params[current] = gm.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
        elif section == "numpy-parameters":
            # NumPy style: "name : type" at the margin, the description indented below it
            nm = re.match(r"^(\w+)\s*(?::.*)?$", line)
            if nm and not line.startswith(" "):
                current = nm.group(1)
                params[current] = ""
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
        elif section == "rest" and current and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
        i += 1
    return "\n".join(desc).strip(), params


def _is_injected(hint: Any) -> bool:
    return get_origin(hint) is Annotated and any(isinstance(a, _Injected) for a in get_args(hint)[1:])


def _marked(fn: Callable[..., Any], marker: _Injected) -> tuple[str, ...]:
    hints = get_type_hints(fn, include_extras=True)
    return tuple(
        name
        for name, hint in hints.items()
        if get_origin(hint) is Annotated and any(a is marker for a in get_args(hint)[1:])
    )


def injected_stores(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Parameters of ``fn`` annotated :data:`InjectedStore` (they receive the conversation's store)."""
    return _marked(fn, InjectedStore)


def injected_states(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Parameters of ``fn`` annotated :data:`InjectedState` (they receive the run's state)."""
    return _marked(fn, InjectedState)


def function_schema(
    fn: Callable[..., Any], *, strict: bool = True, injected: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """Derive ``(description, parameters_schema, injected_names)`` from a function.

    Args:
        fn: The function.
        strict: True (the pipeline's tools): every visible parameter needs a type hint and a
            description, and the function a docstring. False (seed 003's swarm tools, which may
            be untyped or undocumented): an untyped parameter takes any JSON value, an
            undocumented one has no description, and a function without a docstring is
            described by its name.
        injected: Further parameters the caller supplies (hidden from the schema), besides
            those annotated ``Annotated[T, INJECTED]``.

    Raises:
        ContractError: When a visible parameter lacks a type hint or a description, or the
            function has no docstring (strict only: the schema is what the model sees, so the
            pipeline's must be complete), or for a hint with no JSON form.
    """
    hints = get_type_hints(fn, include_extras=True)
    description, param_docs = parse_docstring(fn.__doc__)
    if not description and not strict:
        description = fn.__name__.replace("_", " ")
    if not description:
        raise ContractError(
            f"tool {fn.__name__!r} has no description",
            expected="a docstring whose first paragraph says what the tool does",
            found="an empty docstring",
            fix=f"document {fn.__name__}",
        )
    properties: dict[str, Any] = {}
    required: list[str] = []
    hidden: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ContractError(
                f"tool {fn.__name__!r} takes *args/**kwargs",
                expected="named parameters only",
                found=f"{param}",
                fix="list every parameter explicitly",
            )
        hint = hints.get(name)
        if name in injected or (hint is not None and _is_injected(hint)):
            hidden.append(name)
            continue
        if hint is None and strict:
            raise ContractError(
                f"parameter {name!r} of tool {fn.__name__!r} has no type hint",
                expected="a type hint on every parameter",
                found="none",
                fix=f"annotate {name}",
            )
        if name not in param_docs and strict:
            raise ContractError(
                f"parameter {name!r} of tool {fn.__name__!r} is undocumented",
                expected="a description in the docstring's Args section",
                found=f"documented: {sorted(param_docs)}",
                fix=f"describe {name} in the docstring",
            )
        # an untyped parameter (lenient mode only) takes any JSON value
        prop = json_type(hint) if hint is not None else {}
        if strict or param_docs.get(name):
            prop["description"] = param_docs.get(name, "")
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif param.default is not None:
            prop["default"] = param.default
        properties[name] = prop
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return description, schema, tuple(hidden)
