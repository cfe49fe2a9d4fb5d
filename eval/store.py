"""The DuckDB results store: every run and every example result, queryable with SQL.

Two tables:

* ``runs``: one row per run (router, LM, dataset version and digest, split, config, params,
  start/finish times, status, linked MLflow run id).
* ``examples``: one row per ``(run_id, example_id, attempt)`` with the flat fields notebooks
  filter on (intent, outcome, latency, router/sub-agent usage, one ``score_<name>`` column per
  scorer) plus the full :class:`~routerlab.eval.scoring.ExampleResult` as JSON, so results rebuild exactly.

Concurrency: DuckDB lets one process write a file at a time. Every method opens the file, does
its work in one transaction and closes it again, under a per-file lock shared by all stores of
this process, so the runner's worker threads serialise and a notebook in another process can
read between two writes. A connection refused because another process holds the file is
retried with backoff (0.05 s doubling to 2 s) for up to :func:`store_wait_s` seconds (30 s, or
``$ROUTERLAB_STORE_WAIT_S``), saying so while it waits, before failing with
:class:`StoreBusyError`; ``routerlab run`` then stops with exit 75 and a resume command.

Damage: a store whose file is truncated or overwritten raises :class:`StoreDamagedError` (exit
2) with what DuckDB found and how to recover, never a raw engine error. A write the file system
refuses (no space left) raises :class:`StoreFullError` (exit 2), the write rolled back.

Long because every way a store fails (locked, damaged, full) is translated where the connection
is opened and committed, and those paths read best next to the one schema they protect.

Durability: ``add_result`` commits as soon as it is called, so a crash loses at most the
example being scored. Re-adding the same ``(run_id, example_id, attempt)`` replaces the row
(upsert): that is how ``--resume`` re-runs an example without ever duplicating it.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from routerlab.agents.errors import ConfigError, RunError
from routerlab.agents.signals import shield
from routerlab.benchmarks.dataset import Dataset
from routerlab.eval.defaults import DEFAULT_STORE_PATH
from routerlab.eval.scorers import DEFAULT_SCORERS
from routerlab.eval.scoring import ExampleResult

__all__ = [
    "DEFAULT_STORE_PATH",
    "END_TO_END",
    "PARTS",
    "ROUTING",
    "RUN_STATUSES",
    "SCORE_COLUMNS",
    "ResultsStore",
    "RunWriter",
    "StoreBusyError",
    "StoreDamagedError",
    "StoreFullError",
    "check_store_path",
    "is_disk_full",
    "part_run_id",
    "session_of",
    "store_wait_s",
]

_log = logging.getLogger(__name__)

#: statuses a run can have; only FINISHED means every selected example ran
RUN_STATUSES: tuple[str, ...] = ("RUNNING", "FINISHED", "FAILED", "KILLED")

#: a session's parts: every request through the whole pipeline, or each router's first decision only
END_TO_END = "end_to_end"
ROUTING = "routing"
PARTS: tuple[str, ...] = (ROUTING, END_TO_END)

#: score columns every store has from the start (other scorers add theirs when first written)
SCORE_COLUMNS: tuple[str, ...] = DEFAULT_SCORERS

#: how long to wait for another process to release the file before giving up (seconds)
STORE_WAIT_S = 30.0


def store_wait_s() -> float:
    """How long a store waits for another process's lock: ``$ROUTERLAB_STORE_WAIT_S``, else 30 s."""
    raw = os.environ.get("ROUTERLAB_STORE_WAIT_S")
    try:
        value = float(raw) if raw else STORE_WAIT_S
    except ValueError:
        value = STORE_WAIT_S
    return value if value >= 0 else STORE_WAIT_S


