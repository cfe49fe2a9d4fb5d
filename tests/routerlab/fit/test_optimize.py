"""``routerlab optimize``: fit / held-out division, the one-pass program path, each optimizer, provenance.

The optimizers run against a scripted LM whose engine also scores labels (the embedded engine's
one-pass interface, no model): it answers the intent of the demo in its prompt that shares most
words with the request, else ``sql``. A program with demos of the right intents therefore routes
better than a zero-shot one, which is what an optimizer must find.
"""

from __future__ import annotations

import json
import re

import dspy
import pytest
from typer.testing import CliRunner

from routerlab.agents.errors import ConfigError
from routerlab.agents.lm.scoring import ChoiceScores
from routerlab.agents.lm.scripted import ScriptedEngine, adapter_reply
from routerlab.agents.lm.usage import UsageCallback
from routerlab.agents.registry import UnknownComponentError, component_spec
from routerlab.benchmarks.builtin import load_builtin
from routerlab.cli import app
from routerlab.fit.optimize import holdout_split, optimize_router, score_program
from routerlab.fit.optimizers import optimizer
from routerlab.routers.dspy_router import IntentPredict, RouteProgram, load_program


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z_]+", text.lower()))


class _NearestDemoEngine(ScriptedEngine):
    """Generation replies from a script; label scoring by the nearest demo in the prompt prefix."""

    def __init__(self) -> None:
        super().__init__(lambda request: adapter_reply({"intent": "sql", "proposed_instruction": "Route it."}))
        self.scored: list[int] = []  # demos in the prefix of each scoring call

    def score_choices(self, prefix, messages, choices, *, reply_prefix=""):
        request = _words(messages[-1]["content"])
        demos = [(prefix[i]["content"], prefix[i + 1]["content"]) for i in range(1, len(prefix) - 1, 2)]
        self.scored.append(len(demos))
        best: dict[str, float] = {c: 0.0 for c in choices}
        for text, label in demos:
            overlap = len(request & _words(text)) / max(1, len(request | _words(text)))
            if label in best:
                best[label] = max(best[label], overlap)
        best["sql"] = max(best["sql"], 0.05)  # the zero-shot answer
        top = max(best, key=lambda k: best[k])
        probs = {c: (0.9 if c == top else 0.1 / (len(choices) - 1)) for c in choices}
        return ChoiceScores(probs, 0.9, 100, 80, 20, "live", 0.0)

    def continue_reply(self, prefix, messages, reply_prefix, *, stop, max_tokens=64):
        raise AssertionError("intent routing never continues a reply")


def _lm() -> dspy.LM:
    lm = dspy.LM("scripted/nearest", engine=_NearestDemoEngine(), cache=False, callbacks=[UsageCallback()])
    return lm


@pytest.fixture(scope="module")
def builtin():
    return load_builtin()


def test_holdout_is_stratified_deterministic_and_disjoint(builtin):
    train = builtin.split("train")
    fit, held = holdout_split(train, 1 / 3, seed=0)
    assert len(fit) + len(held) == len(train)
    assert {e.id for e in fit}.isdisjoint({e.id for e in held})
    assert {e.intent for e in held} == {e.intent for e in train}  # every intent is held out
    for intent in {e.intent for e in train}:
        n = sum(e.intent == intent for e in train)
        assert sum(e.intent == intent for e in held) == min(max(round(n / 3), 1), n - 1)
    assert [e.id for e in holdout_split(train, 1 / 3, seed=0)[1]] == [e.id for e in held]
    assert [e.id for e in holdout_split(train, 1 / 3, seed=1)[1]] != [e.id for e in held]
    assert holdout_split(train, 0.0, seed=0) == (list(train), [])
    with pytest.raises(ConfigError, match="out of range"):
        holdout_split(train, 1.0, seed=0)


def test_intent_predict_scores_in_one_pass_with_its_demos_and_records_a_trace():
    lm = _lm()
    pred = IntentPredict()
    pred.demos = [dspy.Example(tables="t", conversation="", request="delete all complaints please", intent="refuse")]
    with dspy.context(lm=lm, trace=[]):
        out = pred(tables="t", conversation="", request="please delete the complaints")
        trace = dspy.settings.trace
    assert out.intent == "refuse"
    assert lm.engine.scored == [1]  # one scoring call, the demo in its prefix
    assert not lm.engine.requests  # no generation
    assert trace[-1][0] is pred and trace[-1][1]["request"] == "please delete the complaints"
    # without one-pass (or an LM that cannot score) the same predictor generates
    gen = IntentPredict(one_pass=False)
    with dspy.context(lm=lm):
        assert gen(tables="t", conversation="", request="hi").intent == "sql"
    assert len(lm.engine.requests) == 1


def test_unknown_optimizer_and_bad_settings_are_named():
    with pytest.raises(UnknownComponentError, match="random_search"):
        optimizer.build("random-search")
    with pytest.raises(ConfigError, match="candidates"):
        optimizer.build("bootstrap", candidates=3)
    assert set(optimizer.names()) == {"bootstrap", "random_search", "mipro", "gepa", "stratified", "calibrated"}


