"""``--faults`` end to end: a run with 20 % injected faults finishes, loses nothing, retries only
transient faults with the policy's backoff, and fails only where a fault hit, with its class.

The same 18 built-in examples and three routers (``rules`` routes without the LM, ``llm`` and
``dspy`` call it to route), all with the scripted test-double LM, run three times: a full session
with faults (store and MLflow), then straight through the runner the same faults again (same
seed) and no faults (the baseline each result is compared with). LangGraph's retry sleep is
recorded instead of slept (its jitter fixed at 0.5 s) so the test can check every interval against
the policy without waiting for it.

Most database calls are the checks' probes of the stored data (the answerability check scans text
columns), and a ``slow_sql`` fault on one runs a real runaway query until the probe's timeout
interrupts it. That timeout is lowered to the tools' 0.15 s here (2 s by default: at 2 s the
fixture waited about 150 s for interrupts alone, at 0.3 s about 30 s for the ~50 interrupts of each
faulty run). The probes and queries that do finish take at most about 10 ms here (measured on a
loaded 2-core machine), so 0.15 s interrupts only the runaway queries. Each run starts with empty
check caches, so the three runs make the same database calls whatever ran before them in the process.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from langgraph.pregel import _retry
from rich.console import Console
from typer.testing import CliRunner

from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab._runs.session import SessionResult, SessionSpec, load_dataset, run_session, select
from routerlab.agents.db import database
from routerlab.agents.faults import LM_SITE, FaultCall, FaultSpec, lm_fault
from routerlab.agents.graph import PipelineConfig
from routerlab.agents.lm import resolve_lm
from routerlab.agents.tools import ToolSettings
from routerlab.cli import app
from routerlab.eval.scoring import ExampleResult
from routerlab.eval.store import ResultsStore
from routerlab.routers.support.ambiguity import clear_caches

FAULTS = FaultSpec(rate=0.2, seed=7)
PIPE = PipelineConfig(retry_attempts=3, retry_initial_s=0.05, retry_backoff=2.0, tools=ToolSettings(sql_timeout_s=0.15))
ROUTERS = [("rules", {}), ("llm", {}), ("dspy", {})]
LIMIT = 18
JITTER = 0.5

#: what a failure caused by each fault kind looks like in ``error_class`` + ``error``
SIGNATURES: dict[str, str] = {
    "lm_error": r"InjectedLMError",
    "timeout": r"InjectedLMTimeoutError",
    "rate_limit": r"InjectedRateLimitError",
    "empty": r"AdapterParseError|no_decision",
    "invalid_tool_call": r"invalid_tool_call|guard_violation .*parse_error|AdapterParseError",
    "slow_sql": r"query_timeout",
    "db_error": r"injected db_error fault",
}


class _RecordedSleep:
    """Stands in for the ``time`` module inside LangGraph's retry loop: sleeps are recorded."""

    def __init__(self, real, sleeps: list[float]) -> None:
        self._real = real
        self.sleeps = sleeps

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _FixedJitter:
    def __init__(self, real) -> None:
        self._real = real

    def uniform(self, a: float, b: float) -> float:
        return JITTER

    def __getattr__(self, name):
        return getattr(self._real, name)


def _config(faults: FaultSpec | None) -> RunConfig:
    return RunConfig(limit=LIMIT, lm="scripted:basic", faults=faults, pipeline=PIPE)


def _session(tmp: Path) -> tuple[SessionSpec, SessionResult]:
    spec = SessionSpec(
        routers=ROUTERS,
        config=_config(FAULTS),
        tracking_uri=f"sqlite:///{tmp}/mlflow.db",
        store_path=str(tmp / "results.duckdb"),
        traces=False,
    )
    return spec, run_session(spec, console=Console(quiet=True))


def _replay(faults: FaultSpec | None) -> tuple[dict[tuple[str, str], ExampleResult], SessionResult]:
    """The same runs through the runner alone (no store, no MLflow): results and fault calls."""
    config = _config(faults)
    examples = select(load_dataset(config), config)
    scorers = build_scorers(config)
    lm = resolve_lm(config.lm)
    results: dict[tuple[str, str], ExampleResult] = {}
    calls = SessionResult(session_id="replay", run_ids=[])
    for name, args in ROUTERS:
        rr = RouterRun(name, args, lm, config, scorers)
        run_router(rr, examples, on_result=lambda r: results.__setitem__((r.router, r.example_id), r))
        calls.fault_calls[f"replay.{name}"] = list(rr.injector.calls) if rr.injector else []
    return results, calls


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    import random
    import time

    tmp = tmp_path_factory.mktemp("faults")
    sleeps: list[float] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_retry, "time", _RecordedSleep(time, sleeps))
        mp.setattr(_retry, "random", _FixedJitter(random))
        mp.setattr(database, "PROBE_TIMEOUT_S", PIPE.tools.sql_timeout_s)
        clear_caches()
        faulty = _session(tmp)
        retry_sleeps = list(sleeps)
        clear_caches()
        again = _replay(FAULTS)
        clear_caches()
        clean, _ = _replay(None)
    return {"faulty": faulty, "again": again, "clean": clean, "sleeps": retry_sleeps}


