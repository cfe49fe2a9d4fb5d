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

    ``ROUTERLAB_UPDATE_GOLDEN=1 pytest`` rewrites the files (review the diff before committing).
    """

    def check(name: str, value: object) -> None:
        path = GOLDEN_DIR / f"{name}.json"
        text = json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"
        if os.environ.get("ROUTERLAB_UPDATE_GOLDEN") == "1" or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if os.environ.get("CI") and not os.environ.get("ROUTERLAB_UPDATE_GOLDEN"):
                pytest.fail(f"golden file {path} was missing in CI; generate and commit it")
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
