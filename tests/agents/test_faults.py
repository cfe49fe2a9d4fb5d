"""Fault injection parts: the --faults spec, deterministic draws, each kind at its boundary."""

from __future__ import annotations

import itertools
import random
import time

import dspy
import pytest
from dspy import lm15 as L

from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, QueryTimeout, SQLExecutionError
from routerlab.agents.faults import (
    DB_SITE,
    LM_SITE,
    FaultInjector,
    FaultSpec,
    FaultyDatabase,
    InjectedDatabaseError,
    InjectedLMError,
    InjectedLMTimeoutError,
    InjectedRateLimitError,
    db_fault,
    fault_kinds,
    fault_scope,
    faulty_lm,
    lm_fault,
    parse_fault_spec,
)
from routerlab.agents.graph import is_transient
from routerlab.agents.lm import chat, resolve_lm
from routerlab.agents.lm.adapter import lm_context
from routerlab.agents.tools.programs import SQLPrograms

ALL_KINDS = ("empty", "invalid_tool_call", "lm_error", "rate_limit", "timeout", "db_error", "slow_sql")
CHAT_TOOL = {
    "type": "function",
    "function": {
        "name": "chat",
        "description": "small talk",
        "parameters": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    },
}


def test_every_kind_named_in_the_issue_is_registered():
    assert tuple(fault_kinds()) == ALL_KINDS
    assert set(lm_fault.names()) | set(db_fault.names()) == set(ALL_KINDS)


def test_parse_full_and_default_specs():
    spec = parse_fault_spec("rate=0.2,seed=7,kinds=lm_error+timeout+slow_sql")
    assert spec == FaultSpec(rate=0.2, seed=7, kinds=("lm_error", "timeout", "slow_sql"))
    assert parse_fault_spec(spec.to_text()) == spec
    assert parse_fault_spec(" rate = 1 ").kinds == ALL_KINDS and parse_fault_spec("rate=1").seed == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rate=1.5", "between 0 and 1"),
        ("rate=-0.1", "between 0 and 1"),
        ("rate=lots", "between 0 and 1"),
        ("seed=3", "rate="),
        ("rate=0.2,seed=x", "an integer"),
        ("rate=0.2,kinds=lm_error+meteor", "distinct kinds among"),
        ("rate=0.2,kinds=timeout+timeout", "distinct kinds among"),
        ("rate=0.2,kinds=", "comma-separated"),
        ("rate=0.2,color=red", "comma-separated"),
        ("rate=0.2,rate=0.3", "one rate="),
        ("0.2", "comma-separated"),
    ],
)
def test_bad_specs_name_the_option_expected_and_found(text, expected):
    with pytest.raises(ConfigError) as info:
        parse_fault_spec(text)
    err = info.value
    assert err.what.startswith("bad --faults value") and err.details["option"] == "--faults"
    assert expected in err.expected and err.found and "--faults rate=0.2,seed=7" in err.fix


def test_spec_checks_its_contract_when_built():
    with pytest.raises(ConfigError):
        FaultSpec(rate=True)
    with pytest.raises(ConfigError):
        FaultSpec(rate=0.1, seed=1.5)
    assert FaultSpec(rate=0.1, kinds=["empty"]).kinds == ("empty",)


def _draws(spec: FaultSpec, order: list[tuple[str, str]]) -> dict[tuple[str, str, int], str | None]:
    inj = FaultInjector(spec)
    for scope, key in order:
        with fault_scope(scope):
            inj.decide(LM_SITE, key)
    return {(c.scope, c.key, c.occurrence): c.kind for c in inj.calls}


def test_same_seed_same_faults_whatever_the_order():
    calls = [(f"ex{i % 7}#0", f"k{i % 5}") for i in range(400)]
    spec = FaultSpec(rate=0.3, seed=7)
    first = _draws(spec, calls)
    shuffled = random.Random(0).sample(calls, len(calls))
    # a draw depends on (seed, scope, key, occurrence), never on what other calls came first
    assert first == _draws(spec, shuffled) == _draws(spec, calls)
    assert first != _draws(FaultSpec(rate=0.3, seed=8), calls)
    rate = sum(k is not None for k in first.values()) / len(first)
    assert 0.2 < rate < 0.4
    # only the LM kinds are drawn for LM calls
    assert {k for k in first.values() if k} <= set(lm_fault.names())


