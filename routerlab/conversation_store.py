"""Conversations kept between requests: bounded, expiring, in SQLite (a file, or memory).

``routerlab ask --conversation ID`` keeps them in a file under the cache directory (each ``ask``
is its own process); ``routerlab serve`` keeps them in memory unless ``--conversations PATH`` is
given. Memory stays bounded three ways: a conversation keeps its last ``max_turns`` turns, the
store keeps its ``max_conversations`` most recently used conversations, and a conversation
unused for ``ttl_s`` seconds is deleted (checked on every read and write).

A conversation belongs to its first ``user_id`` (a conversation started without one belongs to
"no user"): another user continuing it gets :class:`ConversationForbidden` and sees nothing of
it, and the owner is never overwritten. ``shared=True`` (``serve --shared-conversations``,
``ask --shared-conversations``) lets every user continue every conversation, for single-user use.
Ids the server or CLI issues come from :func:`new_conversation_id` (128 random bits).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from routerlab.agents.errors import ConfigError, RunError
from routerlab.agents.paths import cache_root
from routerlab.agents.turn_history import Turn

__all__ = [
    "DEFAULT_MAX_CONVERSATIONS",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_TTL_S",
    "ConversationForbidden",
    "ConversationStore",
    "default_path",
    "new_conversation_id",
]

DEFAULT_MAX_TURNS = 20
DEFAULT_MAX_CONVERSATIONS = 1000
DEFAULT_TTL_S = 24 * 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    user_id TEXT,
    updated REAL NOT NULL,
    turns TEXT NOT NULL,
    store TEXT NOT NULL DEFAULT '{}'
)
"""


class ConversationForbidden(RunError):
    """Another user's conversation: refused without saying whose it is or what it holds."""

    error_class = "forbidden"


def new_conversation_id() -> str:
    """An unguessable conversation id (128 random bits, URL-safe; fits the API's id pattern)."""
    return secrets.token_urlsafe(16)


def _forbidden(conversation_id: str, user_id: str | None) -> ConversationForbidden:
    return ConversationForbidden(
        "this conversation belongs to another user",
        expected="a conversation_id this user_id started (or none, to start a new conversation)",
        found=f"conversation_id {conversation_id!r} with user_id {user_id!r}",
        fix="leave conversation_id out to start a new conversation, or send the user_id that started it "
        "(a server started with --shared-conversations lets users share conversations)",
        details={"field": "conversation_id"},
    )


def _unusable(path: Path | None, exc: BaseException) -> ConfigError:
    """The error of a conversation store that cannot be opened: what failed and how to recover."""
    where = str(path) if path is not None else "the in-memory conversation store"
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ConfigError(
        f"conversation store {where} cannot be used: {first}",
        expected="a SQLite conversation store routerlab wrote, on a writable disk",
        found=f"{type(exc).__name__}: {first}",
        fix=(
            f"move the damaged file aside (mv {where} {where}.damaged; its conversations are lost, a new "
            "store starts empty), free disk space, or point --conversations at another file"
        ),
        details={"file": where},
    )


def default_path() -> Path:
    """Where ``routerlab ask`` keeps conversations: ``<cache root>/conversations.sqlite``."""
    return cache_root() / "conversations.sqlite"


def _create_private(path: Path) -> None:
    """Create ``path`` readable by its owner only (0600) if it does not exist yet.

    The file holds users' questions in clear text; SQLite gives its journal files the mode of the
    database file, so they stay private too. An existing file keeps the mode its owner chose.
    """
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError:  # a folder that cannot be written: the connection below reports it
        pass


