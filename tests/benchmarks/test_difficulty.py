"""Spider hardness, case by case.

Each expected level is worked out by hand from Spider's rules (see benchmarks/difficulty.py):
comp1 = WHERE, GROUP BY, ORDER BY, LIMIT present + extra joined tables + ORs + LIKEs;
comp2 = nested queries + set operations; others = [>1 aggregation] + [>1 select column]
+ [>1 WHERE condition] + [>1 GROUP BY column].
easy:   comp1 <= 1, others == 0, comp2 == 0
medium: (others <= 2, comp1 <= 1, comp2 == 0) or (comp1 <= 2, others < 2, comp2 == 0)
hard:   (others > 2, comp1 <= 2, comp2 == 0) or (2 < comp1 <= 3, others <= 2, comp2 == 0)
        or (comp1 <= 1, others == 0, comp2 <= 1)
extra:  everything else
"""

from __future__ import annotations

import pytest

from routerlab.benchmarks.difficulty import HardnessCounts, hardness_counts, sql_hardness

CASES = [
    # (comp1, comp2, others) = (0, 0, 0): nothing but one aggregate -> easy
    ("SELECT COUNT(*) FROM service_areas", (0, 0, 0), "easy"),
    # one WHERE -> comp1 1 -> easy
    ("SELECT name FROM service_areas WHERE province = 'Gansu'", (1, 0, 0), "easy"),
    # two select columns -> others 1; comp1 1 -> medium
    ("SELECT name, highway FROM service_areas WHERE province = 'Gansu'", (1, 0, 1), "medium"),
    # GROUP BY (comp1 1), two columns (others 1); one aggregation only -> medium
    ("SELECT province, COUNT(*) FROM service_areas GROUP BY province", (1, 0, 1), "medium"),
    # GROUP BY + ORDER BY (comp1 2); COUNT in SELECT and in ORDER BY (2 aggregations -> 1) and two
    # columns (1): others 2. Not medium (others not < 2), not hard (comp1 not > 2) -> extra,
    # one of the well-known quirks of Spider's thresholds
    (
        "SELECT province, COUNT(*) FROM service_areas GROUP BY province ORDER BY COUNT(*) DESC",
        (2, 0, 2),
        "extra",
    ),
    # the same with an alias in ORDER BY: the alias stands for the aggregation -> same counts
    (
        "SELECT province, COUNT(*) AS n FROM service_areas GROUP BY province ORDER BY n DESC",
        (2, 0, 2),
        "extra",
    ),
    # adding LIMIT makes comp1 3 -> (2 < comp1 <= 3, others <= 2) -> hard
    (
        "SELECT province, COUNT(*) AS n FROM service_areas GROUP BY province ORDER BY n DESC LIMIT 1",
        (3, 0, 2),
        "hard",
    ),
    # WHERE + OR + LIKE -> comp1 3; two WHERE conditions -> others 1 -> hard
    ("SELECT name FROM service_areas WHERE name LIKE 'Q%' OR province = 'Hubei'", (3, 0, 1), "hard"),
    # one nested query in WHERE: comp1 1, comp2 1, others 0 -> hard
    ("SELECT name FROM service_areas WHERE area_id IN (SELECT area_id FROM complaints)", (1, 1, 0), "hard"),
    # a set operation counts as comp2 -> hard
    (
        "SELECT name FROM service_areas EXCEPT "
        "SELECT s.name FROM service_areas s JOIN complaints c ON c.area_id = s.area_id",
        (0, 1, 0),
        "hard",
    ),
    # WHERE + GROUP BY (comp1 2); 2 aggregations, 3 columns, 2 conditions, 2 group columns: others 4
    # -> (others > 2, comp1 <= 2) -> hard
    ("SELECT a, MAX(b), MIN(c) FROM t WHERE x = 1 AND y = 2 GROUP BY a, d", (2, 0, 4), "hard"),
    # WHERE, GROUP BY, ORDER BY, LIMIT and one join: comp1 5 -> extra
    (
        "SELECT s.name, SUM(r.revenue) FROM daily_revenue r JOIN service_areas s ON s.area_id = r.area_id "
        "WHERE r.day >= DATE '2024-01-01' GROUP BY s.name ORDER BY SUM(r.revenue) DESC LIMIT 3",
        (5, 0, 2),
        "extra",
    ),
    # two nested queries -> comp2 2 -> extra
    (
        "SELECT name FROM service_areas WHERE area_id IN (SELECT area_id FROM complaints) "
        "AND area_id IN (SELECT area_id FROM staff)",
        (1, 2, 1),
        "extra",
    ),
    # a CTE counts as a nested query -> comp2 1, else plain -> hard
    ("WITH t AS (SELECT area_id FROM branches) SELECT COUNT(*) FROM t", (0, 1, 0), "hard"),
]


@pytest.mark.parametrize(("sql", "counts", "level"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_case_by_case(sql, counts, level):
    assert hardness_counts(sql) == HardnessCounts(*counts)
    assert sql_hardness(sql) == level


@pytest.mark.parametrize("sql", ["DELETE FROM branches", "SELECT FROM WHERE (", ""])
def test_not_a_query(sql):
    with pytest.raises(ValueError):
        sql_hardness(sql)