def _results(spec: SessionSpec, result: SessionResult) -> dict[tuple[str, str], ExampleResult]:
    store = ResultsStore(spec.store_path)
    return {(r.router, r.example_id): r for rid in result.run_ids for r in store.results(rid)}


def _injected(result: SessionResult) -> list[FaultCall]:
    return [c for calls in result.fault_calls.values() for c in calls if c.kind is not None]


def _scope_router(result: SessionResult) -> dict[int, str]:
    return {id(c): rid.rsplit(".", 1)[1] for rid, calls in result.fault_calls.items() for c in calls}


def _expected_ids() -> list[str]:
    config = RunConfig(limit=LIMIT)
    return sorted(e.id for e in select(load_dataset(config), config))


def test_the_run_finishes_and_every_example_is_recorded_exactly_once(sessions):
    spec, result = sessions["faulty"]
    store = ResultsStore(spec.store_path)
    expected = _expected_ids()
    assert len(result.run_ids) == len(ROUTERS) and not result.interrupted
    for rid in result.run_ids:
        assert sorted(r.example_id for r in store.results(rid)) == expected
    dup = store.query("SELECT run_id, example_id FROM examples GROUP BY 1, 2 HAVING count(*) > 1")
    assert dup.empty
    assert set(store.runs()["status"]) == {"FINISHED"}


def test_about_a_fifth_of_the_calls_failed_with_every_kind(sessions):
    _, result = sessions["faulty"]
    calls = [c for cs in result.fault_calls.values() for c in cs]
    injected = _injected(result)
    assert 0.1 < len(injected) / len(calls) < 0.4
    assert set(Counter(c.kind for c in injected)) == set(FAULTS.kinds)


def test_failures_carry_the_class_of_the_fault_that_caused_them(sessions):
    faulty = _results(*sessions["faulty"])
    clean = sessions["clean"]
    result = sessions["faulty"][1]
    router_of = _scope_router(result)
    kinds: dict[tuple[str, str], set[str]] = {}
    for c in _injected(result):
        kinds.setdefault((router_of[id(c)], c.scope.split("#")[0]), set()).add(c.kind)
    assert faulty.keys() == clean.keys()
    changed = 0
    for key, r in faulty.items():
        base = clean[key]
        hit = kinds.get(key, set())
        same = (r.outcome, r.error_class, r.value("success")) == (base.outcome, base.error_class, base.value("success"))
        if not hit:
            assert same, f"{key}: no fault hit this example, yet it differs from the fault-free run"
            continue
        if r.outcome != "ok" or r.error_class:
            assert r.error_class, f"{key}: a failure without an error class"
        if not same and (r.outcome != "ok" or r.error_class):
            changed += 1
            text = f"{r.error_class} {r.error}"
            assert any(re.search(SIGNATURES[k], text) for k in hit), f"{key}: {text[:200]} not from {hit}"
    assert changed >= 5


