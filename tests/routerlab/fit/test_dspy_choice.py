"""Choosing the dspy default program on real data: the rule case by case, the sets, the dry run.

The rule is exercised on synthetic decision tables (each case is a table a search could give).
The sets and the dry run use the real shared data (skipped where it is absent) and the scripted
LM, which only drives control flow: its decisions say nothing about routing quality.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders)
from routerlab._routing_eval.decisions import first_decisions, gold_turn
from routerlab.agents.errors import ConfigError, UnknownComponentError
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine, adapter_reply, scripted_lm
from routerlab.agents.turn_history import history_text
from routerlab.benchmarks.builtin import load_builtin
from routerlab.benchmarks.dataset import dataset
from routerlab.fit.dspy_choice import (
    ReplacementRule,
    SelectionTable,
    capped,
    decide,
    divide,
    load_choice_config,
    run_choice,
)
from routerlab.fit.objective import routing_score
from routerlab.fit.optimize import holdout_split, to_dspy_examples
from routerlab.routers.dspy_router import RouteProgram
from routerlab.routers.support.turns import without_pleasantries
from tests.conftest import SPIDER_DEV_A

DATA = SPIDER_DEV_A.parent
REPO = Path(__file__).resolve().parents[3]
CHOICE = REPO / "docs" / "configs" / "dspy_real_choice.yaml"
real_data = pytest.mark.skipif(
    not all((DATA / d / "dev.json").is_file() for d in ("cosql-dev-a", "sparc-dev-a", "spider-dev-a")),
    reason=f"shared data not found under {DATA} (set ROUTERLAB_SPIDER_DEV)",
)

RULE = ReplacementRule(confidence=0.95, max_diversion=0.05, resamples=2000, seed=0)


def _table(default: list[str], **candidates: list[str]) -> SelectionTable:
    """60 conversations of 2 turns: 100 data questions, 10 each of clarify and chat, alternating."""
    gold = (["sql"] * 10 + ["clarify", "chat"]) * 10
    return SelectionTable(
        gold=gold,
        accepted=[[g] for g in gold],
        clusters=[f"c{i // 2}" for i in range(len(gold))],
        decisions={"default": default, **candidates},
    )


def _perfect() -> list[str]:
    return (["sql"] * 10 + ["clarify", "chat"]) * 10


def _sql_always() -> list[str]:
    return ["sql"] * 120


def test_a_candidate_far_above_the_default_replaces_it():
    d = decide(_table(_sql_always(), a=_perfect()), "default", ["a"], RULE, safety=2.0)
    assert d.outcome == "replace" and d.chosen == "a" and d.tested == "a"
    assert d.difference["low"] > 0 and d.difference["level"] == pytest.approx(0.95)
    # the difference is exactly the routing scores' difference (per-example terms average to it)
    gold = _table(_sql_always()).gold
    exact = 1.0 - routing_score(gold, [g == "sql" for g in gold], safety=2.0)
    assert d.difference["mean"] == pytest.approx(exact, abs=1e-4)
    assert d.figures["a"]["score"] == 1.0 and d.figures["default"]["diverted"] == 0.0


def test_a_candidate_equal_to_the_default_keeps_it():
    d = decide(_table(_perfect(), a=_perfect()), "default", ["a"], RULE, safety=2.0)
    assert d.outcome == "keep" and d.chosen is None and d.tested == "a"
    assert d.difference["mean"] == 0 and "not above 0" in d.reason


def test_a_gain_inside_the_interval_keeps_the_default():
    base = _sql_always()
    better = list(base)
    better[10] = "clarify"  # one clarification more in 120: within noise
    d = decide(_table(base, a=better), "default", ["a"], RULE, safety=2.0)
    assert d.outcome == "keep" and d.difference["mean"] > 0 and d.difference["low"] <= 0


def test_a_candidate_that_diverts_data_questions_is_not_eligible_however_it_scores():
    diverting = _perfect()
    for i in range(0, 60, 12):  # 5 of 100 data questions to chat: at the bound, still eligible
        diverting[i] = "chat"
    assert decide(_table(_sql_always(), a=diverting), "default", ["a"], RULE, safety=2.0).outcome == "replace"
    diverting[60] = "chat"  # 6 of 100: above 5 %
    d = decide(_table(_sql_always(), a=diverting), "default", ["a"], RULE, safety=2.0)
    assert d.figures["a"]["score"] > d.figures["default"]["score"]
    assert d.figures["a"]["diverted"] == pytest.approx(0.06)
    assert d.outcome == "keep" and d.tested is None and "5%" in d.reason


def test_the_best_eligible_candidate_is_tested_at_a_bonferroni_level():
    diverting = _perfect()
    for i in range(0, 72, 12):
        diverting[i] = "refuse"
    good = _perfect()
    good[11] = "sql"  # one chat turn missed: eligible, a little below perfect
    d = decide(_table(_sql_always(), a=diverting, b=good, c=good), "default", ["a", "b", "c"], RULE, safety=2.0)
    assert d.outcome == "replace" and d.chosen == "b"  # a scores best but diverts; b and c tie: first listed
    assert d.difference["level"] == pytest.approx(1 - 0.05 / 3)


def test_the_rule_needs_every_programs_decisions():
    with pytest.raises(ConfigError, match="decisions"):
        decide(_table(_sql_always()), "default", ["missing"], RULE, safety=2.0)


def test_capping_draws_each_intent_in_proportion_deterministically():
    train = load_builtin().split("train")
    out = capped(train, 30, seed=0)
    counts = Counter(e.intent for e in out)
    assert len(out) == 30 and set(counts) == {e.intent for e in train}  # every intent kept
    assert counts["sql"] == max(counts.values())
    assert [e.id for e in capped(train, 30, seed=0)] == [e.id for e in out]
    assert [e.id for e in capped(train, 30, seed=1)] != [e.id for e in out]
    assert capped(train, 0, seed=0) == train and capped(train, 500, seed=0) == train


def test_the_held_out_division_is_the_old_one_on_single_requests():
    train = load_builtin().split("train")
    _, held = holdout_split(train, 1 / 3, 0)
    # the per-intent division the committed default program was compiled with (its held-out part)
    import random

    old: set[str] = set()
    for intent in sorted({e.intent for e in train}):
        idx = [e.id for e in train if e.intent == intent]
        random.Random(f"0:{intent}").shuffle(idx)
        k = min(max(round(len(idx) / 3), 1), len(idx) - 1)
        old.update(idx[:k])
    assert {e.id for e in held} == old


@real_data
def test_the_selection_set_never_splits_a_conversation_and_excludes_the_defaults_fit_part():
    cfg = load_choice_config(CHOICE)
    blend = dataset.build("blend", path=str(REPO / cfg.blend))
    fit, selection = divide(blend.split("train"), cfg)
    assert not {e.id for e in fit} & {e.id for e in selection}
    assert not {e.conversation for e in fit if e.conversation} & {e.conversation for e in selection if e.conversation}
    assert not {e.dataset for e in fit + selection} - {"builtin-train", "cosql", "sparc", "mixed"}
    # builtin-train's selection part is exactly the default program's own held-out part
    _, held = holdout_split(load_builtin().split("train"), 1 / 3, 0)
    assert {e.meta["source_id"] for e in selection if e.dataset == "builtin-train"} == {e.id for e in held}
    assert len(fit) == 160 and Counter(e.dataset for e in selection)["sparc"] == 30
    assert Counter(e.intent for e in selection)["clarify"] >= 10


@real_data
def test_a_training_turn_reads_exactly_what_the_router_reads_with_gold_history():
    """The program's prompt for a cosql follow-up equals the dspy router's under ``route --history gold``."""
    cosql = dataset.build("cosql", path=str(DATA / "cosql-dev-a"), limit=3)
    turns = [e for e in cosql.examples if e.conversation == cosql.examples[0].conversation]
    assert len(turns) >= 2
    data = to_dspy_examples(turns, {turns[0].db_path: "x"}, context=cosql.examples)
    assert data[0].conversation == ""
    assert data[1].conversation == history_text([gold_turn(turns[0])]) and "SQL SELECT" in data[1].conversation
    # another window shows what the router with it shows: none, no earlier turn
    shown = to_dspy_examples(turns, {}, context=cosql.examples, history="none")
    assert [ex.conversation for ex in shown] == [""] * len(turns)
    with pytest.raises(ConfigError, match="needs the router's LM"):  # training data has no model to rewrite
        to_dspy_examples(turns, {}, context=cosql.examples, history="rewrite")
    from routerlab.agents.lm.adapter import lm_context
    from routerlab.fit.optimize import schema_texts

    # the router's own prompt, then the program's on the training example: the same user message,
    # with the default window (last_k) and with none
    for history in ({}, {"history": "none"}):
        lm = scripted_lm(lambda request: {"fields": {"intent": "sql"}})
        args = {"program": "none", "abstain_check": False, **history}
        first_decisions("dspy", args, turns[:2], lm, history="gold")
        routed = lm.routerlab_engine.requests[-1]
        ours = to_dspy_examples(turns[:2], schema_texts(turns[:2]), context=cosql.examples, **history)[1]
        with lm_context(lm):
            RouteProgram()(**ours.inputs())
        assert lm.routerlab_engine.requests[-1].messages == routed.messages, history


def test_a_bad_choice_file_is_refused_before_any_model(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("blend: x.yaml\ncandidates: [{name: a, optimizer: bootstrapp}]\n")
    with pytest.raises(UnknownComponentError):
        load_choice_config(bad)
    bad.write_text("blend: x.yaml\nrule: {confidence: 1.5}\ncandidates: [{name: a, optimizer: stratified}]\n")
    with pytest.raises(ConfigError, match="out of range"):
        load_choice_config(bad)
    bad.write_text("blend: x.yaml\nshuffle: true\ncandidates: [{name: a, optimizer: stratified}]\n")
    with pytest.raises(ConfigError, match="unknown keys"):
        load_choice_config(bad)


def test_the_committed_choice_file_is_valid():
    cfg = load_choice_config(CHOICE)
    assert [c.name for c in cfg.candidates] == ["real", "real-evidence"]
    assert cfg.rule == RULE and cfg.default == cfg.target == "builtin"
    assert "rules" not in cfg.candidates[1].checks  # the default must not copy the rules router


def _small_choice(tmp_path: Path, default: str, rule: str = "") -> Path:
    blend = tmp_path / "blend.yaml"
    blend.write_text(
        "databases: {rule: sorted-alternate, tune: [battle_death, concert_singer, dog_kennels, tvshow],"
        " report: [car_1, course_teach, poker_player, voter_1]}\n"
        "sources:\n"
        "  - {name: builtin-train, dataset: builtin, take: train, part: tune}\n"
        f"  - {{name: cosql, dataset: cosql, args: {{path: {DATA}/cosql-dev-a, limit: 12}}}}\n"
        f"  - {{name: mixed, dataset: mixed, args: {{base: spider, path: {DATA}/spider-dev-a, seed: 0, sample: 60}}}}\n"
    )
    choice = tmp_path / "choice.yaml"
    choice.write_text(
        f"blend: {blend}\n"
        "selection: {seed: 0, fraction: 0.5, fit_cap: {builtin-train: 40}, selection_cap: {builtin-train: 0}}\n"
        f"default: {default}\ntarget: builtin\n"
        "candidates:\n"
        "  - {name: two-each, optimizer: stratified, args: {per_intent: 2}}\n"
        "  - {name: one-each, optimizer: stratified, args: {per_intent: 1}}\n" + rule
    )
    return choice


@real_data
def test_the_dry_run_writes_candidates_and_the_rules_outcome_and_keeps_the_default(tmp_path):
    choice = _small_choice(tmp_path, "builtin")
    work, programs = tmp_path / "work", tmp_path / "programs"
    script = REPO / "scripts" / "choose_dspy_program.py"
    cmd = [sys.executable, str(script), "--config", str(choice), "--lm", "scripted:basic"]
    out = subprocess.run(
        [*cmd, "--work-dir", str(work), "--programs-dir", str(programs)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads((work / "choice.json").read_text())
    # the scripted LM says sql to every request: no candidate differs from the default
    assert result["decision"]["outcome"] == "keep" and result["decision"]["chosen"] is None
    for name in ("two-each", "one-each"):
        meta = json.loads((work / "candidates" / f"{name}.meta.json").read_text())
        program = RouteProgram()
        program.load(str(work / "candidates" / f"{name}.json"))
        assert meta["choice"]["outcome"] == "keep" and meta["choice"]["this_candidate"] == name
        assert meta["demos"] == len(program.route.demos) > 0 and meta["selection"]["n"] > 0
    assert not programs.exists() or not list(programs.iterdir())  # keep: nothing written
    # the report part, routed once after the choice: the built-in dev split is not in this blend
    assert set(result["report"]) == {"cosql", "mixed"} and result["report_program"] == "builtin"
    assert "report (once, after the choice" in out.stdout and "rule: keep" in out.stdout
    # a search of most of an hour on the embedded model shows where it is: a bar per scored set
    for label in ("builtin on selection", "two-each on selection", "report cosql", "report mixed"):
        assert label in out.stderr, out.stderr


class _KnowsWithDemosEngine(ScriptedEngine):
    """Label scoring that knows each request's gold intent once its prompt shows demos, else says sql.

    A test double for the rule's replace path: a program with demos routes every request right,
    the zero-shot one sends everything to SQL (no data question is ever diverted).
    """

    def __init__(self, gold: dict[str, str]) -> None:
        super().__init__(lambda request: adapter_reply({"intent": "sql"}))
        self.gold = gold

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        content = messages[-1]["content"]
        request = content.split("Request: ", 1)[1].split("\n", 1)[0]
        has_demos = len(prefix) > 2
        top = self.gold.get(request, "sql") if has_demos else "sql"
        probs = {c: (0.9 if c == top else 0.1 / (len(choices) - 1)) for c in choices}
        return ChoiceScores(probs, 0.9, 100, 80, 20, "live", 0.0)

    def continue_reply(self, prefix, messages, reply_prefix, *, stop, max_tokens=64):
        raise AssertionError("intent routing never continues a reply")


@real_data
def test_a_winning_candidate_is_written_with_the_rules_outcome_and_reported(tmp_path):
    """Against a zero-shot default, a candidate with demos wins under an LM that needs demos to be right."""
    import dspy

    from routerlab.agents.lm.usage import UsageCallback

    cfg = load_choice_config(_small_choice(tmp_path, "none"))
    blend = dataset.build("blend", path=cfg.blend)
    gold = {without_pleasantries(e.question): e.intent for e in blend.examples}
    lm = dspy.LM("scripted/knows", engine=_KnowsWithDemosEngine(gold), cache=False, callbacks=[UsageCallback()])
    work, programs = tmp_path / "work", tmp_path / "programs"
    result = run_choice(cfg, lm, lm_spec="scripted:knows", work_dir=work, programs_dir=programs, say=lambda _: None)
    decision = result["decision"]
    assert decision["outcome"] == "replace" and decision["chosen"] == "two-each"  # ties: the first listed
    assert decision["difference"]["low"] > 0 and decision["figures"]["two-each"]["diverted"] == 0
    written = programs / "dspy_router_builtin.json"
    meta = json.loads(written.with_suffix(".meta.json").read_text())
    assert meta["choice"]["outcome"] == "replace" and meta["choice"]["chosen"] == "two-each"
    assert meta["replaced"] is None and meta["dataset"] == "blend" and set(meta["report"]) == {"cosql", "mixed"}
    assert written.read_bytes() == (work / "candidates" / "two-each.json").read_bytes()
    # the report routed the written program (not the zero-shot default) over every report request
    assert result["report_program"] == str(written)
    for source, row in result["report"].items():
        assert row["n"] == result["sizes"]["report"][source] and row["accuracy"] > 0.8


@real_data
@pytest.mark.model
def test_the_default_program_loads_as_its_meta_says_and_routes_real_follow_ups_in_one_pass():
    """After the choice: the committed default (replaced or kept) routes cosql turns with history on the model."""
    from routerlab import routers
    from routerlab.agents.lm import resolve_lm
    from routerlab.agents.state import INTENTS
    from routerlab.routers.dspy_router import program_path

    meta = json.loads(program_path("builtin").with_suffix(".meta.json").read_text())
    router = routers.router.build("dspy")
    route = router.program.route
    assert len(route.demos) == meta["demos"] and route.schema == meta["schema"]
    assert list(route.checks) == meta.get("checks", []) and "rules" not in route.checks
    if meta["dataset"] == "blend":  # a replacement records the rule that chose it
        assert meta["choice"]["outcome"] == "replace" and meta["choice"]["chosen"] == meta["candidate"]["name"]
        assert meta["report"] and meta["selection"]["diverted"] <= meta["choice"]["rule"]["max_diversion"]
    cosql = dataset.build("cosql", path=str(DATA / "cosql-dev-a"), limit=2)
    # the small embedded model: the contract (one pass, every label an intent, the history's turns)
    # holds for any real model, and the 0.5B reads the program's long prompt in a third of the time
    model = resolve_lm("local:0.5b", cache=False)
    decisions = first_decisions("dspy", {}, cosql.examples, model, history="gold")
    assert all(d.error is None and d.predicted in INTENTS for d in decisions)
    # one pass over label probabilities; a gate (the schema check) may add its suffix after it
    assert all(":logprob" in d.method for d in decisions), [d.method for d in decisions]
    assert [d.history_turns for d in decisions] == [e.turn - 1 for e in cosql.examples]
