"""Search indexes over tools : which tools fit a query such as "find tables for a question"?

Every tool is indexed as the text ``"name: description"``. Two indexes
(:mod:`routerlab.agents.tools.text_index`, re-exported here): ``embedding`` (cosine similarity of
the packaged all-MiniLM-L6-v2 int8 ONNX sentence embeddings, the ``retrieval`` extra; nothing is
downloaded at run time) and ``bm25`` (lexical Okapi BM25, no model at all).

Index kinds live in one registry, :data:`tool_index` (a factory ``tools -> ToolIndex`` per name).
A plain retrieval function (seed 001's ``retrieve_tools_function``: ``(query, tools, k) -> tool
names``) is an index too: register it with :func:`retriever`, or name it by import path
(``package.module:function``) wherever an index kind is accepted (:func:`index_factory`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, cast, runtime_checkable

from routerlab.agents.errors import ConfigError
from routerlab.agents.registry import Registry
from routerlab.agents.tools.base import Tool
from routerlab.agents.tools.schema import function_schema
from routerlab.agents.tools.store import MemoryStore
from routerlab.agents.tools.text_index import (
    BM25Index,
    Embedder,
    EmbeddingIndex,
    Hit,
    MiniLMEmbedder,
    Ranking,
    clear_embedder,
    load_embedder,
    rank_texts,
    scoped_embedder,
    tool_document,
)

__all__ = [
    "TOOL_NAMESPACE",
    "BM25Index",
    "Embedder",
    "EmbeddingIndex",
    "FunctionIndex",
    "Hit",
    "MiniLMEmbedder",
    "Ranking",
    "RetrievalForm",
    "RetrieveFn",
    "ToolIndex",
    "build_index",
    "clear_embedder",
    "index_factory",
    "load_embedder",
    "rank_texts",
    "resolve_awaitable",
    "retrieval_form",
    "retriever",
    "scoped_embedder",
    "tool_document",
    "tool_index",
    "tool_store",
]


@runtime_checkable
class ToolIndex(Protocol):
    """A searchable set of tools."""

    #: ``embedding`` or ``bm25``
    kind: str
    #: indexed tool names, in registry order
    names: tuple[str, ...]

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best tools for ``query``, best first (ties keep registry order)."""
        ...


def resolve_awaitable(value: Any) -> Any:
    """``value``, awaited when it is awaitable (an async retrieval function's result, seed 001).

    Run on a loop of its own: in this thread when none runs here, else in a worker thread (a
    caller inside a running loop cannot block on it).
    """
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()


@runtime_checkable
class RetrieveFn(Protocol):
    """A retrieval function: the names of the ``k`` tools that best fit ``query``, best first.

    Seed 001's two other forms are accepted too (see :class:`FunctionIndex`):
    ``(query, *, store)`` searching a store of tool descriptions, and a function whose own
    parameters the model fills (``category: Literal["billing", "service"]``).
    """

    def __call__(self, query: str, tools: Sequence[Tool], k: int) -> list[str]:
        """Search ``tools`` for ``query``."""
        ...


#: the namespace of the tool descriptions a store-form retrieval function searches (seed 001)
TOOL_NAMESPACE: tuple[str, ...] = ("tools",)

RetrievalForm = Literal["tools", "store", "model"]


def retrieval_form(fn: Callable[..., Any]) -> RetrievalForm:
    """How a retrieval function is called, read from its signature.

    ``tools``: ``(query, tools, k)``, routerlab's form. ``store``: seed 001's ``(query, *, store)``
    (it searches a store of ``"name: description"`` items under :data:`TOOL_NAMESPACE`, keys
    are tool names). ``model``: any other signature, seed 001's ``(category: Literal[...])``:
    the model fills the function's own parameters (its schema is the retrieval tool's).
    """
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return "tools"
    if "store" in params:
        return "store"
    if "tools" in params or len(params) == 3:
        return "tools"
    return "model"


def tool_store(tools: Sequence[Tool]) -> Any:
    """A store holding ``{"description": "name: description"}`` per tool under :data:`TOOL_NAMESPACE`."""
    store = MemoryStore(max_items=max(len(tools), 1))
    for t in tools:
        store.put(TOOL_NAMESPACE, t.name, {"description": tool_document(t)})
    return store


