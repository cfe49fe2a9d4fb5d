"""Where the MLflow store is and whether it can be written: the tracking URI and its health checks.

Checked before a run starts, so a bad store is a clear error instead of runs left RUNNING.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
from pathlib import Path

from routerlab.agents.errors import ConfigError
from routerlab.eval.defaults import DEFAULT_TRACKING_URI

__all__ = [
    "DEFAULT_TRACKING_URI",
    "check_tracking_store",
    "one_line_store_errors",
    "resolve_tracking_uri",
    "tracking_store_failure",
]

#: SQLite's words for a file that is not whole (a truncated or overwritten MLflow store)
_DAMAGE = ("malformed", "file is not a database", "disk i/o error", "database corrupt")
#: the words of a full file system, from SQLite and the OS
_FULL = ("database or disk is full", "no space left on device")


def resolve_tracking_uri(uri: str | None = None) -> str:
    """The tracking URI to use: ``uri``, else ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``.

    A relative SQLite path is made absolute (against the working directory) so the store does
    not move if the process changes directory later.
    """
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/") and ":memory:" not in uri:
        uri = prefix + str(Path(uri[len(prefix) :]).resolve())
    return uri


#: database schemes MLflow's SQLAlchemy store accepts (a ``+driver`` suffix is allowed)
_DB_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
_SQLITE_HEADER = b"SQLite format 3\x00"


def _tracking_error(uri: str, what: str, expected: str, found: str, fix: str) -> ConfigError:
    return ConfigError(
        f"tracking store {uri!r}: {what}",
        expected=expected,
        found=found,
        fix=fix,
        details={"option": "--tracking-uri"},
    )


def check_tracking_store(uri: str, *, timeout_s: float = 5.0) -> None:
    """Check that ``uri`` names a tracking store this process can write, before a run starts.

    A bad store found after runs were created would leave them RUNNING behind a traceback (or,
    for a server that does not answer, a silent hang). Checked: the scheme; for SQLite, that the
    folder exists and is writable and that an existing file is a SQLite database; for an
    ``http(s)://`` server, that its ``/health`` endpoint answers within ``timeout_s``.

    Raises:
        ConfigError: Naming the URI, what was expected, what was found and the fix.
    """
    scheme, sep, rest = uri.partition("://")
    base = scheme.split("+", 1)[0].lower()
    if not sep:
        raise _tracking_error(
            uri,
            "not a URI",
            "sqlite:///PATH, a database URI (postgresql://...) or an http(s):// tracking server",
            "no scheme (a plain path?)",
            # "none" or "off" is read as a path: say how MLflow is switched off
            f"pass --tracking-uri sqlite:///{uri or 'mlflow.db'} (a SQLite file), or --no-mlflow to log nothing",
        )
    if base == "sqlite":
        _check_sqlite_store(uri, rest)
    elif base in ("http", "https"):
        _check_server(uri, timeout_s)
    elif base not in _DB_SCHEMES:
        raise _tracking_error(
            uri,
            f"unknown scheme {scheme!r}",
            f"one of: sqlite, {', '.join(_DB_SCHEMES[1:])} (with an optional +driver), http, https",
            repr(scheme),
            "use sqlite:///mlflow.db for a local store, or http://HOST:PORT for a server",
        )


def _check_sqlite_store(uri: str, rest: str) -> None:
    path_text = rest[1:] if rest.startswith("/") else rest
    if ":memory:" in path_text or not path_text:
        return
    path = Path(path_text)
    if path.is_dir():
        raise _tracking_error(
            uri, "is a folder", "a SQLite file path", f"the folder {path}", f"pass sqlite:///{path / 'mlflow.db'}"
        )
    if path.exists():
        with path.open("rb") as fh:
            header = fh.read(len(_SQLITE_HEADER))
        if header and header != _SQLITE_HEADER:
            raise _tracking_error(
                uri,
                "not a SQLite database",
                "a SQLite file (or a path that does not exist yet)",
                f"a file starting with {header[:8]!r}",
                "point --tracking-uri at an MLflow SQLite store or a new file",
            )
        if header and (problem := _sqlite_damage(path)) is not None:
            raise _damaged(uri, path, problem)
        if not os.access(path, os.W_OK):
            raise _tracking_error(
                uri,
                "not writable",
                "a writable SQLite file",
                "permission denied",
                "fix its permissions or pick another",
            )
        return
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise _tracking_error(
            uri, "its folder does not exist", "an existing folder", str(folder), f"create it: mkdir -p {folder}"
        )
    if not os.access(folder, os.W_OK):
        raise _tracking_error(
            uri,
            "its folder is not writable",
            "a folder this user can write",
            f"{folder} (permission denied)",
            "pick a writable folder",
        )


def _sqlite_damage(path: Path) -> str | None:
    """What SQLite finds wrong with the file (None: it reads whole), read only."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)) as con:
            rows = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        return str(exc)
    found = [r[0] for r in rows]
    return None if found == ["ok"] else "; ".join(found[:3])


