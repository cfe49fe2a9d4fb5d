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
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from routerlab.agents.errors import ToolError
from routerlab.agents.tools.schema import InjectedStore

__all__ = ["MAX_ITEMS", "MAX_KEY_CHARS", "MAX_VALUE_CHARS", "InjectedStore", "MemoryStore", "SearchItem"]

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
    """One hit of :meth:`MemoryStore.search` with a ``query`` (LangGraph's ``SearchItem``).

    Attributes:
        namespace: The item's namespace.
        key: Its key.
        value: Its value (a copy).
        score: How many of the query's words its key and value contain (higher first).
    """

    namespace: tuple[str, ...]
    key: str
    value: Any
    score: float


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
    """

    def __init__(self, snapshot: Mapping[str, Mapping[str, Any]] | None = None, *, max_items: int = MAX_ITEMS) -> None:
        self.max_items = max_items
        self._data: dict[str, dict[str, Any]] = copy.deepcopy({k: dict(v) for k, v in (snapshot or {}).items()})
        self.changed = False

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
        limit: int = 10,
        filter: Mapping[str, Any] | None = None,
    ) -> Any:
        """Items under ``namespace``.

        Without ``query`` or ``filter``: every item directly under ``namespace`` (not its
        sub-namespaces), key -> value. With them (seed 001's ``store.search(namespace_prefix,
        query=..., limit=..., filter=...)``): :class:`SearchItem` hits under ``namespace`` and
        its sub-namespaces, best first: items whose value (a dict) has every ``filter`` field
        equal, scored by the query's words found in the key and value (items with none are
        left out), at most ``limit``.
        """
        if query is None and filter is None:
            return copy.deepcopy(self._data.get(self._ns(namespace), {}))
        prefix = self._ns(namespace)
        words = set((query or "").lower().split())
        hits: list[SearchItem] = []
        for ns, items in self._data.items():
            if ns != prefix and not ns.startswith(prefix + _SEP):
                continue
            for key, value in items.items():
                if filter and not (isinstance(value, Mapping) and all(value.get(k) == v for k, v in filter.items())):
                    continue
                text = (key + " " + json.dumps(value, ensure_ascii=False)).lower()
                score = float(sum(w in text for w in words)) if words else 1.0
                if score > 0:
                    hits.append(SearchItem(tuple(ns.split(_SEP)), key, copy.deepcopy(value), score))
        hits.sort(key=lambda h: (-h.score, h.namespace, h.key))
        return hits[: max(limit, 0)]

    def __len__(self) -> int:
        return sum(len(items) for items in self._data.values())

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """The store as JSON data (``"a/b" -> {key: value}``), what the state and conversations keep."""
        return copy.deepcopy(self._data)
