"""The conftest's copied MLflow schema is the one MLflow's own migrations give a new store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# imported at collection, so the conftest's copy is installed before this module's test runs
import mlflow.store.db.utils as db_utils


def _lines(sql: str | None) -> tuple[str, ...]:
    """A statement's lines without order: MLflow's batch migrations write a table's CHECK
    constraints in set order, which differs between two real migrations (hash seeds)."""
    return tuple(sorted(line.strip().rstrip(",").strip() for line in (sql or "").splitlines()))


def _schema(path: Path) -> tuple[list[tuple], list[tuple]]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
        objects = sorted(((kind, name, table, _lines(sql)) for kind, name, table, sql in rows), key=str)
        version = con.execute("SELECT version_num FROM alembic_version").fetchall()
    finally:
        con.close()
    return objects, version


def test_a_new_store_gets_the_schema_its_own_migration_gives(tmp_path: Path) -> None:
    import sqlalchemy
    from mlflow import MlflowClient

    migrated = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'migrated.db'}")
    try:
        db_utils._initialize_tables.real(migrated)  # MLflow's whole Alembic history, as a user's store gets it
    finally:
        migrated.dispose()
    # a new store as every test makes one: through MLflow, which checks the schema's version
    MlflowClient(f"sqlite:///{tmp_path / 'copied.db'}").search_experiments()
    objects, version = _schema(tmp_path / "copied.db")
    assert len(objects) > 20 and version
    assert (objects, version) == _schema(tmp_path / "migrated.db")
