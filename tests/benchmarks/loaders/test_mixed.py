"""The intent mixer: deterministic, honest derived requests on a real SQLite database."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routerlab.benchmarks.loaders  # noqa: F401  (registers the loaders and "mixed")
from routerlab.agents.db import open_database
from routerlab.agents.errors import ConfigError, SQLExecutionError
from routerlab.agents.plan import CHAINS
from routerlab.agents.registry import component_spec
from routerlab.benchmarks.dataset import Dataset, dataset
from routerlab.benchmarks.example import Example
from routerlab.benchmarks.loaders.mixed import _CHAT_MESSAGES, DEFAULT_RATIOS, mix_intents
from routerlab.benchmarks.loaders.mixed_clarify import _VAGUE_PHRASES
from routerlab.benchmarks.loaders.mixed_common import words

DB_SQL = """
CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, name TEXT, location TEXT, capacity INTEGER);
INSERT INTO stadium VALUES (1, 'Raith Rovers', 'Kirkcaldy', 10104), (2, 'Ayr United', 'Ayr', 11998);
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, concert_name TEXT, year INTEGER,
  stadium_id INTEGER REFERENCES stadium(stadium_id));
INSERT INTO concert VALUES (1, 'Auditions', 2014, 1), (2, 'Super bootcamp', 2014, 2), (3, 'Home Visits', 2015, 2);
"""

COUNTRIES = ("France", "Netherlands", "United States", "Japan", "Brazil", "Kenya", "Norway", "Chile", "India", "Peru")
LOCATIONS = ("Kirkcaldy", "Ayr", "Brechin", "Dundee", "Perth", "Stirling", "Paisley", "Falkirk", "Inverness", "Elgin")

#: (question, gold SQL) templates; every question contains its WHERE literal, so clarify never falls back
TEMPLATES = (
    ("What are the names of the singers from {c}?", "SELECT name FROM singer WHERE country = '{c}'"),
    ("How many singers from {c} are older than 30?", "SELECT count(*) FROM singer WHERE country = '{c}' AND age > 30"),
    ("What is the average age of singers from {c}?", "SELECT avg(age) FROM singer WHERE country = '{c}'"),
    (
        "How many concerts were held in each stadium in {l}?",
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "WHERE T2.location = '{l}' GROUP BY T2.name",
    ),
    ("What is the capacity of the stadium in {l}?", "SELECT capacity FROM stadium WHERE location = '{l}'"),
)


def _examples(db: Path, n: int, prefix: str = "m") -> list[Example]:
    out = []
    for k in range(n):
        question, sql = TEMPLATES[k % len(TEMPLATES)]
        values = {"c": COUNTRIES[k // len(TEMPLATES) % 10], "l": LOCATIONS[k // len(TEMPLATES) % 10]}
        out.append(
            Example(
                id=f"{prefix}-{k:03d}",
                question=question.format(**values),
                db_id="concert",
                db_path=str(db),
                intent="sql",
                gold_sql=sql.format(**values),
                expected_chain=CHAINS["sql"],
                difficulty="easy",
                split=("train", "dev", "test")[k % 3],
                dataset="toy",
            )
        )
    return out


@pytest.fixture(scope="module")
def concert_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mixer") / "concert.sqlite"
    con = sqlite3.connect(path)
    con.executescript(f"PRAGMA synchronous = OFF; BEGIN; {DB_SQL}; COMMIT;")  # no fsync per statement
    con.close()
    return path


@pytest.fixture(scope="module")
def base(concert_db: Path) -> Dataset:
    return Dataset(name="toy", version="v1", examples=_examples(concert_db, 50), source="toy")


@pytest.fixture(scope="module")
def mixed(base: Dataset) -> Dataset:
    return mix_intents(base, seed=0)


@pytest.fixture(scope="module")
def heavy(base: Dataset) -> Dataset:
    """Every intent but sql in equal shares, to exercise each deriver many times."""
    return mix_intents(base, seed=3, ratios={"explain": 1, "fix": 1, "chat": 1, "clarify": 1, "refuse": 1})


def _dicts(ds: Dataset) -> list[dict]:
    return [e.to_dict() for e in ds.examples]


def _by_id(ds: Dataset) -> dict[str, Example]:
    return {e.id: e for e in ds.examples}


def test_same_seed_same_examples(base, mixed):
    assert _dicts(mix_intents(base, seed=0)) == _dicts(mixed)
    assert mix_intents(base, seed=0).version == mixed.version


def test_different_seed_different_examples(base, mixed):
    other = mix_intents(base, seed=1)
    assert _dicts(other) != _dicts(mixed)
    assert other.version != mixed.version


def test_ratios_are_respected(mixed):
    counts = Counter(e.intent for e in mixed.examples)
    assert len(mixed.examples) == 50
    for intent, ratio in DEFAULT_RATIOS.items():
        assert abs(counts[intent] - ratio * 50) <= 1.5, (intent, counts)
    assert not [e for e in mixed.examples if "mix_fallback" in e.meta]


def test_custom_ratios_deal_only_those_intents(heavy):
    counts = Counter(e.intent for e in heavy.examples)
    assert counts["sql"] == 0
    assert all(counts[i] == 10 for i in ("explain", "fix", "chat", "clarify", "refuse")), counts


def test_derived_examples_keep_database_split_and_link(base, heavy):
    originals = _by_id(base)
    ids = [e.id for e in heavy.examples]
    assert len(set(ids)) == len(ids)
    for e in heavy.examples:
        source = originals[e.meta["mixed_from"]]
        assert e.id == f"{source.id}-{e.intent}"
        assert e.expected_chain == CHAINS[e.intent]
        assert (e.db_id, e.db_path, e.split, e.dataset) == (source.db_id, source.db_path, source.split, "toy")


def test_fix_examples_really_fail_with_the_recorded_error(base, heavy):
    originals = _by_id(base)
    fixes = [e for e in heavy.examples if e.intent == "fix"]
    assert fixes
    for e in fixes:
        with pytest.raises(SQLExecutionError) as info:
            open_database(e.db_path).execute(e.input_sql)
        assert info.value.engine_message == e.error_text
        assert e.input_sql in e.question and e.error_text in e.question
        assert e.gold_sql == originals[e.meta["mixed_from"]].gold_sql
        assert open_database(e.db_path).execute(e.gold_sql).columns  # the original still runs
    assert len({e.meta["breakage"] for e in fixes}) >= 2


def test_clarify_examples_remove_the_literal(base, heavy):
    originals = _by_id(base)
    clarifies = [e for e in heavy.examples if e.intent == "clarify"]
    assert clarifies
    for e in clarifies:
        literal = e.meta["removed_literal"]
        assert e.user_reply and literal in e.user_reply
        assert literal.lower() not in e.question.lower()
        original = originals[e.meta["mixed_from"]]
        assert e.gold_sql == original.gold_sql and literal in original.question
        if e.meta["removed"] == "literal":
            assert f"'{literal}'" in original.gold_sql
            assert any(p.format(what=words(e.meta["column"])) in e.question for p in _VAGUE_PHRASES)
        else:
            assert e.meta["removed"] == "limit" and "a few" in e.question and f"LIMIT {literal}" in original.gold_sql


def test_refuse_examples_name_a_table_of_the_gold_sql(base, heavy):
    originals = _by_id(base)
    refuses = [e for e in heavy.examples if e.intent == "refuse"]
    assert refuses
    for e in refuses:
        tables = re.findall(r"(?:FROM|JOIN) (\w+)", originals[e.meta["mixed_from"]].gold_sql)
        assert e.meta["table"] in tables and e.meta["table"] in e.question
        assert e.gold_sql is None and e.user_reply is None


def test_explain_and_chat_examples(base, heavy):
    originals = _by_id(base)
    for e in heavy.examples:
        if e.intent == "explain":
            gold = originals[e.meta["mixed_from"]].gold_sql
            assert e.input_sql == gold and gold in e.question and e.gold_sql is None
        elif e.intent == "chat":
            assert e.question in _CHAT_MESSAGES and e.gold_sql is None


def test_every_example_validates(heavy, mixed):
    for e in [*heavy.examples, *mixed.examples]:
        assert Example(**{**e.__dict__}) == e
        json.dumps(e.to_dict())


def test_clarify_without_a_literal_stays_sql(concert_db: Path):
    e = Example(
        id="plain",
        question="How many singers do we have?",
        db_id="concert",
        db_path=str(concert_db),
        intent="sql",
        gold_sql="SELECT count(*) FROM singer",
    )
    out = mix_intents(Dataset("toy", "v1", [e]), ratios={"clarify": 1}).examples
    assert out[0].intent == "sql" and out[0].id == "plain" and out[0].meta["mix_fallback"] == "clarify"


def test_non_sql_examples_pass_through(concert_db: Path, heavy):
    chat = Example(id="c", question="Hi", db_id="concert", db_path=str(concert_db), intent="chat")
    out = mix_intents(Dataset("toy", "v1", [chat]), ratios={"fix": 1})
    assert out.examples == [chat]


def test_adding_an_example_moves_few_intents(base, concert_db: Path):
    before = {e.meta.get("mixed_from", e.id): e.intent for e in mix_intents(base, seed=5).examples}
    grown = Dataset("toy", "v2", [*base.examples, *_examples(concert_db, 1, prefix="extra")])
    after = {e.meta.get("mixed_from", e.id): e.intent for e in mix_intents(grown, seed=5).examples}
    moved = [k for k in before if before[k] != after[k]]
    assert len(moved) <= 5, moved


@pytest.mark.parametrize(
    "ratios",
    [{"sql": -0.1, "fix": 1}, {"translate": 1}, {"sql": 0, "fix": 0}, {}, {"sql": float("nan")}, {"sql": "1"}, [0.5]],
)
def test_bad_ratios_are_config_errors(base, ratios):
    with pytest.raises(ConfigError):
        mix_intents(base, ratios=ratios)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_mixing_is_deterministic_for_any_seed(concert_db: Path, seed: int):
    small = Dataset("toy", "v1", _examples(concert_db, 8))
    ratios = {"sql": 1, "explain": 1, "fix": 1, "chat": 1, "clarify": 1, "refuse": 1}
    assert _dicts(mix_intents(small, seed=seed, ratios=ratios)) == _dicts(mix_intents(small, seed=seed, ratios=ratios))


def test_registered_mixed_dataset_rebuilds_from_its_spec(tmp_path: Path, concert_db: Path):
    path = tmp_path / "questions.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": e.id, "question": e.question, "gold_sql": e.gold_sql}) + "\n"
            for e in _examples(concert_db, 12)
        ),
        encoding="utf-8",
    )
    ds = dataset.build("mixed", base="jsonl", path=str(path), db=str(concert_db), seed=2)
    assert ds.name == "mixed" and ds.meta["base"] == "jsonl" and len(ds.examples) == 12
    spec = component_spec(ds)
    assert spec["args"]["base"] == "jsonl" and spec["args"]["seed"] == 2
    assert dataset.rebuild(spec).digest() == ds.digest()
    assert (
        dataset.build("mixed", base="jsonl", path=str(path), db=str(concert_db), limit=5)
        .examples[4]
        .id.startswith("m-004")
    )


def test_mixed_refuses_bad_bases(tmp_path: Path):
    with pytest.raises(ConfigError):
        dataset.build("mixed", base="mixed")
    with pytest.raises(ConfigError):
        dataset.build("mixed", base="jsonl", path=str(tmp_path / "q.jsonl"), split="dev")  # jsonl takes no split


def test_layouts_name_their_loader(spider_dir: Path, bird_dir: Path, tmp_path: Path):
    """A Spider folder, a BIRD folder and a .jsonl file each match exactly one registered loader."""
    from routerlab.benchmarks.dataset import layout_loaders, loaders_for

    assert {"spider", "bird", "jsonl", "csv"} <= set(layout_loaders())
    assert loaders_for(spider_dir) == ["spider"]
    assert loaders_for(bird_dir) == ["bird"]
    lines = tmp_path / "q.jsonl"
    lines.write_text('{"question": "How many singers?"}\n', encoding="utf-8")
    assert loaders_for(lines) == ["jsonl"]
    assert loaders_for(tmp_path / "missing") == [] and loaders_for(spider_dir / "database") == []


def test_mixed_infers_its_base_from_the_folder(spider_dir: Path, bird_dir: Path):
    inferred = dataset.build("mixed", path=str(spider_dir), seed=1)
    explicit = dataset.build("mixed", base="spider", path=str(spider_dir), seed=1)
    assert inferred.meta["base"] == "spider" and inferred.digest() == explicit.digest()
    assert inferred.version == explicit.version
    assert dataset.build("mixed", path=str(bird_dir)).meta["base"] == "bird"
    # the recorded arguments rebuild the same examples (the layout is read again)
    assert dataset.rebuild(component_spec(inferred)).digest() == inferred.digest()


def test_mixed_without_a_recognisable_base_names_the_choices_and_the_config_fix(tmp_path: Path):
    for args in ({}, {"path": str(tmp_path)}):
        with pytest.raises(ConfigError) as caught:
            dataset.build("mixed", **args)
        err = caught.value
        assert "spider" in err.expected and "bird" in err.expected and "jsonl" in err.expected
        assert "--config" in err.fix and "base:" in err.fix
    both = tmp_path / "both"
    (both / "database").mkdir(parents=True)
    (both / "dev_databases").mkdir()
    (both / "dev.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match="base") as caught:
        dataset.build("mixed", path=str(both))
    assert "bird, spider" in caught.value.found  # the folder looks like both: never a guess


def test_cli_mixed_over_a_folder_needs_no_config(spider_dir: Path, tmp_path: Path):
    """`routerlab route` and `routerlab run --dataset mixed --dataset-path DIR` work without --config."""
    from typer.testing import CliRunner

    from routerlab.cli import app

    runner = CliRunner()
    out = runner.invoke(
        app,
        [
            "route",
            "--dataset",
            "mixed",
            "--dataset-path",
            str(spider_dir),
            "--router",
            "oracle",
            "--limit",
            "0",
            "--no-mlflow",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "oracle" in out.output
    store, mlflow = tmp_path / "r.duckdb", tmp_path / "m.db"
    run = runner.invoke(
        app,
        [
            "run",
            "--dataset",
            "mixed",
            "--dataset-path",
            str(spider_dir),
            "--router",
            "rules",
            "--lm",
            "scripted:basic",
            "--limit",
            "0",
            "--store",
            str(store),
            "--tracking-uri",
            f"sqlite:///{mlflow}",
        ],
    )
    assert run.exit_code == 0, run.output
    assert "rules" in run.output
    bad = runner.invoke(app, ["route", "--dataset", "mixed", "--dataset-path", str(tmp_path), "--router", "oracle"])
    assert bad.exit_code == 2
    assert "base" in bad.output and "--config" in bad.output and "spider" in bad.output


def test_a_sample_follows_the_ratios_and_spreads_over_databases(spider_dir: Path):
    whole = dataset.build("mixed", path=str(spider_dir), seed=0, ratios={"sql": 1, "chat": 1})
    assert len(whole.examples) == 4
    picked = dataset.build("mixed", path=str(spider_dir), seed=0, ratios={"sql": 1, "chat": 1}, sample=2)
    assert sorted(e.intent for e in picked.examples) == ["chat", "sql"]
    assert {e.id for e in picked.examples} <= {e.id for e in whole.examples}
    assert picked.meta["sample"] == "2" and picked.version != whole.version
    again = dataset.build("mixed", path=str(spider_dir), seed=0, ratios={"sql": 1, "chat": 1}, sample=2)
    assert [e.id for e in again.examples] == [e.id for e in picked.examples]
    with pytest.raises(ConfigError, match="sample"):
        dataset.build("mixed", path=str(spider_dir), sample=-1)


def test_a_sample_of_spider_dev_a_covers_its_databases(spider_dev_a):
    """The first examples by id are one or two databases; a sample reaches most of them."""
    from routerlab.benchmarks.loaders.mixed import sample_mixed
    from tests.conftest import SPIDER_DEV_A

    ratios = {"sql": 0.6, "unanswerable": 0.4}
    mixed = dataset.build("mixed", path=str(SPIDER_DEV_A), seed=0, ratios=ratios)
    sample = sample_mixed(mixed, 50, seed=0, ratios=ratios)
    intents = [e.intent for e in sample.examples]
    assert intents.count("sql") == 30 and intents.count("unanswerable") == 20
    assert len({e.db_id for e in sample.examples}) >= 6


@pytest.mark.parametrize("seed", range(8))
def test_a_misspelling_changes_one_name_keeps_its_quoting_and_never_a_cte(seed: int):
    import random

    import sqlglot
    from sqlglot import exp

    from routerlab.benchmarks.loaders.mixed_fix import _misspell_column, _misspell_table

    sql = 'WITH t AS (SELECT a FROM "Areas") SELECT t.a, "Has Ev" FROM t JOIN region ON t.a = region.a'
    tables = _misspell_table(sqlglot.parse_one(sql), random.Random(seed))
    names = [x.name for x in tables.find_all(exp.Table)]
    assert names.count("t") == 1 and sorted(n.lower() for n in names) != ["areas", "region", "t"]
    changed = [x for x in tables.find_all(exp.Table) if x.name not in ("t", "Areas", "region")]
    # a typo keeps the first letter: "A..." was the quoted "Areas", "r..." the bare region
    assert len(changed) == 1 and changed[0].this.quoted == changed[0].name.startswith("A")
    columns = _misspell_column(sqlglot.parse_one(sql), random.Random(seed))
    before = sorted(c.name for c in sqlglot.parse_one(sql).find_all(exp.Column))
    after = sorted(c.name for c in columns.find_all(exp.Column))
    assert len([a for a in after if a not in before]) == 1
    quoted = {c.name: c.this.quoted for c in columns.find_all(exp.Column)}
    assert all(q == n.startswith("H") for n, q in quoted.items())
    assert _misspell_table(sqlglot.parse_one("SELECT 1"), random.Random(seed)) is None
    assert _misspell_column(sqlglot.parse_one("SELECT count(*) FROM t"), random.Random(seed)) is None