class ConversationStore:
    """Turns of each conversation by id, with bounded size and expiry.

    Args:
        path: A SQLite file (created on first use), or None to keep everything in memory.
        max_turns: Turns kept per conversation (the oldest are dropped).
        max_conversations: Conversations kept (the least recently used are dropped).
        ttl_s: Seconds after its last use at which a conversation expires.
        shared: Let any user continue any conversation (single-user use); by default only the
            user who started a conversation may continue it.
        clock: Wall clock (tests pass a fake one).

    Raises:
        ConfigError: A bound that is not positive.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        ttl_s: float = DEFAULT_TTL_S,
        shared: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, value in (("max_turns", max_turns), ("max_conversations", max_conversations), ("ttl_s", ttl_s)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(
                    f"invalid conversation store bound {name!r}",
                    expected="a positive number",
                    found=repr(value),
                    fix=f"pass {name} > 0",
                )
        self.path = Path(path) if path is not None else None
        self.max_turns, self.max_conversations, self.ttl_s = int(max_turns), int(max_conversations), float(ttl_s)
        self.shared = shared
        self._clock = clock
        self._lock = threading.Lock()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _create_private(self.path)
        # one connection shared by the process's threads, serialised by the lock; a file also
        # serves other processes (SQLite's own locking, waited on for up to 5 s)
        try:
            self._con = sqlite3.connect(
                str(self.path) if self.path else ":memory:", timeout=5.0, check_same_thread=False, isolation_level=None
            )
            self._con.execute(_SCHEMA)
            # a damaged file can open and even take the schema; reading every page finds it now,
            # not at the first ask
            (verdict,) = self._con.execute("PRAGMA quick_check").fetchone()
            if verdict != "ok":
                raise sqlite3.DatabaseError(f"integrity check: {verdict}")
            columns = {row[1] for row in self._con.execute("PRAGMA table_info(conversations)")}
            if "store" not in columns:  # a file written before conversations kept their store
                self._con.execute("ALTER TABLE conversations ADD COLUMN store TEXT NOT NULL DEFAULT '{}'")
        except (sqlite3.Error, OSError) as exc:
            raise _unusable(self.path, exc) from None

    def _expire(self, now: float) -> None:
        self._con.execute("DELETE FROM conversations WHERE updated < ?", (now - self.ttl_s,))

    def _check_owner(self, conversation_id: str, user_id: str | None) -> list[Any]:
        """The stored turns, once ``user_id`` may see them (the caller holds the lock)."""
        row = self._con.execute("SELECT turns, user_id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None:
            return []
        if not self.shared and row[1] != user_id:
            raise _forbidden(conversation_id, user_id)
        return json.loads(row[0])

    def history(self, conversation_id: str, *, user_id: str | None = None) -> list[Turn]:
        """The turns of a conversation, oldest first (empty when unknown or expired).

        Raises:
            ConversationForbidden: The conversation was started by another user (and the store
                is not shared); nothing of it is returned.
        """
        with self._lock:
            self._expire(self._clock())
            return self._check_owner(conversation_id, user_id)

    def store(self, conversation_id: str) -> dict[str, Any]:
        """The conversation's store (seed 004's ``InjectedStore``) as its last turn left it; ``{}`` when none."""
        with self._lock:
            self._expire(self._clock())
            row = self._con.execute("SELECT store FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def append(
        self,
        conversation_id: str,
        turn: Turn,
        *,
        user_id: str | None = None,
        store: Mapping[str, Any] | None = None,
    ) -> int:
        """Add a finished turn; returns the conversation's number of turns kept.

        The first turn's ``user_id`` owns the conversation; it is never changed afterwards. The
        oldest turns beyond ``max_turns`` and the least recently used conversations beyond
        ``max_conversations`` are dropped in the same transaction. ``store`` (the final state's
        ``store``, bounded by :class:`routerlab.agents.tools.store.MemoryStore`) replaces the
        conversation's store; None keeps the one it has.

        Raises:
            ConversationForbidden: Another user owns the conversation (checked in the same
                transaction, so two first turns racing for one id cannot both land).
        """
        now = self._clock()
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                self._expire(now)
                turns = [*self._check_owner(conversation_id, user_id), dict(turn)][-self.max_turns :]
                kept = json.dumps(dict(store), default=str, ensure_ascii=False) if store is not None else None
                self._con.execute(
                    "INSERT INTO conversations (id, user_id, updated, turns, store) "
                    "VALUES (?, ?, ?, ?, COALESCE(?, '{}')) "
                    "ON CONFLICT(id) DO UPDATE SET updated = excluded.updated, turns = excluded.turns, "
                    "store = COALESCE(?, conversations.store)",
                    (conversation_id, user_id, now, json.dumps(turns, default=str, ensure_ascii=False), kept, kept),
                )
                self._con.execute(
                    "DELETE FROM conversations WHERE id NOT IN "
                    "(SELECT id FROM conversations ORDER BY updated DESC, id LIMIT ?)",
                    (self.max_conversations,),
                )
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
        return len(turns)

    def __len__(self) -> int:
        """Conversations kept (expired ones excluded)."""
        with self._lock:
            self._expire(self._clock())
            return int(self._con.execute("SELECT count(*) FROM conversations").fetchone()[0])

    def close(self) -> None:
        """Close the connection (a memory store's conversations are gone)."""
        with self._lock:
            self._con.close()
