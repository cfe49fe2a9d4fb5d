"""The generated service-area database: schema, realistic quirks, determinism and caching."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from routerlab.agents.db import connect_duckdb_readonly
from routerlab.benchmarks.builtin import database
from routerlab.benchmarks.builtin.database import (
    BUSINESS_TYPES,
    GENERATOR_VERSION,
    TABLE_KEYS,
    build_database,
    builtin_database_path,
)

EXPECTED_COLUMNS = {
    "service_areas": [
        "area_id", "name", "highway", "province", "region", "opened_on", "closed_on", "has_ev_charging",
        "parking_spaces", "operator",
    ],
    "branches": ["branch_id", "area_id", "business_type", "brand", "opened_on", "closed_on"],
    "daily_revenue": ["branch_id", "area_id", "day", "business_type", "revenue", "transactions"],
    "vehicle_traffic": ["area_id", "day", "direction", "vehicle_class", "vehicles"],
    "complaints": [
        "complaint_id", "area_id", "branch_id", "filed_at", "category", "severity", "channel", "resolved_on",
    ],
    "staff": [
        "staff_id", "area_id", "branch_id", "full_name", "role", "hired_on", "left_on", "monthly_salary",
    ],
}  # fmt: skip


def content_digest(path: Path) -> str:
    """SHA-256 over the schema and every table's rows read in primary-key order.

    DuckDB files are not byte-stable across builds (block layout), so equality of content is
    what a determinism check compares.
    """
    h = hashlib.sha256()
    con = connect_duckdb_readonly(path)
    try:
        for table, key in TABLE_KEYS.items():
            h.update(repr(con.execute(f"DESCRIBE {table}").fetchall()).encode())
            for row in con.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall():
                h.update(repr(row).encode())
    finally:
        con.close()
    return h.hexdigest()


def _one(db, sql):
    return db.execute(sql).fetchone()[0]


def test_tables_and_columns(db):
    for table, columns in EXPECTED_COLUMNS.items():
        assert [r[0] for r in db.execute(f"DESCRIBE {table}").fetchall()] == columns
    assert _one(db, "SELECT data_type FROM duckdb_columns() WHERE column_name = 'revenue'").startswith("DECIMAL")


def test_row_counts_and_size(db, fresh_db):
    counts = {t: _one(db, f"SELECT COUNT(*) FROM {t}") for t in TABLE_KEYS}
    assert counts["service_areas"] == 18
    assert 80 <= counts["branches"] <= 100
    assert 50_000 <= counts["daily_revenue"] <= 60_000
    assert 70_000 <= counts["vehicle_traffic"] <= 80_000
    assert counts["complaints"] == 640
    assert 150 <= counts["staff"] <= 300
    assert os.path.getsize(fresh_db) < 5 * 1024 * 1024


def test_keys_are_unique(db):
    for table, key in TABLE_KEYS.items():
        total, distinct = db.execute(f"SELECT COUNT(*), COUNT(DISTINCT ({key})) FROM {table}").fetchone()
        assert total == distinct, table


def test_foreign_keys_are_declared_and_hold(db):
    fks = db.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'"
    ).fetchall()
    declared = {(t, tuple(cols)) for t, cols in fks}
    for expected in [
        ("branches", ("area_id",)),
        ("daily_revenue", ("branch_id",)),
        ("complaints", ("branch_id",)),
    ]:
        assert expected in declared
    # the denormalised columns of daily_revenue agree with the branch they belong to
    assert (
        _one(
            db,
            "SELECT COUNT(*) FROM daily_revenue r JOIN branches b USING (branch_id) "
            "WHERE r.area_id <> b.area_id OR r.business_type <> b.business_type",
        )
        == 0
    )


def test_dates_cover_two_years_and_respect_openings(db):
    assert db.execute("SELECT MIN(day), MAX(day) FROM daily_revenue").fetchone() == (
        database.START_DATE,
        database.END_DATE,
    )
    # no trading outside a branch's or its area's life
    outside = _one(
        db,
        "SELECT COUNT(*) FROM daily_revenue r JOIN branches b USING (branch_id) "
        "JOIN service_areas s ON s.area_id = b.area_id "
        "WHERE r.day < b.opened_on OR r.day > COALESCE(b.closed_on, r.day) "
        "OR r.day < s.opened_on OR r.day > COALESCE(s.closed_on, r.day)",
    )
    assert outside == 0
    assert _one(db, "SELECT COUNT(*) FROM staff WHERE left_on < hired_on") == 0
    assert _one(db, "SELECT COUNT(*) FROM complaints WHERE resolved_on < CAST(filed_at AS DATE)") == 0


def test_realistic_nulls(db):
    # each NULL means something the questions rely on
    checks = {
        "missing revenue reports": "SELECT COUNT(*) FROM daily_revenue WHERE revenue IS NULL",
        "closed areas": "SELECT COUNT(*) FROM service_areas WHERE closed_on IS NOT NULL",
        "open areas": "SELECT COUNT(*) FROM service_areas WHERE closed_on IS NULL",
        "unknown EV flag": "SELECT COUNT(*) FROM service_areas WHERE has_ev_charging IS NULL",
        "area-level complaints": "SELECT COUNT(*) FROM complaints WHERE branch_id IS NULL",
        "open complaints": "SELECT COUNT(*) FROM complaints WHERE resolved_on IS NULL",
        "undisclosed salaries": "SELECT COUNT(*) FROM staff WHERE monthly_salary IS NULL",
        "current staff": "SELECT COUNT(*) FROM staff WHERE left_on IS NULL",
    }
    for what, sql in checks.items():
        assert _one(db, sql) > 0, what


def test_text_values_whose_case_matters(db):
    types = {r[0] for r in db.execute("SELECT DISTINCT business_type FROM branches").fetchall()}
    assert types == set(BUSINESS_TYPES)
    brands = {r[0] for r in db.execute("SELECT DISTINCT brand FROM branches").fetchall()}
    assert {"EasyJoy", "easyjoy Mini", "iCharge"} <= brands
    assert _one(db, "SELECT COUNT(*) FROM branches WHERE brand = 'easyjoy'") == 0
    assert {r[0] for r in db.execute("SELECT DISTINCT vehicle_class FROM vehicle_traffic").fetchall()} == {
        "car",
        "truck",
        "bus",
    }


def test_two_builds_have_identical_content(fresh_db, tmp_path):
    second = build_database(tmp_path / "service_areas.duckdb")
    assert content_digest(second) == content_digest(fresh_db)


def test_cached_database_matches_a_fresh_build(fresh_db):
    # a stale cache means the generator changed without a GENERATOR_VERSION bump
    assert content_digest(builtin_database_path()) == content_digest(fresh_db)


def test_cache_builds_once_atomically(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))
    calls = []

    def fake_build(path):
        calls.append(path)
        Path(path).write_bytes(b"built")
        return Path(path)

    monkeypatch.setattr(database, "build_database", fake_build)
    path = builtin_database_path()
    assert path == tmp_path / "builtin" / f"v{GENERATOR_VERSION}" / "service_areas.duckdb"
    assert path.exists()
    assert builtin_database_path() == path
    assert len(calls) == 1
    assert calls[0] != path  # built under a temporary name, then renamed
    assert sorted(p.name for p in path.parent.iterdir()) == ["service_areas.duckdb"]


def test_failed_build_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))

    def broken_build(path):
        raise RuntimeError("disk full")

    monkeypatch.setattr(database, "build_database", broken_build)
    with pytest.raises(RuntimeError):
        builtin_database_path()
    assert list((tmp_path / "builtin" / f"v{GENERATOR_VERSION}").iterdir()) == []
