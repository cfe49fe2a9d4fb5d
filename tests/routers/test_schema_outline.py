"""The schema outline LM routers read: tables with columns, bounded, in the prompt prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.graph import Pipeline
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.messages import request_to_chat
from routerlab.routers.support.schema_outline import schema_outline


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


def _seen_requests(router_name: str, question: str, db: Path, **kwargs) -> tuple[list[str], list[str]]:
    """(system prompts, per-request user messages) the LM was shown in one turn of ``router_name``."""
    systems: list[str] = []
    users: list[str] = []

    def reply(request):
        if request.tools:
            chat_messages = request_to_chat(request)
            systems.extend(m["content"] for m in chat_messages if m["role"] == "system")
            users.extend(m["content"] for m in chat_messages if m["role"] == "user")
            return {"name": "abstain", "args": {"question": question}}
        return {"fields": {"reply": "unused"}}

    router = routers.router.build(router_name, **kwargs)
    Pipeline(router, scripted_lm(reply)).run(question, str(db))
    return systems, users


@pytest.mark.parametrize("name", ["llm", "hybrid"])
def test_the_schema_check_finding_is_per_request_evidence_only_when_asked(spiderlike_db: Path, name: str):
    """With ``schema_check`` the request carries the check's finding; the cached prefix never does."""
    from routerlab.agents.registry import component_spec

    # hybrid asks its LM only below its threshold: 1.0 makes it ask on every request here
    extra = {"threshold": 1.0} if name == "hybrid" else {}
    gap = "What is the average salary of the pet owners?"
    systems, users = _seen_requests(name, gap, spiderlike_db, schema_check=True, **extra)
    assert users and "Schema check: no column measures" in users[0] and "salary" in users[0]
    assert all("Schema check" not in s for s in systems)
    # off (the recorded default) or nothing missing: the request is shown as it was
    _, plain = _seen_requests(name, gap, spiderlike_db, **extra)
    assert plain and all("Schema check" not in u for u in plain)
    _, held = _seen_requests(name, "How many pets are there?", spiderlike_db, schema_check=True, **extra)
    assert held and all("Schema check" not in u for u in held)
    assert component_spec(routers.router.build(name, schema_check=True))["args"]["schema_check"] is True


def test_schema_finding_reads_data_requests_only(spiderlike_db: Path):
    from routerlab.agents.routing import RouterEnv
    from routerlab.agents.state import initial_state
    from routerlab.routers.support.schema_outline import schema_finding

    env = RouterEnv(tools=(), lm=None, open_db=open_database)
    gap = schema_finding(env, initial_state("What is the average salary of the pet owners?", str(spiderlike_db)))
    assert gap.startswith("Schema check: ") and "salary" in gap
    # small talk and a quoted query name things no table holds: that is not a gap
    assert schema_finding(env, initial_state("Tell me a joke about databases.", str(spiderlike_db))) == ""
    explain = "What does this query compute? SELECT salary FROM owners"
    assert schema_finding(env, initial_state(explain, str(spiderlike_db))) == ""
    assert schema_finding(None, initial_state("What is the average salary?", str(spiderlike_db))) == ""
