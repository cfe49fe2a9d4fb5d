"""Fixtures of the built-in benchmark tests: one fresh build of the database per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab.benchmarks.builtin.database import build_database
from routerlab.benchmarks.builtin.validate import connect_readonly, reversed_copy


@pytest.fixture(scope="session")
def fresh_db(tmp_path_factory) -> Path:
    """A database built from scratch for this session (never the user's cache)."""
    # the file name matches the cache's, so DuckDB names the catalog the same way
    return build_database(tmp_path_factory.mktemp("build_a") / "service_areas.duckdb")


@pytest.fixture(scope="session")
def db(fresh_db):
    """A read-only connection to the fresh database."""
    con = connect_readonly(fresh_db)
    yield con
    con.close()


@pytest.fixture(scope="session")
def reversed_db(fresh_db):
    """The same data with every table stored in reverse order."""
    con = reversed_copy(fresh_db)
    yield con
    con.close()
