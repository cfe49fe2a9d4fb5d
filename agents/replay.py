"""Router replay: sub-agent outcomes kept on disk, so a second router only pays for new calls.

Comparing routers on one dataset re-runs the same sub-agent calls over and over: two routers
that both send "How many areas have EV charging?" to ``generate_sql`` get the same SQL from the
same LM. With ``PipelineConfig(replay=True)`` (``routerlab run --replay``) every successful tool
outcome is stored under a key made of everything the tool reads:

* the tool's name and arguments, where an argument citing an earlier call (``discovery_call_id``
  and the like) is replaced by that call's output, since call ids differ between runs;
* the request (question, hint, the user's reply to a clarifying question);
* the database file (resolved path, size, modification time);
* the LM (model and request settings), the sub-agents' DSPy programs (their state's digest) and
  the tool settings.

A later call with the same key gets the stored output without running the tool: no LM call, no
query. Routing decisions are never replayed, so what is measured is the new router's decisions
on top of outcomes that are the same as a fresh run's. A replayed call's usage follows DSPy's
response cache (docs/metrics.md §7): its LM calls are counted, all as cache hits, with no
tokens and no latency; its record says ``replayed``. The stored usage keeps the original figures.

Only successes are stored: a failure may be transient, and a rerun costs little. Faults and
replay do not mix (a fault must really happen), which the run config refuses up front.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from routerlab.agents.paths import cache_root
from routerlab.agents.sqlite_file import SharedSqliteFile
from routerlab.agents.trace import Usage

__all__ = [
    "OutcomeCache",
    "ReplayedOutcome",
    "default_outcome_cache_path",
    "lm_identity",
    "outcome_key",
    "programs_digest",
    "settings_dict",
]

_KEY_VERSION = 1
_SCHEMA = "CREATE TABLE IF NOT EXISTS outcomes (key TEXT PRIMARY KEY, tool TEXT NOT NULL, output TEXT, usage TEXT)"


def default_outcome_cache_path() -> Path:
    """``<cache root>/replay/outcomes.sqlite`` (see :func:`routerlab.agents.paths.cache_root`)."""
    return cache_root() / "replay" / "outcomes.sqlite"


@dataclass(frozen=True)
class ReplayedOutcome:
    """A stored tool output and the LM usage it cost when it was computed."""

    output: Any
    usage: Usage


def lm_identity(lm: Any) -> dict[str, Any]:
    """What about an LM decides its outputs: the model and its request settings."""
    if lm is None:
        return {"model": None}
    kwargs = getattr(lm, "kwargs", {}) or {}
    return {"model": getattr(lm, "model", type(lm).__name__), "kwargs": {k: kwargs[k] for k in sorted(kwargs)}}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))


def _file_identity(path: str) -> list[Any] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return [str(Path(path).resolve()), st.st_size, st.st_mtime_ns]


def outcome_key(
    tool_name: str,
    args: Mapping[str, Any],
    refs: Mapping[str, Any],
    state: Mapping[str, Any],
    *,
    lm: Mapping[str, Any],
    context: Mapping[str, Any],
) -> str | None:
    """The cache key of one tool call, or None when it cannot be keyed safely.

    Args:
        tool_name: The tool.
        args: The call's arguments.
        refs: Names of the arguments that cite earlier calls (their values are call ids).
        state: The pipeline state (question, hint, user_reply, database, tool_calls, history,
            and the question a reply answers).
        lm: :func:`lm_identity` of the pipeline's LM.
        context: Everything else fixed per pipeline (programs digest, tool settings).
    """
    database = _file_identity(str(state.get("database", "")))
    if database is None:
        return None
    calls = state.get("tool_calls", {}) or {}
    resolved: dict[str, Any] = {}
    for name, value in args.items():
        if name in refs and value:
            cited = calls.get(value)
            if cited is None or cited.get("status") != "success":
                return None  # an unknown or failed citation: run the tool and let it complain
            resolved[name] = {"cited": cited.get("name"), "output": cited.get("output")}
        else:
            resolved[name] = value
    key = {
        "v": _KEY_VERSION,
        "tool": tool_name,
        "args": resolved,
        "request": {k: state.get(k) for k in ("question", "hint", "user_reply")},
        "database": database,
        "lm": lm,
        "context": context,
    }
    if state.get("history"):
        # a follow-up's SQL depends on the earlier turns; a first turn's key stays as it was
        key["history"] = list(state["history"])
    if state.get("user_reply") and (asked := state.get("clarification") or state.get("ask_human")):
        # SQL generation reads the reply with the question it answers; a turn without a reply keeps its key
        key["asked"] = asked
    return hashlib.sha256(_canonical(key).encode()).hexdigest()


def programs_digest(programs: Any) -> str:
    """Digest of DSPy programs' state (instructions, demos): optimised programs are new keys."""
    try:
        state = programs.dump_state()
    except (AttributeError, TypeError):
        state = repr(programs)
    return hashlib.sha256(_canonical(state).encode()).hexdigest()[:16]


def settings_dict(settings: Any) -> dict[str, Any]:
    """A dataclass of settings as a dict (plain mappings pass through)."""
    return asdict(settings) if hasattr(settings, "__dataclass_fields__") else dict(settings)


def _stored_usage(d: dict[str, Any]) -> Usage:
    """The usage stored with an outcome.

    An entry from before cold costs were recorded gets its observed cost as cold cost, and its own
    cache hits (whose cold cost is lost) count as unknown.
    """
    usage = Usage.from_row(d)
    if "cold_prompt_tokens" in d:
        return usage
    usage.cold_prompt_tokens, usage.cold_completion_tokens = usage.prompt_tokens, usage.completion_tokens
    usage.cold_latency_s, usage.cold_cost_usd = usage.latency_s, usage.cost_usd
    usage.cold_unknown = usage.cache_hits
    return usage


class OutcomeCache:
    """Successful tool outcomes in a SQLite file shared by runs, threads and processes.

    Args:
        path: The file (created with its directory on first use).
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_outcome_cache_path()
        self._file = SharedSqliteFile(self.path, _SCHEMA)

    def __repr__(self) -> str:
        return f"OutcomeCache({str(self.path)!r})"

    def get(self, key: str) -> ReplayedOutcome | None:
        """The stored outcome, or None (also when the file cannot be read)."""
        try:
            row = self._file.read_one("SELECT output, usage FROM outcomes WHERE key = ?", (key,))
        except (sqlite3.Error, OSError):
            return None
        if row is None:
            return None
        return ReplayedOutcome(json.loads(row[0]), _stored_usage(json.loads(row[1])))

    def put(self, key: str, tool_name: str, output: Any, usage: Usage) -> bool:
        """Store an outcome; False when it could not be written (the run carries on)."""
        try:
            self._file.write(
                "INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?, ?)",
                (key, tool_name, json.dumps(output, default=str), json.dumps(asdict(usage))),
            )
        except (sqlite3.Error, OSError, TypeError, ValueError):
            return False
        return True

    def __len__(self) -> int:
        try:
            row = self._file.read_one("SELECT count(*) FROM outcomes")
            return int(row[0]) if row else 0
        except (sqlite3.Error, OSError):
            return 0
