"""One deadline per model call, the client's own retries included, on every LM path.

The probe (issue 50, item 2): the one-pass scoring call passed ``timeout=budget`` but the OpenAI
client retried twice, so one call took three budgets: ``dspy`` with ``--deadline-s 20`` exited
after 62 s (the silent server got 3 requests), ``hybrid`` (threshold 1.0) with ``--deadline-s 10``
spent 25.7 s on one example. Every test here talks to a real loopback server that accepts
connections, counts them, and never answers.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console

from routerlab._runs.runner import RunConfig
from routerlab._runs.session import SessionSpec, run_session
from routerlab.agents.lm.deadline import CallDeadlineExceeded, deadline_scope
from routerlab.agents.lm.provider_scoring import LogprobScorer
from routerlab.agents.lm.resolve import resolve_lm
from routerlab.eval.store import ResultsStore


@dataclass
class SilentServer:
    """A loopback server that accepts, holds and counts connections, and never sends a byte."""

    url: str
    held: list[socket.socket] = field(default_factory=list)

    @property
    def connections(self) -> int:
        return len(self.held)


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    state = SilentServer(f"http://127.0.0.1:{server.getsockname()[1]}/v1")
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            state.held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(2)
        for conn in state.held:
            conn.close()
        server.close()


def test_one_pass_scoring_makes_one_request_within_one_budget(silent: SilentServer) -> None:
    import litellm  # noqa: F401  (imported outside the clock: a cold import takes seconds)

    scorer = LogprobScorer("openai/silent-model", {"api_base": silent.url, "api_key": "x"})
    # warm litellm up (its first call builds clients and tables, seconds on a loaded machine)
    with deadline_scope(time.monotonic() + 3.0, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded):
        scorer.score_choices([{"role": "user", "content": "warm up"}], [], ["sql", "chat"])
    time.sleep(4.0)  # the warm-up request's own timeout passes; with no retry, nothing follows it
    before = silent.connections
    budget_s = 4.0
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + budget_s, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded) as caught:
        scorer.score_choices([{"role": "user", "content": "route this"}], [], ["sql", "chat"])
    elapsed = time.monotonic() - t0
    # one budget, not three (the OpenAI client retried twice, each with a fresh timeout)
    assert caught.value.bound == "turn" and elapsed < budget_s + 1.5, elapsed
    # a retry would arrive once the first request's timeout passed: wait past that and count
    time.sleep(budget_s + 2.0)
    assert silent.connections - before == 1, (before, silent.connections)


def test_a_chat_call_ends_within_its_budget_however_the_client_retries(silent: SilentServer) -> None:
    lm = resolve_lm("openai/silent-model", api_base=silent.url, cache=False)
    t0 = time.monotonic()
    with deadline_scope(time.monotonic() + 2.0, "turn", cap_s=60), pytest.raises(CallDeadlineExceeded):
        lm("Which areas are in Shaanxi?")
    assert time.monotonic() - t0 < 3.5


# one router per family: tool calling (llm, handoff), one structured call (single_call),
# one-pass scoring with a DSPy fallback (dspy), rules then one-pass scoring (hybrid at 1.0:
# the LM is always asked), rules then tool calling (rules,llm's second stage is llm itself)
FAMILIES = [
    ("llm", {}),
    ("handoff", {}),
    ("single_call", {}),
    ("dspy", {}),
    ("hybrid", {"threshold": 1.0}),
]


@pytest.mark.parametrize(("router", "args"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_every_router_family_stops_at_the_run_deadline(
    tmp_path: Path, silent: SilentServer, router: str, args: dict
) -> None:
    deadline_s = 4.0
    spec = SessionSpec(
        routers=[(router, args)],
        config=RunConfig(
            dataset="builtin",
            split="dev",
            limit=2,
            lm="openai/silent-model",
            lm_api_base=silent.url,
            deadline_s=deadline_s,
        ),
        tracking_uri=None,
        store_path=str(tmp_path / "results.duckdb"),
    )
    result = run_session(spec, console=Console(quiet=True))
    store = ResultsStore(spec.store_path)
    stored = store.results(result.run_ids[0])
    assert len(stored) == 2
    assert {r.error_class for r in stored} == {"run_deadline"}, [(r.error_class, r.error) for r in stored]
    # the cut call ended within its budget: the old code's one-pass call took three (dspy: 62 s
    # for --deadline-s 20; hybrid at 1.0: 25.7 s for 10)
    cut = [r for r in stored if "stopped after" in (r.error or "")]
    assert len(cut) == 1 and cut[0].latency_s < deadline_s + 1.5, [(r.latency_s, r.error) for r in stored]
    # the run's work ended within a few seconds of its deadline (session set-up is before the clock)
    row = store.query("SELECT min(started_at) AS s FROM runs")["s"][0]
    last = store.query("SELECT max(recorded_at) AS t FROM examples")["t"][0]
    assert (last - row).total_seconds() < deadline_s + 3, (row, last)
    # no client retry reached the server after the deadline: one request per call made
    assert silent.connections <= 2, silent.connections