class FunctionIndex:
    """A :class:`ToolIndex` over a retrieval function (seed 001's ``retrieve_tools_function``).

    Names the function returns that are not indexed tools are dropped (a plug-in cannot make
    an unknown tool callable); hits are scored by rank. The function may have any of the
    forms of :func:`retrieval_form`, and be a coroutine function (seed 001's
    ``retrieve_tools_coroutine``): its result is awaited (:func:`resolve_awaitable`).

    Args:
        tools: The tools searched.
        fn: The retrieval function.
        kind: What the index reports as its kind (the registered name or import path).
    """

    def __init__(self, tools: Sequence[Tool], fn: RetrieveFn, kind: str = "function") -> None:
        self.kind = kind
        self.names = tuple(t.name for t in tools)
        self._tools = tuple(tools)
        self._fn: Callable[..., Any] = fn
        self.form = retrieval_form(fn)
        self._store = tool_store(tools) if self.form == "store" else None

    def _hits(self, found: Any, k: int) -> list[Hit]:
        names = [n for n in dict.fromkeys(str(x) for x in (found or [])) if n in self.names][: max(k, 0)]
        return [Hit(name, float(len(names) - i)) for i, name in enumerate(names)]

    def search(self, query: str, k: int) -> list[Hit]:
        """The function's tools for ``query``, in its order, at most ``k``."""
        if self.form == "store":
            return self._hits(resolve_awaitable(self._fn(query, store=self._store)), k)
        if self.form == "model":
            return self.search_args({"query": query}, k)
        return self._hits(resolve_awaitable(self._fn(query, self._tools, k)), k)

    def retrieve_tool(self) -> Tool | None:
        """The retrieval tool the model sees for a ``model``-form function (its own schema), else None."""
        if self.form != "model":
            return None

        description, parameters, _injected = function_schema(self._fn, strict=False)
        return Tool(name="retrieve_tools", description=description, parameters=parameters, fn=self._fn, injected=())

    def search_args(self, args: dict[str, Any], k: int) -> list[Hit]:
        """Call a ``model``-form function with the model's arguments."""
        return self._hits(resolve_awaitable(self._fn(**args)), k)


#: index kinds by name: each a factory ``(tools) -> ToolIndex``
tool_index: Registry[ToolIndex] = Registry("tool index")
tool_index("embedding")(EmbeddingIndex)
tool_index("bm25")(BM25Index)


def retriever(name: str) -> Callable[[RetrieveFn], RetrieveFn]:
    """Register a retrieval function as the index kind ``name`` (usable as ``index=name``)."""

    def register(fn: RetrieveFn) -> RetrieveFn:
        def factory(tools: Sequence[Tool]) -> ToolIndex:
            return FunctionIndex(tools, fn, kind=name)

        tool_index(name)(factory)
        return fn

    return register


def _imported(path: str) -> Any:
    """The object an import path ``package.module:attribute`` names."""
    module_name, _, attribute = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"cannot import the retrieval function {path!r}",
            expected="an import path package.module:function of a function (query, tools, k) -> tool names",
            found=f"{type(exc).__name__}: {exc}",
            fix="check the module is importable from this environment and the name is spelled right",
        ) from None


def index_factory(spec: str) -> Callable[[Sequence[Tool]], ToolIndex]:
    """The factory of an index kind.

    ``spec`` is a registered name, or the import path of a retrieval function or of an index
    class (``package.module:name``).

    Raises:
        UnknownComponentError: An unknown registered name (with the closest one).
        ConfigError: An import path that does not import, or names neither a function nor an
            index class.
    """
    if ":" not in spec:
        return tool_index.get(spec)
    # whatever the path names: only what the checks below accept is returned
    target: Any = _imported(spec)
    if inspect.isclass(target) and hasattr(target, "search"):
        # a class with search(query, k) is an index class: its constructor takes the tools
        return cast("Callable[[Sequence[Tool]], ToolIndex]", target)
    if callable(target):
        return lambda tools: FunctionIndex(tools, target, kind=spec)
    raise ConfigError(
        f"{spec!r} is not a retrieval function",
        expected="a function (query, tools, k) -> tool names, or a class with search(query, k)",
        found=type(target).__name__,
        fix="point the import path at the function itself",
    )


def build_index(tools: Sequence[Tool], kind: str = "embedding") -> ToolIndex:
    """An index of ``kind`` (a registered name or an import path: :func:`index_factory`) over ``tools``.

    Raises:
        UnknownComponentError / ConfigError: For a kind that names nothing usable.
        ModelAssetError: For ``embedding`` without the ``retrieval`` extra.
    """
    return index_factory(kind)(tools)
