"""The schema outline LM routers read: tables with columns, bounded, in the prompt prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.routers.schema_outline import schema_outline


def test_outline_names_every_table_with_its_columns(spiderlike_db: Path):
    db = open_database(str(spiderlike_db))
    text = schema_outline(db)
    for table in db.tables():
        assert f"{table.name}(" in text
        assert all(c.name in text for c in table.columns)


def test_outline_is_bounded_and_keeps_every_table_it_can(spiderlike_db: Path):
    db = open_database(str(spiderlike_db))
    short = schema_outline(db, max_chars=120)
    assert len(short) <= 120 and "..." in short
    assert sum(f"{t.name}(" in short for t in db.tables()) >= len(db.tables()) - 1


def test_an_unknown_view_is_a_clear_error():
    with pytest.raises(ConfigError, match="schema view"):
        routers.router.build("llm", schema="everything")


@pytest.mark.parametrize(("view", "shown"), [("columns", True), ("tables", False), ("none", False)])
def test_the_llm_router_shows_the_columns_so_it_can_abstain(spiderlike_db: Path, view: str, shown: bool):
    systems: list[str] = []

    def reply(request):
        if request.tools:
            systems.append(str(request.system or "") + repr(request.messages[:1]))
            return {"name": "abstain", "args": {"question": "What is the salary of each pet?", "missing": "a salary"}}
        return {"fields": {"reply": "unused"}}

    router = routers.router.build("llm", schema=view)
    trace = Pipeline(router, scripted_lm(reply)).run("What is the salary of each pet?", str(spiderlike_db))
    assert trace.tool_names == ["abstain"] and not trace.executed
    db = open_database(str(spiderlike_db))
    column = next(c.name for t in db.tables() for c in t.columns if c.name == "pet_age")
    assert (column in systems[0]) is shown
    assert ("Pets" in systems[0]) is (view != "none")