_RUNS_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    router VARCHAR,
    lm VARCHAR,
    dataset VARCHAR,
    dataset_version VARCHAR,
    dataset_digest VARCHAR,
    split VARCHAR,
    config JSON,
    params JSON,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    status VARCHAR,
    mlflow_run_id VARCHAR,
    part VARCHAR
)
"""

#: stores written before sessions had parts: their runs are all end to end (NULL reads as that)
_RUNS_PART_DDL = "ALTER TABLE runs ADD COLUMN IF NOT EXISTS part VARCHAR"

#: the columns of ``runs`` in insert order
_RUN_COLUMNS: tuple[str, ...] = (
    "run_id",
    "router",
    "lm",
    "dataset",
    "dataset_version",
    "dataset_digest",
    "split",
    "config",
    "params",
    "started_at",
    "status",
    "mlflow_run_id",
    "part",
)


def session_of(run_id: str) -> str:
    """The session a run belongs to: ``<session>.<router>`` or ``<session>.routing.<router>``.

    A sweep's session ids hold a dot of their own (``sweep-<id>.c000``): the router is cut from
    the right, then the routing part's marker.
    """
    return run_id.rpartition(".")[0].removesuffix(f".{ROUTING}")


def part_run_id(session: str, router: str, part: str = END_TO_END) -> str:
    """A run's id: ``<session>.<router>`` end to end, ``<session>.<part>.<router>`` for another part.

    An end-to-end run and a routing run of the same router live in one session (the main job),
    so the routing part's runs carry the part in their id.
    """
    return f"{session}.{router}" if part == END_TO_END else f"{session}.{part}.{router}"


#: flat columns of ``examples`` in insert order, after the key columns and before the scores
_EXAMPLE_FIELDS: tuple[tuple[str, str], ...] = (
    ("intent", "VARCHAR"),
    ("predicted_intent", "VARCHAR"),
    ("difficulty", "VARCHAR"),
    ("split", "VARCHAR"),
    ("outcome", "VARCHAR"),
    ("error_class", "VARCHAR"),
    ("error", "VARCHAR"),
    ("latency_s", "DOUBLE"),
    ("router_lm_calls", "INTEGER"),
    ("router_prompt_tokens", "INTEGER"),
    ("router_completion_tokens", "INTEGER"),
    ("router_latency_s", "DOUBLE"),
    ("subagent_lm_calls", "INTEGER"),
    ("subagent_prompt_tokens", "INTEGER"),
    ("subagent_completion_tokens", "INTEGER"),
    ("subagent_latency_s", "DOUBLE"),
    ("sql", "VARCHAR"),
)

_EXAMPLES_DDL = f"""
CREATE TABLE IF NOT EXISTS examples (
    run_id VARCHAR NOT NULL,
    example_id VARCHAR NOT NULL,
    attempt INTEGER NOT NULL,
    {", ".join(f"{name} {kind}" for name, kind in _EXAMPLE_FIELDS)},
    {", ".join(f"score_{name} DOUBLE" for name in SCORE_COLUMNS)},
    scores JSON,
    result JSON,
    recorded_at TIMESTAMP,
    PRIMARY KEY (run_id, example_id, attempt)
)
"""

# One lock per database file for the whole process: DuckDB serialises writers per file, not
# per Python object, so two stores opened on the same path must share it.
_FILE_LOCKS: dict[str, threading.Lock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


class StoreBusyError(RunError):
    """Another process holds the results store open for writing (past the wait limit)."""

    error_class = "store_busy"


class StoreDamagedError(ConfigError):
    """The results store's file is truncated, overwritten or otherwise unreadable."""

    error_class = "store_damaged"


#: DuckDB's words for a file that is not whole (as opposed to a lock, a permission or bad SQL)
_DAMAGE = ("could not read enough bytes", "corrupt", "checksum", "serialization", "invalid block", "not a valid")


def _damaged(path: Path, found: str) -> StoreDamagedError:
    return StoreDamagedError(
        f"results store {path}: the file is damaged (truncated or overwritten)",
        expected="a whole DuckDB results store",
        found=found,
        fix=f"move it aside (mv {path} {path}.damaged) and rerun with a new --store; to save what is still "
        f"readable, open the copy with duckdb and COPY (SELECT * FROM examples) TO 'examples.csv'",
        details={"option": "--store"},
    )


