"""The determinism checker itself: it must catch ties that ORDER BY leaves open."""

from __future__ import annotations

import pytest

from routerlab.benchmarks.builtin.database import TABLE_KEYS
from routerlab.benchmarks.builtin.validate import is_ordered, normalize_rows, ordering_problems, query_error


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT name FROM service_areas ORDER BY name LIMIT 3",
        "SELECT name, parking_spaces FROM service_areas ORDER BY parking_spaces DESC, name",
        # ties on the key are harmless when the tied rows are identical
        "SELECT province FROM service_areas ORDER BY province",
        "SELECT province, COUNT(*) AS n FROM service_areas GROUP BY ALL ORDER BY n DESC, province LIMIT 2",
        "SELECT name FROM service_areas UNION SELECT brand FROM branches ORDER BY 1 LIMIT 4",
        "SELECT COUNT(*) FROM service_areas",
    ],
)
def test_determined_orders_pass(db, sql):
    assert ordering_problems(db, sql) == []


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT name FROM service_areas LIMIT 3", "LIMIT without ORDER BY"),
        # three Chongqing areas tie on the key and LIMIT 1 picks one of them at random
        ("SELECT name, province FROM service_areas ORDER BY province LIMIT 1", "tie"),
        ("SELECT name, province FROM service_areas ORDER BY province", "tie"),
        ("SELECT name, province AS p FROM service_areas ORDER BY p DESC LIMIT 2", "tie"),
        ("SELECT name, province FROM service_areas ORDER BY 2 LIMIT 1", "tie"),
        (
            "SELECT name, province FROM service_areas UNION ALL SELECT brand, business_type FROM branches "
            "ORDER BY 2 LIMIT 1",
            "tie",
        ),
        ("SELECT DISTINCT name, province FROM service_areas ORDER BY province LIMIT 1", "tie"),
        ("SELECT * FROM (SELECT name FROM service_areas ORDER BY name LIMIT 2) AS t", "LIMIT inside"),
    ],
)
def test_undetermined_orders_are_caught(db, sql, problem):
    problems = ordering_problems(db, sql)
    assert any(problem in p for p in problems), problems


def test_is_ordered():
    assert is_ordered("SELECT name FROM service_areas ORDER BY name")
    assert not is_ordered("SELECT name FROM (SELECT name FROM service_areas ORDER BY name) AS t")


def test_normalize_rows_ignores_float_noise_and_unordered_row_order():
    a = [("x", 0.1 + 0.2), ("y", 1.0)]
    b = [("y", 1.0), ("x", 0.3)]
    assert normalize_rows(a, ordered=False) == normalize_rows(b, ordered=False)
    assert normalize_rows(a, ordered=True) != normalize_rows(b, ordered=True)


def test_query_error_is_duckdbs_text(db):
    assert query_error(db, "SELECT 1") is None
    assert query_error(db, "SELECT nope FROM service_areas").startswith("Binder Error:")


def test_reversed_copy_has_the_same_rows_in_reverse(db, reversed_db):
    for table, key in TABLE_KEYS.items():
        original = db.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
        assert reversed_db.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall() == original
    # a scan without ORDER BY now starts from the other end
    first = reversed_db.execute("SELECT branch_id, day FROM daily_revenue LIMIT 1").fetchone()
    assert (
        first
        == db.execute("SELECT branch_id, day FROM daily_revenue ORDER BY branch_id DESC, day DESC LIMIT 1").fetchone()
    )
