"""Session ids carry 64 random bits, and a new session whose id is taken is refused, never merged.

The probe (issue 50, item 5): ids had 16 random bits per second, and two sessions drawing the same
id were merged silently (3 of 7 rows overwritten, the first session's metadata kept).
"""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from routerlab._runs import session_plan
from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, new_session_id, run_session
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.lm.scripts import answer_field
from routerlab.eval.store import ResultsStore


def _lm():
    return scripted_lm(lambda request: answer_field(request, "SELECT count(*) FROM service_areas"))


def test_ids_have_64_random_bits_and_differ() -> None:
    ids = {new_session_id() for _ in range(2000)}
    assert len(ids) == 2000
    for sid in ids:
        assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{16}", sid), sid


def test_a_colliding_id_is_refused_and_the_first_session_is_untouched(tmp_path, monkeypatch) -> None:
    store_path = str(tmp_path / "results.duckdb")
    monkeypatch.setattr(session_plan, "new_session_id", lambda: "20260101-000000-00000000deadbeef")
    first = SessionSpec(
        routers=[("rules", {})],
        config=RunConfig(limit=4, split="dev"),
        tracking_uri=None,
        store_path=store_path,
    )
    done = run_session(first, console=Console(quiet=True), lm=_lm())
    store = ResultsStore(store_path)
    before = store.query("SELECT * FROM examples ORDER BY example_id").to_json()
    run_before = store.run(done.run_ids[0])
    # a second session with other routers and settings draws the same id
    second = SessionSpec(
        routers=[("oracle", {}), ("rules", {})],
        config=RunConfig(limit=7, split="dev"),
        tracking_uri=None,
        store_path=store_path,
    )
    with pytest.raises(ConfigError) as caught:
        run_session(second, console=Console(quiet=True), lm=_lm())
    message = str(caught.value)
    assert "already exists" in message and "20260101-000000-00000000deadbeef.rules" in message
    assert "--resume" in message
    after = ResultsStore(store_path)
    # refused whole: no row changed, no run of the second session (not even its first router's)
    assert after.query("SELECT * FROM examples ORDER BY example_id").to_json() == before
    assert after.runs()["run_id"].tolist() == done.run_ids
    assert after.run(done.run_ids[0]) == run_before


def test_create_run_refuses_an_existing_run_for_a_new_session(tmp_path) -> None:
    from routerlab.benchmarks.builtin import load_builtin

    store = ResultsStore(tmp_path / "r.duckdb")
    ds = load_builtin()
    store.create_run("s.rules", router="rules", lm="x", dataset=ds, split="dev", new=True)
    # a resume reopens it
    store.create_run("s.rules", router="rules", lm="x", dataset=ds, split="dev")
    with pytest.raises(ConfigError):
        store.create_run("s.rules", router="rules", lm="x", dataset=ds, split="dev", new=True)


def test_a_colliding_id_is_refused_whatever_the_routers(tmp_path, monkeypatch) -> None:
    # issue 62: the same id with another router was merged silently (exit 0, one session in compare)
    store_path = str(tmp_path / "results.duckdb")
    monkeypatch.setattr(session_plan, "new_session_id", lambda: "20260101-000000-00000000feedf00d")
    first = SessionSpec(
        routers=[("rules", {})], config=RunConfig(limit=3, split="dev"), tracking_uri=None, store_path=store_path
    )
    done = run_session(first, console=Console(quiet=True), lm=_lm())
    before = ResultsStore(store_path).query("SELECT * FROM examples ORDER BY example_id").to_json()
    second = SessionSpec(
        routers=[("oracle", {})], config=RunConfig(limit=3, split="dev"), tracking_uri=None, store_path=store_path
    )
    with pytest.raises(ConfigError) as caught:
        run_session(second, console=Console(quiet=True), lm=_lm())
    message = str(caught.value)
    assert "already exists" in message and "20260101-000000-00000000feedf00d.rules" in message
    after = ResultsStore(store_path)
    assert after.runs()["run_id"].tolist() == done.run_ids  # no oracle run of the same id
    assert after.query("SELECT * FROM examples ORDER BY example_id").to_json() == before
