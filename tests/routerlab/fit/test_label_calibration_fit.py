"""Fitting per-intent offsets (``routerlab.fit.label_calibration_fit``) and the ``calibrated`` optimizer.

The optimizer runs against a scripted engine that scores labels like a prompt biased towards
``sql``: it knows each train request's gold intent but gives ``sql`` more probability than the
gold label of every clarify, refuse and unanswerable request. Only calibration can fix that;
demos cannot (the engine ignores them).
"""

from __future__ import annotations

import json
import math
import random

import dspy
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine, adapter_reply
from routerlab.agents.lm.usage import UsageCallback
from routerlab.agents.state import INTENTS
from routerlab.benchmarks.builtin import load_builtin
from routerlab.fit.label_calibration_fit import (
    L2_GRID,
    affine_loss,
    choose_bound,
    choose_l2,
    fit_affine,
    fit_offsets,
    score_with_map,
    score_with_offsets,
)
from routerlab.fit.objective import routing_score
from routerlab.fit.optimize import optimize_router
from routerlab.fit.optimizers import optimizer
from routerlab.routers.dspy_router import load_program

_dist = st.lists(st.floats(0.001, 1.0), min_size=len(INTENTS), max_size=len(INTENTS)).map(
    lambda xs: {k: x / sum(xs) for k, x in zip(INTENTS, xs, strict=True)}
)
_data = st.lists(st.tuples(_dist, st.sampled_from(INTENTS)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(_data, st.floats(0.0, 4.0))
def test_fitted_offsets_never_score_worse_on_the_fit_set_and_stay_bounded(data, bound):
    dists, gold = [d for d, _ in data], [g for _, g in data]
    offsets = fit_offsets(dists, gold, labels=INTENTS, max_offset=bound)
    assert set(offsets) == set(INTENTS) and all(abs(v) <= bound + 1e-9 for v in offsets.values())
    before = score_with_offsets(dists, gold, [[g] for g in gold], {}, labels=INTENTS)
    after = score_with_offsets(dists, gold, [[g] for g in gold], offsets, labels=INTENTS)
    assert after >= before - 1e-12
    assert fit_offsets(dists, gold, labels=INTENTS, max_offset=bound) == offsets  # deterministic


@settings(max_examples=40, deadline=None)
@given(_data, st.lists(st.floats(0.01, 100.0), min_size=30, max_size=30))
def test_scaling_an_examples_probabilities_changes_no_decision(data, scales):
    # only each example's ratios between labels matter (what a softmax keeps); exact ties are
    # left out, as rounding may break them either way once scaled
    dists, gold = [d for d, _ in data], [g for _, g in data]
    assume(all(abs(math.log(x / y)) > 1e-6 for d in dists for x in d.values() for y in d.values() if x != y))
    assume(all(len(set(d.values())) == len(d) for d in dists))
    scaled = [{k: v * c for k, v in d.items()} for d, c in zip(dists, scales, strict=False)]
    a = fit_offsets(dists, gold, labels=INTENTS)
    b = fit_offsets(scaled, gold, labels=INTENTS)
    acc = [[g] for g in gold]
    assert math.isclose(
        score_with_offsets(dists, gold, acc, a, labels=INTENTS),
        score_with_offsets(scaled, gold, acc, b, labels=INTENTS),
        abs_tol=1e-9,
    )


def _planted(gold, margin):
    dists = []
    for g in gold:
        logits = {k: -6.0 for k in INTENTS} | {g: 0.0}
        if g != "sql":
            logits["sql"] = margin
        z = sum(math.exp(v) for v in logits.values())
        dists.append({k: math.exp(v) / z for k, v in logits.items()})
    return dists


@given(st.lists(st.sampled_from(INTENTS), min_size=2, max_size=40), st.floats(0.2, 2.0))
def test_a_prior_the_prompt_put_on_sql_is_found_and_undone(gold, margin):
    # every request's gold label is the runner-up behind sql by `margin` nats, except sql's own
    assume(any(g != "sql" for g in gold))
    dists = _planted(gold, margin)
    offsets = fit_offsets(dists, gold, labels=INTENTS, max_offset=3.0)
    assert score_with_offsets(dists, gold, [[g] for g in gold], offsets, labels=INTENTS) == 1.0
    assert score_with_offsets(dists, gold, [[g] for g in gold], {}, labels=INTENTS) < 1.0


@settings(max_examples=30, deadline=None)
@given(_data, st.integers(2, 5))
def test_cross_validation_chooses_the_smallest_of_the_best_bounds(data, folds):
    dists, gold = [d for d, _ in data], [g for _, g in data]
    bound, scores = choose_bound(dists, gold, labels=INTENTS, bounds=[2.0, 0.0, 1.0], folds=folds)
    assert set(scores) == {0.0, 1.0, 2.0} and all(0.0 <= v <= 1.0 for v in scores.values())
    assert scores[bound] == max(scores.values()) and all(b >= bound for b, v in scores.items() if v == scores[bound])
    assert fit_offsets(dists, gold, labels=INTENTS, max_offset=0.0) == dict.fromkeys(INTENTS, 0.0)


def test_cross_validation_keeps_a_prior_every_fold_shares_and_rejects_bad_settings():
    gold = ["sql"] * 12 + ["clarify"] * 5 + ["refuse"] * 5
    bound, scores = choose_bound(_planted(gold, 0.8), gold, labels=INTENTS, bounds=[0.0, 0.5, 1.0, 3.0], folds=5)
    assert bound == 1.0 and scores[1.0] == 1.0 > scores[0.5]  # 0.5 cannot undo a 0.8 nat prior
    with pytest.raises(ValueError, match="folds >= 2"):
        choose_bound(_planted(gold, 0.8), gold, labels=INTENTS, bounds=[1.0], folds=1)
    with pytest.raises(ConfigError, match="folds"):
        optimizer.build("calibrated", folds=1)


def _uneven_requests():
    # 26 requests, a third of them sql, every one with sql inflated by the prompt; some accept
    # clarify too: enough spread that every bound and strength scores differently
    rng = random.Random(38)
    dists, gold, accepted = [], [], []
    for i in range(26):
        g = INTENTS[i % len(INTENTS)] if i % 3 else "sql"
        xs = {k: rng.uniform(0.01, 1.0) for k in INTENTS}
        xs["sql"] += 0.6
        xs[g] += rng.uniform(0.0, 0.8)
        z = sum(xs.values())
        dists.append({k: v / z for k, v in xs.items()})
        gold.append(g)
        accepted.append([g, "clarify"] if i % 7 == 0 else [g])
    return dists, gold, accepted


def test_both_cross_validations_give_the_scores_they_gave_before_sharing_one_loop():
    # recorded from choose_bound / choose_l2 at 3f50fb9, when each had its own fold loop: the
    # shared loop (_cross_validated) must reproduce them to the last rounded digit
    dists, gold, accepted = _uneven_requests()
    assert choose_bound(dists, gold, accepted, labels=INTENTS, bounds=[0.0, 0.25, 0.5, 1.0, 3.0], folds=4) == (
        0.5,
        {0.0: 0.3048, 0.25: 0.4736, 0.5: 0.5526, 1.0: 0.5006, 3.0: 0.5006},
    )
    assert choose_bound(dists, gold, None, labels=INTENTS, bounds=[0.0, 2.0], folds=5) == (
        2.0,
        {0.0: 0.3048, 2.0: 0.452},
    )
    l2, scores = choose_l2(dists, gold, accepted, labels=INTENTS, folds=4)
    assert l2 == 0.1 and scores == {
        0.001: 0.3472,
        0.003: 0.2666,
        0.01: 0.3044,
        0.03: 0.4015,
        0.1: 0.5946,
        0.3: 0.5341,
        1.0: 0.4359,
        3.0: 0.3611,
    }
    assert choose_l2(dists, gold, None, labels=INTENTS, folds=3, grid=[0.01, 1.0]) == (
        1.0,
        {0.01: 0.3514, 1.0: 0.4829},
    )


def test_accepted_alternates_count_and_bad_input_is_named():
    dists = [{"sql": 0.6, "unanswerable": 0.4}, {"sql": 0.9, "unanswerable": 0.1}]
    # the first request also accepts sql: nothing to fix, no offset moves
    assert fit_offsets(dists, ["unanswerable", "sql"], [["unanswerable", "sql"], ["sql"]], labels=INTENTS) == (
        dict.fromkeys(INTENTS, 0.0)
    )
    assert routing_score(["unanswerable", "sql"], [True, True]) == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        fit_offsets(dists, ["sql"], labels=INTENTS)
    with pytest.raises(ValueError, match="at least one"):
        fit_offsets([], [], labels=INTENTS)
    with pytest.raises(ValueError, match="non-negative"):
        fit_offsets(dists, ["sql", "sql"], labels=INTENTS, max_offset=-1)


class _SqlBiasedEngine(ScriptedEngine):
    """Scores labels from the gold intent of known requests, with sql ahead of the rare intents."""

    def __init__(self, gold: dict[str, str]) -> None:
        super().__init__(lambda request: adapter_reply({"intent": "sql"}))
        self.gold = gold
        self.scored = 0

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        self.scored += 1
        request = messages[-1]["content"].removeprefix("Request: ")
        g = self.gold.get(request, "sql")
        logits = dict.fromkeys(choices, -4.0) | {g: 0.0}
        if g in ("clarify", "refuse", "unanswerable"):
            logits["sql"] = 0.7  # the prompt's bias: sql first, the right label second
        z = sum(math.exp(v) for v in logits.values())
        probs = {k: math.exp(v) / z for k, v in logits.items()}
        return ChoiceScores(probs, 0.9, 100, 80, 20, "live", 0.0)

    def continue_reply(self, prefix, messages, reply_prefix, *, stop, max_tokens=64):
        raise AssertionError("intent routing never continues a reply")


@pytest.fixture(scope="module")
def builtin():
    return load_builtin()


def _biased_lm(builtin) -> dspy.LM:
    gold = {e.question: e.intent for s in ("train", "dev") for e in builtin.split(s)}
    return dspy.LM("scripted/biased", engine=_SqlBiasedEngine(gold), cache=False, callbacks=[UsageCallback()])


def test_calibrated_compiles_its_base_then_fits_offsets_that_fix_the_rare_intents(builtin, tmp_path):
    lm = _biased_lm(builtin)
    out = tmp_path / "cal.json"
    report = optimize_router(
        builtin,
        lm,
        lm_spec="scripted:biased",
        optimizer="calibrated",
        optimizer_args={"base": "stratified", "base_args": {"per_intent": 1}},
        out=out,
        score_fit=False,
    )
    zero = report.zero_shot_heldout
    assert zero is not None and zero.recall["clarify"] == zero.recall["refuse"] == 0.0
    assert report.heldout.recall["clarify"] == report.heldout.recall["refuse"] == 1.0
    assert report.heldout.recall["sql"] == 1.0 and report.heldout.score > zero.score
    # the same held-out calls before the offsets: the engine ignores demos, so what zero-shot did
    assert report.heldout.uncalibrated == {"score": zero.score, "accuracy": zero.accuracy, "recall": zero.recall}
    notes = report.optimizer_notes
    assert notes["calibration_examples"] == report.fit_size - report.demos
    assert notes["calibration_score_after"] > notes["calibration_score_before"]
    data = notes["calibration_data"]
    assert len(data) == notes["calibration_examples"]
    refit = fit_offsets(
        [d["probs"] for d in data], [d["gold"] for d in data], [d["accepted"] for d in data], labels=INTENTS
    )
    assert refit == report.calibration  # the saved distributions give the offsets back
    # the rare intents were lifted above sql, sql was never lifted above them
    cal = report.calibration
    assert min(cal["clarify"], cal["refuse"], cal["unanswerable"]) > 0.7 + cal["sql"]
    # the calibration read every fit example but the 7 demos once, then held-out was scored
    assert lm.engine.scored == report.heldout_size * 2 + (report.fit_size - report.demos)
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["optimizer"] == "calibrated" and meta["calibration"] == cal and meta["schema"] == "tables"
    assert meta["optimizer_args"] == {
        "base": "stratified",
        "base_args": {"per_intent": 1},
        "max_offset": 3.0,
        "folds": 0,
        "seed": 0,
        "map": "offsets",
        "l2": None,
        "instructions": None,
    }
    loaded, _ = load_program(str(out))
    assert loaded.route.calibration == cal and len(loaded.route.demos) == 7


def _recompile(builtin, meta: dict, out, *, lm_spec: str):
    """Run ``optimize`` again with the settings a ``.meta.json`` recorded; returns ``out``."""
    optimize_router(
        builtin,
        _biased_lm(builtin),
        lm_spec=lm_spec,
        optimizer=meta["optimizer"],
        optimizer_args=meta["optimizer_args"],
        seed=meta["seed"],
        heldout_fraction=meta["heldout_fraction"],
        safety=meta["safety"],
        schema=meta["schema"],
        checks=tuple(meta.get("checks") or ()),
        out=out,
        zero_shot=False,
        score_fit=False,
    )
    return out


def test_the_saved_settings_rebuild_the_same_program(builtin, tmp_path):
    # what `routerlab optimize` records is enough to compile the same program again
    first = tmp_path / "a.json"
    optimize_router(
        builtin,
        _biased_lm(builtin),
        lm_spec="scripted:biased",
        optimizer="calibrated",
        optimizer_args={"base": "stratified", "base_args": {"per_intent": 2}},
        schema="columns",
        out=first,
        zero_shot=False,
        score_fit=False,
    )
    meta = json.loads(first.with_suffix(".meta.json").read_text())
    again = _recompile(builtin, meta, tmp_path / "b.json", lm_spec=meta["lm"])
    a, b = json.loads(first.read_text()), json.loads(again.read_text())
    a.pop("metadata", None), b.pop("metadata", None)
    assert a == b and a["route"]["schema"] == "columns" and "(" in a["route"]["demos"][0]["tables"]


def test_calibration_needs_label_probabilities_and_a_base(builtin, tmp_path):
    with pytest.raises(ConfigError, match="cannot calibrate itself"):
        optimizer.build("calibrated", base="calibrated")
    with pytest.raises(ConfigError, match="bad arguments"):
        optimizer.build("calibrated", base="bootstrap", base_args={"per_intent": 1})
    from routerlab.agents.lm import resolve_lm

    with pytest.raises(ConfigError, match="label probabilities"):
        optimize_router(
            builtin,
            resolve_lm("scripted:basic"),
            lm_spec="scripted:basic",
            optimizer="calibrated",
            train_limit=30,
            out=tmp_path / "x.json",
            zero_shot=False,
            score_fit=False,
        )


@pytest.mark.model
@pytest.mark.parametrize("fit", [{"max_offset": 2.0}, {"map": "affine", "l2": 0.1}], ids=["offsets", "affine"])
def test_on_the_real_model_the_calibration_is_fitted_on_its_distributions_and_the_program_applies_it(builtin, fit):
    # the 0.5B model: the mechanics on real distributions, not routing quality (optimize measures that)
    from routerlab.agents.db import open_database
    from routerlab.agents.lm import resolve_lm
    from routerlab.fit.optimize import to_dspy_examples
    from routerlab.routers.dspy_router import RouteProgram
    from routerlab.routers.support.label_calibration import shift
    from routerlab.routers.support.lm_intent import IntentPrompt, classify_one_pass

    lm = resolve_lm("local:0.5b", cache=False, max_tokens=16)
    train = builtin.split("train")
    picked = [e for intent in INTENTS for e in [x for x in train if x.intent == intent][:2]]
    db = picked[0].db_path
    data = to_dspy_examples(picked, {db: ", ".join(t.name for t in open_database(db).tables())})
    opt = optimizer.build("calibrated", base="stratified", base_args={"per_intent": 1}, **fit)
    with dspy.context(lm=lm):
        program = opt.compile(RouteProgram(), trainset=data, valset=[], metric=lambda *a, **k: 1.0, lm=lm)
    offsets, weights = program.route.calibration, program.route.calibration_weights
    assert set(offsets) == set(INTENTS) and bool(weights) == (fit.get("map") == "affine")
    if not weights:
        assert all(abs(v) <= 2.0 for v in offsets.values())
    prompt = IntentPrompt.from_predict(program.route)
    shown = {r for _, r, _ in prompt.demos}
    rest = [ex for ex in data if ex.request not in shown]
    assert len(prompt.demos) == len(INTENTS) and len(rest) == len(INTENTS)
    raw = [classify_one_pass(lm, prompt, tables=ex.tables, request=ex.request) for ex in rest]
    assert all(r is not None and r.usage.lm_calls == 1 for r in raw)
    gold, acc = [ex.intent for ex in rest], [list(ex.accepted) for ex in rest]
    dists = [r.scores.probs for r in raw]
    # these are the distributions the calibration was fitted on: it did not make its objective worse
    if weights:
        kept = opt.notes["calibration_data"]  # exactly what was fitted on
        d, g, a = [x["probs"] for x in kept], [x["gold"] for x in kept], [x["accepted"] for x in kept]
        assert sorted(g) == sorted(gold) and len(d) == len(dists)
        assert affine_loss(d, g, a, weights, offsets, labels=INTENTS, l2=0.1) <= affine_loss(
            d, g, a, {}, {}, labels=INTENTS, l2=0.1
        )
    else:
        assert score_with_offsets(dists, gold, acc, offsets, labels=INTENTS) >= score_with_offsets(
            dists, gold, acc, {}, labels=INTENTS
        )
    with dspy.context(lm=lm):
        for ex, r in zip(rest, raw, strict=True):
            # the program reads calibrated
            assert program(**ex.inputs()).intent == shift(r, offsets, weights).intent


def test_cli_rejects_a_self_calibration_and_an_unknown_schema_view_before_the_model():
    from typer.testing import CliRunner

    from routerlab.cli import app

    runner = CliRunner()
    bad = runner.invoke(app, ["optimize", "--optimizer", "calibrated", "--optimizer-arg", "base=calibrated"])
    assert bad.exit_code == 2 and "cannot calibrate itself" in bad.output
    bad = runner.invoke(app, ["optimize", "--optimizer", "calibrated", "--schema", "everything"])
    assert bad.exit_code == 2 and "tables" in bad.output and "columns" in bad.output
    bad = runner.invoke(app, ["optimize", "--optimizer", "calibrated", "--optimizer-arg", "map=isotonic"])
    assert bad.exit_code == 2 and "unknown calibration map" in bad.output and "affine" in bad.output
    bad = runner.invoke(
        app, ["optimize", "--optimizer", "calibrated", "--optimizer-arg", 'instructions=["brief", "tools"]']
    )
    assert bad.exit_code == 2 and "folds=5" in bad.output


@pytest.mark.parametrize("name", ["builtin", "builtin_evidence"])
def test_the_committed_program_is_rebuilt_by_its_recorded_settings(builtin, tmp_path, name):
    # `routerlab optimize` with the settings in the .meta.json compiles the committed program
    # again: the same schema view, instructions and demos (the stratified draw needs no LM). The
    # calibration, and the instruction variant when it chose among several, came from the real
    # model's distributions, so a scripted LM cannot give them back: the recompile is given the
    # variant the model chose, and the calibration is refitted from the distributions the
    # compile kept; the real-model test above checks how they are fitted.
    from routerlab.fit.label_calibration_fit import MAPS
    from routerlab.routers.dspy_router import program_path

    meta = json.loads(program_path(name).with_suffix(".meta.json").read_text())
    committed, _ = load_program(name)
    assert committed.route.checks == tuple(meta.get("checks") or ())  # and its demos show that evidence
    assert committed.route.calibration == meta["calibration"] and committed.route.schema == meta["schema"]
    assert committed.route.calibration_weights == meta.get("calibration_weights", {})
    notes, args = meta["optimizer_notes"], dict(meta["optimizer_args"])
    if "instructions" in notes:
        assert notes["instructions"] in args["instructions"]
        args["instructions"] = [notes["instructions"]]
    out = _recompile(builtin, {**meta, "optimizer_args": args}, tmp_path / "again.json", lm_spec="scripted:biased")
    again, _ = load_program(str(out))
    assert again.route.signature.instructions == committed.route.signature.instructions
    assert [dict(d) for d in again.route.demos] == [dict(d) for d in committed.route.demos]
    assert again.route.schema == committed.route.schema and set(again.route.calibration) == set(meta["calibration"])
    # and the calibration comes back from the distributions the compile kept, with the recorded settings
    data = notes["calibration_data"]
    dists, gold, acc = [d["probs"] for d in data], [d["gold"] for d in data], [d["accepted"] for d in data]
    fitted = MAPS[args.get("map", "offsets")](
        dists,
        gold,
        acc,
        labels=INTENTS,
        safety=meta["safety"],
        folds=args["folds"],
        max_offset=args["max_offset"],
        l2=args.get("l2"),
    )
    assert {k: notes.get(k) for k in fitted.notes} == fitted.notes  # the same setting chosen, the same CV scores
    assert fitted.offsets == committed.route.calibration
    assert fitted.weights == committed.route.calibration_weights


# --- the affine map (map=affine) ------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(_data, st.sampled_from([0.0, 0.01, 0.1, 1.0]))
def test_the_affine_fit_is_deterministic_and_never_worse_than_the_identity_on_its_own_loss(data, l2):
    dists, gold = [d for d, _ in data], [g for _, g in data]
    weights, offsets = fit_affine(dists, gold, labels=INTENTS, l2=l2)
    assert fit_affine(dists, gold, labels=INTENTS, l2=l2) == (weights, offsets)
    assert set(weights) == set(INTENTS) and all(set(row) == set(INTENTS) for row in weights.values())
    fitted = affine_loss(dists, gold, None, weights, offsets, labels=INTENTS, l2=l2)
    assert fitted <= affine_loss(dists, gold, None, {}, {}, labels=INTENTS, l2=l2) + 1e-9


@settings(max_examples=40, deadline=None)
@given(_data)
def test_offsets_are_the_affine_map_with_the_identity_matrix(data):
    dists, gold = [d for d, _ in data], [g for _, g in data]
    offsets = fit_offsets(dists, gold, labels=INTENTS, max_offset=2.0)
    identity = {k: {j: float(k == j) for j in INTENTS} for k in INTENTS}
    acc = [[g] for g in gold]
    expected = score_with_offsets(dists, gold, acc, offsets, labels=INTENTS)
    assert score_with_map(dists, gold, acc, identity, offsets, labels=INTENTS) == pytest.approx(expected, abs=1e-12)
    assert score_with_map(dists, gold, acc, {}, offsets, labels=INTENTS) == pytest.approx(expected, abs=1e-12)
    # the loss the affine fit minimises sees the same thing for both spellings of the identity
    assert affine_loss(dists, gold, acc, identity, offsets, labels=INTENTS) == pytest.approx(
        affine_loss(dists, gold, acc, {}, offsets, labels=INTENTS)
    )


@settings(max_examples=30, deadline=None)
@given(_data, st.lists(st.floats(0.01, 100.0), min_size=30, max_size=30))
def test_the_affine_map_reads_only_ratios_and_strong_regularisation_is_the_identity(data, scales):
    dists, gold = [d for d, _ in data], [g for _, g in data]
    scaled = [{k: v * c for k, v in d.items()} for d, c in zip(dists, scales, strict=False)]
    w1, b1 = fit_affine(dists, gold, labels=INTENTS, l2=0.1)
    w2, b2 = fit_affine(scaled, gold, labels=INTENTS, l2=0.1)
    assert all(w1[k][j] == pytest.approx(w2[k][j], abs=1e-4) for k in INTENTS for j in INTENTS)
    assert all(b1[k] == pytest.approx(b2[k], abs=1e-4) for k in INTENTS)
    w, b = fit_affine(dists, gold, labels=INTENTS, l2=1e6)
    assert all(abs(w[k][j] - (k == j)) < 1e-3 for k in INTENTS for j in INTENTS)
    assert all(abs(v) < 1e-3 for v in b.values())


def _mixed_cue(n_sql: int, n_clarify: int):
    # both intents put sql first and clarify second by the same margin; only the chat label's
    # probability tells them apart (a clarify request is also half chat): no offset can separate
    # them, a map that lets chat's log probability move clarify's logit can
    dists, gold = [], []
    for g, chat in [("sql", -4.0)] * n_sql + [("clarify", 0.5)] * n_clarify:
        logits = dict.fromkeys(INTENTS, -4.0) | {"sql": 1.0, "clarify": 0.0, "chat": chat}
        z = sum(math.exp(v) for v in logits.values())
        dists.append({k: math.exp(v) / z for k, v in logits.items()})
        gold.append(g)
    return dists, gold


def test_the_affine_map_separates_what_no_offset_can():
    dists, gold = _mixed_cue(12, 6)
    acc = [[g] for g in gold]
    offsets = fit_offsets(dists, gold, labels=INTENTS, max_offset=3.0)
    best_offsets = score_with_offsets(dists, gold, acc, offsets, labels=INTENTS)
    weights, b = fit_affine(dists, gold, labels=INTENTS, l2=0.001)
    assert score_with_map(dists, gold, acc, weights, b, labels=INTENTS) == 1.0 > best_offsets
    l2, scores = choose_l2(dists, gold, labels=INTENTS, folds=3)
    assert set(scores) == set(L2_GRID) and scores[l2] == max(scores.values()) == 1.0
    assert all(v <= l2 for v, s in scores.items() if s == 1.0)  # ties: the strongest regularisation
    with pytest.raises(ValueError, match="folds >= 2"):
        choose_l2(dists, gold, labels=INTENTS, folds=1)
    with pytest.raises(ValueError, match="non-negative"):
        fit_affine(dists, gold, labels=INTENTS, l2=-1.0)


def test_the_calibrated_optimizer_rejects_maps_and_instructions_it_cannot_use():
    with pytest.raises(ConfigError, match="unknown calibration map") as err:
        optimizer.build("calibrated", map="isotonic")
    assert "offsets" in str(err.value) and "affine" in str(err.value)
    with pytest.raises(ConfigError, match="needs an L2 strength"):
        optimizer.build("calibrated", map="affine")
    with pytest.raises(ConfigError, match="l2 must be non-negative"):
        optimizer.build("calibrated", map="affine", l2=-0.5)
    with pytest.raises(ConfigError, match="known instruction variants") as err:
        optimizer.build("calibrated", instructions=["brief", "poetic"], folds=5)
    assert "tools" in str(err.value)
    with pytest.raises(ConfigError, match="needs cross-validation"):
        optimizer.build("calibrated", instructions=["brief", "tools"])
    built = optimizer.build("calibrated", map="affine", folds=5, instructions=["tools"])
    assert (built.map, built.l2, built.instructions) == ("affine", None, ["tools"])


def test_the_affine_optimizer_end_to_end_saves_and_applies_its_map(builtin, tmp_path):
    lm = _biased_lm(builtin)
    out = tmp_path / "affine.json"
    report = optimize_router(
        builtin,
        lm,
        lm_spec="scripted:biased",
        optimizer="calibrated",
        optimizer_args={"base": "stratified", "base_args": {"per_intent": 1}, "map": "affine", "folds": 5},
        out=out,
        score_fit=False,
    )
    assert report.heldout.recall["clarify"] == report.heldout.recall["refuse"] == 1.0
    assert report.heldout.score > report.zero_shot_heldout.score
    notes = report.optimizer_notes
    assert notes["calibration_map"] == "affine" and notes["calibration_l2"] in L2_GRID
    assert notes["calibration_score_after"] > notes["calibration_score_before"]
    assert set(report.calibration_weights) == set(INTENTS)
    data = notes["calibration_data"]
    refit = fit_affine(
        [d["probs"] for d in data],
        [d["gold"] for d in data],
        [d["accepted"] for d in data],
        labels=INTENTS,
        l2=notes["calibration_l2"],
    )
    assert refit == (report.calibration_weights, report.calibration)  # the saved distributions give the map back
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["calibration_weights"] == report.calibration_weights and meta["optimizer_args"]["map"] == "affine"
    loaded, _ = load_program(str(out))
    assert loaded.route.calibration_weights == report.calibration_weights
    assert loaded.route.calibration == report.calibration
    # and the saved settings compile the same program again
    again = _recompile(builtin, meta, tmp_path / "again.json", lm_spec=meta["lm"])
    a, b = json.loads(out.read_text()), json.loads(again.read_text())
    a.pop("metadata", None), b.pop("metadata", None)
    assert a == b


class _InstructionEngine(_SqlBiasedEngine):
    """Knows each request's intent only under instructions that contain ``marker``; else says sql."""

    def __init__(self, gold: dict[str, str], marker: str) -> None:
        super().__init__(gold)
        self.marker = marker
        self.systems: set[str] = set()

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        self.systems.add(prefix[0]["content"].split("\n")[0])
        if self.marker in prefix[0]["content"]:
            return super().score_choices(prefix, messages, choices, reply_prefix=reply_prefix)
        self.scored += 1
        logits = dict.fromkeys(choices, -4.0) | {"sql": 0.0}
        z = sum(math.exp(v) for v in logits.values())
        return ChoiceScores({k: math.exp(v) / z for k, v in logits.items()}, 0.9, 100, 80, 20, "live", 0.0)


def test_the_instruction_variant_with_the_best_cross_validated_score_is_kept(builtin, tmp_path):
    from routerlab.routers.dspy_router import INSTRUCTIONS
    from routerlab.routers.support.turns import without_pleasantries

    # keyed as the program reads a request: greetings and thanks around it stripped
    gold = {without_pleasantries(e.question): e.intent for s in ("train", "dev") for e in builtin.split(s)}
    engine = _InstructionEngine(gold, marker=INSTRUCTIONS["tools"].split("\n")[-1])
    lm = dspy.LM("scripted/instr", engine=engine, cache=False, callbacks=[UsageCallback()])
    out = tmp_path / "instr.json"
    report = optimize_router(
        builtin,
        lm,
        lm_spec="scripted:instr",
        optimizer="calibrated",
        optimizer_args={"base_args": {"per_intent": 1}, "folds": 3, "instructions": ["brief", "tools"]},
        out=out,
        zero_shot=False,
        score_fit=False,
    )
    notes = report.optimizer_notes
    assert notes["instructions"] == "tools"
    assert notes["instructions_cv_score_tools"] > notes["instructions_cv_score_brief"]
    assert report.heldout.accuracy == 1.0
    loaded, _ = load_program(str(out))
    assert loaded.route.signature.instructions == INSTRUCTIONS["tools"]
    assert len(engine.systems) == 2  # both variants were read
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["optimizer_args"]["instructions"] == ["brief", "tools"]
