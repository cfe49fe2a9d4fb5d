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
import json
from collections.abc import Mapping, Sequence
from typing import Any

from routerlab.agents.errors import ToolError
from routerlab.agents.tools.schema import InjectedStore

__all__ = ["MAX_ITEMS", "MAX_KEY_CHARS", "MAX_VALUE_CHARS", "InjectedStore", "MemoryStore"]

#: items a conversation's store holds (all namespaces together)
MAX_ITEMS = 200
#: characters of one value's JSON
MAX_VALUE_CHARS = 4000
#: characters of a key, and of each namespace part
MAX_KEY_CHARS = 128

_SEP = "/"


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
    """

    def __init__(self, snapshot: Mapping[str, Mapping[str, Any]] | None = None) -> None:
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

        Raises:
            ToolError: ``store_invalid`` for a value without a JSON form, ``store_full`` past a
                bound (the router sees it like any failed call).
        """
        ns, key = self._ns(namespace), _check_label("key", key)
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ToolError(f"store value for {key!r} has no JSON form: {exc}", error_class="store_invalid") from None
        if len(text) > MAX_VALUE_CHARS:
            raise ToolError(
                f"store value for {key!r} is {len(text)} characters of JSON; the limit is {MAX_VALUE_CHARS}",
                error_class="store_full",
            )
        is_new = key not in self._data.get(ns, {})
        if is_new and len(self) >= MAX_ITEMS:
            raise ToolError(
                f"the conversation's store holds {MAX_ITEMS} items already; delete some first",
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

    def search(self, namespace: Sequence[str]) -> dict[str, Any]:
        """Every item under ``namespace`` (not its sub-namespaces), key -> value."""
        return copy.deepcopy(self._data.get(self._ns(namespace), {}))

    def __len__(self) -> int:
        return sum(len(items) for items in self._data.values())

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """The store as JSON data (``"a/b" -> {key: value}``), what the state and conversations keep."""
        return copy.deepcopy(self._data)
