"""Greedy calls decoded together on the real embedded model (0.5B: mechanics, not quality).

A reply decoded beside other calls must be the plain call's, or part from it only at a near-tie
(a token whose top-2 logit margin is under ``NEAR_TIE``: a batch of another shape sums floats in
another order). A run with two workers must give the results of a run with one, under the same
rule, and a deadline must end its own call without ending the others.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import routerlab.benchmarks.builtin  # noqa: F401  (registers the built-in datasets)
from routerlab._runs.runner import RouterRun, RunConfig, build_scorers, run_router
from routerlab.agents.lm import decode_together, resolve_lm
from routerlab.agents.lm.deadline import CallDeadlineExceeded, deadline_scope
from routerlab.agents.lm.speculative import NEAR_TIE
from routerlab.benchmarks.dataset import dataset
from routerlab.perf.sql_decoding import first_difference

pytestmark = pytest.mark.model

SYSTEM = {"role": "system", "content": "You are an expert SQLite programmer."}
SCHEMA = (
    "CREATE TABLE singer (singer_id INTEGER, name TEXT, country TEXT, age INTEGER);\n"
    "CREATE TABLE concert (concert_id INTEGER, singer_id INTEGER, year INTEGER, venue TEXT);"
)
QUESTIONS = (
    "How many singers are from France?",
    "List the venues of concerts held in 2014.",
    "What is the average age of singers?",
    "Which singer has the most concerts?",
)


def _ask(question: str) -> list[dict[str, str]]:
    ask = "Answer the question with one SQLite query. Reply with the SQL query only."
    user = f"{SCHEMA}\n\n{ask}\nQuestion: {question}"
    return [SYSTEM, {"role": "user", "content": user}]


@pytest.fixture(scope="module")
def lm():
    return resolve_lm("local:0.5b", cache=False, max_tokens=48)


def _pairs(work: Any, items: list[Any]) -> dict[int, Any]:
    """``work(item)`` on two threads at a time; results or exceptions by index."""
    out: dict[int, Any] = {}

    def one(i: int) -> None:
        try:
            out[i] = work(items[i])
        except Exception as exc:  # the test reads it
            out[i] = exc

    for k in range(0, len(items), 2):
        threads = [threading.Thread(target=one, args=(i,)) for i in range(k, min(k + 2, len(items)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return out


def _parts_at_near_tie(llm: Any, plain: str, together_text: str) -> bool:
    prompt, decoded = next((p, d) for p, d in reversed(llm._routerlab_together.log) if d.text == together_text)
    assert prompt  # the log keeps what was decoded
    _, _, margin = first_difference(llm, plain, decoded)
    return margin < NEAR_TIE


def test_calls_decoded_together_reply_as_plain_calls_and_share_the_schema_prefix(lm):
    llm = lm._engine_spec.llama()
    plain = [
        llm.create_chat_completion(messages=_ask(q), max_tokens=48, temperature=0.0)["choices"][0]["message"]["content"]
        for q in QUESTIONS
    ]
    with decode_together(2):
        got = _pairs(lambda q: lm(messages=_ask(q))[0], list(QUESTIONS))
    for i, text in enumerate(plain):
        assert isinstance(got[i], str), got[i]
        assert got[i] == text or _parts_at_near_tie(llm, text, got[i]), (QUESTIONS[i], text, got[i])
    log = list(llm._routerlab_together.log)[-len(QUESTIONS) :]
    # every call after the first started from the schema another call had evaluated, even the
    # one that arrived with it (it waited for the first one's prompt)
    later = sorted(log, key=lambda item: item[1].evaluated_prompt_tokens)[: len(QUESTIONS) - 1]
    assert all(d.evaluated_prompt_tokens < d.prompt_tokens / 2 for _, d in later), [
        (d.evaluated_prompt_tokens, d.prompt_tokens) for _, d in log
    ]
    assert all(len(d.margins) >= len(d.tokens) for _, d in log)


def test_a_deadline_ends_its_own_call_and_not_the_one_beside_it(lm):
    short = _ask(QUESTIONS[0])
    expected = lm(messages=short)[0]  # also loads the model outside the clock
    endless = [{"role": "user", "content": "Write 300 different SQL queries over a table t(a, b, c), one per line."}]
    long_lm = lm.copy(max_tokens=2000)

    def work(which: str) -> Any:
        if which == "short":
            return lm(messages=short)[0]
        t0 = time.monotonic()
        with deadline_scope(time.monotonic() + 3.0, "turn", cap_s=60):
            try:
                long_lm(messages=endless)
            except CallDeadlineExceeded as exc:
                return exc, time.monotonic() - t0
        return None

    with decode_together(2):
        got = _pairs(work, ["long", "short"])
        cut, elapsed = got[0]
        assert isinstance(cut, CallDeadlineExceeded) and cut.bound == "turn" and elapsed < 6.0, got[0]
        llm = lm._engine_spec.llama()
        assert got[1] == expected or _parts_at_near_tie(llm, expected, got[1]), (expected, got[1])
        # the shared context goes on: the next call answers normally
        assert lm(messages=_ask(QUESTIONS[2]))[0]


def test_a_run_with_two_workers_gives_the_results_of_a_run_with_one(lm, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_DECODE_TOGETHER", "on")
    llm = lm._engine_spec.llama()
    by: dict[str, list[Any]] = {}
    for e in dataset.build("builtin_conversations").examples:
        by.setdefault(str(e.conversation), []).append(e)
    examples = [e for c in list(by.values())[:2] for e in c]
    config = RunConfig(dataset="builtin_conversations", lm="local:0.5b", lm_cache=False)
    run = RouterRun("oracle", {}, lm, config, build_scorers(config))
    results: dict[int, dict[str, Any]] = {}
    for k in (1, 2):
        if k == 2 and hasattr(llm, "_routerlab_together"):
            llm._routerlab_together.log.clear()  # made by the tests above: only this run's calls
        got: list[Any] = []
        assert run_router(run, examples, on_result=got.append, concurrency=k) == len(examples)
        results[k] = {r.example_id: r for r in got}
    # every call of the second run was decoded together and is the plain call's reply, or parts
    # from it at a near-tie
    calls = list(llm._routerlab_together.log)
    assert len(calls) >= len(examples)
    for prompt, decoded in calls:
        plain = llm.create_completion(prompt, max_tokens=len(decoded.tokens) + 8, temperature=0.0)
        text = plain["choices"][0]["text"]
        if not text.startswith(decoded.text):
            _, _, margin = first_difference(llm, text, decoded)
            assert margin < NEAR_TIE, (text, decoded.text, margin)
    # so every turn's result is the same, up to a turn whose SQL parted at such a near-tie (the
    # conversation's later turns then see another history)
    parted: set[str] = set()
    for e in examples:
        one, two = results[1][e.id], results[2][e.id]
        assert two.outcome != "crash", (e.id, two.error)
        if e.conversation in parted:
            continue
        if one.trace.sql != two.trace.sql:
            parted.add(str(e.conversation))
            continue
        assert (one.outcome, one.value("ex")) == (two.outcome, two.value("ex")), e.id
