"""Schema views on real Spider databases: each rendering pinned, foreign keys on and off."""

from __future__ import annotations

import pytest

from routerlab.agents.db import open_database
from routerlab.agents.tools.views import render_schema, schema_view


@pytest.fixture(scope="module")
def concert(spider_dev_a):
    return open_database(next(e for e in spider_dev_a if e.db_id == "concert_singer").db_path)


def test_every_view_of_concert_singer_is_pinned(concert, golden):
    views = {name: render_schema(name, concert, None) for name in schema_view.names()}
    assert sorted(views) == ["compact", "create", "create_rows", "create_values"]
    golden("schema_views_concert_singer", views)


def test_create_values_is_the_schema_text_the_sub_agents_saw_before(concert):
    assert render_schema("create_values", concert, None) == concert.schema_text()
    assert render_schema("create", concert, None) == concert.schema_text(example_values=0)


def test_foreign_keys_can_be_left_out_of_every_view(concert):
    for name in schema_view.names():
        with_keys = render_schema(name, concert, None, foreign_keys=True)
        without = render_schema(name, concert, None, foreign_keys=False)
        assert "REFERENCES" in with_keys or "-- concert.Stadium_ID = stadium.Stadium_ID" in with_keys, name
        assert "REFERENCES" not in without and " = stadium.Stadium_ID" not in without, name


def test_create_rows_shows_the_first_three_rows_of_each_table(concert):
    text = render_schema("create_rows", concert, ["singer"])
    rows = concert.execute("SELECT * FROM singer LIMIT 3").rows
    assert "SELECT * FROM singer LIMIT 3;" in text
    for row in rows:
        assert "\t".join(str(v) for v in row) in text
    assert "CREATE TABLE concert" not in text


def test_every_view_shows_every_table_of_the_real_databases(spider_dev_a):
    """Every table of the 8 real databases appears in every view."""
    for e in {e.db_id: e for e in spider_dev_a}.values():
        db = open_database(e.db_path)
        for name in schema_view.names():
            text = render_schema(name, db, None)
            for t in db.tables():
                assert t.name in text, (e.db_id, name, t.name)