def _damaged(uri: str, path: Path, found: str) -> ConfigError:
    return _tracking_error(
        uri,
        "the file is damaged (truncated or overwritten)",
        "a whole MLflow SQLite store",
        found,
        f"move it aside (mv {path} {path}.damaged) and run again (a new store is created), or run with "
        "--no-mlflow; the results store keeps every result either way",
    )


def tracking_store_failure(uri: str, exc: BaseException) -> ConfigError | None:
    """The clear error for an MLflow store that failed during a session (None: not a store fault).

    A full disk or a damaged SQLite file surfaces deep inside MLflow (SQLAlchemy's
    ``OperationalError`` wrapped in ``MlflowException``); the session turns it into this error, exit 2.
    """
    seen: set[int] = set()
    texts: list[str] = []
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:  # MLflow wraps the driver's error
        seen.add(id(cause))
        texts.append(str(cause).lower())
        cause = cause.__cause__ or cause.__context__
    text = " ".join(texts)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if any(word in text for word in _FULL) or (isinstance(exc, OSError) and exc.errno == errno.ENOSPC):
        return _tracking_error(
            uri,
            "a write failed because its disk is full",
            "free space on the store's file system",
            first[:300],
            "free space there, then run the resume command printed above (every result is in the results "
            "store); or resume with --no-mlflow",
        )
    if uri.startswith("sqlite:") and any(word in text for word in _DAMAGE):
        rest = uri.partition("://")[2]
        return _damaged(uri, Path(rest[1:] if rest.startswith("/") else rest), first[:300])
    return None


def _check_server(uri: str, timeout_s: float) -> None:
    import urllib.error
    import urllib.request

    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError) as exc:
        raise _tracking_error(
            uri,
            "the server does not answer",
            f"an MLflow tracking server answering {url} within {timeout_s:g} s",
            f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}",
            "start it (routerlab server mlflow) or check the address; --no-mlflow runs without it",
        ) from None
    if status >= 400:
        raise _tracking_error(
            uri,
            f"the server answered HTTP {status}",
            f"HTTP 200 from {url}",
            f"HTTP {status}",
            "check that the address is an MLflow tracking server",
        )


class _OneLine(logging.Filter):
    """Keeps a log record's message and the last line of its exception, drops the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            last = str(record.exc_info[1]).splitlines()[0] if str(record.exc_info[1]) else ""
            record.msg = f"{record.getMessage()} {last}".strip()
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


#: MLflow's SQLAlchemy layer logs every database error with its full traceback (from its
#: background trace export too): a full disk printed hundreds of traceback lines over the
#: session's own message
_STORE_LOGGER = "mlflow.store.db.utils"


def one_line_store_errors() -> None:
    """Make MLflow's store log its database errors in one line each (idempotent).

    The session names the failure and its recovery itself (:func:`tracking_store_failure`);
    the filter stays for the process, because MLflow's background trace export logs after the
    session has ended.
    """
    logger = logging.getLogger(_STORE_LOGGER)
    if not any(isinstance(f, _OneLine) for f in logger.filters):
        logger.addFilter(_OneLine())
