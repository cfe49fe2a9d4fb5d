"""The dspy program's ``evidence`` input: the schema and ambiguity checks' findings, in demos and decisions.

A program compiled with ``checks`` reads, after each request, the findings of those deterministic
checks on the turn's database, exactly as its demos show them. These tests use a scripted engine
that records what each one-pass call evaluated; the real-model test at the end checks the same
path on the embedded model.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError
from routerlab.agents.lm import resolve_lm
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine, adapter_reply
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import INTENTS, initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.benchmarks.builtin import load_builtin
from routerlab.cli import app
from routerlab.fit.optimize import optimize_router, to_dspy_examples
from routerlab.routers.dspy_router import INSTRUCTIONS, RouteProgram, check_checks, load_program, request_evidence
from routerlab.routers.support.lm_intent import IntentPrompt
from routerlab.routers.support.schema_outline import ambiguity_finding, schema_finding

GAP = "What is the average salary of the cashiers in each area?"  # the schema check finds 'salary' missing
CHECKS_ALL = ("schema", "ambiguity")


class _RecordingEngine(ScriptedEngine):
    """Scores ``clarify`` when the request turn carries an ambiguity finding, ``unanswerable`` for a
    schema finding, ``sql`` otherwise; keeps every scored request turn and prefix."""

    def __init__(self) -> None:
        super().__init__(lambda request: adapter_reply({"intent": "sql"}))
        self.turns: list[str] = []
        self.prefixes: list[list[dict]] = []

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        turn = messages[-1]["content"]
        self.turns.append(turn)
        self.prefixes.append(prefix)
        top = "clarify" if "Ambiguity check:" in turn else "unanswerable" if "Schema check:" in turn else "sql"
        probs = {c: (0.9 if c == top else 0.1 / (len(choices) - 1)) for c in choices}
        return ChoiceScores(probs, 0.9, 100, 80, 20, "live", 0.0)


def _lm():
    import dspy

    from routerlab.agents.lm.usage import UsageCallback

    return dspy.LM("scripted/evidence", engine=_RecordingEngine(), cache=False, callbacks=[UsageCallback()])


@pytest.fixture(scope="module")
def builtin():
    return load_builtin()


def _compile(builtin, lm, out, checks, per_intent=1):
    """A stratified program compiled with ``checks`` on the scripted engine; its report."""
    return optimize_router(
        builtin,
        lm,
        lm_spec="scripted:evidence",
        optimizer="stratified",
        optimizer_args={"per_intent": per_intent},
        checks=checks,
        out=out,
        zero_shot=False,
        score_fit=False,
    )


def test_checks_are_named_or_refused_with_the_known_ones():
    assert check_checks("schema,ambiguity") == ("schema", "ambiguity")
    assert check_checks(["ambiguity"]) == ("ambiguity",) and check_checks("") == ()
    with pytest.raises(ConfigError, match="schema, ambiguity") as err:
        check_checks("schema,spelling")
    assert "'spelling'" in str(err.value)
    bad = CliRunner().invoke(app, ["optimize", "--lm", "scripted:basic", "--checks", "spelling"])
    assert bad.exit_code == 2 and "spelling" in bad.output


def test_evidence_is_the_checks_findings_on_the_turns_database(sales_db):
    env = RouterEnv(tools=DEFAULT_TOOLS, open_db=open_database)
    state = initial_state(GAP, str(sales_db))
    assert request_evidence(env, state, ()) == ""
    assert request_evidence(env, state, ("schema",)) == schema_finding(env, state) != ""
    both = request_evidence(env, state, ("schema", "ambiguity"))
    assert both.splitlines()[0] == schema_finding(env, state)
    assert request_evidence(env, initial_state("How many areas are there?", str(sales_db)), CHECKS_ALL) == ""


def test_train_examples_carry_the_evidence_the_router_would_add(builtin):
    env = RouterEnv(tools=[], open_db=open_database)
    train = builtin.split("train")
    data = to_dspy_examples(train, {}, CHECKS_ALL)
    assert all(set(ex.inputs().keys()) == {"tables", "conversation", "request", "evidence"} for ex in data)
    for e, ex in zip(train, data, strict=True):
        assert ex.evidence == request_evidence(env, initial_state(e.question, e.db_path), CHECKS_ALL)
    found = [ex for ex in data if ex.evidence]
    # the checks find something on some requests (clarify / unanswerable ones) and not on most
    assert found and len(found) < len(data) / 2
    assert {ex.intent for ex in found} & {"clarify", "unanswerable"}
    assert all("evidence" not in ex for ex in to_dspy_examples(train, {}, ()))  # demos saved as before


def test_a_compiled_program_shows_evidence_in_its_demos_and_reads_it_per_request(builtin, tmp_path, sales_db):
    lm = _lm()
    out = tmp_path / "evidence.json"
    report = _compile(builtin, lm, out, CHECKS_ALL, per_intent=2)
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["checks"] == list(CHECKS_ALL) == report.checks
    program, _ = load_program(str(out))
    assert program.route.checks == CHECKS_ALL
    # every held-out request with a finding was scored with it on the line after the request
    engine = lm.engine
    assert any("\nAmbiguity check: " in t or "\nSchema check: " in t for t in engine.turns)
    # a demo keeps the evidence it was recorded with, and the prefix shows it as a request turn does
    prompt = IntentPrompt.from_predict(program.route)
    shown = "\n".join(m["content"] for m in prompt.prefix("t"))
    for demo in program.route.demos:
        if demo.get("evidence"):
            assert f"Request: {demo['request']}\n{demo['evidence']}" in shown
    # the router adds the same findings to a live request, once, after it
    r = routers.router.build("dspy", program=str(out))
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    d = r.decide(initial_state(GAP, str(sales_db)))
    assert engine.turns[-1] == f"Request: {GAP}\n" + schema_finding(r.env, initial_state(GAP, str(sales_db)))
    assert d.intent == "unanswerable" and d.method.endswith(":logprob")
    r.decide(initial_state("How many areas are there?", str(sales_db)))
    assert engine.turns[-1] == "Request: How many areas are there?"  # no finding, no extra line


def test_a_program_saved_before_the_evidence_input_loads_with_its_fields_in_place(tmp_path):
    program, path = load_program("builtin")
    assert path is not None and program.route.checks == ()
    saved = json.loads(path.read_text())
    assert len(saved["route"]["signature"]["fields"]) == 4  # tables, conversation, request, intent
    fields = program.route.signature.fields
    assert fields["intent"].json_schema_extra["prefix"] == "Intent:"
    assert "checks" in fields["evidence"].json_schema_extra["desc"]
    # and one saved with checks round-trips them
    prog = RouteProgram(checks=("ambiguity",))
    prog.save(str(tmp_path / "p.json"))
    again, _ = load_program(str(tmp_path / "p.json"))
    assert again.route.checks == ("ambiguity",)


def test_hybrid_adds_the_findings_its_programs_demos_show(builtin, tmp_path, sales_db):
    lm = _lm()
    out = tmp_path / "evidence.json"
    _compile(builtin, lm, out, ("schema",))
    h = routers.router.build("hybrid", program=str(out), threshold=1.01)  # the LM decides every request
    h.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    h.decide(initial_state(GAP, str(sales_db)))
    assert lm.engine.turns[-1].endswith("\n" + schema_finding(h.env, initial_state(GAP, str(sales_db))))


def test_the_evidence_instructions_extend_the_cues_variant():
    assert INSTRUCTIONS["evidence"].startswith(INSTRUCTIONS["cues"])
    assert "Schema check" in INSTRUCTIONS["evidence"] and "Ambiguity check" in INSTRUCTIONS["evidence"]


@pytest.mark.model
def test_the_embedded_model_reads_the_evidence_line_in_one_pass(builtin, tmp_path, sales_db):
    """On the real engine the finding lengthens the per-request part only; still one forward pass."""
    model = resolve_lm("local:0.5b", cache=False, max_tokens=16)
    env = RouterEnv(tools=DEFAULT_TOOLS, lm=model, open_db=open_database)
    state = initial_state(GAP, str(sales_db))
    assert ambiguity_finding(env, state) == ""  # only the schema check finds something here
    with_checks, plain = tmp_path / "with.json", tmp_path / "plain.json"
    RouteProgram(checks=CHECKS_ALL).save(str(with_checks))
    RouteProgram().save(str(plain))
    decisions = []
    for path in (with_checks, plain):
        # the LM's own decision: the schema gate (abstain_check) would override it on this gap
        r = routers.router.build("dspy", program=str(path), abstain_check=False)
        r.bind(env)
        decisions.append(r.decide(state))
    told, bare = decisions
    for d in decisions:
        assert d.method.endswith(":logprob") and d.intent in INTENTS and d.usage.completion_tokens == 0
    assert told.usage.prompt_tokens > bare.usage.prompt_tokens  # the finding's tokens
    assert told.confidence != bare.confidence  # the model read them


def test_neighbours_are_the_nearest_other_labelled_requests():
    from routerlab.routers.support.neighbours import Neighbours

    pool = Neighbours(
        ["How many areas are there?", "Count the service areas.", "Hello there!", "Delete every complaint."],
        ["sql", "sql", "chat", "refuse"],
        k=2,
    )
    near = pool.nearest("How many areas are there?")
    assert len(near) == 2 and near[0][0] == "sql"  # the identical request is left out, its paraphrase is first
    assert near[0][1] >= near[1][1]
    assert pool.finding("Please remove all the complaints").startswith("Similar requests: refuse")
    again = Neighbours.from_state(json.loads(json.dumps(pool.to_state())))
    assert again.nearest("Hi!") == pool.nearest("Hi!")
    with pytest.raises(ConfigError, match="more than k"):
        Neighbours(["a", "b"], ["sql", "chat"], k=2)
    with pytest.raises(ConfigError, match="unknown intents \\['smalltalk'\\]"):
        Neighbours(["a", "b", "c"], ["sql", "chat", "smalltalk"], k=1)


def test_a_program_reading_neighbours_needs_its_pool(tmp_path):
    from routerlab.agents.errors import ContractError

    RouteProgram(checks=("neighbours",)).save(str(tmp_path / "nopool.json"))
    with pytest.raises(ContractError, match="pool"):
        routers.router.build("dspy", program=str(tmp_path / "nopool.json"))


def test_the_neighbours_pool_is_the_fit_part_and_held_out_requests_stay_unseen(builtin, tmp_path, sales_db):
    from routerlab.fit.optimize import holdout_split
    from routerlab.routers.support.turns import without_pleasantries

    lm = _lm()
    out = tmp_path / "nb.json"
    _compile(builtin, lm, out, ("neighbours",))
    program, _ = load_program(str(out))
    fit, held = holdout_split(builtin.split("train"), 1 / 3, 0)
    pool = program.route.neighbours
    assert pool is not None and sorted(pool.requests) == sorted(e.question for e in fit)
    assert not set(pool.requests) & {e.question for e in held}
    # every held-out request was scored with its neighbours' intents on the line after it (the
    # request as the router shows it, greetings around it stripped)
    shown = {without_pleasantries(e.question): e.question for e in builtin.split("train")}
    held_turns = [
        t for t in lm.engine.turns if any(t.startswith(f"Request: {without_pleasantries(e.question)}\n") for e in held)
    ]
    assert len(held_turns) == len(held) and all("\nSimilar requests: " in t for t in held_turns)
    # a demo's neighbours never include itself (they are found from the request as the user sent it)
    for demo in program.route.demos:
        assert demo["evidence"] == pool.finding(shown[demo["request"]])
    r = routers.router.build("dspy", program=str(out))
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    r.decide(initial_state("How many areas are there?", str(sales_db)))
    assert lm.engine.turns[-1] == "Request: How many areas are there?\n" + pool.finding("How many areas are there?")


def test_the_rules_check_is_the_rules_routers_verdict_on_the_turns_database(sales_db):
    from routerlab.routers.dspy_router import rules_finding

    env = RouterEnv(tools=DEFAULT_TOOLS, open_db=open_database)
    rules = routers.router.build("rules")
    rules.bind(env)
    for question in (GAP, "How many areas are there?", "DELETE FROM branches", "Hello!", "Which is the best one?"):
        state = initial_state(question, str(sales_db))
        intent, _, method, _ = rules.classify(state)
        assert rules_finding(env, state) == f"Rules: {intent} ({method.removeprefix('rule:').replace('_', ' ')})."
    # the schema detectors need the database: without one a gap is not found
    gap = initial_state(GAP, str(sales_db))
    assert rules_finding(None, gap) != rules_finding(env, gap)
    assert request_evidence(env, gap, ("schema", "rules")).splitlines() == [
        schema_finding(env, gap),
        rules_finding(env, gap),
    ]


def test_a_mistyped_program_name_is_an_error_naming_the_committed_ones():
    with pytest.raises(ConfigError, match="builtin_evidence") as err:
        routers.router.build("dspy", program="builtin_evidense")
    assert "did you mean 'builtin_evidence'" in str(err.value) and "none" in str(err.value)
    assert ".meta" not in str(err.value)  # provenance files are not programs
    args = ["route", "--router", "dspy", "--lm", "scripted:basic", "--router-arg", "dspy.program=nope"]
    bad = CliRunner().invoke(app, [*args, "--limit", "1"])
    assert bad.exit_code == 2 and "no committed DSPy program named 'nope'" in bad.output
