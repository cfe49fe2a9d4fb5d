"""Shared fixtures: golden files, a small real DuckDB database, scripted LMs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"


@pytest.fixture
def golden():
    """Compare a JSON-able value with ``tests/golden/<name>.json``.

    ``ROUTERLAB_UPDATE_GOLDEN=1 pytest`` writes or rewrites the files (review the diff before
    committing); without it a missing file fails the test.
    """

    def check(name: str, value: object) -> None:
        path = GOLDEN_DIR / f"{name}.json"
        text = json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"
        if os.environ.get("ROUTERLAB_UPDATE_GOLDEN") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not path.exists():
            # a missing golden file is a failure everywhere (not only in CI): writing it and
            # comparing the value with itself would pass whatever the value is
            pytest.fail(
                f"golden file {path} is missing; expected: a committed golden file; "
                "fix: run with ROUTERLAB_UPDATE_GOLDEN=1, review the file and commit it"
            )
        assert json.loads(text) == json.loads(path.read_text()), f"differs from golden {path.name}"

    return check


@pytest.fixture(scope="session")
def sales_db(tmp_path_factory) -> Path:
    """A small real DuckDB file: areas and revenue, with NULLs and mixed-case text."""
    import duckdb

    path = tmp_path_factory.mktemp("db") / "sales.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE areas (id INTEGER PRIMARY KEY, name VARCHAR, region VARCHAR, has_ev BOOLEAN);"
        "INSERT INTO areas VALUES (1, 'Qinling North', 'Shaanxi', true), (2, 'Hanzhong East', 'Shaanxi', false),"
        " (3, 'Baoji West', 'Shaanxi', NULL);"
        "CREATE TABLE revenue (area_id INTEGER REFERENCES areas(id), day DATE, kind VARCHAR, amount DOUBLE);"
        "INSERT INTO revenue VALUES (1, DATE '2024-01-01', 'Fuel', 100.0), (1, DATE '2024-01-02', 'Food', 50.5),"
        " (2, DATE '2024-01-01', 'Fuel', 80.0), (3, DATE '2024-01-01', 'fuel', NULL);"
    )
    con.close()
    return path