class StoreFullError(ConfigError):
    """The results store's file system refused a write (no space left on the device)."""

    error_class = "store_full"


#: the words of a full file system, from DuckDB, SQLite and the OS
_FULL = ("no space left on device", "disk is full", "disk full")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the file system is full (ENOSPC, in any store's words)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    text = str(exc).lower()
    return any(word in text for word in _FULL)


def _full(path: Path, found: str) -> StoreFullError:
    return StoreFullError(
        f"results store {path}: a write failed because its disk is full",
        expected=f"free space on the file system of {path.parent}",
        found=found,
        fix="free space there (every result committed before the failure is kept; the failed one was rolled "
        "back), then run the resume command printed above; or move the store to a larger disk first",
        details={"option": "--store"},
    )


def _store_failure(path: Path, exc: BaseException) -> ConfigError | None:
    """The clear error for a store fault (a full disk, a damaged file); None: not one of those."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if is_disk_full(exc):
        return _full(path, first)
    if _is_damage(exc):
        return _damaged(path, first)
    return None


def _is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and any(word in text for word in _DAMAGE)


def _file_lock(path: Path) -> threading.Lock:
    key = str(path.resolve())
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(key, threading.Lock())


def _score_column(name: str) -> str:
    """Column name of a scorer: ``score_`` plus the name reduced to identifier characters."""
    return "score_" + re.sub(r"\W", "_", name)


def _now() -> _dt.datetime:
    return _dt.datetime.now()


def _example_row(run_id: str, result: ExampleResult, score_names: Sequence[str]) -> dict[str, Any]:
    """The flat ``examples`` row of one result (score columns for ``score_names``)."""
    ru, su = result.router_usage, result.subagent_usage
    row: dict[str, Any] = {
        "run_id": run_id,
        "example_id": result.example_id,
        "attempt": result.attempt,
        "intent": result.intent,
        "predicted_intent": result.predicted_intent,
        "difficulty": result.difficulty,
        "split": result.split,
        "outcome": result.outcome,
        "error_class": result.error_class,
        "error": result.error,
        "latency_s": result.latency_s,
        "router_lm_calls": ru.lm_calls,
        "router_prompt_tokens": ru.prompt_tokens,
        "router_completion_tokens": ru.completion_tokens,
        "router_latency_s": ru.latency_s,
        "subagent_lm_calls": su.lm_calls,
        "subagent_prompt_tokens": su.prompt_tokens,
        "subagent_completion_tokens": su.completion_tokens,
        "subagent_latency_s": su.latency_s,
        "sql": result.trace.sql if result.trace is not None else None,
    }
    for name in score_names:
        row[_score_column(name)] = result.value(name)
    row["scores"] = json.dumps({k: s.value for k, s in result.scores.items()})
    row["result"] = json.dumps(result.to_dict(), default=str)
    row["recorded_at"] = _now()
    return row


#: a store never fetches or loads DuckDB extensions (a SQLite file would make it try the network)
_CONNECT_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
_SQLITE_HEADER = b"SQLite format 3\x00"


def _store_error(path: Path, what: str, expected: str, found: str, fix: str) -> ConfigError:
    return ConfigError(
        f"results store {path}: {what}", expected=expected, found=found, fix=fix, details={"option": "--store"}
    )


def check_store_path(path: Path, *, read_only: bool) -> None:
    """Diagnose a results-store path that cannot be opened, each cause with its own message.

    Args:
        path: The store file.
        read_only: True when the caller only reads (the file must then exist, and need not be
            writable).

    Raises:
        ConfigError: A folder, a file that is not a DuckDB database (a SQLite file says so),
            a missing store for a reader, or a file or folder this user may not read or write.
    """
    if path.is_dir():
        raise _store_error(
            path, "is a folder", "a DuckDB file path", "a folder", f"pass --store {path / 'results.duckdb'}"
        )
    if not path.exists():
        if read_only:
            raise _store_error(
                path,
                "no such store",
                "an existing results store",
                "no file",
                "check --store (a store is created by `routerlab run`)",
            )
        folder = next((p for p in path.absolute().parents if p.exists()), Path("/"))
        if not os.access(folder, os.W_OK | os.X_OK):
            raise _store_error(
                path, "cannot create it", f"a writable folder ({folder})", "permission denied", "pick another --store"
            )
        return
    if not os.access(path, os.R_OK):
        raise _store_error(path, "permission denied", "a readable file", "no read permission", "fix its permissions")
    with path.open("rb") as fh:
        header = fh.read(16)
    if header.startswith(_SQLITE_HEADER):
        raise _store_error(
            path,
            "is a SQLite database, not a DuckDB results store",
            "a DuckDB file written by routerlab",
            "a SQLite file",
            "pass the results store's .duckdb path to --store (SQLite is for --tracking-uri)",
        )
    if len(header) >= 12 and header[8:12] != b"DUCK":
        raise _store_error(
            path,
            "not a DuckDB file",
            "a DuckDB file written by routerlab",
            f"a file starting with {header[:8]!r}",
            "pass the results store's path to --store, or a new file",
        )
    if not read_only and not os.access(path, os.W_OK):
        raise _store_error(
            path,
            "read-only",
            "a writable file (runs write their results)",
            "no write permission",
            "fix its permissions or pick another --store (compare reads a read-only store)",
        )


class ResultsStore:
    """A DuckDB file of runs and per-example results.

    Args:
        path: The store file; it and its tables are created on first use.
        read_only: Only read: the file must exist, nothing is created or written, and a
            read-only file opens.

    Example:
        >>> store = ResultsStore(tmp / "results.duckdb")  # doctest: +SKIP
        >>> store.query("SELECT router, avg(score_ex) FROM examples JOIN runs USING (run_id) GROUP BY 1")
    """

    def __init__(self, path: str | Path = DEFAULT_STORE_PATH, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        check_store_path(self.path, read_only=read_only)
        self._lock = _file_lock(self.path)
        #: told, every few seconds, while the store waits for another process's lock
        self.on_wait: Callable[[str], None] = _log.warning
        # score columns known to exist: columns are only ever added, so this never goes stale in
        # a harmful way (a column another writer added is re-added with IF NOT EXISTS)
        self._known_columns: set[str] = set()
        if read_only:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute(_RUNS_DDL)
            con.execute(_RUNS_PART_DDL)
            con.execute(_EXAMPLES_DDL)

    # -- connections ------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One short-lived connection, inside one transaction, under the file lock."""
        with self._lock:
            con = self._open()
            # a stop signal (a run's SIGTERM or Ctrl-C) is held until the transaction has ended and
            # raised after it: raised inside DuckDB it comes out as whatever the engine was doing
            # (`Query interrupted`, `std::bad_cast` from a frame conversion), not as the stop it is
            with shield():
                try:
                    con.execute("BEGIN TRANSACTION")
                    yield con
                    con.execute("COMMIT")
                except BaseException as exc:
                    try:
                        con.execute("ROLLBACK")
                    except duckdb.Error:
                        pass  # a damaged file may refuse the rollback too; the first error is the one to report
                    if (failure := _store_failure(self.path, exc)) is not None:
                        raise failure from None
                    raise
                finally:
                    con.close()

    def _open(self) -> duckdb.DuckDBPyConnection:
        limit = store_wait_s()
        started = time.monotonic()
        delay, said = 0.05, -1.0
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=self.read_only, config=_CONNECT_CONFIG)
            except duckdb.IOException as exc:
                first = str(exc).splitlines()[0]
                if (failure := _store_failure(self.path, exc)) is not None:
                    raise failure from None
                if "lock" not in first.lower():
                    raise _store_error(
                        self.path, "cannot open it", "a DuckDB file this user can open", first, "check --store"
                    ) from exc
                # the file lock of another process (a notebook, a second runner): wait, and say so
                waited = time.monotonic() - started
                if waited >= limit:
                    raise StoreBusyError(
                        f"the results store {self.path} stayed locked by another process for {waited:.0f} s",
                        expected=f"the other process to release it within {limit:g} s ($ROUTERLAB_STORE_WAIT_S)",
                        found=first,
                        fix="close the other connection (a notebook's duckdb.connect, a second run), then "
                        "resume; or use another --store",
                        details={"option": "--store", "store": str(self.path)},
                    ) from None
                if said < 0 or waited - said >= 5:
                    said = waited
                    self.on_wait(
                        f"results store {self.path} is locked by another process; waiting "
                        f"(up to {limit:g} s, {waited:.0f} s so far)"
                    )
            except duckdb.Error as exc:
                first = str(exc).splitlines()[0]
                if _is_damage(exc):
                    raise _damaged(self.path, first) from None
                raise _store_error(
                    self.path, "cannot open it", "a DuckDB file written by routerlab", first, "check --store"
                ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _score_columns(self, con: duckdb.DuckDBPyConnection, names: Iterable[str]) -> tuple[list[str], set[str]]:
        """Score names of ``names`` after making sure each has a column (new scorers get one).

        Asking the catalog cost about 20 ms per stored result (measured by ``routerlab perf``),
        so only columns this store has not seen yet are touched. Returns the names and the
        columns added, which the caller remembers once the transaction has committed.
        """
        ordered = list(dict.fromkeys([*SCORE_COLUMNS, *names]))
        added = {_score_column(n) for n in ordered} - self._known_columns
        for col in sorted(added):
            con.execute(f'ALTER TABLE examples ADD COLUMN IF NOT EXISTS "{col}" DOUBLE')
        return ordered, added

    # -- runs -------------------------------------------------------------------------------

    def create_run(
        self,
        run_id: str,
        *,
        router: str,
        lm: str,
        dataset: Dataset,
        split: str,
        config: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        mlflow_run_id: str | None = None,
        new: bool = False,
        part: str = END_TO_END,
    ) -> None:
        """Record a run, or reopen it (status ``RUNNING``) when it exists: resume calls this again.

        Args:
            run_id: The run's id (``<session>.<router>``).
            router: The router's name.
            lm: The LM spec.
            dataset: The dataset replayed (name, version and digest are recorded).
            split: The split replayed.
            config: Run settings (stored as JSON).
            params: Everything else worth keeping (component specs...), stored as JSON.
            mlflow_run_id: The linked MLflow run, if any (kept when None on a reopen).
            new: The caller starts a new run (not a resume): an existing run with this id is
                another session's, and is refused instead of reopened and merged into.
            part: Which part of its session the run is (:data:`PARTS`).

        Raises:
            ConfigError: When the run exists with another dataset digest (resuming it would mix
                results of two different datasets), or exists at all when ``new`` is set.
        """
        with self._connect() as con:
            self._create_run(con, run_id, router, lm, dataset, split, config, params, mlflow_run_id, new, part)

    def create_runs(self, runs: Sequence[Mapping[str, Any]]) -> None:
        """Record (or reopen) several runs in one transaction: all of them, or none.

        A session's runs are registered together, so a signal or a fault half-way cannot leave a
        session whose ``--resume`` knows only some of the routers it was asked to run.

        Args:
            runs: Keyword arguments of :meth:`create_run`, one mapping per run.
        """
        with self._connect() as con:
            for run in runs:
                self._create_run(
                    con,
                    run["run_id"],
                    run["router"],
                    run["lm"],
                    run["dataset"],
                    run["split"],
                    run.get("config"),
                    run.get("params"),
                    run.get("mlflow_run_id"),
                    bool(run.get("new", False)),
                    run.get("part", END_TO_END),
                )

    def _create_run(
        self,
        con: duckdb.DuckDBPyConnection,
        run_id: str,
        router: str,
        lm: str,
        dataset: Dataset,
        split: str,
        config: Mapping[str, Any] | None,
        params: Mapping[str, Any] | None,
        mlflow_run_id: str | None,
        new: bool,
        part: str = END_TO_END,
    ) -> None:
        """One run's insert or reopen, on the caller's connection (inside its transaction)."""
        digest = dataset.digest()
        found = con.execute("SELECT dataset_digest FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if found is not None and new:
            raise self._taken([run_id])
        if found is not None:
            if found[0] != digest:
                raise ConfigError(
                    f"run {run_id!r} was recorded on another version of dataset {dataset.name!r}",
                    expected=f"dataset digest {found[0][:12]}...",
                    found=f"{digest[:12]}...",
                    fix="start a new session instead of resuming this one",
                )
            con.execute(
                "UPDATE runs SET status = 'RUNNING', finished_at = NULL, "
                "mlflow_run_id = coalesce(?, mlflow_run_id) WHERE run_id = ?",
                [mlflow_run_id, run_id],
            )
            return
        con.execute(
            f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' for _ in _RUN_COLUMNS)})",
            [
                run_id,
                router,
                lm,
                dataset.name,
                dataset.version,
                digest,
                split,
                json.dumps(dict(config or {}), default=str),
                json.dumps(dict(params or {}), default=str),
                _now(),
                "RUNNING",
                mlflow_run_id,
                part,
            ],
        )

    def refuse_existing(self, run_ids: Sequence[str]) -> None:
        """Raise unless none of ``run_ids`` exists: a new session never merges into an old one.

        Raises:
            ConfigError: Some of the runs exist (the new session's id collided with an earlier one).
        """
        if not run_ids:
            return
        with self._connect() as con:
            marks = ", ".join("?" for _ in run_ids)
            found = con.execute(f"SELECT run_id FROM runs WHERE run_id IN ({marks})", list(run_ids)).fetchall()
        taken = [r[0] for r in found]
        if taken:
            raise self._taken(sorted(taken))

    def _taken(self, run_ids: Sequence[str]) -> ConfigError:
        return ConfigError(
            f"run {run_ids[0]!r} already exists in {self.path}: the new session's id is in use",
            expected="a session id no earlier session has",
            found=f"{len(run_ids)} run(s) recorded before: {', '.join(run_ids)}",
            fix="run the command again (a new id is drawn), or pass --resume to continue that session",
        )

    def set_mlflow_run(self, run_id: str, mlflow_run_id: str) -> None:
        """Link a run to its MLflow run."""
        with self._connect() as con:
            self._require_run(con, run_id)
            con.execute("UPDATE runs SET mlflow_run_id = ? WHERE run_id = ?", [mlflow_run_id, run_id])

    def finish_run(self, run_id: str, status: str = "FINISHED") -> None:
        """Close a run with its final status (``FINISHED``, ``FAILED`` or ``KILLED``).

        Raises:
            ConfigError: For an unknown run or status.
        """
        if status not in RUN_STATUSES[1:]:
            raise ConfigError(
                f"unknown final run status {status!r}",
                expected=", ".join(RUN_STATUSES[1:]),
                found=repr(status),
                fix="FINISHED when every example ran, KILLED when interrupted, FAILED on a crash",
            )
        with self._connect() as con:
            self._require_run(con, run_id)
            con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?", [status, _now(), run_id])

    def _require_run(self, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        if con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is None:
            known = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 5").fetchall()]
            raise ConfigError(
                f"no run {run_id!r} in {self.path}",
                expected="a run id created by create_run (SESSION.ROUTER)",
                found=f"latest runs: {known}",
                fix="check the id, or the --store path",
            )

    def runs(self) -> pd.DataFrame:
        """Every run, oldest first (``config`` and ``params`` as JSON text; ``part`` always set)."""
        frame = self.query("SELECT * FROM runs ORDER BY started_at, run_id")
        # a store opened read-only may predate parts: its runs are end to end
        if "part" not in frame.columns:
            frame["part"] = END_TO_END
        frame["part"] = frame["part"].fillna(END_TO_END).astype(object)
        return frame

    def run(self, run_id: str) -> dict[str, Any]:
        """One run's row as a dict (``config`` and ``params`` parsed).

        Raises:
            ConfigError: For an unknown run.
        """
        with self._connect() as con:
            self._require_run(con, run_id)
            frame = con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).df()
        row = frame.iloc[0].to_dict()
        for key in ("config", "params"):
            row[key] = json.loads(row[key]) if row[key] else {}
        return row

    # -- examples ---------------------------------------------------------------------------

    def add_result(self, run_id: str, result: ExampleResult) -> None:
        """Upsert one example result (replaces an earlier row of the same example and attempt)."""
        self.add_results(run_id, [result])

    def add_results(self, run_id: str, results: Sequence[ExampleResult]) -> None:
        """Upsert several results in one transaction (rebuilds, imports, tests)."""
        if not results:
            return
        with self._connect() as con:
            added = self._upsert(con, run_id, results)
        self._known_columns |= added  # only after the commit: a rolled-back ALTER added nothing

    def _upsert(self, con: duckdb.DuckDBPyConnection, run_id: str, results: Sequence[ExampleResult]) -> set[str]:
        names, added = self._score_columns(con, {n for r in results for n in r.scores})
        rows = [_example_row(run_id, r, names) for r in results]
        cols = list(rows[0])
        quoted = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" for _ in cols)
        sql = f"INSERT OR REPLACE INTO examples ({quoted}) VALUES ({marks})"
        values = [[row[c] for c in cols] for row in rows]
        if len(values) == 1:
            con.execute(sql, values[0])  # a third cheaper than executemany for one row (perf)
        else:
            con.executemany(sql, values)
        return added

    @contextmanager
    def writer(self, run_id: str) -> Iterator[RunWriter]:
        """Keep the file open while a run stores its results one by one.

        Opening the file costs about 20 ms, a committed upsert on an open connection about 1 ms
        (``routerlab perf``): with a fast LM the open was most of the harness's time per example.
        Each result is still committed on its own, so a killed run loses nothing it reported.
        While the block runs, other processes cannot open the store (DuckDB allows one writing
        process per file); this process can, and reads see every committed result.
        """
        with self._lock:
            con = self._open()
        try:
            yield RunWriter(self, con, run_id)
        finally:
            with self._lock:
                con.close()

    def completed_ids(self, run_id: str, *, min_attempts: int = 1) -> set[str]:
        """Example ids of ``run_id`` with a stored result (at least ``min_attempts`` of them).

        Any stored outcome counts, errors and crashes included: they are results, and resume
        re-runs only what never produced one.
        """
        with self._connect() as con:
            rows = con.execute(
                "SELECT example_id FROM examples WHERE run_id = ? GROUP BY example_id "
                "HAVING count(DISTINCT attempt) >= ?",
                [run_id, min_attempts],
            ).fetchall()
        return {r[0] for r in rows}

    def results(self, run_id: str) -> list[ExampleResult]:
        """Every stored result of a run, rebuilt, ordered by example id then attempt."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT result FROM examples WHERE run_id = ? ORDER BY example_id, attempt", [run_id]
            ).fetchall()
        return [ExampleResult.from_dict(json.loads(r[0])) for r in rows]

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """Run any SQL over ``runs`` and ``examples`` and return the result as a frame.

        Args:
            sql: The statement (``?`` placeholders bind ``params``).
            params: Values bound to the placeholders.
        """
        with self._connect() as con:
            return con.execute(sql, list(params or [])).df()


class RunWriter:
    """Stores one run's results on a connection held open (see :meth:`ResultsStore.writer`)."""

    def __init__(self, store: ResultsStore, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        self._store, self._con, self.run_id = store, con, run_id

    def add(self, result: ExampleResult) -> None:
        """Upsert one result and commit it."""
        store = self._store
        with store._lock:
            self._con.execute("BEGIN TRANSACTION")
            try:
                added = store._upsert(self._con, self.run_id, [result])
                self._con.execute("COMMIT")
            except BaseException as exc:
                try:
                    self._con.execute("ROLLBACK")
                except duckdb.Error:
                    pass  # a damaged file may refuse the rollback too
                if (failure := _store_failure(store.path, exc)) is not None:
                    raise failure from None
                raise
        store._known_columns |= added
