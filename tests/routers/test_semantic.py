"""The semantic router on the real MiniLM ONNX index: exemplars, calibration, fallback, cache."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from routerlab import routers
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, ContractError, DatasetError
from routerlab.agents.lm import scripted_lm
from routerlab.agents.routing import RouterEnv
from routerlab.agents.state import initial_state
from routerlab.agents.tools import DEFAULT_TOOLS
from routerlab.agents.tools.index import load_embedder
from routerlab.benchmarks.builtin.loader import load_builtin
from routerlab.routers.semantic import embed_cached, exemplar_path, read_exemplars, write_exemplars

EXPLAIN = "Could you walk me through what this query does? SELECT province, COUNT(*) FROM service_areas GROUP BY 1"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """A private cache root, so the tests embed the exemplars themselves once."""
    with pytest.MonkeyPatch.context() as mp:
        root = tmp_path_factory.mktemp("cache")
        mp.setenv("ROUTERLAB_CACHE", str(root))
        yield root


def bound(lm=None, **args):
    r = routers.router.build("semantic", **args)
    r.bind(RouterEnv(tools=DEFAULT_TOOLS, lm=lm, open_db=open_database))
    return r


@pytest.fixture(scope="module")
def semantic(cache_dir):
    return bound()


def recording_lm(tool: str, args: dict):
    """A scripted LM that always calls ``tool``; its engine records every request."""
    return scripted_lm(lambda request: {"name": tool, "args": args})


def test_committed_exemplars_are_exactly_the_builtin_train_split():
    texts, intents, source = read_exemplars("builtin")
    train = [e for e in load_builtin().examples if e.split == "train"]
    assert texts == [e.question for e in train] and intents == [e.intent for e in train]
    dev = {e.question for e in load_builtin().examples if e.split != "train"}
    assert not dev & set(texts), "a dev or test request leaked into the exemplars"
    assert "train" in source


def test_exemplar_vectors_are_cached_on_disk_by_model_and_texts(semantic, cache_dir):
    files = list((cache_dir / "semantic").glob("*.npy"))
    assert len(files) == 1
    texts, _, _ = read_exemplars("builtin")
    stored = np.load(files[0])
    assert stored.shape == (len(texts), 384)
    assert np.allclose(stored, semantic._vectors)

    class Refuses:
        """Same identity as the real model, but embedding anything fails: only the cache can answer."""

        model_path = load_embedder().model_path  # type: ignore[attr-defined]

        def embed(self, texts):
            raise AssertionError("embedded again although the vectors were cached")

    assert np.array_equal(embed_cached(Refuses(), texts), stored)
    with pytest.raises(AssertionError):  # other texts: another key, so a real embedding is needed
        embed_cached(Refuses(), texts[:-1])


def test_an_unreadable_cache_file_is_recomputed(tmp_path):
    embedder = load_embedder()
    texts = ["how many areas are there", "hello there"]
    first = embed_cached(embedder, texts, cache_dir=tmp_path)
    (path,) = tmp_path.glob("*.npy")
    path.write_bytes(b"not a numpy file")
    again = embed_cached(embedder, texts, cache_dir=tmp_path)
    assert np.allclose(first, again) and np.load(path).shape == (2, 384)


def test_a_read_only_cache_still_gives_the_vectors(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder should be")
    vectors = embed_cached(load_embedder(), ["hello there"], cache_dir=blocked / "semantic")
    assert vectors.shape == (1, 384)


def test_calibration_scores_each_exemplar_only_against_other_folds(semantic):
    cal = semantic.calibration
    assert np.isfinite(cal.margins).all()
    # a held-back request never meets itself: with no duplicate exemplars the nearest is < 1
    assert cal.nearest.max() < 0.999
    assert 0.5 <= cal.coverage() <= 1.0
    # the rules threshold maximises held-back accuracy, so it is at least what either side alone gets
    assert cal.accuracy() >= max(cal.fallback_correct.mean(), cal.correct.mean()) - 1e-9
    info = semantic.describe()
    assert info["exemplars"] == len(cal.margins) and info["threshold"] == cal.threshold


def test_confident_path_makes_no_lm_call(cache_dir):
    lm = recording_lm("chat", {"message": "hi"})
    r = bound(lm, fallback="llm")
    d = r.decide(initial_state(EXPLAIN, "db.duckdb"))
    assert d.method == "semantic:centroid" and d.intent == "explain"
    assert d.usage.lm_calls == 0 and lm.routerlab_engine.requests == []
    assert d.tool_calls[0]["name"] == "explain_sql"


def test_below_the_threshold_the_lm_decides(cache_dir):
    lm = recording_lm("refuse", {"reason": "read-only"})
    r = bound(lm, fallback="llm", threshold=5.0)  # margins are cosine differences: never 5
    d = r.decide(initial_state(EXPLAIN, "db.duckdb"))
    assert d.method == "semantic:fallback-llm" and d.intent == "refuse"
    assert d.usage.lm_calls == 1 and len(lm.routerlab_engine.requests) == 1


def test_an_unusable_lm_reply_keeps_the_semantic_guess(cache_dir):
    lm = scripted_lm(["no tool call here"])
    r = bound(lm, fallback="llm", threshold=5.0)
    d = r.decide(initial_state(EXPLAIN, "db.duckdb"))
    assert d.method == "semantic:fallback-llm(invalid)" and d.intent == "explain" and d.usage.lm_calls == 1


def test_below_the_threshold_the_rules_decide(cache_dir):
    r = bound(threshold=5.0)
    rules = routers.router.build("rules")
    for text in ("Delete all rows from the revenue table", EXPLAIN, "How did that area do recently?"):
        d = r.decide(initial_state(text, "db.duckdb"))
        intent, conf, _, _ = rules.classify(initial_state(text, "db.duckdb"))
        assert (d.method, d.intent, d.confidence) == ("semantic:fallback-rules", intent, conf)
    # a turn the turn checks place outside the data is theirs at any threshold (routers/support/turns.py)
    d = r.decide(initial_state("hello!", "db.duckdb"))
    assert (d.method, d.intent, d.confidence) == ("semantic:turn-check:greeting", "chat", 0.9)


def test_a_request_unlike_every_exemplar_goes_to_the_fallback(semantic):
    # the margin alone may be large, but the nearest exemplar is far: the floor sends it to the rules
    text = "Quelle est la capitale de la Mongolie ? Réponds en une phrase."
    d = semantic.decide(initial_state(text, "db.duckdb"))
    assert d.method == "semantic:fallback-rules"
    open_ = bound(threshold=0.0, floor_quantile=0.0)
    assert open_.decide(initial_state(text, "db.duckdb")).method == "semantic:centroid"


def test_confidence_rises_with_the_margin(semantic):
    values = [semantic.confidence(m) for m in (0.0, 0.01, 0.05, 0.2, 1.0)]
    assert values[0] == 0.5 and all(a < b for a, b in itertools.pairwise(values)) and values[-1] <= 1.0
    d = semantic.decide(initial_state(EXPLAIN, "db.duckdb"))
    assert 0.5 < d.confidence < 1.0


def test_knn_strategy_routes_and_names_itself(cache_dir):
    r = bound(strategy="knn", k=3, threshold=0.0, floor_quantile=0.0)
    d = r.decide(initial_state(EXPLAIN, "db.duckdb"))
    assert (d.method, d.intent) == ("semantic:knn", "explain")


def test_separately_built_routers_decide_identically(semantic, cache_dir):
    other = bound()
    dev = [e for e in load_builtin().examples if e.split == "dev"][::7]
    for e in dev:
        s = initial_state(e.question, "db.duckdb")
        a, b = semantic.decide(s), other.decide(s)
        assert (a.intent, a.confidence, a.method) == (b.intent, b.confidence, b.method)


def test_dev_split_accuracy_of_the_real_index(semantic):
    """A regression guard on the real index: `routerlab route --router semantic` reports the full figure.

    Each request comes with its real database, as in a run: the rules fallback reads the schema to
    tell an unanswerable question from a data question.
    """
    dev = [e for e in load_builtin().examples if e.split == "dev"]
    right = 0
    for e in dev:
        d = semantic.decide(initial_state(e.question, e.db_path))
        right += d.intent in {e.intent, *e.alt_intents}
    assert right / len(dev) >= 0.8


@pytest.mark.parametrize(
    "args,fragment",
    [
        ({"strategy": "nearest"}, "['centroid', 'knn']"),
        ({"fallback": "human"}, "['rules', 'llm']"),
        ({"k": 0}, "k between 1 and 1000"),
        ({"folds": 1}, "folds >= 2"),
        ({"floor_quantile": 1.0}, "floor_quantile < 1"),
        ({"threshold": float("nan")}, "finite"),
    ],
)
def test_bad_arguments_say_what_was_expected(args, fragment):
    with pytest.raises(ConfigError) as info:
        routers.router.build("semantic", **args)
    assert fragment in str(info.value)


def test_the_lm_fallback_needs_an_lm():
    with pytest.raises(ContractError, match="needs a language model"):
        bound(None, fallback="llm")


def test_bad_exemplar_sets_are_refused(tmp_path):
    with pytest.raises(DatasetError) as info:
        routers.router.build("semantic", exemplars="nosuchset")  # refused when built, before any run
    assert "builtin" in str(info.value.expected)
    lonely = tmp_path / "one.json"
    write_exemplars(lonely, [("a", "hi", "chat"), ("b", "hello", "chat")], source="test")
    with pytest.raises(DatasetError, match="cannot train"):
        read_exemplars(str(lonely))
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"examples": [{"text": "x", "intent": "dance"}] * 2}))
    with pytest.raises(DatasetError) as info:
        read_exemplars(str(odd))
    assert "dance" in str(info.value.found)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(DatasetError, match="malformed"):
        read_exemplars(str(broken))


def test_an_exemplar_file_of_ones_own(tmp_path, cache_dir):
    records = [
        ("1", "how many singers are there", "sql"),
        ("2", "list every concert in 2014", "sql"),
        ("3", "drop the singer table", "refuse"),
        ("4", "delete all concerts", "refuse"),
    ]
    path = tmp_path / "concerts.json"
    write_exemplars(path, records, source="hand-written")
    r = bound(exemplars=str(path), folds=2, threshold=0.0, floor_quantile=0.0)
    assert r.describe()["source"] == "hand-written"
    assert r.decide(initial_state("remove every singer row", "db.duckdb")).intent == "refuse"
    assert exemplar_path("builtin").is_file()


def test_a_plain_data_question_keeps_the_rules_sql_whatever_its_nearest_exemplars(cache_dir):
    """The built-in exemplars hold "how many ... are there" clarifications of another domain; on a
    real car database the rules read a plain data question, and their sql stands (issue 59)."""
    from tests.conftest import SPIDER_DEV_A

    db = SPIDER_DEV_A / "database" / "car_1" / "car_1.sqlite"
    if not db.is_file():
        pytest.skip("shared data not found (set ROUTERLAB_SPIDER_DEV)")
    state = initial_state("How many makers are there?", str(db))
    embedding_only = bound(data_words_stand=False).decide(state)
    assert (embedding_only.intent, embedding_only.method) == ("clarify", "semantic:centroid")
    d = bound().decide(state)
    assert (d.intent, d.method) == ("sql", "semantic:centroid->rules")
    assert d.tool_calls[0]["name"] == "data_discovery"
    # a request the rules read as something else is still the embedding's to decide
    assert bound().decide(initial_state("Hi there!", str(db))).intent == "chat"
