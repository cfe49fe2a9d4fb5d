"""The content digest of the databases a run reads, recorded with the run and checked on resume.

A ``--resume`` that finished a session on a database whose rows changed in between would mix
answers from two versions of the data in one run. The dataset file's digest was checked; the
databases' were not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from routerlab.agents.errors import ConfigError
from routerlab.benchmarks.example import Example

__all__ = ["check_database_digests", "database_digests"]


def _file_digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def database_digests(examples: Sequence[Example]) -> dict[str, str]:
    """``{database path: sha256 of its bytes}`` for every database the examples read.

    A database that cannot be read is left out (the database check reports it on its own).
    """
    out: dict[str, str] = {}
    for path in sorted({e.db_path for e in examples}):
        try:
            out[path] = _file_digest(Path(path))
        except OSError:
            continue
    return out


def check_database_digests(run_id: str, recorded: Mapping[str, str], current: Mapping[str, str]) -> None:
    """Refuse to resume ``run_id`` when a database it recorded now has other contents.

    Args:
        run_id: The run being resumed.
        recorded: The digests stored with the run (empty for a run recorded before digests were).
        current: The digests of the same databases now.

    Raises:
        ConfigError: Naming the first changed (or vanished) database and the fix.
    """
    for path, digest in sorted(recorded.items()):
        now = current.get(path)
        if now != digest:
            raise ConfigError(
                f"run {run_id!r} was recorded on other contents of database {path}",
                expected=f"the database as recorded (sha256 {digest[:12]}...)",
                found=f"sha256 {now[:12]}..." if now else "the database is gone or unreadable",
                fix="restore the database as it was, or start a new session instead of resuming this one",
                details={"option": "--resume"},
            )