def test_transient_faults_are_retried_with_backoff_and_others_are_not(sessions):
    """Every transient fault is followed by a retry after the policy's interval; no other fault is.

    A retry reruns the whole graph node, so the call after a transient fault is the node's first
    call again (often, not always, the faulted call itself). LangGraph sleeps
    ``initial * backoff ** (attempt - 1)`` plus jitter (fixed here) before attempt ``attempt + 1``.
    """
    spec, result = sessions["faulty"]
    faulty = _results(spec, result)
    transient = {k for k in lm_fault.names() if lm_fault.build(k).transient}
    assert transient == {"timeout", "rate_limit"}
    n_transient = exhausted = repeated = 0
    for rid, calls in result.fault_calls.items():
        router = rid.rsplit(".", 1)[1]
        for scope in dict.fromkeys(c.scope for c in calls):
            seq = [c for c in calls if c.scope == scope]
            lm_calls = {(c.key, c.occurrence) for c in seq if c.site == LM_SITE}
            for i, c in enumerate(seq):
                if c.kind is None:
                    continue
                if c.kind not in transient:
                    if c.site == LM_SITE:
                        assert (c.key, c.occurrence + 1) not in lm_calls, f"non-transient {c.kind} was retried"
                    continue
                n_transient += 1
                if i + 1 < len(seq):
                    # retried: the node ran again; the same call failing again is that task's next attempt
                    repeated += seq[i + 1].key == c.key and seq[i + 1].kind in transient
                    continue
                # no call after it: the policy's attempts were used up and the example crashed
                r = faulty[(router, scope.split("#")[0])]
                assert r.outcome == "crash" and r.error_class.startswith("crash:Injected"), (r.outcome, r.error)
                exhausted += 1
    sleeps = [round(s - JITTER, 9) for s in sessions["sleeps"]]
    allowed = {round(PIPE.retry_initial_s * PIPE.retry_backoff ** (a - 1), 9) for a in range(1, PIPE.retry_attempts)}
    assert n_transient >= 5 and len(sleeps) == n_transient - exhausted
    assert set(sleeps) <= allowed
    # each repeated failure of a retried call waited the longer interval of a later attempt
    assert sum(s > PIPE.retry_initial_s for s in sleeps) >= repeated


def test_same_seed_same_faults_on_the_same_calls(sessions):
    first, second = sessions["faulty"][1], sessions["again"][1]

    def key(r: SessionResult) -> Counter:
        router_of = _scope_router(r)
        return Counter((router_of[id(c)], c.scope, c.key, c.occurrence, c.kind) for c in _injected(r))

    assert key(first) == key(second)
    a, b = _results(*sessions["faulty"]), sessions["again"][0]

    def outcomes(results: dict[tuple[str, str], ExampleResult]) -> dict:
        return {k: (r.outcome, r.error_class, r.value("success")) for k, r in results.items()}

    assert outcomes(a) == outcomes(b)


def test_the_fault_spec_is_recorded_with_the_run(sessions):
    from mlflow import MlflowClient

    spec, result = sessions["faulty"]
    client = MlflowClient(spec.tracking_uri)
    exp = client.get_experiment_by_name("routerlab/builtin")
    runs = client.search_runs([exp.experiment_id])
    children = [r for r in runs if r.data.tags.get("routerlab.kind") == "router-run"]
    assert len(children) == len(ROUTERS) and {r.info.status for r in runs} == {"FINISHED"}
    for run in children:
        p = run.data.params
        assert (p["config.faults.rate"], p["config.faults.seed"]) == ("0.2", "7")
        assert json.loads(p["config.faults.kinds"]) == list(FAULTS.kinds)
    stored = ResultsStore(spec.store_path).run(result.run_ids[0])
    assert stored["config"]["faults"] == {"rate": 0.2, "seed": 7, "kinds": list(FAULTS.kinds)}


def test_cli_flag_runs_with_faults_and_reports_them(tmp_path):
    out = CliRunner().invoke(
        app,
        [
            "run",
            "--lm",
            "scripted:basic",
            "--router",
            "rules",
            "--limit",
            "6",
            "--faults",
            "rate=0.5,seed=3,kinds=empty+db_error",
            "--store",
            str(tmp_path / "s.duckdb"),
            "--no-mlflow",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "faults rate=0.5,seed=3,kinds=empty+db_error" in out.output
    assert re.search(r"\d+ faults injected \((db_error \d+, )?empty \d+", out.output)


def test_report(sessions):
    """The figures docs/reliability.md quotes (``pytest -rP`` shows them); nothing may be lost."""
    spec, result = sessions["faulty"]
    faulty, clean = _results(spec, result), sessions["clean"]
    calls = [c for cs in result.fault_calls.values() for c in cs]
    injected = _injected(result)
    router_of = _scope_router(result)
    hit = {(router_of[id(c)], c.scope.split("#")[0]) for c in injected}
    same = {
        k
        for k in hit
        if (faulty[k].outcome, faulty[k].error_class, faulty[k].value("success"))
        == (clean[k].outcome, clean[k].error_class, clean[k].value("success"))
    }
    lost = len(clean) - len(faulty)
    by_kind = Counter(c.kind for c in injected)
    retries = len(sessions["sleeps"])
    print(
        f"\nFAULTS calls={len(calls)} injected={len(injected)} by_kind={dict(sorted(by_kind.items()))} "
        f"retries={retries} examples={len(faulty)} hit={len(hit)} unchanged={len(same)} "
        f"surfaced={len(hit) - len(same)} lost={lost}"
    )
    assert lost == 0