def test_rate_zero_and_one():
    assert all(k is None for k in _draws(FaultSpec(rate=0.0, seed=1), [("a", "b")] * 50).values())
    assert all(k for k in _draws(FaultSpec(rate=1.0, seed=1), [("a", "b")] * 50).values())


def _lm_with(kind: str):
    inj = FaultInjector(FaultSpec(rate=1.0, seed=3, kinds=(kind,)))
    return faulty_lm(resolve_lm("scripted:basic"), inj), inj


def _generate(lm):
    with lm_context(lm):
        return SQLPrograms().generate(db_schema="CREATE TABLE areas (id INT)", dialect="duckdb", hint="", question="n?")


@pytest.mark.parametrize(
    ("kind", "cls", "transient"),
    [
        ("lm_error", InjectedLMError, False),
        ("timeout", InjectedLMTimeoutError, True),
        ("rate_limit", InjectedRateLimitError, True),
    ],
)
def test_lm_exceptions_reach_the_caller_with_their_class(kind, cls, transient):
    lm, inj = _lm_with(kind)
    with pytest.raises(cls) as info:
        _generate(lm)
    # DSPy passes its public error classes through unchanged; the pipeline's retry_on agrees
    assert is_transient(info.value) is transient is inj.transient(kind)
    assert f"injected {kind} fault" in str(info.value)
    with pytest.raises(cls):
        chat(lm, [{"role": "user", "content": "hi"}], tools=[CHAT_TOOL])


def test_retry_on_covers_only_transient_faults():
    from dspy.utils.exceptions import LMRateLimitError

    for kind in ALL_KINDS:
        fault = (lm_fault if kind in lm_fault else db_fault).build(kind)
        assert fault.transient is (kind in ("timeout", "rate_limit"))
    assert is_transient(LMRateLimitError("x")) and not is_transient(InjectedDatabaseError("x"))


def test_empty_reply_fails_to_parse_and_gives_no_tool_call():
    lm, _ = _lm_with("empty")
    with pytest.raises(Exception, match="empty") as info:
        _generate(lm)
    assert type(info.value).__name__ == "AdapterParseError"
    result = chat(lm, [{"role": "user", "content": "hi"}], tools=[CHAT_TOOL])
    assert result.text == "" and not result.tool_calls and not result.invalid_tool_calls


def test_invalid_tool_call_is_reported_not_dropped():
    lm, _ = _lm_with("invalid_tool_call")
    result = chat(lm, [{"role": "user", "content": "hi"}], tools=[CHAT_TOOL])
    assert not result.tool_calls and len(result.invalid_tool_calls) == 1
    assert "injected invalid_tool_call fault" in result.invalid_tool_calls[0]["error"]
    # without tools the half-written call is the text the adapter sees
    assert _generate(lm).sql.startswith('{"name": "generate_sql"')


def test_untouched_calls_reach_the_wrapped_lm_and_faulty_replies_are_never_cached():
    base = resolve_lm("scripted:basic")
    inj = FaultInjector(FaultSpec(rate=0.0, seed=1))
    lm = faulty_lm(base, inj)
    assert _generate(lm).sql == "SELECT count(*) FROM areas"
    assert len(base.routerlab_engine.requests) == 1 and len(inj.calls) == 1
    assert lm.cache is False and lm.num_retries == 0 and lm.model == base.model
    assert isinstance(lm, dspy.LM) and lm.engine.inner.callbacks == []


def test_lm_call_key_is_the_request_content():
    lm, inj = _lm_with("timeout")
    for _ in range(2):
        with pytest.raises(InjectedLMTimeoutError):
            _generate(lm)
    a, b = inj.calls
    assert a.key == b.key and (a.occurrence, b.occurrence) == (0, 1) and b.at >= a.at


def test_slow_sql_is_a_real_query_the_real_timeout_interrupts(sales_db):
    inj = FaultInjector(FaultSpec(rate=1.0, seed=1, kinds=("slow_sql",)))
    db = FaultyDatabase(open_database(sales_db), inj)
    t0 = time.perf_counter()
    with pytest.raises(QueryTimeout):
        db.execute("SELECT 1", timeout_s=0.3)
    assert 0.3 <= time.perf_counter() - t0 < 20
    assert [c.site for c in inj.calls] == [DB_SITE]
    # introspection is the real database's
    assert {t.name for t in db.tables()} == {"areas", "revenue"} and db.dialect == "duckdb"


