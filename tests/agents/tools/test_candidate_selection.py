"""Candidates from one batched call, and corrective self-consistency, on a real Spider SQLite file.

The batched engine here is a tiny class implementing the capability (``sample_candidates``), not
a mock of llama.cpp; the real model's test is ``test_candidate_selection_model.py``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import dspy
import pytest
from dspy import lm15 as L

from routerlab import routers
from routerlab._runs.config import load_run_config
from routerlab.agents.db import open_database
from routerlab.agents.errors import LMError, ToolError
from routerlab.agents.graph import Pipeline, PipelineConfig
from routerlab.agents.lm import LlamaEngine, UsageCallback, scripted_lm, usage_scope
from routerlab.agents.lm.batched import Candidates
from routerlab.agents.lm.candidates import candidate_key, candidate_sampler, sample_candidates
from routerlab.agents.lm.messages import request_to_chat
from routerlab.agents.tools import ToolSettings
from routerlab.agents.tools.framing import CHAT_MAX_TOKENS
from routerlab.agents.tools.selection import Candidate, Selection, select, vote

COUNT_ALL = "SELECT count(*) FROM singer"  # 6
COUNT_FRANCE = "SELECT count(*) FROM singer WHERE Country = 'France'"  # 4
BROKEN = "SELECT nofunc(Age) FROM singer"  # parses, fails on execution: no such function


def runner(path: Path):
    db = open_database(path)
    ran: list[str] = []

    def run(sql: str) -> list[list]:
        ran.append(sql)
        return db.execute(sql).rows

    return run, ran


# --- the vote with corrective repair -------------------------------------------------------------


def test_an_erroring_candidate_is_repaired_once_then_counted(singers):
    run, ran = runner(singers)
    asked: list[tuple[str, str]] = []

    def repair(sql: str, error: str) -> dict:
        asked.append((sql, error))
        return {"sql": COUNT_FRANCE, "attempts": 1}

    # greedy says 6; two samples fail the same way, their repair says 4: the repaired pair wins
    candidates = [Candidate(COUNT_ALL), Candidate(BROKEN, seed=1), Candidate(BROKEN, seed=2)]
    chosen = vote(candidates, run, repair=repair)
    assert chosen == 1
    assert asked == [(BROKEN, "no such function: nofunc")]  # equal failures share one repair
    assert [c.repaired for c in candidates] == [False, True, True]
    assert candidates[1].sql == COUNT_FRANCE and candidates[1].error is None and candidates[1].rows == 1
    assert candidates[1].output["candidate_repair"] == {"sql": BROKEN, "error": "no such function: nofunc"}
    record = Selection(candidates, chosen, 0.1).record()
    assert record["errored"] == 2 and record["repaired"] == 2
    assert record["vote_counts"] == [2, 1] and record["greedy_chosen"] is False
    assert [c["votes"] for c in record["candidates"]] == [1, 2, 2]
    assert record["candidates"][1]["failed"] == "no such function: nofunc" and record["candidates"][1]["repaired"]
    assert "failed" not in record["candidates"][0]  # a candidate that ran says nothing about repair
    assert ran.count(COUNT_FRANCE) == 2


def test_a_repair_that_fails_leaves_the_candidate_out(singers):
    run, _ = runner(singers)

    def still_broken(sql: str, error: str) -> dict:
        return {"sql": "SELECT nofunc2(Age) FROM singer"}

    def refused(sql: str, error: str) -> dict:
        raise ToolError("the fix does not parse", error_class="guard")

    for repair in (still_broken, refused):
        candidates = [Candidate(COUNT_ALL), Candidate(BROKEN, seed=1), Candidate(BROKEN, seed=2)]
        chosen = vote(candidates, run, repair=repair)
        assert chosen == 0  # the two broken ones are out: the greedy query alone ran
        assert [c.key is not None for c in candidates] == [True, False, False]
        assert all(c.error.startswith("repair failed") for c in candidates[1:])
        record = Selection(candidates, chosen, 0.0).record()
        assert record["errored"] == 2 and record["repaired"] == 0 and record["vote_counts"] == [1]
        assert record["greedy_chosen"] is True


def test_without_repair_failures_are_dropped_as_before(singers):
    run, _ = runner(singers)
    candidates = [Candidate(COUNT_ALL), Candidate(BROKEN, seed=1), Candidate(COUNT_FRANCE, seed=2)]
    assert vote(candidates, run) == 0  # one against one: the tie goes to the greedy query
    assert candidates[1].error == "no such function: nofunc" and not candidates[1].repaired


def test_a_tie_between_repaired_and_greedy_results_goes_to_the_greedy_query(singers):
    run, _ = runner(singers)
    chosen = select(
        {"sql": COUNT_ALL},
        lambda seed: {"sql": BROKEN},
        run,
        k=2,
        budget_s=60,
        repair=lambda sql, error: {"sql": COUNT_FRANCE},
    )
    assert chosen.chosen == 0 and chosen.candidates[1].repaired
    assert chosen.record()["vote_counts"] == [1, 1] and chosen.record()["sampling"] == "one_by_one"


# --- a batched-capable engine ---------------------------------------------------------------------


class BatchedEngine:
    """An engine that answers chat requests and decodes ``n`` candidates in one call.

    ``greedy`` answers every plain request (and is sequence 0 of a batch); ``samples[s - 1]`` is
    sequence ``s``; a request for the fix program gets ``fix``.
    """

    def __init__(self, greedy: str, samples: list[str], fix: str = "") -> None:
        self.greedy, self.samples, self.fix = greedy, samples, fix
        self.requests: list[L.Request] = []
        self.batches: list[dict] = []

    def complete(self, request: L.Request) -> L.Response:
        self.requests.append(request)
        text = self.greedy
        if "fixed_sql" in repr(request.messages) + str(request.system or ""):
            text = f"[[ ## fixed_sql ## ]]\n{self.fix}\n\n[[ ## completed ## ]]"
        return L.Response(
            id=f"fake-{len(self.requests)}",
            model=request.model,
            message=L.Message(role="assistant", parts=(L.TextPart(text=text),)),
            finish_reason="stop",
            usage=L.Usage(input_tokens=100, output_tokens=10),
        )

    def sample_candidates(self, messages, n, *, temperature=0.7, max_tokens=None, seed=None, stop=()):
        self.batches.append(
            {"messages": list(messages), "n": n, "temperature": temperature, "seed": seed, "max_tokens": max_tokens}
        )
        texts = (self.greedy, *self.samples[: n - 1])
        return Candidates(
            texts=texts,
            completion_tokens=tuple(8 for _ in texts),
            stopped=tuple(True for _ in texts),
            prompt_tokens=120,
            evaluated_prompt_tokens=120,
            prefill_seconds=0.0,
            decode_seconds=0.0,
        )


def batched_lm(engine: BatchedEngine, *, cache: bool = False) -> dspy.LM:
    return dspy.LM(
        "fake/batched", engine=engine, cache=cache, temperature=0.0, max_tokens=256, callbacks=[UsageCallback()]
    )


def run_pipeline(db: Path, lm, question: str, **tools):
    config = PipelineConfig(tools=ToolSettings(sql_framing="chat", sql_output="extract", **tools))
    return Pipeline(routers.router.build("oracle"), lm, config=config).run(question, str(db), oracle_intent="sql")


def test_a_batched_engine_is_called_once_for_all_candidates_over_the_greedy_prompt(singers):
    engine = BatchedEngine(
        COUNT_ALL,
        [COUNT_FRANCE, f"```sql\n{COUNT_FRANCE}\n```", "SELECT count(*) FROM singer WHERE Country = 'Netherlands'"],
    )
    t = run_pipeline(singers, batched_lm(engine), "How many singers are from France?", candidates=4)
    # ONE batched call for the four candidates, its sequence 0 the greedy reply: no other call
    assert len(engine.batches) == 1 and engine.requests == []
    batch = engine.batches[0]
    assert batch["n"] == 4 and batch["temperature"] == 0.7 and batch["max_tokens"] == CHAT_MAX_TOKENS
    # over the greedy call's exact messages: what the same turn without candidates sends
    plain = BatchedEngine(COUNT_ALL, [])
    run_pipeline(singers, batched_lm(plain), "How many singers are from France?")
    assert plain.batches == [] and len(plain.requests) == 1
    assert batch["messages"] == request_to_chat(plain.requests[0])
    out = t.tool_calls[1]["output"]
    assert t.rows == [[4]] and out["sql"] == COUNT_FRANCE
    sel = out["selection"]
    assert sel["sampling"] == "batched" and sel["chosen"] == 1 and sel["greedy_chosen"] is False
    assert [c["seed"] for c in sel["candidates"]] == [None, 1, 2, 3]
    assert sel["vote_counts"] == [2, 1, 1]
    assert sel["batch"]["n"] == 4 and sel["batch"]["cached"] is False and sel["batch"]["completion_tokens"] == 32
    # the batched call is in the turn's usage: one call of 120 prompt tokens and 4 x 8 generated
    used = t.subagent_usage  # generate_sql is the only sub-agent calling the LM on this plan
    assert used.lm_calls == 1 and used.cache_hits == 0
    assert used.prompt_tokens == 120 and used.completion_tokens == 4 * 8


def test_an_erroring_batched_candidate_is_repaired_by_fix_sqls_path_before_the_vote(singers):
    engine = BatchedEngine(COUNT_ALL, [BROKEN, COUNT_FRANCE], fix=COUNT_FRANCE)
    t = run_pipeline(singers, batched_lm(engine), "How many singers are from France?", candidates=3)
    sel = t.tool_calls[1]["output"]["selection"]
    assert sel["errored"] == 1 and sel["repaired"] == 1 and sel["vote_counts"] == [2, 1]
    assert t.rows == [[4]]
    # one fix program call, one attempt
    assert sum("fixed_sql" in repr(r.messages) + str(r.system or "") for r in engine.requests) == 1
    # off: the broken one is dropped and the tie goes to the greedy query
    engine = BatchedEngine(COUNT_ALL, [BROKEN, COUNT_FRANCE], fix=COUNT_FRANCE)
    t = run_pipeline(
        singers, batched_lm(engine), "How many singers are from France?", candidates=3, candidate_repair=False
    )
    sel = t.tool_calls[1]["output"]["selection"]
    assert sel["errored"] == 1 and sel["repaired"] == 0 and sel["greedy_chosen"] is True and t.rows == [[6]]


class RefusingEngine(BatchedEngine):
    """Refuses every batch as the embedded engine refuses a prompt and budget beyond its context."""

    def sample_candidates(self, messages, n, **kwargs):
        self.batches.append({"n": n})
        raise LMError(
            "batched candidate decoding refused the request",
            expected="a prompt plus budget within the context window",
            found="prompt (4000 tokens) + max_tokens (256) exceed the context (4096)",
            fix="lower n or max_tokens, or shorten the prompt",
        )


def test_a_refused_batch_falls_back_to_one_by_one_and_says_so(singers):
    engine = RefusingEngine(COUNT_ALL, [])
    t = run_pipeline(singers, batched_lm(engine), "How many singers are there?", candidates=3)
    sel = t.tool_calls[1]["output"]["selection"]
    assert len(engine.batches) == 1 and sel["sampling"] == "one_by_one"
    assert "exceed the context" in sel["batch_refused"]
    assert [r.config.seed for r in engine.requests] == [None, 1, 2]  # the greedy call, then the samples
    assert [c["seed"] for c in sel["candidates"]] == [None, 1, 2] and t.rows == [[6]]


def test_the_embedded_engine_offers_batched_candidates_without_loading_the_model():
    from routerlab.agents.lm import MODELS, resolve_lm
    from routerlab.agents.lm.assets import cache_dir

    if not (cache_dir() / MODELS["0.5b"].filename).exists():
        pytest.skip("the embedded 0.5B model is not assembled in the cache")
    # what `routerlab run --lm local` builds: the engine is found behind dspy's LM (loading is lazy)
    lm = resolve_lm("local:0.5b", cache=False)
    assert isinstance(candidate_sampler(lm), LlamaEngine)


def test_an_lm_without_the_capability_samples_one_by_one(singers):
    seen: list = []

    def reply(request):
        seen.append(request)
        return COUNT_ALL if request.config.seed is None else COUNT_FRANCE

    lm = scripted_lm(reply)
    assert candidate_sampler(lm) is None
    t = run_pipeline(singers, lm, "How many singers are from France?", candidates=3)
    assert t.tool_calls[1]["output"]["selection"]["sampling"] == "one_by_one"
    assert [r.config.seed for r in seen] == [None, 1, 2]


def test_the_fields_framing_keeps_the_one_by_one_path_even_on_a_batched_engine(singers):
    engine = BatchedEngine(f"[[ ## sql ## ]]\n{COUNT_ALL}\n\n[[ ## completed ## ]]", [])
    config = PipelineConfig(tools=ToolSettings(sql_framing="fields", candidates=2))
    t = Pipeline(routers.router.build("oracle"), batched_lm(engine), config=config).run(
        "How many singers are there?", str(singers), oracle_intent="sql"
    )
    assert engine.batches == [] and t.tool_calls[1]["output"]["selection"]["sampling"] == "one_by_one"


# --- the response cache of batched calls -------------------------------------------------------------


def test_a_repeated_batched_call_is_answered_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTERLAB_CACHE", str(tmp_path))
    engine = BatchedEngine("SELECT 1", ["SELECT 2", "SELECT 3"])
    lm = batched_lm(engine, cache=True)
    messages = [{"role": "user", "content": "q"}]
    with usage_scope() as log:
        first = sample_candidates(lm, messages, 3, temperature=0.7, seed=0, max_tokens=64)
        again = sample_candidates(lm, messages, 3, temperature=0.7, seed=0, max_tokens=64)
    assert len(engine.batches) == 1 and (tmp_path / "candidates.sqlite").exists()
    assert again.texts == first.texts == ("SELECT 1", "SELECT 2", "SELECT 3") and again.cached
    computed, hit = log.calls
    assert computed.lm_calls == 1 and computed.cache_hits == 0 and computed.completion_tokens == 24
    # a hit observes no tokens and keeps the call's cold cost
    assert hit.lm_calls == 1 and hit.cache_hits == 1 and hit.prompt_tokens == 0
    assert hit.cold_prompt_tokens == 120 and hit.cold_completion_tokens == 24
    # any of n, temperature, seed, messages changed: a new call
    for change in ({"n": 2}, {"temperature": 0.9}, {"seed": 1}, {"messages": [{"role": "user", "content": "r"}]}):
        args = {"messages": messages, "n": 3, "temperature": 0.7, "seed": 0, **change}
        sample_candidates(lm, args.pop("messages"), args.pop("n"), max_tokens=64, **args)
    assert len(engine.batches) == 5
    # an LM without the cache always calls the engine
    nocache = batched_lm(engine)
    sample_candidates(nocache, messages, 3, temperature=0.7, seed=0, max_tokens=64)
    assert len(engine.batches) == 6


def test_the_cache_key_names_every_input():
    base = {"temperature": 0.7, "seed": 0, "max_tokens": 64}
    key = candidate_key("m", [{"role": "user", "content": "q"}], 3, **base)
    assert key == candidate_key("m", [{"role": "user", "content": "q"}], 3, **base)
    others = [
        candidate_key("m2", [{"role": "user", "content": "q"}], 3, **base),
        candidate_key("m", [{"role": "user", "content": "q2"}], 3, **base),
        candidate_key("m", [{"role": "user", "content": "q"}], 4, **base),
        candidate_key("m", [{"role": "user", "content": "q"}], 3, **{**base, "temperature": 0.8}),
        candidate_key("m", [{"role": "user", "content": "q"}], 3, **{**base, "seed": 1}),
        candidate_key("m", [{"role": "user", "content": "q"}], 3, **{**base, "max_tokens": 65}),
    ]
    assert len({key, *others}) == 7


# --- the setting ------------------------------------------------------------------------------------


def test_candidate_repair_is_a_recorded_setting_and_defaults_stay(tmp_path):
    assert ToolSettings().candidates == 1 and ToolSettings().candidate_repair is True
    cfg = tmp_path / "run.yaml"
    cfg.write_text("pipeline: {tools: {candidates: 4, candidate_temperature: 0.7, candidate_repair: false}}\n")
    config = load_run_config(cfg)
    tools = config.pipeline.tools
    assert tools.candidates == 4 and tools.candidate_temperature == 0.7 and tools.candidate_repair is False
    assert config.to_dict()["pipeline"]["tools"]["candidate_repair"] is False
    assert asdict(ToolSettings())["candidate_repair"] is True
