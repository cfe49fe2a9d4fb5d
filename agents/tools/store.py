"""Seed 004's ``InjectedStore``: a small per-conversation store that tools read and write.

A tool declares a parameter ``store: Annotated[MemoryStore, InjectedStore]`` (hidden from the
model's schema, like every injected parameter) and receives the conversation's store: values
under a namespace and a key (``store.put(("user",), "region", "Shaanxi")``), such as facts the
user stated in an earlier turn. The pipeline keeps the store in the turn's state (``store``), and
whoever keeps the conversation keeps the store with it: ``routerlab serve`` and ``routerlab ask
--conversation`` save it with the conversation's turns (:mod:`routerlab.conversation_store`), so the
next turn's tools read what earlier turns wrote.

It is bounded (:data:`MAX_ITEMS` items, :data:`MAX_VALUE_CHARS` characters of JSON per value,
short namespaces and keys); a write past a bound, or of a value with no JSON form, is a
:class:`ToolError` the router sees, never a crash.

``search(namespace, query=..., filter=..., limit=..., offset=...)`` is LangGraph's: items under
a namespace prefix as :class:`SearchItem` objects, filtered (:func:`matches`), ranked for a
query by the retrieval router's embedding index or, when that cannot load, its BM25 fallback
(:func:`routerlab.agents.tools.index.rank_texts`; which one ranked is :attr:`MemoryStore.last_search`).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from routerlab.agents.errors import ContractError, ToolError, reject_unknown_keys
from routerlab.agents.tools.schema import InjectedStore
from routerlab.agents.tools.text_index import Embedder, Ranking, load_embedder, rank_texts

__all__ = [
    "FILTER_OPERATORS",
    "MAX_ITEMS",
    "MAX_KEY_CHARS",
    "MAX_VALUE_CHARS",
    "InjectedStore",
    "MemoryStore",
    "SearchItem",
    "matches",
]

#: items a conversation's store holds (all namespaces together)
MAX_ITEMS = 200
#: characters of one value's JSON
MAX_VALUE_CHARS = 4000
#: characters of a key, and of each namespace part
MAX_KEY_CHARS = 128

_SEP = "/"


def _iso(value: Any) -> str:
    """JSON form of dates and times (seed 004 stores ``datetime.now()``): ISO 8601."""
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@dataclass(frozen=True)
class SearchItem:
    """One item :meth:`MemoryStore.search` found (LangGraph's ``SearchItem``).

    Attributes:
        namespace: The item's namespace.
        key: Its key.
        value: Its value (a copy).
        score: Its relevance to the query (cosine similarity, or BM25 on the fallback; higher
            first); None for a search without a query.
    """

    namespace: tuple[str, ...]
    key: str
    value: Any
    score: float | None = None


def _ordered(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """A comparison that is False, not a TypeError, for values that do not compare (3 < "a")."""

    def compare(found: Any, wanted: Any) -> bool:
        try:
            return bool(op(found, wanted))
        except TypeError:
            return False

    return compare


#: LangGraph's filter operators, ``{"field": {"$gt": 3}}``; a plain value means ``$eq``
FILTER_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": _ordered(operator.gt),
    "$gte": _ordered(operator.ge),
    "$lt": _ordered(operator.lt),
    "$lte": _ordered(operator.le),
    "$in": lambda found, wanted: found in wanted,
    "$nin": lambda found, wanted: found not in wanted,
}
_MISSING = object()


def _field(value: Any, path: str) -> Any:
    """``value``'s field at a dotted ``path`` (``"author.name"``), or ``_MISSING``."""
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _check_filter(filter: Any) -> Mapping[str, Any]:
    if not isinstance(filter, Mapping):
        raise ToolError(
            f"invalid store filter {filter!r}: a dict of field -> value or {{operator: value}}",
            error_class="store_invalid",
        )
    for path, cond in filter.items():
        if isinstance(cond, Mapping) and any(str(k).startswith("$") for k in cond):
            unknown = sorted(set(cond) - set(FILTER_OPERATORS))
            if unknown:
                raise ToolError(
                    f"unknown store filter operators {unknown} on {path!r}; known: {sorted(FILTER_OPERATORS)}",
                    error_class="store_invalid",
                )
            for op in ("$in", "$nin"):
                if op in cond and (isinstance(cond[op], str) or not isinstance(cond[op], Sequence)):
                    raise ToolError(f"store filter {op} on {path!r} needs a list", error_class="store_invalid")
    return filter


def matches(value: Any, filter: Mapping[str, Any]) -> bool:
    """Whether a stored value passes a LangGraph store filter.

    Each entry is ``field: value`` (equal), or ``field: {"$op": operand, ...}`` with the
    operators of :data:`FILTER_OPERATORS` (all must hold); ``field`` may be a dotted path into
    nested dicts. A value without the field passes only ``$ne`` and ``$nin``.
    """
    for path, cond in filter.items():
        found = _field(value, str(path))
        if isinstance(cond, Mapping) and any(str(k).startswith("$") for k in cond):
            for op, operand in cond.items():
                if found is _MISSING:
                    if op not in ("$ne", "$nin"):
                        return False
                elif not FILTER_OPERATORS[op](found, operand):
                    return False
        elif found is _MISSING or found != cond:
            return False
    return True


def _texts(value: Any) -> list[str]:
    """Every string in a value, depth first (what a search's ranking reads of an item)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    return [] if value is None else [json.dumps(value)]


def _check_label(kind: str, text: Any) -> str:
    if not isinstance(text, str) or not text or len(text) > MAX_KEY_CHARS or _SEP in text:
        raise ToolError(
            f"invalid store {kind} {text!r}: a non-empty string of at most {MAX_KEY_CHARS} characters without '/'",
            error_class="store_invalid",
        )
    return text


class MemoryStore:
    """Namespaced values of one conversation (seed 004's ``BaseStore``: ``get``/``put``/``delete``/``search``).

    Args:
        snapshot: What :meth:`snapshot` returned earlier (the state's ``store``); copied.
        max_items: Items it holds (:data:`MAX_ITEMS` for a conversation's store; a store of tool
            descriptions holds one per tool).
        index: LangGraph's ``InMemoryStore(index=...)`` (seed 001): ``embed``, an
            :class:`~routerlab.agents.tools.index.Embedder` (``embed(texts)`` -> unit vectors;
            default the retrieval router's MiniLM), ``dims`` (checked against its vectors) and
            ``fields`` (the value fields a query is matched against; default the whole value).

    Raises:
        ContractError: For an ``index`` with unknown keys or an ``embed`` that is not an embedder.

    Attributes:
        last_search: How the last search with a query ranked: ``{"index": "embedding" |
            "bm25", "fallback": why the embedding index was not used, or None}``.
    """

    def __init__(
        self,
        snapshot: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        max_items: int = MAX_ITEMS,
        index: Mapping[str, Any] | None = None,
    ) -> None:
        self.max_items = max_items
        self._data: dict[str, dict[str, Any]] = copy.deepcopy({k: dict(v) for k, v in (snapshot or {}).items()})
        self.changed = False
        config = dict(index or {})
        reject_unknown_keys("store index", config, ("embed", "dims", "fields"))
        embed = config.get("embed")
        if embed is not None and not callable(getattr(embed, "embed", None)):
            raise ContractError(
                "the store index's embed is not an embedder",
                expected="an object with embed(texts) -> unit vectors (routerlab.agents.tools.text_index.Embedder)",
                found=type(embed).__name__,
                fix="pass load_embedder() or your own embedder",
            )
        self._embedder: Embedder | None = embed
        self._dims: int | None = config.get("dims")
        self._fields: tuple[str, ...] | None = tuple(config["fields"]) if config.get("fields") else None
        self.last_search: dict[str, Any] = {}

    @staticmethod
    def _ns(namespace: Sequence[str]) -> str:
        if isinstance(namespace, str) or not namespace:
            raise ToolError(
                f"invalid store namespace {namespace!r}: a non-empty tuple of strings", error_class="store_invalid"
            )
        return _SEP.join(_check_label("namespace part", p) for p in namespace)

    def get(self, namespace: Sequence[str], key: str) -> Any:
        """The value under ``namespace`` and ``key``, or None."""
        return copy.deepcopy(self._data.get(self._ns(namespace), {}).get(_check_label("key", key)))

    def put(self, namespace: Sequence[str], key: str, value: Any) -> None:
        """Store ``value`` (JSON data) under ``namespace`` and ``key``, replacing what was there.

        Dates and times are stored as ISO 8601 text.

        Raises:
            ToolError: ``store_invalid`` for a value without a JSON form, ``store_full`` past a
                bound (the router sees it like any failed call).
        """
        ns, key = self._ns(namespace), _check_label("key", key)
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=_iso)
        except (TypeError, ValueError) as exc:
            raise ToolError(f"store value for {key!r} has no JSON form: {exc}", error_class="store_invalid") from None
        if len(text) > MAX_VALUE_CHARS:
            raise ToolError(
                f"store value for {key!r} is {len(text)} characters of JSON; the limit is {MAX_VALUE_CHARS}",
                error_class="store_full",
            )
        is_new = key not in self._data.get(ns, {})
        if is_new and len(self) >= self.max_items:
            raise ToolError(
                f"the conversation's store holds {self.max_items} items already; delete some first",
                error_class="store_full",
            )
        self._data.setdefault(ns, {})[key] = json.loads(text)
        self.changed = True

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        """Remove one item; True when it was there."""
        ns = self._ns(namespace)
        found = self._data.get(ns, {}).pop(_check_label("key", key), None) is not None
        if ns in self._data and not self._data[ns]:
            del self._data[ns]
        self.changed |= found
        return found

    def search(
        self,
        namespace: Sequence[str],
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[SearchItem]:
        """Items under the namespace prefix ``namespace`` (and its sub-namespaces), as :class:`SearchItem`.

        Without ``query`` they come in the order they were stored (``score`` None); with it,
        best first by the retrieval router's ranking (:attr:`last_search` says which index).
        ``filter`` keeps the items whose value passes it (:func:`matches`). ``offset`` items
        are skipped, then at most ``limit`` returned.

        Raises:
            ToolError: ``store_invalid`` for a ``limit``/``offset`` that is not a non-negative
                int, a query that is not text, or a malformed filter.
        """
        for name, number in (("limit", limit), ("offset", offset)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise ToolError(f"invalid store search {name} {number!r}: an int >= 0", error_class="store_invalid")
        if query is not None and not isinstance(query, str):
            raise ToolError(f"invalid store search query {query!r}: text", error_class="store_invalid")
        wanted = _check_filter(filter) if filter is not None else {}
        prefix = self._ns(namespace)
        items = [
            (tuple(ns.split(_SEP)), key, value)
            for ns, entries in self._data.items()
            if ns == prefix or ns.startswith(prefix + _SEP)
            for key, value in entries.items()
            if matches(value, wanted)
        ]
        if not query or not query.strip() or not items:
            return [SearchItem(ns, key, copy.deepcopy(value)) for ns, key, value in items][offset : offset + limit]
        ranking = self._rank(query, [self._document(key, value) for _, key, value in items])
        order = np.argsort(-ranking.scores, kind="stable")[offset : offset + limit]
        return [
            SearchItem(items[i][0], items[i][1], copy.deepcopy(items[i][2]), float(ranking.scores[i])) for i in order
        ]

    def _document(self, key: str, value: Any) -> str:
        """The text an item is ranked by: its key and the strings of its indexed fields."""
        if self._fields is None:
            parts = _texts(value)
        else:
            found = [_field(value, f) for f in self._fields]
            parts = [t for v in found if v is not _MISSING for t in _texts(v)]
        return " ".join([key, *parts])

    def _rank(self, query: str, documents: list[str]) -> Ranking:
        ranking = rank_texts(query, documents, embedder=self._embedder)
        if self._dims is not None and ranking.index == "embedding":
            dims = int(self._embedder_dims(documents[0]))
            if dims != self._dims:
                raise ToolError(
                    f"the store index has dims={self._dims} but its embedder gives {dims}", error_class="store_invalid"
                )
        self.last_search = {"index": ranking.index, "fallback": ranking.fallback}
        return ranking

    def _embedder_dims(self, text: str) -> int:
        return int((self._embedder or load_embedder()).embed([text]).shape[1])

    async def aget(self, namespace: Sequence[str], key: str) -> Any:
        """:meth:`get` for async tools (LangGraph's ``aget``)."""
        return self.get(namespace, key)

    async def aput(self, namespace: Sequence[str], key: str, value: Any) -> None:
        """:meth:`put` for async tools (LangGraph's ``aput``)."""
        self.put(namespace, key, value)

    async def adelete(self, namespace: Sequence[str], key: str) -> bool:
        """:meth:`delete` for async tools (LangGraph's ``adelete``)."""
        return self.delete(namespace, key)

    async def asearch(
        self,
        namespace: Sequence[str],
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[SearchItem]:
        """:meth:`search` for async tools (seed 001's ``retrieve_tools_coroutine``)."""
        return self.search(namespace, query=query, filter=filter, limit=limit, offset=offset)

    def __len__(self) -> int:
        return sum(len(items) for items in self._data.values())

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """The store as JSON data (``"a/b" -> {key: value}``), what the state and conversations keep."""
        return copy.deepcopy(self._data)