def test_slow_sql_on_sqlite(tmp_path):
    import sqlite3

    path = tmp_path / "s.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INT)")
    con.commit()
    con.close()
    inj = FaultInjector(FaultSpec(rate=1.0, seed=1, kinds=("slow_sql",)))
    with pytest.raises(QueryTimeout):
        FaultyDatabase(open_database(path), inj).execute("SELECT 1", timeout_s=0.3)


def test_db_error_is_an_engine_error_of_its_own_class(sales_db):
    inj = FaultInjector(FaultSpec(rate=1.0, seed=1, kinds=("db_error",)))
    with pytest.raises(InjectedDatabaseError) as info:
        FaultyDatabase(open_database(sales_db), inj).execute("SELECT 1")
    assert isinstance(info.value, SQLExecutionError) and info.value.error_class == "sql_error"
    assert "injected db_error fault" in str(info.value)


def test_db_calls_draw_only_db_kinds(sales_db):
    inj = FaultInjector(FaultSpec(rate=0.0, seed=1, kinds=("lm_error", "db_error")))
    assert FaultyDatabase(open_database(sales_db), inj).execute("SELECT 42").rows == [[42]]
    only_lm = FaultInjector(FaultSpec(rate=1.0, seed=1, kinds=("lm_error",)))
    assert FaultyDatabase(open_database(sales_db), only_lm).execute("SELECT 42").rows == [[42]]


def test_response_shapes_are_valid_lm15():
    req = L.Request(model="m", messages=(L.Message(role="user", parts=(L.TextPart(text="hi"),)),))
    out = lm_fault.build("empty").inject(req, FaultInjector(FaultSpec(rate=1.0)).decide(LM_SITE, "k"))
    assert isinstance(out, L.Response) and out.model == "m"


def test_provider_server_and_transport_errors_are_transient():
    from dspy.utils.exceptions import LMServerError, LMTransportError

    assert is_transient(LMServerError("503 service unavailable")) and is_transient(LMTransportError("reset"))


def test_slow_sql_on_a_checks_probe_waits_only_the_probe_timeout(sales_db, monkeypatch):
    """Every probe of the checks (dates, text values, stored-value scans) is bounded by one setting."""
    from routerlab.agents.answerability import schema_lacks
    from routerlab.agents.db import database
    from routerlab.routers.support.ambiguity import clear_caches, latest_date, text_values

    monkeypatch.setattr(database, "PROBE_TIMEOUT_S", 0.2)
    # the term is absent without faults too; this first read also loads the lexicons, so the
    # waits measured below are the probes' own
    assert schema_lacks(open_database(sales_db), "unicorn")
    clear_caches()
    inj = FaultInjector(FaultSpec(rate=1.0, seed=1, kinds=("slow_sql",)))
    db = FaultyDatabase(open_database(sales_db), inj)
    try:
        # each probe runs the runaway query and is interrupted, so nothing is found
        assert latest_date(db) is None
        assert text_values(db) == ()
        assert schema_lacks(db, "unicorn")
        end = time.monotonic()
    finally:
        clear_caches()  # the failed probes' empty findings must not reach later tests
    ats = [c.at for c in inj.calls] + [end]
    waits = [b - a for a, b in itertools.pairwise(ats)]
    # one date column, three text columns, and the scan of the three text columns for "unicorn"
    assert len(inj.calls) == 7 and {c.kind for c in inj.calls} == {"slow_sql"}
    # the lowered timeout, not the 2 s default (the upper bound leaves room for a loaded machine)
    assert all(0.2 <= w < 1.5 for w in waits), waits


def test_the_checks_cache_their_reads_until_cleared(sales_db):
    from routerlab.routers.support.ambiguity import clear_caches, text_values

    clear_caches()
    inj = FaultInjector(FaultSpec(rate=0.0, seed=1))
    db = FaultyDatabase(open_database(sales_db), inj)
    first = text_values(db)
    read = len(inj.calls)
    assert read == 3 and ("areas", "region", ("Shaanxi",)) in first
    assert text_values(db) == first and len(inj.calls) == read  # cached: no query
    clear_caches()
    assert text_values(db) == first and len(inj.calls) == 2 * read  # read again
