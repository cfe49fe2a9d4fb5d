"""Deadlines bind model calls: a server that accepts and never answers cannot outlive them.

Every test talks to a real loopback TCP server that accepts connections and never sends a byte
(the fault the issue found: ``--deadline-s 20`` took 144 s). The embedded-model test loads the
real 0.5B model and is marked ``model``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from routerlab._runs.runner import DEADLINE_ERROR_CLASS, RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.graph import PipelineConfig
from routerlab.agents.lm.deadline import (
    CallDeadlineExceeded,
    call_budget,
    deadline_cut,
    deadline_scope,
)
from routerlab.agents.lm.resolve import resolve_lm
from routerlab.eval.store import ResultsStore


@pytest.fixture
def silent_server() -> Iterator[str]:
    """An OpenAI-compatible base URL whose server accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)  # kept open, never read from or written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        server.close()


def test_the_budget_is_the_earliest_deadline_and_names_it() -> None:
    now = time.monotonic()
    with deadline_scope(now + 50, "run"):
        with deadline_scope(now + 100, "turn", cap_s=30):
            budget = call_budget()
            assert budget.bound == "call" and 29 < budget.seconds <= 30
        with deadline_scope(now + 10, "turn", cap_s=30):
            budget = call_budget()
            assert budget.bound == "turn" and 9 < budget.seconds <= 10
    with deadline_scope(now + 5, "run"), deadline_scope(now + 100, "turn", cap_s=30):
        assert call_budget().bound == "run"
    # no time left: the call must not start, and the scope remembers the cut
    with deadline_scope(now - 1, "turn", cap_s=30) as scope:
        with pytest.raises(CallDeadlineExceeded) as caught:
            call_budget()
        assert caught.value.error_class == "timeout" and deadline_cut() is caught.value
        assert scope is not None and scope.cut is caught.value
    with deadline_scope(now - 1, "run"), pytest.raises(CallDeadlineExceeded) as caught:
        call_budget()
    assert caught.value.error_class == DEADLINE_ERROR_CLASS


def test_a_provider_call_to_a_silent_server_stops_at_its_deadline(silent_server: str) -> None:
    lm = resolve_lm("openai/silent-model", api_base=silent_server, cache=False)
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + 1.5, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded) as caught:
        lm("Which areas are in Shaanxi?")
    elapsed = time.monotonic() - t0
    assert 1.3 < elapsed < 4.0, elapsed
    assert caught.value.bound == "turn" and "openai/silent-model" in str(caught.value)
    # the per-call cap binds when the turn has more time than that
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + 60, "turn", cap_s=1.0), pytest.raises(CallDeadlineExceeded) as caught:
        lm("Which areas are in Shaanxi?")
    assert caught.value.bound == "call" and time.monotonic() - t0 < 3.5


def _spec(tmp_path: Path, api_base: str, *, pipeline: PipelineConfig, deadline_s: float | None) -> SessionSpec:
    return SessionSpec(
        routers=[("llm", {})],
        config=RunConfig(
            dataset="builtin",
            split="dev",
            limit=2,
            lm="openai/silent-model",
            lm_api_base=api_base,
            pipeline=pipeline,
            deadline_s=deadline_s,
        ),
        tracking_uri=None,
        store_path=str(tmp_path / "results.duckdb"),
    )


def test_a_turn_whose_call_hangs_ends_as_a_timeout_at_its_turn_deadline(tmp_path: Path, silent_server: str) -> None:
    from rich.console import Console

    spec = _spec(tmp_path, silent_server, pipeline=PipelineConfig(timeout_s=1.5, retry_attempts=1), deadline_s=None)
    t0 = time.monotonic()
    result = run_session(spec, console=Console(quiet=True))
    elapsed = time.monotonic() - t0
    stored = ResultsStore(spec.store_path).results(result.run_ids[0])
    assert len(stored) == 2
    for r in stored:
        # a deadline failure of the turn (not a crash): scored, outcome timeout, fast
        assert r.outcome == "timeout" and r.error_class == "timeout", (r.outcome, r.error)
        assert "turn's timeout_s passed" in (r.error or "")
        assert r.latency_s < 4.0, r.latency_s
    assert elapsed < 30, elapsed


def test_cli_deadline_holds_against_a_silent_server(tmp_path: Path, silent_server: str) -> None:
    store = tmp_path / "r.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "routerlab.cli",
        "run",
        "--lm",
        "openai/silent-model",
        "--lm-api-base",
        silent_server,
        "--router",
        "llm",
        "--limit",
        "3",
        "--deadline-s",
        "4",
        "--no-mlflow",
        "--store",
        str(store),
    ]
    env = {**os.environ, "COLUMNS": "400"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the session id line: the deadline's clock starts about here
    started = time.monotonic()
    rest = proc.stdout.read()
    code = proc.wait(timeout=300)
    after_start = time.monotonic() - started
    text = " ".join((first + rest).split())
    assert code == 124, text
    assert "deadline reached" in text and "routerlab run --resume" in text and "--store" in text
    con = duckdb.connect(str(store), read_only=True)
    rows = con.execute("SELECT outcome, error_class, error, latency_s, recorded_at FROM examples").fetchall()
    (run_started,) = con.execute("SELECT started_at FROM runs").fetchone()
    con.close()
    assert len(rows) == 3 and {r[0] for r in rows} == {"not_run"} and {r[1] for r in rows} == {"run_deadline"}
    cut = [r for r in rows if "stopped after" in r[2]]
    assert len(cut) == 1 and "the run's --deadline-s passed" in cut[0][2] and cut[0][3] < 5.5
    # the run's work ends within a few seconds of its 4 s deadline (it took 144 s with
    # --deadline-s 20 before model calls were bound); the process then prints its table and
    # exits, which on a loaded 2-core machine takes its own (bounded) while
    last = max(r[4] for r in rows)
    assert (last - run_started).total_seconds() < 4 + 3, (run_started, last)
    assert after_start < 4 + 60, (after_start, text)


@pytest.mark.model
def test_the_embedded_model_stops_generating_at_its_deadline() -> None:
    lm = resolve_lm("local:0.5b", cache=False, max_tokens=2000)
    lm("Say hi.")  # load the model outside the clock
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + 3.0, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded) as caught:
        lm("Write 300 different SQL queries over a table t(a, b, c), one per line.")
    elapsed = time.monotonic() - t0
    assert caught.value.bound == "turn" and elapsed < 6.0, elapsed
    # the aborted context is reset: the next call answers normally
    assert lm("Reply with the word ok.")