@pytest.mark.parametrize("name", ["bootstrap", "random_search", "mipro", "gepa", "stratified"])
def test_settings_are_type_checked_and_recorded_through_the_generated_constructor(name):
    # the plain-settings optimizers are dataclasses: the registry must still read their hints
    with pytest.raises(ConfigError, match="seed"):
        optimizer.build(name, seed="zero")
    built = optimizer.build(name, seed=3)
    assert built.seed == 3 and optimizer.rebuild(component_spec(built)).seed == 3


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("bootstrap", {"demos": 4}),
        ("random_search", {"demos": 2, "labeled": 8, "candidates": 2}),
        ("mipro", {"demos": 2, "candidates": 2, "trials": 2, "minibatch_size": 10}),
        ("gepa", {"metric_calls": 40, "minibatch": 3}),
        ("stratified", {"per_intent": 1}),
    ],
)
def test_each_optimizer_compiles_on_fit_chooses_on_heldout_and_records_provenance(builtin, tmp_path, name, args):
    lm = _lm()
    out = tmp_path / f"{name}.json"
    report = optimize_router(
        builtin, lm, lm_spec="scripted:nearest", optimizer=name, optimizer_args=args, seed=0, out=out
    )
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["optimizer"] == name and meta["optimizer_args"] == {**args, "seed": 0}
    assert meta["fit_size"] + meta["heldout_size"] == len(builtin.split("train"))
    assert meta["dev"] is None  # dev is never scored by a compile
    assert meta["heldout"]["uncalibrated"] is None and meta["calibration"] == {}  # no offsets to undo
    assert meta["zero_shot_heldout"]["accuracy"] == pytest.approx(
        sum(e.intent == "sql" for e in holdout_split(builtin.split("train"), 1 / 3, 0)[1]) / meta["heldout_size"],
        abs=1e-4,
    )  # the zero-shot program answers sql to everything
    assert set(meta["heldout"]["recall"]) == {e.intent for e in builtin.split("train")}
    assert not [r for r in lm.engine.requests if "intent" in str(r.system) and "request" in str(r.messages)], (
        "program calls went through generation, not one-pass scoring"
    )
    loaded, _ = load_program(str(out))
    assert len(loaded.route.demos) == report.demos
    if name == "bootstrap":  # no search: the first demos that pass, mostly data questions
        assert report.demos > 0 and report.heldout.score >= report.zero_shot_heldout.score
    elif name == "stratified":  # one demo of each intent, no LM call to choose them
        assert sorted(d["intent"] for d in loaded.route.demos) == sorted({e.intent for e in builtin.split("train")})
        assert report.heldout.score > report.zero_shot_heldout.score
    elif name == "random_search":  # a search chosen on held-out finds demos of other intents
        assert report.demos > 0 and report.heldout.score > report.zero_shot_heldout.score
    elif name == "mipro":  # the default program is a candidate: the choice is never worse on held-out
        assert report.heldout.score >= report.zero_shot_heldout.score
    else:  # GEPA rewrites instructions only; the scripted reflection proposes one
        assert loaded.route.signature.instructions


def test_score_program_adds_dev_once_to_the_provenance(builtin, tmp_path):
    lm = _lm()
    out = tmp_path / "p.json"
    optimize_router(builtin, lm, lm_spec="scripted:nearest", optimizer_args={"demos": 2}, out=out, score_fit=False)
    figures = score_program(out, builtin, lm, on="dev")
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["dev"]["n"] == len(builtin.split("dev")) == figures.n
    assert meta["fit"] is None and meta["heldout"]["n"] == meta["heldout_size"]
    with pytest.raises(ConfigError, match="dev, heldout or fit"):
        score_program(out, builtin, lm, on="test")


def test_cli_compiles_logs_to_mlflow_and_rejects_bad_settings_before_the_model(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["optimize", "--optimizer", "bootstrap", "--optimizer-arg", "trials=3"])
    assert bad.exit_code == 2 and "trials" in bad.output
    bad = runner.invoke(app, ["optimize", "--optimizer-arg", "demos"])
    assert bad.exit_code == 2 and "PARAM=VALUE" in bad.output
    out = tmp_path / "p.json"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ok = runner.invoke(
        app,
        [
            *("optimize", "--lm", "scripted:basic", "--budget", "1", "--train-limit", "20"),
            *("--out", str(out), "--tracking-uri", uri, "--no-score-fit"),
        ],
    )
    assert ok.exit_code == 0, ok.output
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["routerlab/builtin/optimize"])
    run = runs[runs["tags.mlflow.runName"] == "optimize-dspy-bootstrap"].iloc[0]
    assert run["params.optimizer"] == "bootstrap" and run["params.optimizer.demos"] == "1"
    assert (
        run["params.lm"] == "scripted:basic" and "metrics.heldout_score" in runs and "metrics.compile_seconds" in runs
    )
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["lm"] == "scripted:basic" and meta["optimizer_args"] == {"demos": 1, "seed": 0}


def test_the_program_defaults_to_one_pass_and_loads_either_way():
    assert RouteProgram().route.one_pass and not RouteProgram(one_pass=False).route.one_pass
    prog, path = load_program("builtin", one_pass=False)
    assert path is not None and not prog.route.one_pass and prog.route.demos
